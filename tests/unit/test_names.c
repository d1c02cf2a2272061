/* SPDX-License-Identifier: ISC */
/* Names across file systems (names.c): Unicode forms, case-insensitive
 * destinations, collisions, destination paths. No I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "names.h"
#include "plan.h"
#include "tree.h"

/* "café" composed (NFC, as Android writes it) and decomposed (NFD, a Mac). */
#define CAFE_NFC "caf\xc3\xa9"
#define CAFE_NFD "cafe\xcc\x81"

static void
add(struct ph_tree *t, const char *path, uint8_t type)
{
	struct ph_entry e = { 0 };

	e.type = type;
	e.size = 10;
	e.mtime = 100;
	e.mode = 0644;
	assert_int_equal(ph_tree_add(t, path, strlen(path), &e), 0);
}

static const struct ph_entry *
find_raw(const struct ph_tree *t, const char *raw)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(ph_entry_raw(&t->v[i]), raw) == 0)
			return &t->v[i];
	fail_msg("no entry %s", raw);
	return NULL;
}

static int reports;
static void
count_report(void *arg, const char *key, const char *raw)
{
	(void)arg;
	(void)key;
	(void)raw;
	reports++;
}

static void
test_nfd_is_keyed_in_nfc(void **state)
{
	struct ph_tree t = { 0 };
	const struct ph_entry *e;

	(void)state;
	add(&t, CAFE_NFD, PH_T_DIR);
	add(&t, CAFE_NFD "/x.jpg", PH_T_FILE);
	add(&t, "plain.jpg", PH_T_FILE);
	add(&t, "bad\xff.jpg", PH_T_FILE);   /* not UTF-8: its own key */
	ph_tree_sort(&t);
	assert_int_equal(ph_names_normalize(&t), 0);
	assert_int_equal(t.nraw, 2);
	e = ph_tree_find(&t, CAFE_NFC "/x.jpg");
	assert_non_null(e);
	assert_string_equal(ph_entry_raw(e), CAFE_NFD "/x.jpg");
	assert_string_equal(ph_entry_dpath(e), CAFE_NFD "/x.jpg");
	e = ph_tree_find(&t, "plain.jpg");
	assert_ptr_equal(ph_entry_raw(e), e->path);
	assert_non_null(ph_tree_find(&t, "bad\xff.jpg"));
	ph_tree_free(&t);
}

/* Pulled from Android (NFC) into a Mac-made folder (NFD): the same files,
 * written under the destination's own names. */
static void
test_nfc_source_nfd_destination(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	struct ph_plan p;
	struct ph_plan_opts po = { 0 };
	const struct ph_entry *e;

	(void)state;
	add(&src, CAFE_NFC, PH_T_DIR);
	add(&src, CAFE_NFC "/old.jpg", PH_T_FILE);
	add(&src, CAFE_NFC "/new.jpg", PH_T_FILE);
	add(&dst, CAFE_NFD, PH_T_DIR);
	add(&dst, CAFE_NFD "/old.jpg", PH_T_FILE);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_names_normalize(&src), 0);
	assert_int_equal(ph_names_normalize(&dst), 0);
	assert_int_equal(ph_names_separate(&src, &dst, 0, count_report, NULL), 0);
	assert_int_equal(ph_names_dest_paths(&src, &dst, 0), 0);
	e = ph_tree_find(&src, CAFE_NFC "/new.jpg");
	assert_string_equal(ph_entry_raw(e), CAFE_NFC "/new.jpg");
	assert_string_equal(ph_entry_dpath(e), CAFE_NFD "/new.jpg");
	e = ph_tree_find(&src, CAFE_NFC "/old.jpg");
	assert_string_equal(ph_entry_dpath(e), CAFE_NFD "/old.jpg");
	assert_int_equal(ph_plan_make(&src, &dst, &po, &p), 0);
	/* Only new.jpg moves: no folder made, old.jpg unchanged. */
	assert_int_equal(p.n, 1);
	assert_int_equal(p.v[0].kind, PH_A_NEW);
	assert_string_equal(src.v[p.v[0].src].path, CAFE_NFC "/new.jpg");
	ph_plan_free(&p);
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* Both forms of one name in the source: the NFC one keeps the name, the
 * other is numbered, the same way every run. */
