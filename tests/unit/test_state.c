/* SPDX-License-Identifier: ISC */
/* The sync state store: creation, records, batches, the pair lock, a kill
 * in the middle of a batch, damaged, foreign and newer files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif
#include <cmocka.h>

#include <sqlite3.h>

#include "ctx.h"
#include "state.h"
#include "ut_fs.h"

static char dir[128];

static int
setup(void **state)
{
	(void)state;
	return ut_scratch(dir, sizeof(dir), "phsync-state");
}

static int
teardown(void **state)
{
	(void)state;
	ut_rmtree(dir);
	return 0;
}

static const struct ph_state_key key = { "ssh-ed25519 SHA256:unitTestPhoneKey", "bob", "192.0.2.7",
                                         8022, "/sdcard/DCIM", "/home/b/Pictures", NULL };

/* The database file of key's pair (test_one_run_per_pair leaves another
 * pair's beside it): the one whose meta names key's local folder. */
static void
db_path(char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	out[0] = '\0';
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char p[256];
		sqlite3 *h = NULL;
		sqlite3_stmt *s = NULL;
		int mine = 0;

		if (strlen(de->d_name) != 19 || strcmp(de->d_name + 16, ".db") != 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (sqlite3_open_v2(p, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
		    sqlite3_prepare_v2(h, "SELECT v FROM meta WHERE k = 'local'", -1, &s,
		                       NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
			mine = strcmp((const char *)sqlite3_column_text(s, 0), key.lpath) == 0;
		sqlite3_finalize(s);
		sqlite3_close(h);
		if (mine)
			snprintf(out, len, "%s", p);
	}
	closedir(d);
	assert_true(out[0] != '\0');
}

static void
test_records_survive(void **state)
{
	phsync_ctx *ctx;
	struct ph_state *st;
	struct ph_state_file f = { .lsize = 100, .rsize = 100, .lmtime = 1700000000,
	                             .rmtime = 1700000000 }, g;
	uint8_t hash[16], buf[16];
	struct phsync_stats stats = { 0 };

	(void)state;
	memset(hash, 0xab, sizeof(hash));
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_file_done(st, "DCIM/a.jpg", &f), 0);
	f.hash = hash;
	assert_int_equal(ph_state_file_done(st, "DCIM/b.jpg", &f), 0);
	stats.files_done = 2;
	ph_state_close(st, 0, &stats);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_file_get(st, "DCIM/a.jpg", &g, buf), 1);
	assert_int_equal(g.lsize, 100);
	assert_int_equal(g.rmtime, 1700000000);
	assert_null(g.hash);
	assert_int_equal(ph_state_file_get(st, "DCIM/b.jpg", &g, buf), 1);
	assert_non_null(g.hash);
	assert_memory_equal(g.hash, hash, 16);
	assert_int_equal(ph_state_file_get(st, "DCIM/c.jpg", &g, buf), 0);
	ph_state_close(st, 0, NULL);
	/* --reset-state forgets. */
	assert_int_equal(ph_state_open(ctx, dir, &key, 1, &st), 0);
	assert_int_equal(ph_state_file_get(st, "DCIM/a.jpg", &g, buf), 0);
	ph_state_close(st, 0, NULL);
	phsync_ctx_free(ctx);
}

static void
test_one_run_per_pair(void **state)
{
	phsync_ctx *ctx;
	struct ph_state *st, *st2;
	struct ph_state_key other = key;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st2), PHSYNC_ELOCKED);
	assert_non_null(strstr(phsync_ctx_error(ctx), "in progress"));
	/* Another pair is another lock. */
	other.lpath = "/home/b/Other";
	assert_int_equal(ph_state_open(ctx, dir, &other, 0, &st2), 0);
	ph_state_close(st2, 0, NULL);
	ph_state_close(st, 0, NULL);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st2), 0);
	ph_state_close(st2, 0, NULL);
	phsync_ctx_free(ctx);
}

