/* SPDX-License-Identifier: ISC */
/* ph_tree_sort (treesort.c): trees added in the remote listing's order (the
 * folders' names interleaved) come out in subtree order, every entry once;
 * so do the trees its folder-by-folder layout gives up on (an entry without
 * its folder, one folder twice, nesting deeper than its walk). No I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tree.h"
#include "ut_rand.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
next(void)
{
	return (uint32_t)(ut_xorshift64(&rng) >> 11);
}

/* Adds path with its number in size (to see every entry come out once). */
static void
add(struct ph_tree *t, const char *path, uint8_t type, uint64_t id)
{
	struct ph_entry e = { 0 };

	e.type = type;
	e.size = id;
	e.mode = 0644;
	assert_int_equal(ph_tree_add(t, path, strlen(path), &e), 0);
}

/* In subtree order, and each of the n ids 0..n-1 once. */
static void
check(const struct ph_tree *t, size_t n)
{
	uint8_t *seen = calloc(n ? n : 1, 1);
	size_t i;

	assert_non_null(seen);
	assert_int_equal(t->n, n);
	for (i = 0; i < t->n; i++) {
		assert_true(t->v[i].size < n);
		assert_int_equal(seen[t->v[i].size], 0);
		seen[t->v[i].size] = 1;
		if (i > 0 && ph_path_cmp(t->v[i - 1].path, t->v[i].path) > 0)
			fail_msg("out of order at %zu: \"%s\" before \"%s\"", i, t->v[i - 1].path,
			         t->v[i].path);
	}
	/* A folder's subtree follows it at once: after "a" and before "a-b". */
	for (i = 0; i < t->n; i++) {
		size_t l = strlen(t->v[i].path), j;

		if (t->v[i].type != PH_T_DIR)
			continue;
		for (j = i + 1; j < t->n && strncmp(t->v[j].path, t->v[i].path, l) == 0 &&
		     t->v[j].path[l] == '/'; j++)
			;
		for (; j < t->n; j++)
			assert_false(strncmp(t->v[j].path, t->v[i].path, l) == 0 &&
			             t->v[j].path[l] == '/');
	}
	free(seen);
}

/* Names chosen to trip an order that is not ph_path_cmp's: prefixes of
 * each other, bytes on either side of '/', UTF-8, a space. */
