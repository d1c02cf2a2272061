/* SPDX-License-Identifier: ISC */
/* Which phone a pair is (issue 22, item 8): the state is found by the
 * phone's host key, not its address; a state an older phsync keyed by the
 * address is adopted only when it names no other host key. The names a
 * state row holds are checked before use (item 3, staterow.h), and another
 * program's SQLite file is refused in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "ctx.h"
#include "staterow.h"
#include "pairid.h"
#include "state.h"
#include "tempname.h"
#include "ut_fs.h"

static char dir[128];

static int
setup(void **state)
{
	(void)state;
	return ut_scratch(dir, sizeof(dir), "phsync-pairid");
}

static int
teardown(void **state)
{
	(void)state;
	ut_rmtree(dir);
	return 0;
}

static void
clear_dir(void)
{
	ut_clear(dir);
}

static int
count_dbs(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strlen(de->d_name) == 19 && strcmp(de->d_name + 16, ".db") == 0;
	closedir(d);
	return n;
}

static const struct ph_state_key phone = { "ssh-ed25519 SHA256:phoneOne", "bob", "192.0.2.7",
                                           8022, "/sdcard/DCIM", "/home/b/Pictures", NULL };

static void
put_one(phsync_ctx *ctx, const struct ph_state_key *k)
{
	struct ph_state_file f;

	memset(&f, 0, sizeof(f));
	f.lsize = f.rsize = 1;
	f.lmtime = f.rmtime = 2;
	struct ph_state *st;

	assert_int_equal(ph_state_open(ctx, dir, k, 0, &st), 0);
	assert_int_equal(ph_state_file_done(st, "a.jpg", &f), 0);
	ph_state_close(st, 0, NULL);
}

/* 1 when k's state knows a.jpg; *moved gets ph_state_moved_from's answer. */
static int
knows(phsync_ctx *ctx, const struct ph_state_key *k, char *moved, size_t len)
{
	struct ph_state_file g;
	struct ph_state *st;
	uint8_t buf[16];
	int r;

	assert_int_equal(ph_state_open(ctx, dir, k, 0, &st), 0);
	r = ph_state_file_get(st, "a.jpg", &g, buf);
	if (moved != NULL)
		snprintf(moved, len, "%s", ph_state_moved_from(st) ? ph_state_moved_from(st) : "");
	ph_state_close(st, 0, NULL);
	return r;
}

static void
test_new_address_same_pair(void **state)
{
	struct ph_state_key moved = phone, stranger = phone, user2 = phone;
	char was[128];
	phsync_ctx *ctx;

	(void)state;
	clear_dir();
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	put_one(ctx, &phone);
	/* DHCP gave the phone another address, the app another port. */
	moved.host = "192.0.2.99";
	moved.port = 2222;
	assert_int_equal(knows(ctx, &moved, was, sizeof(was)), 1);
	assert_string_equal(was, "bob@192.0.2.7:8022");
	/* Said once: the new address is recorded. */
	assert_int_equal(knows(ctx, &moved, was, sizeof(was)), 1);
	assert_string_equal(was, "");
	assert_int_equal(count_dbs(), 1);
	/* Another phone at the old address is another pair, and so is another
	 * login on the same phone. */
	stranger.hostkey = "ssh-ed25519 SHA256:phoneTwo";
	assert_int_equal(knows(ctx, &stranger, NULL, 0), 0);
	user2.user = "alice";
	assert_int_equal(knows(ctx, &user2, NULL, 0), 0);
	assert_int_equal(knows(ctx, &phone, was, sizeof(was)), 1);
	assert_string_equal(was, "bob@192.0.2.99:2222");
	phsync_ctx_free(ctx);
}

/* A single file is a pair of its own: never its folders' pair (whose
 * records of the other files would read as gone), never another file's,
 * and no older phsync's state is ever taken for one. */
static void
test_single_file_own_pair(void **state)
{
	struct ph_state_key one = phone, two = phone, bare = phone;
	char id[17], legacy[17], fid[17], flegacy[17], id2[17], legacy2[17];

	(void)state;
	one.single = "x.jpg";
	two.single = "y.jpg";
	assert_int_equal(ph_pairid_make(&phone, fid, flegacy), 0);
	assert_int_equal(ph_pairid_make(&one, id, legacy), 0);
	assert_int_equal(ph_pairid_make(&two, id2, legacy2), 0);
	assert_string_not_equal(id, fid);
	assert_string_not_equal(legacy, flegacy);
	assert_string_not_equal(id, id2);
	/* The same run again is the same pair. */
	assert_int_equal(ph_pairid_make(&one, id2, legacy2), 0);
	assert_string_equal(id, id2);
	/* Without a host key it is keyed by address, the name still in. */
	bare.hostkey = NULL;
	bare.single = "x.jpg";
	assert_int_equal(ph_pairid_make(&bare, id2, legacy2), 0);
	assert_string_equal(id2, legacy);
}