#ifndef _WIN32
static long
count_files(void)
{
	char path[256];
	sqlite3 *h;
	sqlite3_stmt *s;
	long n = -1;

	db_path(path, sizeof(path));
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	if (sqlite3_prepare_v2(h, "SELECT COUNT(*) FROM files", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return n;
}

/* Killed in the middle of a batch: the committed batch is there, the
 * rest is not, and the store opens cleanly. It needs fork (a child that
 * dies without closing anything): Linux only, not under Wine. */
static void
test_kill_mid_batch(void **state)
{
	phsync_ctx *ctx;
	struct ph_state *st;
	pid_t pid;
	int status, i;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ph_state_file f = { .lsize = 1, .rsize = 1, .lmtime = 2, .rmtime = 2 };
		char path[32];

		if (ph_state_open(ctx, dir, &key, 1, &st) != 0)
			_exit(2);
		for (i = 0; i < 700; i++) {
			snprintf(path, sizeof(path), "f%04d", i);
			if (ph_state_file_done(st, path, &f) != 0)
				_exit(3);
		}
		_exit(0); /* as a kill -9: no flush, no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	ph_state_close(st, 0, NULL);
	assert_int_equal(count_files(), 512);
	phsync_ctx_free(ctx);
}
#endif

struct order {
	char *p[8];
	size_t n;
};

static int
collect_order(void *arg, const char *path, const struct ph_state_file *f)
{
	struct order *o = arg;

	(void)f;
	if (o->n == 8)
		return PHSYNC_ENOMEM;
	o->p[o->n++] = strdup(path);
	return 0;
}

static void
test_damaged_foreign_and_newer_refused(void **state)
{
	phsync_ctx *ctx;
	struct ph_state *st;
	char path[256];
	sqlite3 *h;
	FILE *fp;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 1, &st), 0);
	ph_state_close(st, 0, NULL);
	db_path(path, sizeof(path));
	/* Schema 1 (before block signatures, paths as keys) and schema 2 (paths
	 * as keys) are upgraded in place, rows kept, to records that stream in
	 * the trees' order. */
	for (int v = 1; v <= 2; v++) {
		static const uint8_t sig[3] = { 1, 2, 3 };
		struct ph_state_file f = { .lsize = 1, .rsize = 1, .lmtime = 2, .rmtime = 2,
		                           .sig = sig, .siglen = 3 };
		sqlite3_stmt *q;
		char sql[1024];
		struct order o = { { NULL }, 0 };

		assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
		snprintf(sql, sizeof(sql),
		         "DROP TABLE files; DROP TABLE IF EXISTS partial;"
		         "CREATE TABLE files (path TEXT PRIMARY KEY, lsize INTEGER NOT NULL, "
		         "lmtime INTEGER NOT NULL, rsize INTEGER NOT NULL, rmtime INTEGER NOT NULL, "
		         "hash BLOB%s) WITHOUT ROWID;"
		         "INSERT INTO files (path, lsize, lmtime, rsize, rmtime) VALUES "
		         "('d-b', 1, 1, 1, 1), ('d/x', 2, 2, 2, 2), ('d', 3, 3, 3, 3);"
		         "PRAGMA user_version = %d", v == 1 ? "" : ", sig BLOB", v);
		assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(h);
		/* A dry run reads the old schema as it is, in the same order. */
		assert_int_equal(ph_state_open(ctx, dir, &key, PH_STATE_READONLY, &st), 0);
		assert_int_equal(ph_state_each(st, collect_order, &o), 0);
		ph_state_close(st, 0, NULL);
		assert_int_equal(o.n, 3);
		assert_string_equal(o.p[0], "d");
		assert_string_equal(o.p[1], "d/x");
		assert_string_equal(o.p[2], "d-b");
		for (size_t i = 0; i < o.n; i++)
			free(o.p[i]);
		o.n = 0;
		assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
		assert_int_equal(ph_state_file_done(st, "a", &f), 0);
		assert_int_equal(ph_state_each(st, collect_order, &o), 0);
		ph_state_close(st, 0, NULL);
		/* '/' first: a folder's subtree right after it. */
		assert_int_equal(o.n, 4);
		assert_string_equal(o.p[0], "a");
		assert_string_equal(o.p[1], "d");
		assert_string_equal(o.p[2], "d/x");
		assert_string_equal(o.p[3], "d-b");
		for (size_t i = 0; i < o.n; i++)
			free(o.p[i]);
		assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(h, "SELECT length(sig), rsize, (SELECT "
		                                    "user_version FROM pragma_user_version) FROM "
		                                    "files WHERE path = ?", -1, &q, NULL), SQLITE_OK);
		sqlite3_bind_text(q, 1, "a", -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), 3);
		assert_int_equal(sqlite3_column_int(q, 2), PH_STATE_SCHEMA);
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, "d/x", -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 1), 2);
		sqlite3_finalize(q);
		sqlite3_close(h);
	}
	/* Newer schema. */
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), PHSYNC_EUNSUPPORTED);
	assert_non_null(strstr(phsync_ctx_error(ctx), "newer phsync"));
	/* Another program's database. */
	assert_int_equal(ph_state_open(ctx, dir, &key, 1, &st), 0);
	ph_state_close(st, 0, NULL);
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA application_id = 12345", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), PHSYNC_ECORRUPT);
	assert_non_null(strstr(phsync_ctx_error(ctx), "--reset-state"));
	/* Garbage. */
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("this is not a database, it is a shopping list: eggs, milk, flour\n", fp);
	for (int i = 0; i < 100; i++)
		fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", fp);
	fclose(fp);
	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), PHSYNC_ECORRUPT);
	assert_non_null(strstr(phsync_ctx_error(ctx), "--reset-state"));
	/* The way out. */
	assert_int_equal(ph_state_open(ctx, dir, &key, 1, &st), 0);
	ph_state_close(st, 0, NULL);
	phsync_ctx_free(ctx);
}