static void
test_both_forms_in_source(void **state)
{
	struct ph_tree src = { 0 };
	const struct ph_entry *e;

	(void)state;
	reports = 0;
	add(&src, CAFE_NFD ".jpg", PH_T_FILE);
	add(&src, CAFE_NFC ".jpg", PH_T_FILE);
	ph_tree_sort(&src);
	assert_int_equal(ph_names_normalize(&src), 0);
	assert_int_equal(ph_names_separate(&src, NULL, 0, count_report, NULL), 0);
	assert_int_equal(reports, 0);   /* no name changes at the destination */
	e = find_raw(&src, CAFE_NFC ".jpg");
	assert_string_equal(e->path, CAFE_NFC ".jpg");
	e = find_raw(&src, CAFE_NFD ".jpg");
	assert_string_equal(e->path, CAFE_NFC " (2).jpg");
	assert_true(e->flags & PH_E_RENAMED);
	/* A destination that keeps case (and forms) apart: each its own name. */
	assert_int_equal(ph_names_dest_paths(&src, NULL, 0), 0);
	assert_string_equal(ph_entry_dpath(e), CAFE_NFD ".jpg");
	/* One that ignores case: the numbered name, reported. */
	assert_int_equal(ph_names_separate(&src, NULL, 1, count_report, NULL), 0);
	assert_int_equal(ph_names_dest_paths(&src, NULL, 1), 0);
	assert_string_equal(ph_entry_dpath(e), CAFE_NFC " (2).jpg");
	ph_tree_free(&src);
}

/* A destination that ignores case: IMG.jpg and img.jpg both kept (one
 * numbered, past a real "img (2).jpg"), a folder pair too with its
 * contents, and the destination's "PHOTO.JPG" is the source's photo.jpg. */
static void
test_case_insensitive_destination(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };
	const struct ph_entry *e;

	(void)state;
	reports = 0;
	add(&src, "IMG.jpg", PH_T_FILE);
	add(&src, "img.jpg", PH_T_FILE);
	add(&src, "img (2).jpg", PH_T_FILE);
	add(&src, "Album", PH_T_DIR);
	add(&src, "Album/a.jpg", PH_T_FILE);
	add(&src, "album", PH_T_DIR);
	add(&src, "album/a.jpg", PH_T_FILE);
	add(&src, "album/b.jpg", PH_T_FILE);
	add(&src, "photo.jpg", PH_T_FILE);
	add(&dst, "PHOTO.JPG", PH_T_FILE);
	add(&dst, "ALBUM", PH_T_DIR);
	add(&dst, "ALBUM/A.jpg", PH_T_FILE);
	add(&dst, "ALBUM/only-here.jpg", PH_T_FILE);
	add(&dst, "ALBUM/SUB", PH_T_DIR);
	add(&dst, "ALBUM/SUB/z.jpg", PH_T_FILE);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_names_fold_collide(&src), 1);
	assert_int_equal(ph_names_separate(&src, &dst, 1, count_report, NULL), 0);
	assert_int_equal(reports, 2);   /* img.jpg and the album folder */
	assert_string_equal(find_raw(&src, "IMG.jpg")->path, "IMG.jpg");
	assert_string_equal(find_raw(&src, "img.jpg")->path, "img (3).jpg");
	assert_string_equal(find_raw(&src, "img (2).jpg")->path, "img (2).jpg");
	assert_string_equal(find_raw(&src, "album/b.jpg")->path, "album (2)/b.jpg");
	assert_string_equal(find_raw(&src, "album/a.jpg")->path, "album (2)/a.jpg");
	/* Sorted again: found by key. */
	assert_non_null(ph_tree_find(&src, "album (2)/b.jpg"));
	/* The destination's entries take the source's keys. */
	e = ph_tree_find(&dst, "photo.jpg");
	assert_non_null(e);
	assert_string_equal(ph_entry_raw(e), "PHOTO.JPG");
	assert_non_null(ph_tree_find(&dst, "Album/a.jpg"));
	/* and what only the destination has under a folder keeps its folder's. */
	e = ph_tree_find(&dst, "Album/only-here.jpg");
	assert_non_null(e);
	assert_string_equal(ph_entry_raw(e), "ALBUM/only-here.jpg");
	e = ph_tree_find(&dst, "Album/SUB/z.jpg");
	assert_non_null(e);
	assert_string_equal(ph_entry_raw(e), "ALBUM/SUB/z.jpg");
	assert_int_equal(ph_names_dest_paths(&src, &dst, 1), 0);
	assert_string_equal(ph_entry_dpath(ph_tree_find(&src, "photo.jpg")), "PHOTO.JPG");
	assert_string_equal(ph_entry_dpath(ph_tree_find(&src, "Album/a.jpg")), "ALBUM/A.jpg");
	assert_string_equal(ph_entry_dpath(ph_tree_find(&src, "album (2)/b.jpg")),
	                    "album (2)/b.jpg");
	assert_string_equal(ph_entry_raw(ph_tree_find(&src, "album (2)/b.jpg")), "album/b.jpg");
	assert_string_equal(ph_entry_dpath(ph_tree_find(&src, "img (3).jpg")), "img (3).jpg");
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* A case-sensitive destination: nothing renamed, nothing folded. */
static void
test_case_sensitive_destination(void **state)
{
	struct ph_tree src = { 0 }, dst = { 0 };

	(void)state;
	reports = 0;
	add(&src, "IMG.jpg", PH_T_FILE);
	add(&src, "img.jpg", PH_T_FILE);
	add(&dst, "Img.jpg", PH_T_FILE);
	ph_tree_sort(&src);
	ph_tree_sort(&dst);
	assert_int_equal(ph_names_separate(&src, &dst, 0, count_report, NULL), 0);
	assert_int_equal(ph_names_dest_paths(&src, &dst, 0), 0);
	assert_int_equal(reports, 0);
	assert_non_null(ph_tree_find(&src, "img.jpg"));
	assert_non_null(ph_tree_find(&dst, "Img.jpg"));
	assert_string_equal(ph_entry_dpath(ph_tree_find(&src, "img.jpg")), "img.jpg");
	ph_tree_free(&src);
	ph_tree_free(&dst);
}

