/* SPDX-License-Identifier: ISC */
/* The path pool two trees share (strpool.c, tree.c): two threads adding
 * the same paths at once, in different orders, get one copy of each (and
 * one thread through any cursor, in any order);
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
	assert_null(ph_strpool_get(&pool, NULL, "new/path", 8));
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

/* Folder f's name k through cur (f 0: the root). */
static const char *
small_get(struct ph_strpool *pool, struct ph_strcur *cur, size_t f, size_t k)
{
	char buf[64];
	size_t len = f == 0 ? (size_t)snprintf(buf, sizeof(buf), "root%zu", k) :
	             (size_t)snprintf(buf, sizeof(buf), "d%zu/n%zu", f, k);
	const char *c = ph_strpool_get(pool, cur, buf, len);

	assert_non_null(c);
	assert_string_equal(c, buf);
	return c;
}

/* Folders of 0 to 5 names (a folder's first table lives in its record,
 * then grows), the root's own names, visited in an order that leaves and
 * comes back to each folder (the caller's cursor then misses): each path
 * one copy, asked for again through another cursor or none; distinct
 * paths, distinct copies; a name with a NUL in it is not its prefix. */
static void
test_small_folders_and_cursor(void **state)
{
	enum { NF = 3000, PER = 6 };
	static const char *kept[NF][PER];
	struct ph_strpool pool;
	struct ph_strcur a = { 0 }, b = { 0 };
	size_t f, k;

	(void)state;
	ph_strpool_init(&pool);
	/* Folder f holds f % PER names; folder 0 is the root. First folder
	 * by folder (the cursor finds each next name's folder)... */
	for (f = 0; f < NF; f++)
		for (k = 0; k < f % PER; k++)
			kept[f][k] = small_get(&pool, &a, f, k);
	/* ... then name by name across the folders (it misses each time),
	 * then backwards without one: the same copies. */
	for (k = 0; k < PER; k++)
		for (f = 0; f < NF; f++)
			if (k < f % PER)
				assert_ptr_equal(small_get(&pool, &b, f, k), kept[f][k]);
	for (f = NF; f-- > 0;)
		for (k = f % PER; k-- > 0;)
			assert_ptr_equal(small_get(&pool, NULL, f, k), kept[f][k]);
	for (f = 1; f < NF; f++)
		for (k = 1; k < f % PER; k++)
			assert_ptr_not_equal(kept[f][k], kept[f][k - 1]);
	/* "d8/n1" then a NUL: not "d8/n1". */
	{
		const char *c = ph_strpool_get(&pool, &a, "d8/n1\0x", 7);

		assert_non_null(c);
		assert_ptr_not_equal(c, kept[8][1]);
		assert_ptr_equal(ph_strpool_get(&pool, &b, "d8/n1", 5), kept[8][1]);
	}
	ph_strpool_seal(&pool);
	assert_null(ph_strpool_get(&pool, &a, "d8/n1", 5));
	ph_strpool_free(&pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_threads_share_each_path_once),
		cmocka_unit_test(test_small_folders_and_cursor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
