/* SPDX-License-Identifier: ISC */
/* The planner and the tree/name rules, without any I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "plan.h"
#include "tree.h"
#include "ut_tree.h"

static const char *
kind_path(const struct ph_plan *p, const struct ph_tree *src, size_t i, uint8_t *kind)
{
	*kind = p->v[i].kind;
	return src->v[p->v[i].src].path;
}

static void
test_sort_keeps_subtrees_together(void **state)
{
	struct ph_tree t = { 0 };

	(void)state;
	ut_add(&t, "a-b", PH_T_FILE, 1, 1);
	ut_add(&t, "a/x", PH_T_FILE, 1, 1);
	ut_add(&t, "a", PH_T_DIR, 0, 1);
	ut_add(&t, "a.txt", PH_T_FILE, 1, 1);
	ut_add(&t, "a/b/c", PH_T_FILE, 1, 1);
	ut_add(&t, "a/b", PH_T_DIR, 0, 1);
	ph_tree_sort(&t);
	assert_string_equal(t.v[0].path, "a");
	assert_string_equal(t.v[1].path, "a/b");
	assert_string_equal(t.v[2].path, "a/b/c");
	assert_string_equal(t.v[3].path, "a/x");
	assert_string_equal(t.v[4].path, "a-b");
	assert_string_equal(t.v[5].path, "a.txt");
	assert_non_null(ph_tree_find(&t, "a/b/c"));
	assert_null(ph_tree_find(&t, "a/b/d"));
	ph_tree_free(&t);
}

static void
test_plan_new_update_same(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "DCIM", PH_T_DIR, 0, 10);
	ut_add(&src, "DCIM/new.jpg", PH_T_FILE, 100, 5);
	ut_add(&src, "DCIM/same.jpg", PH_T_FILE, 50, 5);
	ut_add(&src, "DCIM/bigger.jpg", PH_T_FILE, 70, 5);
	ut_add(&src, "DCIM/touched.jpg", PH_T_FILE, 60, 9);
	ut_add(&src, "link", PH_T_LINK, 0, 5);
	ut_add(&src, "fifo", PH_T_OTHER, 0, 5);
	ut_add(&dst, "DCIM", PH_T_DIR, 0, 10);
	ut_add(&dst, "DCIM/same.jpg", PH_T_FILE, 50, 5);
	ut_add(&dst, "DCIM/bigger.jpg", PH_T_FILE, 69, 5);
	ut_add(&dst, "DCIM/touched.jpg", PH_T_FILE, 60, 8);
	ut_add(&dst, "only-here.jpg", PH_T_FILE, 1, 1);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, NULL, &p), 0);
	assert_int_equal(p.n, 5);
	assert_string_equal(kind_path(&p, &src, 0, &k), "DCIM/bigger.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_string_equal(kind_path(&p, &src, 1, &k), "DCIM/new.jpg");
	assert_int_equal(k, PH_A_NEW);
	assert_string_equal(kind_path(&p, &src, 2, &k), "DCIM/touched.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_string_equal(kind_path(&p, &src, 3, &k), "fifo");
	assert_int_equal(k, PH_A_SKIP_OTHER);
	assert_string_equal(kind_path(&p, &src, 4, &k), "link");
	assert_int_equal(k, PH_A_SKIP_LINK);
	assert_int_equal(p.files_total, 4);
	assert_int_equal(p.files_todo, 3);
	assert_int_equal(p.bytes_todo, 230);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* --min-age: a file changed after the cut-off is left for a later run,
 * unless it is unchanged anyway; a size the source would not tell always
 * counts as changed. */
static void
test_plan_young_files_wait(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_plan_opts young = { 400, 0, NULL, 0, 0, NULL, 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "old.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "young.mp4", PH_T_FILE, 10, 500);
	ut_add(&src, "young-same.jpg", PH_T_FILE, 10, 600);
	ut_add(&src, "young-update.jpg", PH_T_FILE, 11, 700);
	ut_add(&dst, "young-same.jpg", PH_T_FILE, 10, 600);
	ut_add(&dst, "young-update.jpg", PH_T_FILE, 10, 100);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &young, &p), 0);
	assert_int_equal(p.n, 3);
	assert_string_equal(kind_path(&p, &src, 0, &k), "old.jpg");
	assert_int_equal(k, PH_A_NEW);
	assert_string_equal(kind_path(&p, &src, 1, &k), "young-update.jpg");
	assert_int_equal(k, PH_A_SKIP_YOUNG);
	assert_string_equal(kind_path(&p, &src, 2, &k), "young.mp4");
	assert_int_equal(k, PH_A_SKIP_YOUNG);
	assert_int_equal(p.files_todo, 1);
	assert_int_equal(p.bytes_todo, 10);
	ph_plan_free(&p);
	/* Without a cut-off everything that differs moves. */
	assert_int_equal(ph_plan_make(&src, &dst, NULL, &p), 0);
	assert_int_equal(p.files_todo, 3);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* The state's records: both sides as last synced means unchanged, even
 * when the two sides' times differ (a phone that would not set them). */