struct seen {
	int n;
	char remote[256];
	uint64_t done;
};

static void
on_pair(const struct phsync_pair_info *pi, void *arg)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->remote, sizeof(s->remote), "%s", pi->remote);
	s->done = pi->last_files_done;
}

static void
test_pairs_listed(void **state)
{
	phsync_ctx *ctx;
	struct ph_state *st;
	struct phsync_stats stats = { 0 };
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, 1, &st), 0);
	stats.files_done = 7;
	ph_state_close(st, 0, &stats);
	assert_int_equal(phsync_pairs(ctx, dir, on_pair, &s), 0);
	assert_true(s.n >= 1);
	assert_non_null(strstr(s.remote, "bob@192.0.2.7:8022:/sdcard/DCIM"));
	phsync_ctx_free(ctx);
}

struct bseen {
	int n;
	char p[4][32];
	int64_t seq[4];
};

static int
collect_bfile(void *arg, const char *path, const struct ph_backup_file *f)
{
	struct bseen *b = arg;

	if (b->n < 4) {
		snprintf(b->p[b->n], sizeof(b->p[0]), "%s", path);
		b->seq[b->n] = f->seq;
	}
	b->n++;
	return 0;
}

/* Schema 3 (before backup series) is upgraded to 4 in place with its rows
 * kept; a series advances all or nothing (an aborted archive leaves the
 * series as it was), a full archive forgets what the series held. */