static const char *const names[] = {
	"a", "a-b", "a.b", "a b", "ab", "a0", "A", "b", "~", "\xc3\xa9", "e\xcc\x81",
	"IMG_0001.jpg", "IMG_0001.jpg.x", "IMG_00010.jpg", ".hidden", "z", "-", ".",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct item {
	char path[256];
	uint8_t type;
};

/* A random tree of folders and files (every folder in it), its entries
 * added in a random order. */
static void
random_tree(struct ph_tree *t, size_t *count, size_t want)
{
	struct item *it = calloc(want + 64, sizeof(*it));
	size_t n = 0, i, dirs = 0;
	char *dirpaths[4096];

	assert_non_null(it);
	while (n < want) {
		const char *parent = dirs && next() % 4 ? dirpaths[next() % dirs] : "";
		const char *nm = names[next() % NNAMES];
		char path[256];
		int isdir = next() % 5 == 0 && dirs < 4096 && strlen(parent) < 180;
		size_t k;

		if (strcmp(nm, ".") == 0)
			nm = "dot.";
		snprintf(path, sizeof(path), "%s%s%s%s", parent, *parent ? "/" : "", nm,
		         next() % 2 ? "" : "1");
		for (k = 0; k < n && strcmp(it[k].path, path) != 0; k++)
			;
		if (k < n)
			continue;
		strcpy(it[n].path, path);
		it[n].type = isdir ? PH_T_DIR : PH_T_FILE;
		if (isdir)
			dirpaths[dirs++] = it[n].path;
		n++;
	}
	/* Shuffled: a folder's names may even come before it. */
	for (i = n; i > 1; i--) {
		size_t j = next() % i;
		struct item x = it[i - 1];

		it[i - 1] = it[j];
		it[j] = x;
	}
	for (i = 0; i < n; i++)
		add(t, it[i].path, it[i].type, i);
	free(it);
	*count = n;
}

static void
test_random_trees(void **state)
{
	int round;

	(void)state;
	for (round = 0; round < 200; round++) {
		struct ph_tree t = { 0 };
		size_t n;

		random_tree(&t, &n, 1 + next() % 400);
		ph_tree_sort(&t);
		check(&t, n);
		ph_tree_free(&t);
	}
}

/* The remote listing's shape: 300 folders of 200 names, their replies
 * interleaved 50 names at a time. */
static void
test_interleaved_folders(void **state)
{
	struct ph_tree t = { 0 };
	char p[64];
	size_t id = 0, f, k, chunk;

	(void)state;
	for (f = 0; f < 300; f++) {
		snprintf(p, sizeof(p), "DCIM/%03zu", (f * 7919) % 300);
		add(&t, p, PH_T_DIR, id++);
	}
	add(&t, "DCIM", PH_T_DIR, id++);
	for (chunk = 0; chunk < 4; chunk++)
		for (f = 0; f < 300; f++)
			for (k = 0; k < 50; k++) {
				snprintf(p, sizeof(p), "DCIM/%03zu/IMG_%05zu.jpg", f,
				         (chunk * 50 + k) * 7 % 200);
				add(&t, p, PH_T_FILE, id++);
			}
	ph_tree_sort(&t);
	check(&t, id);
	assert_string_equal(t.v[0].path, "DCIM");
	assert_string_equal(t.v[1].path, "DCIM/000");
	assert_string_equal(t.v[2].path, "DCIM/000/IMG_00000.jpg");
	assert_string_equal(t.v[id - 1].path, "DCIM/299/IMG_00199.jpg");
	ph_tree_free(&t);
}

/* What the layout by folder gives up on is sorted all the same. */
static void
test_fallbacks(void **state)
{
	struct ph_tree t = { 0 };
	char p[1024];
	size_t id = 0, i;

	(void)state;
	/* Names whose folder is not in the tree. */
	add(&t, "x/y", PH_T_FILE, id++);
	add(&t, "b", PH_T_FILE, id++);
	add(&t, "x/a", PH_T_FILE, id++);
	add(&t, "a", PH_T_FILE, id++);
	ph_tree_sort(&t);
	check(&t, id);
	ph_tree_free(&t);

	/* One folder twice (two spellings renamed to one key). */
	memset(&t, 0, sizeof(t));
	id = 0;
	add(&t, "d/f", PH_T_FILE, id++);
	add(&t, "d", PH_T_DIR, id++);
	add(&t, "c", PH_T_FILE, id++);
	add(&t, "d", PH_T_DIR, id++);
	ph_tree_sort(&t);
	assert_int_equal(t.n, 4);
	assert_string_equal(t.v[0].path, "c");
	assert_string_equal(t.v[1].path, "d");
	assert_string_equal(t.v[2].path, "d");
	assert_string_equal(t.v[3].path, "d/f");
	ph_tree_free(&t);

	/* Deeper than the walk's stack: 300 levels, added deepest first. */
	memset(&t, 0, sizeof(t));
	id = 0;
	for (i = 300; i > 0; i--) {
		size_t l = 0, k;

		for (k = 0; k < i; k++)
			l += (size_t)snprintf(p + l, sizeof(p) - l, "%sd", k ? "/" : "");
		if (l >= sizeof(p) - 1)
			continue;
		add(&t, p, PH_T_DIR, id++);
	}
	add(&t, "0", PH_T_FILE, id++);
	ph_tree_sort(&t);
	check(&t, id);
	assert_string_equal(t.v[0].path, "0");
	assert_string_equal(t.v[1].path, "d");
	ph_tree_free(&t);
}

/* One folder of 60,000 names (the quicksort on indices past its short
 * runs), and an already sorted tree left as it is. */
static void
test_one_big_folder(void **state)
{
	struct ph_tree t = { 0 };
	char p[64];
	size_t i, n = 60000;

	(void)state;
	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "Camera/IMG_%08u.jpg", (unsigned)((i * 40503u) % n));
		add(&t, p, PH_T_FILE, i);
	}
	add(&t, "Camera", PH_T_DIR, n);
	ph_tree_sort(&t);
	check(&t, n + 1);
	assert_string_equal(t.v[0].path, "Camera");
	ph_tree_sort(&t);
	check(&t, n + 1);
	ph_tree_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_trees),
		cmocka_unit_test(test_interleaved_folders),
		cmocka_unit_test(test_fallbacks),
		cmocka_unit_test(test_one_big_folder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