/* Folded the Unicode way, not only ASCII: Ä and ä collide. */
static void
test_fold_beyond_ascii(void **state)
{
	struct ph_tree src = { 0 };

	(void)state;
	add(&src, "\xc3\x84rger.txt", PH_T_FILE);   /* Ärger */
	add(&src, "\xc3\xa4rger.txt", PH_T_FILE);   /* ärger */
	ph_tree_sort(&src);
	assert_int_equal(ph_names_fold_collide(&src), 1);
	assert_int_equal(ph_names_separate(&src, NULL, 1, NULL, NULL), 0);
	assert_string_equal(find_raw(&src, "\xc3\xa4rger.txt")->path, "\xc3\xa4rger (2).txt");
	ph_tree_free(&src);
}

/* The one builder of a server path from the root and a tree path (the
 * job's and the watcher's poll both use it). */
static void
test_rpath_join(void **state)
{
	static const struct {
		const char *root, *rel, *want;
	} c[] = {
		{ "", "", "/" }, { "", "DCIM/a.jpg", "/DCIM/a.jpg" }, { ".", "", "." },
		{ ".", "x", "./x" }, { "/sdcard/DCIM", "", "/sdcard/DCIM" },
		{ "/sdcard/DCIM", "Camera/b c.jpg", "/sdcard/DCIM/Camera/b c.jpg" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *p = ph_rpath_join(c[i].root, c[i].rel);

		assert_non_null(p);
		assert_string_equal(p, c[i].want);
		free(p);
	}
}

static char dropped[8][64];
static int ndropped;
static void
note_drop(void *arg, const char *raw, const char *why)
{
	(void)arg;
	assert_non_null(why);
	assert_true(ndropped < 8);
	snprintf(dropped[ndropped++], sizeof(dropped[0]), "%s", raw);
}

/* Names a Windows folder cannot hold go with their subtrees; the report
 * names each entry whose own name it is, once. */
static void
test_unholdable_names_are_dropped_with_their_subtrees(void **state)
{
	static const char *const keep[] = { "good", "good/fine.txt", "ok.jpg", "x.y" };
	struct ph_tree t = { 0 };
	size_t i;

	(void)state;
	add(&t, "ok.jpg", PH_T_FILE);
	add(&t, "a:b.jpg", PH_T_FILE);
	add(&t, "CON", PH_T_DIR);
	add(&t, "CON/x.jpg", PH_T_FILE);
	add(&t, "dir.", PH_T_DIR);
	add(&t, "dir./y", PH_T_FILE);
	add(&t, "good", PH_T_DIR);
	add(&t, "good/AUX.txt", PH_T_FILE);
	add(&t, "good/fine.txt", PH_T_FILE);
	add(&t, "x.y", PH_T_FILE);
	ph_tree_sort(&t);
	assert_int_equal(ph_names_any_unholdable(&t), 1);
	ndropped = 0;
	assert_int_equal(ph_names_drop_unholdable(&t, note_drop, NULL), 6);
	assert_int_equal(t.n, 4);
	for (i = 0; i < 4; i++)
		assert_string_equal(t.v[i].path, keep[i]);
	assert_int_equal(ndropped, 4);
	assert_string_equal(dropped[0], "CON");
	assert_string_equal(dropped[1], "a:b.jpg");
	assert_string_equal(dropped[2], "dir.");
	assert_string_equal(dropped[3], "good/AUX.txt");
	assert_int_equal(ph_names_any_unholdable(&t), 0);
	assert_int_equal(ph_names_drop_unholdable(&t, note_drop, NULL), 0);
	ph_tree_free(&t);
}

/* A tree that counts its names as they are added (a remote scan's) gives
 * the same answers as one whose paths are walked: each entry's own name is
 * counted once, a folder's bad name once for its whole subtree, and the
 * drop leaves none. */
static void
test_counted_tree_answers_as_the_walk(void **state)
{
	static const char *const paths[] = { "ok.jpg", "a:b.jpg", "CON", "CON/x.jpg", "dir.",
	                                     "dir./y", "good", "good/AUX.txt", "good/fine.txt" };
	static const uint8_t dir[] = { 0, 0, 1, 0, 1, 0, 1, 0, 0 };
	struct ph_tree c = { 0 }, w = { 0 }, fine = { 0 };
	size_t i;

	(void)state;
	c.count_winnames = 1;
	fine.count_winnames = 1;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		add(&c, paths[i], dir[i] ? PH_T_DIR : PH_T_FILE);
		add(&w, paths[i], dir[i] ? PH_T_DIR : PH_T_FILE);
	}
	add(&fine, "DCIM", PH_T_DIR);
	add(&fine, "DCIM/Camera", PH_T_DIR);
	add(&fine, "DCIM/Camera/IMG_0001.jpg", PH_T_FILE);
	add(&fine, "CONFIG.txt", PH_T_FILE);
	ph_tree_sort(&c);
	ph_tree_sort(&w);
	assert_int_equal(c.nwinbad, 4);  /* a:b.jpg, CON, dir., good/AUX.txt */
	assert_int_equal(fine.nwinbad, 0);
	assert_int_equal(ph_names_any_unholdable(&c), 1);
	assert_int_equal(ph_names_any_unholdable(&w), 1);
	assert_int_equal(ph_names_any_unholdable(&fine), 0);
	ndropped = 0;
	assert_int_equal(ph_names_drop_unholdable(&c, note_drop, NULL), 6);
	assert_int_equal(ndropped, 4);
	assert_int_equal(c.nwinbad, 0);
	assert_int_equal(ph_names_any_unholdable(&c), 0);
	ph_tree_free(&c);
	ph_tree_free(&w);
	ph_tree_free(&fine);
}