static void
test_schema4_backup_series(void **state)
{
	static const uint8_t h16[16] = { 9 };
	phsync_ctx *ctx;
	struct ph_state *st;
	struct ph_state_file f = { .lsize = 5, .rsize = 5, .lmtime = 6, .rmtime = 6 };
	struct ph_backup_file bf = { 1, 10, 1700000000, 5, 0644, h16, 1 };
	struct ph_backup_rec rec = { 1, (char *)"/b/a-1.tar.zst", 1, 0, 1700000000, 2, 20, 0, 0 };
	struct ph_backup_rec *recs;
	struct bseen b;
	char path[256], id[33], id2[33];
	uint8_t hb[16];
	size_t n;
	sqlite3 *h;
	sqlite3_stmt *q;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, PH_STATE_RESET, &st), 0);
	assert_int_equal(ph_state_file_done(st, "kept/row", &f), 0);
	ph_state_close(st, 0, NULL);
	db_path(path, sizeof(path));
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "DROP TABLE backup_archives; DROP TABLE backup_files; "
	                              "PRAGMA user_version = 3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);

	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_file_get(st, "kept/row", &f, hb), 1);
	assert_int_equal(f.lmtime, 6);
	assert_int_equal(ph_state_series_id(st, id), 0);
	assert_int_equal(strlen(id), 32);
	assert_int_equal(ph_state_series_id(st, id2), 0);
	assert_string_equal(id, id2);
	/* An archive cut before its end: nothing of it stays. */
	assert_int_equal(ph_state_backup_begin(st, 1), 0);
	assert_int_equal(ph_state_backup_put(st, "x", &bf), 0);
	ph_state_backup_abort(st);
	memset(&b, 0, sizeof(b));
	assert_int_equal(ph_state_backup_each(st, collect_bfile, &b), 0);
	assert_int_equal(b.n, 0);
	assert_int_equal(ph_state_backup_list(st, &recs, &n), 0);
	assert_int_equal(n, 0);
	ph_state_backup_recs_free(recs, n);
	/* A full one, then an incremental that forgets a path. */
	assert_int_equal(ph_state_backup_begin(st, 1), 0);
	assert_int_equal(ph_state_backup_put(st, "d/x", &bf), 0);
	assert_int_equal(ph_state_backup_put(st, "d-b", &bf), 0);
	assert_int_equal(ph_state_backup_put(st, "d", &bf), 0);
	assert_int_equal(ph_state_backup_end(st, &rec), 0);
	assert_int_equal(ph_state_backup_begin(st, 0), 0);
	assert_int_equal(ph_state_backup_forget(st, "d-b"), 0);
	bf.seq = 2;
	assert_int_equal(ph_state_backup_put(st, "d/x", &bf), 0);
	rec.seq = 2;
	rec.full = 0;
	rec.base = 1;
	rec.name = (char *)"/b/a-2.tar.zst";
	assert_int_equal(ph_state_backup_end(st, &rec), 0);
	ph_state_close(st, 0, NULL);

	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	memset(&b, 0, sizeof(b));
	assert_int_equal(ph_state_backup_each(st, collect_bfile, &b), 0);
	assert_int_equal(b.n, 2);
	assert_string_equal(b.p[0], "d");
	assert_string_equal(b.p[1], "d/x");
	assert_int_equal(b.seq[0], 1);
	assert_int_equal(b.seq[1], 2);
	assert_int_equal(ph_state_backup_pruned(st, 1), 0);
	assert_int_equal(ph_state_backup_list(st, &recs, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(recs[0].full, 1);
	assert_int_equal(recs[0].pruned, 1);
	assert_int_equal(recs[1].full, 0);
	assert_int_equal(recs[1].base, 1);
	assert_string_equal(recs[1].name, "/b/a-2.tar.zst");
	ph_state_backup_recs_free(recs, n);
	assert_int_equal(ph_state_series_id(st, id2), 0);
	assert_string_equal(id, id2);
	/* A new full archive: the series forgets what it held. */
	assert_int_equal(ph_state_backup_begin(st, 1), 0);
	bf.seq = 3;
	assert_int_equal(ph_state_backup_put(st, "new", &bf), 0);
	rec.seq = 3;
	rec.full = 1;
	rec.base = 0;
	assert_int_equal(ph_state_backup_end(st, &rec), 0);
	memset(&b, 0, sizeof(b));
	assert_int_equal(ph_state_backup_each(st, collect_bfile, &b), 0);
	assert_int_equal(b.n, 1);
	assert_string_equal(b.p[0], "new");
	ph_state_close(st, 0, NULL);

	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "SELECT user_version FROM pragma_user_version", -1,
	                                    &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), PH_STATE_SCHEMA);
	sqlite3_finalize(q);
	sqlite3_close(h);
	phsync_ctx_free(ctx);
}