/* A state an older phsync wrote: named by the address, no host key. */
static void
make_legacy(phsync_ctx *ctx, const char *recorded_hostkey)
{
	struct ph_state_key old = phone;
	char path[256];
	DIR *d;
	struct dirent *de;
	sqlite3 *h;

	old.hostkey = NULL;
	put_one(ctx, &old);
	if (recorded_hostkey == NULL)
		return;
	d = opendir(dir);
	assert_non_null(d);
	path[0] = '\0';
	while ((de = readdir(d)) != NULL)
		if (strlen(de->d_name) == 19 && strcmp(de->d_name + 16, ".db") == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	closedir(d);
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	{
		char sql[256];

		snprintf(sql, sizeof(sql), "INSERT INTO meta (k, v) VALUES ('hostkey', '%s')",
		         recorded_hostkey);
		assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	}
	sqlite3_close(h);
}

static void
test_legacy_state_adopted(void **state)
{
	struct ph_state *st;
	phsync_ctx *ctx;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	/* No host key recorded: this phone's (known_hosts vouched for it at
	 * that address), renamed to the phone's name. */
	clear_dir();
	make_legacy(ctx, NULL);
	assert_int_equal(knows(ctx, &phone, NULL, 0), 1);
	assert_int_equal(count_dbs(), 1);
	/* A dry run reads a legacy state without taking it over. */
	clear_dir();
	make_legacy(ctx, NULL);
	assert_int_equal(ph_state_open(ctx, dir, &phone, PH_STATE_READONLY, &st), 0);
	assert_non_null(st);
	ph_state_close(st, 0, NULL);
	/* This host key recorded: adopted too. */
	clear_dir();
	make_legacy(ctx, phone.hostkey);
	assert_int_equal(knows(ctx, &phone, NULL, 0), 1);
	assert_int_equal(count_dbs(), 1);
	/* Another host key: never adopted, left as it was (dry run too). */
	clear_dir();
	make_legacy(ctx, "ssh-ed25519 SHA256:phoneTwo");
	assert_int_equal(ph_state_open(ctx, dir, &phone, PH_STATE_READONLY, &st), 0);
	assert_null(st);
	assert_int_equal(knows(ctx, &phone, NULL, 0), 0);
	assert_int_equal(count_dbs(), 2);
	phsync_ctx_free(ctx);
}

static void
test_foreign_sqlite_one_line(void **state)
{
	struct ph_state *st;
	phsync_ctx *ctx;
	char path[256];
	sqlite3 *h;
	DIR *d;
	struct dirent *de;

	(void)state;
	clear_dir();
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	put_one(ctx, &phone);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strlen(de->d_name) == 19 && strcmp(de->d_name + 16, ".db") == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	closedir(d);
	/* Another program's database (no application_id) in its place. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "CREATE TABLE contacts (name TEXT, phone TEXT);"
	                                 "CREATE TABLE meta (key TEXT)", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(ph_state_open(ctx, dir, &phone, 0, &st), PHSYNC_ECORRUPT);
	assert_non_null(strstr(phsync_ctx_error(ctx), "is not a phsync state file"));
	assert_null(strchr(phsync_ctx_error(ctx), '\n'));
	assert_null(strstr(phsync_ctx_error(ctx), "CREATE"));
	assert_int_equal(ph_state_open(ctx, dir, &phone, PH_STATE_READONLY, &st), PHSYNC_ECORRUPT);
	phsync_ctx_free(ctx);
}

static void
test_row_names(void **state)
{
	struct ph_temp_owner o = { 1, 2 };
	char tmp[256], longname[300];

	(void)state;
	assert_true(ph_staterow_path_ok("a", 1));
	assert_true(ph_staterow_path_ok("DCIM/Camera/IMG_1.jpg", 21));
	assert_false(ph_staterow_path_ok("", 0));
	assert_false(ph_staterow_path_ok("/etc/passwd", 11));
	assert_false(ph_staterow_path_ok("../victim.txt", 13));
	assert_false(ph_staterow_path_ok("a/../../b", 9));
	assert_false(ph_staterow_path_ok("a//b", 4));
	assert_false(ph_staterow_path_ok("a/", 2));
	assert_false(ph_staterow_path_ok("./a", 3));
	assert_false(ph_staterow_path_ok("a\\..\\b", 6));
	assert_false(ph_staterow_path_ok("a\001b", 3));
	assert_false(ph_staterow_path_ok("a\0b", 3));

	assert_int_equal(ph_temp_name(tmp, sizeof(tmp), "big.mp4", PH_TEMP_PARTIAL, &o), 0);
	assert_true(ph_staterow_temp_of(tmp, strlen(tmp), "big.mp4", 7, PH_TEMP_PARTIAL));
	assert_true(ph_staterow_partial_ok("v/big.mp4", NULL, tmp, PH_TEMP_PARTIAL));
	/* Not that file's, not that kind, not one component, not ours. */
	assert_false(ph_staterow_partial_ok("v/other.mp4", NULL, tmp, PH_TEMP_PARTIAL));
	assert_false(ph_staterow_partial_ok("v/big.mp4", NULL, tmp, PH_TEMP_NEW));
	assert_false(ph_staterow_partial_ok("v/big.mp4", NULL, "../victim.txt", PH_TEMP_PARTIAL));
	assert_false(ph_staterow_partial_ok("../big.mp4", NULL, tmp, PH_TEMP_PARTIAL));
	assert_false(ph_staterow_partial_ok("v/big.mp4", "../big.mp4", tmp, PH_TEMP_PARTIAL));
	tmp[strlen(tmp) - 1] ^= 1;   /* check value off */
	assert_false(ph_staterow_partial_ok("v/big.mp4", NULL, tmp, PH_TEMP_PARTIAL));
	/* Where the file lands this run (dpath) names the temp. */
	assert_int_equal(ph_temp_name(tmp, sizeof(tmp), "Big.mp4", PH_TEMP_NEW, &o), 0);
	assert_true(ph_staterow_partial_ok("v/big.mp4", "v/Big.mp4", tmp, PH_TEMP_NEW));
	assert_false(ph_staterow_partial_ok("v/big.mp4", NULL, tmp, PH_TEMP_NEW));
	/* A long name, cut in the temp name. */
	memset(longname, 'x', 250);
	longname[250] = '\0';
	assert_int_equal(ph_temp_name(tmp, sizeof(tmp), longname, PH_TEMP_PARTIAL, &o), 0);
	assert_true(ph_staterow_temp_of(tmp, strlen(tmp), longname, 250, PH_TEMP_PARTIAL));
	longname[5] = 'y';
	assert_false(ph_staterow_temp_of(tmp, strlen(tmp), longname, 250, PH_TEMP_PARTIAL));
	longname[200] = '\0';   /* not cut: a name that short is carried whole */
	assert_false(ph_staterow_temp_of(tmp, strlen(tmp), longname, 200, PH_TEMP_PARTIAL));

	assert_true(ph_staterow_archive_ok("/b/dcim-1.tar", "/b"));
	assert_true(ph_staterow_archive_ok("/dcim-1.tar", "/"));
	assert_false(ph_staterow_archive_ok("/b/../etc/x", "/b"));
	assert_false(ph_staterow_archive_ok("/b/sub/x.tar", "/b"));
	assert_false(ph_staterow_archive_ok("/bx/x.tar", "/b"));
	assert_false(ph_staterow_archive_ok("/home/u/photo.jpg", "/b"));
	assert_false(ph_staterow_archive_ok("/b/", "/b"));
	/* Windows: the series' folder as its real path names it (a drive),
	 * the archive's name joined with '/' (backup.c); a '\\' in the name is
	 * a separator there, refused as on POSIX. */
#ifdef _WIN32
	assert_true(ph_staterow_archive_ok("Z:\\b/dcim-1.tar", "Z:\\b"));
	assert_true(ph_staterow_archive_ok("C:/b/dcim-1.tar", "C:/b"));
#else
	assert_false(ph_staterow_archive_ok("Z:\\b/dcim-1.tar", "Z:\\b"));
#endif
	assert_false(ph_staterow_archive_ok("Z:\\b/..\\x.tar", "Z:\\b"));
	assert_false(ph_staterow_archive_ok("Z:\\bx/x.tar", "Z:\\b"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_address_same_pair),
		cmocka_unit_test(test_single_file_own_pair),
		cmocka_unit_test(test_legacy_state_adopted),
		cmocka_unit_test(test_foreign_sqlite_one_line),
		cmocka_unit_test(test_row_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