/* A local scan's identity digests stay beside their entries while no
 * sort moves them; a sort that does, or a drop, says they no longer do. */
static void
test_tree_ids_follow_their_entries(void **state)
{
	struct ph_tree t = { 0 }, u = { 0 };

	(void)state;
	t.want_ids = 1;
	add(&t, "a", PH_T_DIR);
	add(&t, "a/x.jpg", PH_T_FILE);
	t.ids[1] = ph_tree_ident_sum(7, 1, 1000);
	add(&t, "b.jpg", PH_T_FILE);
	t.ids[2] = ph_tree_ident_sum(8, 1, 1000);
	assert_int_equal(t.ids_ok, 1);
	assert_int_equal(t.ids[0], 0);
	ph_tree_sort(&t);   /* in order already: nothing moves */
	assert_int_equal(t.ids_ok, 1);
	assert_true(t.ids[1] == ph_tree_ident_sum(7, 1, 1000));
	assert_true(t.ids[1] != ph_tree_ident_sum(7, 1, 1001));
	assert_true(t.ids[1] != ph_tree_ident_sum(8, 1, 1000));
	assert_true(ph_tree_ident_sum(0, 0, 0) != 0);
	add(&t, "a.jpg", PH_T_FILE);
	ph_tree_sort(&t);   /* "a.jpg" moves before "b.jpg" */
	assert_int_equal(t.ids_ok, 0);
	ph_tree_free(&t);
	u.want_ids = 1;
	add(&u, "CON", PH_T_FILE);
	add(&u, "ok", PH_T_FILE);
	assert_int_equal(u.ids_ok, 1);
	assert_int_equal(ph_names_drop_unholdable(&u, NULL, NULL), 1);
	assert_int_equal(u.ids_ok, 0);
	ph_tree_free(&u);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nfd_is_keyed_in_nfc),
		cmocka_unit_test(test_unholdable_names_are_dropped_with_their_subtrees),
		cmocka_unit_test(test_counted_tree_answers_as_the_walk),
		cmocka_unit_test(test_tree_ids_follow_their_entries),
		cmocka_unit_test(test_nfc_source_nfd_destination),
		cmocka_unit_test(test_both_forms_in_source),
		cmocka_unit_test(test_case_insensitive_destination),
		cmocka_unit_test(test_case_sensitive_destination),
		cmocka_unit_test(test_fold_beyond_ascii),
		cmocka_unit_test(test_rpath_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