/* Schema 4 (no hread, no local identity) is upgraded to 5 in place: old
 * rows keep their hash, which is then not known to be the remote's (an
 * offload reads that file whole first), and have no identity; new rows
 * carry both, and the identity comes back with the end of the run that
 * recorded it (the racy-clean reference). */
static int
collect_lid(void *arg, const char *path, const struct ph_state_file *f)
{
	struct ph_state_file *out = arg;

	if (strcmp(path, "new") == 0)
		out[0] = *f;
	else
		out[1] = *f;
	return 0;
}

static void
test_schema5_hread_and_identity(void **state)
{
	static const uint8_t h16[16] = { 7 };
	phsync_ctx *ctx;
	struct ph_state *st;
	struct ph_state_file f = { .lsize = 5, .rsize = 5, .lmtime = 6, .rmtime = 6,
	                             .hash = h16, .hread = 1 }, seen[2];
	char path[256];
	uint8_t hb[16];
	sqlite3 *h;
	time_t t0 = time(NULL);

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_state_open(ctx, dir, &key, PH_STATE_RESET, &st), 0);
	ph_state_close(st, 0, NULL);
	db_path(path, sizeof(path));
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "DROP TABLE files; CREATE TABLE files (k TEXT PRIMARY "
	                              "KEY, path TEXT AS (replace(k, char(1), '/')) VIRTUAL, "
	                              "lsize INTEGER NOT NULL, lmtime INTEGER NOT NULL, rsize "
	                              "INTEGER NOT NULL, rmtime INTEGER NOT NULL, hash BLOB, sig "
	                              "BLOB) WITHOUT ROWID; INSERT INTO files (k, lsize, lmtime, "
	                              "rsize, rmtime, hash) VALUES ('old', 1, 2, 1, 2, "
	                              "zeroblob(16)); PRAGMA user_version = 4", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(h);
	/* A dry run reads schema 4 as it is. */
	assert_int_equal(ph_state_open(ctx, dir, &key, PH_STATE_READONLY, &st), 0);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(ph_state_each(st, collect_lid, seen), 0);
	assert_int_equal(seen[1].lsize, 1);
	assert_int_equal(seen[1].has_lid, 0);
	ph_state_close(st, 0, NULL);

	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_file_get(st, "old", &f, hb), 1);
	assert_non_null(f.hash);
	assert_int_equal(f.hread, 0);
	f.hash = h16;
	f.hread = 1;
	f.has_lid = 1;
	f.lctime = 123456789012345678LL;
	f.lino = 42;
	f.ldev = 7;
	assert_int_equal(ph_state_file_done(st, "new", &f), 0);
	/* Read back in this run: the run has not ended (racy). */
	memset(seen, 0, sizeof(seen));
	assert_int_equal(ph_state_each(st, collect_lid, seen), 0);
	assert_int_equal(seen[0].has_lid, 1);
	assert_int_equal(seen[0].lref, 0);
	assert_int_equal(seen[1].has_lid, 0);
	ph_state_close(st, 0, NULL);

	assert_int_equal(ph_state_open(ctx, dir, &key, 0, &st), 0);
	assert_int_equal(ph_state_file_get(st, "new", &f, hb), 1);
	assert_int_equal(f.hread, 1);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(ph_state_each(st, collect_lid, seen), 0);
	assert_int_equal(seen[0].has_lid, 1);
	assert_true(seen[0].lctime == 123456789012345678LL);
	assert_int_equal(seen[0].lino, 42);
	assert_int_equal(seen[0].ldev, 7);
	assert_true(seen[0].lref >= (int64_t)t0 * 1000000000);
	assert_true(seen[0].lref <= (int64_t)time(NULL) * 1000000000);
	ph_state_close(st, 0, NULL);
	phsync_ctx_free(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_survive),
		cmocka_unit_test(test_one_run_per_pair),
#ifndef _WIN32
		cmocka_unit_test(test_kill_mid_batch),
#endif
		cmocka_unit_test(test_damaged_foreign_and_newer_refused),
		cmocka_unit_test(test_pairs_listed),
		cmocka_unit_test(test_schema4_backup_series),
		cmocka_unit_test(test_schema5_hread_and_identity),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