/* Records left out of the set (the state streams them; a file exactly as
 * recorded on both sides is only flagged): still unchanged, and counted
 * as unshifted; a file with no record at all is recorded (first contact). */
static void
test_plan_records_flagged_not_kept(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known_set known = { NULL, 0, 2 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 0, NULL, 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "a.jpg", PH_T_FILE, 10, 100);   /* phone kept its own time: 555 */
	ut_add(&src, "b.jpg", PH_T_FILE, 10, 100);   /* the same both sides, recorded */
	ut_add(&src, "c.jpg", PH_T_FILE, 10, 100);   /* the same both sides, no record */
	ut_add(&dst, "a.jpg", PH_T_FILE, 10, 555);
	ut_add(&dst, "b.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "c.jpg", PH_T_FILE, 10, 100);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	src.v[0].flags |= PH_E_KNOWN | PH_E_ASREC;
	src.v[1].flags |= PH_E_KNOWN | PH_E_ASREC;
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(kind_path(&p, &src, 0, &k), "c.jpg");
	assert_int_equal(k, PH_A_RECORD);
	assert_int_equal(p.files_todo, 0);
	ph_plan_free(&p);
	/* Without the flag a.jpg would be a first contact with a differing file. */
	src.v[0].flags = 0;
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_string_equal(kind_path(&p, &src, 0, &k), "a.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_int_equal(p.v[0].how, PH_U_FIRST);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

static void
test_plan_known_sides_unchanged(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[] = {
		{ "a.jpg", 10, 10, 100, 555, 0 },     /* as synced: unchanged */
		{ "b.jpg", 10, 10, 100, 555, 0 },     /* destination changed since */
		{ "c.jpg", 10, 10, 100, 555, 0 },     /* source changed since */
	};
	struct ph_known_set known = { kv, 3, 0 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 0, NULL, 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "a.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "b.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "c.jpg", PH_T_FILE, 10, 101);
	ut_add(&dst, "a.jpg", PH_T_FILE, 10, 555);
	ut_add(&dst, "b.jpg", PH_T_FILE, 10, 556);
	ut_add(&dst, "c.jpg", PH_T_FILE, 10, 555);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.n, 2);
	/* b: changed here, not at the source: the destination's stays. */
	assert_string_equal(kind_path(&p, &src, 0, &k), "b.jpg");
	assert_int_equal(k, PH_A_KEPT);
	assert_string_equal(kind_path(&p, &src, 1, &k), "c.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_int_equal(p.v[1].how, PH_U_REPLACE);
	assert_int_equal(p.files_todo, 1);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* A side whose size and time are as recorded but whose content changed
 * (its local identity said so, issue 22 item 13): the trees look equal,
 * and still the source's change goes, the destination's is kept, both
 * are a conflict, and a touched destination file is never deleted. */
static void
test_plan_touched_sides(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[] = {
		{ "both.jpg", 10, 10, 100, 100, PH_KNOWN_SRC | PH_KNOWN_DST },
		{ "dst.jpg", 10, 10, 100, 100, PH_KNOWN_DST },
		{ "gone.jpg", 10, 10, 100, 100, PH_KNOWN_DST },
		{ "same.jpg", 10, 10, 100, 100, 0 },
		{ "src.jpg", 10, 10, 100, 100, PH_KNOWN_SRC },
	};
	struct ph_known_set known = { kv, 5, 0 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 1, NULL, 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "both.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "dst.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "same.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "src.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "both.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "dst.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "gone.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "same.jpg", PH_T_FILE, 10, 100);
	ut_add(&dst, "src.jpg", PH_T_FILE, 10, 100);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.n, 3);
	assert_string_equal(kind_path(&p, &src, 0, &k), "both.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_int_equal(p.v[0].how, PH_U_CONFLICT);
	assert_string_equal(kind_path(&p, &src, 1, &k), "dst.jpg");
	assert_int_equal(k, PH_A_KEPT);
	assert_string_equal(kind_path(&p, &src, 2, &k), "src.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	assert_int_equal(p.v[2].how, PH_U_REPLACE);
	assert_int_equal(p.ndel, 1);
	assert_true(p.del[0].kept);
	assert_int_equal(p.ndel_go, 0);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* --modify-window: times that close are equal (FAT's 2 s steps). */
static void
test_plan_modify_window(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_plan_opts fat = { 0, 2, NULL, 0, 0, NULL, 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "DCIM", PH_T_DIR, 0, 1001);
	ut_add(&src, "DCIM/a.jpg", PH_T_FILE, 10, 1001);
	ut_add(&src, "DCIM/b.jpg", PH_T_FILE, 10, 1000);
	ut_add(&src, "DCIM/c.jpg", PH_T_FILE, 10, 1000);
	ut_add(&dst, "DCIM", PH_T_DIR, 0, 1000);
	ut_add(&dst, "DCIM/a.jpg", PH_T_FILE, 10, 1000);
	ut_add(&dst, "DCIM/b.jpg", PH_T_FILE, 10, 1002);
	ut_add(&dst, "DCIM/c.jpg", PH_T_FILE, 10, 1003);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &fat, &p), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(kind_path(&p, &src, 0, &k), "DCIM/c.jpg");
	assert_int_equal(k, PH_A_UPDATE);
	ph_plan_free(&p);
	assert_int_equal(ph_plan_make(&src, &dst, NULL, &p), 0);
	assert_int_equal(p.n, 4); /* without the window: folder time and three files */
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* A destination file that differs is never simply overwritten: first
 * contact compares content, both sides changed is a conflict, a
 * destination left diverged by a conflict stays kept; --overwrite makes
 * the source win each time. */
static void
test_plan_conflict_rules(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[] = {
		{ "both.jpg", 10, 10, 100, 100, 0 },               /* both changed since */
		{ "div.jpg", 10, PH_KNOWN_DIVERGED, 100, 100, 0 }, /* after a conflict */
		{ "src.jpg", 10, 10, 100, 100, 0 },                /* only the source changed */
	};
	struct ph_known_set known = { kv, 3, 0 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 0, NULL, 0 };
	struct ph_plan p;
	uint8_t k;
	int pass;

	(void)state;
	ut_add(&src, "both.jpg", PH_T_FILE, 11, 200);
	ut_add(&src, "div.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "first.jpg", PH_T_FILE, 10, 100);
	ut_add(&src, "src.jpg", PH_T_FILE, 12, 300);
	ut_add(&dst, "both.jpg", PH_T_FILE, 10, 150);
	ut_add(&dst, "div.jpg", PH_T_FILE, 13, 170);
	ut_add(&dst, "first.jpg", PH_T_FILE, 10, 99);
	ut_add(&dst, "src.jpg", PH_T_FILE, 10, 100);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	for (pass = 0; pass < 2; pass++) {
		ko.overwrite = pass;
		assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
		assert_int_equal(p.n, 4);
		assert_string_equal(kind_path(&p, &src, 0, &k), "both.jpg");
		assert_int_equal(k, PH_A_UPDATE);
		assert_int_equal(p.v[0].how, pass ? PH_U_REPLACE : PH_U_CONFLICT);
		assert_string_equal(kind_path(&p, &src, 1, &k), "div.jpg");
		assert_int_equal(k, pass ? PH_A_UPDATE : PH_A_KEPT);
		assert_string_equal(kind_path(&p, &src, 2, &k), "first.jpg");
		assert_int_equal(k, PH_A_UPDATE);
		assert_int_equal(p.v[2].how, pass ? PH_U_REPLACE : PH_U_FIRST);
		assert_string_equal(kind_path(&p, &src, 3, &k), "src.jpg");
		assert_int_equal(k, PH_A_UPDATE);
		assert_int_equal(p.v[3].how, PH_U_REPLACE);
		ph_plan_free(&p);
	}
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* Files gone from the source since the last sync: deleted only when the
 * destination's copy is as recorded, never when excluded or when a folder
 * above became a symlink; records gone on both sides are forgotten. */
static void
test_plan_gone(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[] = {
		{ "album/p.jpg", 5, 5, 10, 10, 0 },   /* album is a symlink now */
		{ "both-gone.jpg", 5, 5, 10, 10, 0 },
		{ "changed.jpg", 5, 5, 10, 10, 0 },
		{ "gone.jpg", 5, 5, 10, 10, 0 },
		{ "keep.jpg", 5, 5, 10, 10, 0 },
		{ "x.tmp", 5, 5, 10, 10, 0 },         /* excluded now */
	};
	struct ph_known_set known = { kv, 6, 0 };
	const char *pat[] = { "*.tmp" };
	const uint8_t incl[] = { 0 };
	struct ph_filter f = { .pat = pat, .incl = incl, .n = 1 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 1, &f, 0 };
	struct ph_plan p;

	(void)state;
	ut_add(&src, "album", PH_T_LINK, 0, 10);
	ut_add(&src, "keep.jpg", PH_T_FILE, 5, 10);
	ut_add(&dst, "album", PH_T_DIR, 0, 10);
	ut_add(&dst, "album/p.jpg", PH_T_FILE, 5, 10);
	ut_add(&dst, "changed.jpg", PH_T_FILE, 6, 10);
	ut_add(&dst, "gone.jpg", PH_T_FILE, 5, 10);
	ut_add(&dst, "keep.jpg", PH_T_FILE, 5, 10);
	ut_add(&dst, "x.tmp", PH_T_FILE, 5, 10);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	/* known is in tree order already */
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.ndel, 2);
	assert_int_equal(p.ndel_go, 1);
	assert_string_equal(dst.v[p.del[0].dst].path, "changed.jpg");
	assert_true(p.del[0].kept);
	assert_string_equal(dst.v[p.del[1].dst].path, "gone.jpg");
	assert_false(p.del[1].kept);
	assert_int_equal(p.nforget, 1);
	assert_string_equal(p.forget[0], "both-gone.jpg");
	ph_plan_free(&p);
	/* Without --delete nothing is to go (the candidates stay listed, for
	 * copies); forgetting still happens. */
	ko.deletes = 0;
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.ndel_go, 0);
	assert_int_equal(p.nforget, 1);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* A phone's time zone change moves every time by whole hours: detected
 * when nearly all recorded files agree, and then nothing is re-sent. */
static void
test_plan_hour_shift(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[10];
	struct ph_known_set known = { kv, 10, 0 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 0, NULL, 0 };
	char names[10][16];
	struct ph_plan p;
	size_t i, nrec = 0;

	(void)state;
	for (i = 0; i < 10; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu.jpg", i);
		kv[i] = (struct ph_known){ names[i], 100 + i, 100 + i, 5000, 5000, 0 };
		/* f9 was edited for real (another size): still a shift of the rest */
		ut_add(&src, names[i], PH_T_FILE, i == 9 ? 1 : 100 + i, 5000 + 7200);
		ut_add(&dst, names[i], PH_T_FILE, 100 + i, 5000);
	}
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.src_shift, 7200);
	assert_int_equal(p.dst_shift, 0);
	for (i = 0; i < p.n; i++) {
		const char *path = src.v[p.v[i].src].path;

		if (strcmp(path, "f9.jpg") == 0) {
			assert_int_equal(p.v[i].kind, PH_A_UPDATE);
		} else {
			assert_int_equal(p.v[i].kind, PH_A_RECORD);
			nrec++;
		}
	}
	assert_int_equal(nrec, 9);
	assert_int_equal(p.files_todo, 1);
	ph_plan_free(&p);
	/* Too few files to tell a shift from edits: compared as they are. */
	known.n = 3;
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.src_shift, 0);
	assert_int_equal(p.files_todo, 10);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* The shift is no change: a file gone from the source whose copy at a
 * shifted destination is as recorded once the shift is off is deleted (not
 * kept as "changed there"), and a file moved at a shifted source is found
 * as a move by its recorded time. */
static void
test_plan_hour_shift_deletes_and_moves(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_known kv[6];
	struct ph_known_set known = { kv, 6, 0 };
	struct ph_plan_opts ko = { 0, 0, &known, 0, 1, NULL, 0 };
	char names[6][16];
	struct ph_plan p;
	size_t i;

	(void)state;
	for (i = 0; i < 6; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu.jpg", i);
		kv[i] = (struct ph_known){ names[i], 100 + i, 100 + i, 5000, 5000, 0 };
		if (i > 0)
			ut_add(&src, names[i], PH_T_FILE, 100 + i, 5000);
		ut_add(&dst, names[i], PH_T_FILE, 100 + i, 5000 + 3600);
	}
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	/* f0 deleted at the source, the destination's times all +1 h. */
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.dst_shift, 3600);
	assert_int_equal(p.ndel, 1);
	assert_int_equal(p.del[0].kept, 0);
	assert_int_equal(p.ndel_go, 1);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	/* f0 moved to sub/ at the source, whose times all moved +1 h. */
	for (i = 0; i < 6; i++) {
		ut_add(&src, i == 0 ? "sub/f0.jpg" : names[i], PH_T_FILE, 100 + i, 5000 + 3600);
		ut_add(&dst, names[i], PH_T_FILE, 100 + i, 5000);
	}
	ut_add(&src, "sub", PH_T_DIR, 0, 5000);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, &ko, &p), 0);
	assert_int_equal(p.src_shift, 3600);
	for (i = 0; i < p.n; i++) {
		if (strcmp(src.v[p.v[i].src].path, "sub/f0.jpg") != 0)
			continue;
		assert_int_equal(p.v[i].kind, PH_A_NEW);
		assert_int_equal(p.v[i].how, PH_N_MOVE);
		assert_string_equal(dst.v[p.v[i].dst].path, "f0.jpg");
		break;
	}
	assert_true(i < p.n);
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

static void
test_plan_conflicts_block_subtree(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_plan p;
	uint8_t k;

	(void)state;
	ut_add(&src, "a", PH_T_DIR, 0, 1);
	ut_add(&src, "a/f", PH_T_FILE, 3, 1);
	ut_add(&src, "b", PH_T_FILE, 3, 1);
	ut_add(&src, "c", PH_T_DIR, 0, 7);
	ut_add(&src, "c/g", PH_T_FILE, 4, 1);
	ut_add(&dst, "a", PH_T_FILE, 3, 1);   /* a file where a folder goes */
	ut_add(&dst, "b", PH_T_LINK, 0, 1);   /* a symlink where a file goes */
	ut_add(&dst, "c", PH_T_DIR, 0, 6);    /* a folder with other times */
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, NULL, &p), 0);
	assert_int_equal(p.n, 5);
	kind_path(&p, &src, 0, &k);
	assert_int_equal(k, PH_A_CONFLICT);
	assert_string_equal(kind_path(&p, &src, 1, &k), "a/f");
	assert_int_equal(k, PH_A_BLOCKED);
	kind_path(&p, &src, 2, &k);
	assert_int_equal(k, PH_A_CONFLICT);
	kind_path(&p, &src, 3, &k);
	assert_int_equal(k, PH_A_DIRTIME);
	kind_path(&p, &src, 4, &k);
	assert_int_equal(k, PH_A_NEW);
	assert_int_equal(p.files_todo, 1);
	/* A folder that cannot be made blocks its contents, counts adjusted. */
	ph_plan_free(&p);
	ph_tree_free(&dst);
	assert_int_equal(ph_plan_make(&src, &dst, NULL, &p), 0);
	assert_int_equal(p.v[3].kind, PH_A_MKDIR);
	assert_int_equal(p.files_todo, 3);
	assert_int_equal(ph_plan_block_subtree(&p, &src, 3), 1);
	assert_int_equal(p.v[4].kind, PH_A_BLOCKED);
	assert_int_equal(p.files_todo, 2);
	assert_int_equal(p.bytes_todo, 6);
	ph_plan_free(&p);
	ph_tree_free(&src);
}

static void
test_names(void **state)
{
	char buf[256];

	(void)state;
	assert_true(ph_name_safe((const uint8_t *)"IMG 1.jpg", 9));
	assert_true(ph_name_safe((const uint8_t *)"\xc3\xa9t\xc3\xa9", 5));
	assert_false(ph_name_safe((const uint8_t *)"", 0));
	assert_false(ph_name_safe((const uint8_t *)".", 1));
	assert_false(ph_name_safe((const uint8_t *)"..", 2));
	assert_false(ph_name_safe((const uint8_t *)"a/b", 3));
	assert_false(ph_name_safe((const uint8_t *)"a\\b", 3));
	assert_false(ph_name_safe((const uint8_t *)"a\0b", 3));
	assert_false(ph_name_safe((const uint8_t *)"x\x1b[31m", 6));
	assert_false(ph_name_safe((const uint8_t *)"del\x7f", 4));
	ph_escape(buf, sizeof(buf), "a\x1b[31m\\b\xff\xc3\xa9");
	assert_string_equal(buf, "a\\x1b[31m\\x5cb\\xff\xc3\xa9");
}

static void
test_filter(void **state)
{
	const char *pat[] = { "keep.tmp", "*.tmp", ".thumbnails/", "DCIM/*/raw", "/top.txt" };
	const uint8_t incl[] = { 1, 0, 0, 0, 0 };
	struct ph_filter f = { .pat = pat, .incl = incl, .n = 5 };

	(void)state;
	assert_true(ph_filter_match(&f, "DCIM/a.jpg", 0));
	assert_false(ph_filter_match(&f, "DCIM/x/a.tmp", 0));
	assert_true(ph_filter_match(&f, "DCIM/x/keep.tmp", 0));
	assert_false(ph_filter_match(&f, "DCIM/.thumbnails", 1));
	assert_true(ph_filter_match(&f, "DCIM/.thumbnails", 0)); /* a file, not a folder */
	assert_false(ph_filter_match(&f, "DCIM/Camera/raw", 0));
	assert_true(ph_filter_match(&f, "DCIM/Camera/deep/raw", 0));
	assert_false(ph_filter_match(&f, "top.txt", 0));
	assert_true(ph_filter_match(&f, "sub/top.txt", 0));
	assert_true(ph_filter_match(NULL, "anything", 0));
	/* A single file's run: its one name at the root, nothing else, and
	 * the rules still apply to it. */
	f.only = "x.jpg";
	assert_true(ph_filter_match(&f, "x.jpg", 0));
	assert_false(ph_filter_match(&f, "y.jpg", 0));
	assert_false(ph_filter_match(&f, "x.jpg/a", 0));
	assert_false(ph_filter_match(&f, "DCIM", 1));
	f.only = "a.tmp";
	assert_false(ph_filter_match(&f, "a.tmp", 0));
}

/* A rule for a name at any depth is answered by its first byte when that
 * byte is a literal; these begin with what is not, or match by the rest. */
static void
test_filter_first_byte(void **state)
{
	const char *pat[] = { "\\*x", "[.]hid", "?eep", "b*/", ".pending-*", "/" };
	const uint8_t incl[] = { 0, 0, 0, 0, 0, 0 };
	struct ph_filter f = { .pat = pat, .incl = incl, .n = 6 };

	(void)state;
	assert_false(ph_filter_match(&f, "d/*x", 0));     /* an escaped '*' */
	assert_true(ph_filter_match(&f, "d/ax", 0));
	assert_false(ph_filter_match(&f, "d/e/.hid", 0)); /* a bracket */
	assert_true(ph_filter_match(&f, "d/e/xhid", 0));
	assert_false(ph_filter_match(&f, "keep", 0));     /* '?' */
	assert_true(ph_filter_match(&f, "d/kee", 0));
	assert_false(ph_filter_match(&f, "d/bin", 1));    /* a folder rule */
	assert_true(ph_filter_match(&f, "d/bin", 0));
	assert_true(ph_filter_match(&f, "b/in", 0));      /* the name, not the path */
	assert_false(ph_filter_match(&f, "x/y/.pending-1.jpg", 0));
	assert_true(ph_filter_match(&f, "x/.y/pending-1.jpg", 0));
	assert_true(ph_filter_match(&f, ".pending", 0));
	assert_true(ph_filter_match(&f, "d", 1));         /* "/" alone matches nothing */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_keeps_subtrees_together),
		cmocka_unit_test(test_plan_new_update_same),
		cmocka_unit_test(test_plan_young_files_wait),
		cmocka_unit_test(test_plan_known_sides_unchanged),
		cmocka_unit_test(test_plan_modify_window),
		cmocka_unit_test(test_plan_conflict_rules),
		cmocka_unit_test(test_plan_gone),
		cmocka_unit_test(test_plan_hour_shift),
		cmocka_unit_test(test_plan_hour_shift_deletes_and_moves),
		cmocka_unit_test(test_plan_conflicts_block_subtree),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_plan_records_flagged_not_kept),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_filter_first_byte),
		cmocka_unit_test(test_plan_touched_sides),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
