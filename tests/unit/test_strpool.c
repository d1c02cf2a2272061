/* SPDX-License-Identifier: ISC */
/* The path pool two trees share (strpool.c, tree.c): two threads adding
 * the same paths at once, in different orders, get one copy of each;
 * different paths never share one; a tree keeps its own copies of its first
 * PH_POOL_FROM paths; a sealed pool takes nothing (the tree copies). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "strpool.h"
#include "tree.h"

#define NPATHS (PH_POOL_FROM + 150000)

static char *
path_of(size_t i)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "dir_%04zu/file_%07zu.dat", i / 500, i);
	return strdup(buf);
}

struct adder {
	struct ph_tree t;
	char **paths;
	int backwards;  /* the second thread adds them from the end */
};

static void *
add_all(void *arg)
{
	struct adder *a = arg;
	struct ph_entry e = { 0 };
	size_t k;

	e.type = PH_T_FILE;
	for (k = 0; k < NPATHS; k++) {
		size_t i = a->backwards ? NPATHS - 1 - k : k;

		e.size = i;
		if (ph_tree_add(&a->t, a->paths[i], strlen(a->paths[i]), &e) != 0)
			return "add";
	}
	return NULL;
}

/* Each tree's entry for path i. */
static const char *
path_in(const struct adder *a, size_t i)
{
	return a->t.v[a->backwards ? NPATHS - 1 - i : i].path;
}

static void
test_two_threads_share_each_path_once(void **state)
{
	struct ph_strpool pool;
	struct adder a, b;
	pthread_t ta, tb;
	void *ra, *rb;
	char **paths = calloc(NPATHS, sizeof(*paths));
	size_t i, shared = 0;

	(void)state;
	assert_non_null(paths);
	for (i = 0; i < NPATHS; i++)
		assert_non_null(paths[i] = path_of(i));
	ph_strpool_init(&pool);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.t.pool = b.t.pool = &pool;
	a.paths = b.paths = paths;
	b.backwards = 1;
	assert_int_equal(pthread_create(&ta, NULL, add_all, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, add_all, &b), 0);
	pthread_join(ta, &ra);
	pthread_join(tb, &rb);
	assert_null(ra);
	assert_null(rb);
	for (i = 0; i < NPATHS; i++) {
		const char *x = path_in(&a, i), *y = path_in(&b, i);

		assert_string_equal(x, paths[i]);
		assert_string_equal(y, paths[i]);
		/* Past each tree's first PH_POOL_FROM entries both hold the
		 * pool's one copy; before, their own. */
		if (i >= PH_POOL_FROM && NPATHS - 1 - i >= PH_POOL_FROM)
			assert_ptr_equal(x, y);
		if (i < PH_POOL_FROM || NPATHS - 1 - i < PH_POOL_FROM)
			assert_ptr_not_equal(x, y);
		shared += x == y;
	}
	assert_int_equal(shared, NPATHS - 2 * PH_POOL_FROM);
	/* Distinct paths, distinct copies: a tree's own in order, so a
	 * neighbour's pointer is never the same. */
	for (i = 1; i < NPATHS; i++)
		assert_ptr_not_equal(path_in(&a, i), path_in(&a, i - 1));
	/* Sealed: nothing more looked up; a tree keeps its own copy. */
	ph_strpool_seal(&pool);
	assert_null(ph_strpool_get(&pool, "new/path", 8));
	{
		struct ph_entry e = { 0 };

		assert_int_equal(ph_tree_add(&a.t, "new/path", 8, &e), 0);
		assert_string_equal(a.t.v[a.t.n - 1].path, "new/path");
	}
	ph_tree_free(&a.t);
	ph_tree_free(&b.t);
	ph_strpool_free(&pool);
	for (i = 0; i < NPATHS; i++)
		free(paths[i]);
	free(paths);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_threads_share_each_path_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
