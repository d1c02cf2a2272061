/* SPDX-License-Identifier: ISC */
/* The sync state's common part: a SQLite store per sync pair, locked while
 * a run uses it: the state folder, the lock, the schema and its
 * migrations, open, commit and close, and the list of pairs. The stores'
 * rows are in records.c (sync records) and series.c (a backup series);
 * memo.c keeps the no-helper memo. See state.h; docs/ARCHITECTURE.md says
 * why WAL and synchronous=NORMAL. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "ctx.h"
#include "pairid.h"
#include "pfs.h"
#include "statedb.h"

#define APP_ID PH_PAIRID_APP_ID

/* The files table, keyed by k: the path with each '/' as char(1), so that
 * the key's byte order is the trees' (a folder's subtree right after it):
 * the records stream out in the order the planner merges them, with no
 * sort and no second copy of the path (path is computed, not stored). */
#define FILES_TABLE(name) \
	"CREATE TABLE " name " (" \
	"  k TEXT PRIMARY KEY," \
	"  path TEXT AS (replace(k, char(1), '/')) VIRTUAL," \
	"  lsize INTEGER NOT NULL, lmtime INTEGER NOT NULL," \
	"  rsize INTEGER NOT NULL, rmtime INTEGER NOT NULL," \
	"  hash BLOB, sig BLOB, " FILES_COLS5 ") WITHOUT ROWID"

/* Schema 5: hread (the hash is of the remote path's bytes, read whole)
 * and the local file's identity as git's index keeps it (ctime in ns,
 * inode, device) with the run that recorded it (racy-clean rule). */
#define FILES_COLS5 "hread INTEGER, lctime INTEGER, lino INTEGER, ldev INTEGER, lrun INTEGER"

/* Schema 4: a backup series (src/backup/): the archives it made, and what
 * the series holds as of its last archive (each path with the archive that
 * holds its current bytes). */
#define BACKUP_TABLES \
	"CREATE TABLE IF NOT EXISTS backup_archives (" \
	"  seq INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL," \
	"  base INTEGER, created INTEGER NOT NULL, files INTEGER NOT NULL," \
	"  bytes INTEGER NOT NULL, deleted INTEGER NOT NULL," \
	"  pruned INTEGER NOT NULL DEFAULT 0);" \
	"CREATE TABLE IF NOT EXISTS backup_files (" \
	"  k TEXT PRIMARY KEY, type INTEGER NOT NULL, size INTEGER NOT NULL," \
	"  mtime INTEGER NOT NULL, nsec INTEGER NOT NULL, mode INTEGER NOT NULL," \
	"  hash BLOB, seq INTEGER NOT NULL) WITHOUT ROWID;"

static const char schema[] =
	"CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;"
	FILES_TABLE("files") ";"
	"CREATE TABLE IF NOT EXISTS partial ("
	"  path TEXT PRIMARY KEY, tmp TEXT NOT NULL, size INTEGER NOT NULL,"
	"  mtime INTEGER NOT NULL, have INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY, started INTEGER NOT NULL, ended INTEGER,"
	"  result INTEGER, files_done INTEGER, files_failed INTEGER, bytes INTEGER);"
	BACKUP_TABLES;

static int
pragma_int(struct ph_state *st, const char *sql, int64_t *v)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	rc = sqlite3_step(s);
	*v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static void
key_paths(const char *dir, const char *id, char *db, char *lock, size_t len)
{
	snprintf(db, len, "%s/%s.db", dir, id);
	snprintf(lock, len, "%s/%s.lock", dir, id);
}

/* 1 when the files table has schema 5's columns, 0 when not, or < 0. */
static int
has_lrun(struct ph_state *st)
{
	sqlite3_stmt *s = NULL;
	int r, found = 0;

	if (sqlite3_prepare_v2(st->db, "SELECT name FROM pragma_table_info('files')", -1, &s,
	                       NULL) != SQLITE_OK)
		return ph_statedb_err(st, "reading the files table's columns");
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(s, 0);

		found |= n != NULL && strcmp(n, "lrun") == 0;
	}
	sqlite3_finalize(s);
	return r == SQLITE_DONE ? found : ph_statedb_err(st, "reading the files table's columns");
}

/* The partial table, as schemas 1 and 2 lacked it. */
#define PARTIAL_TABLE \
	"CREATE TABLE IF NOT EXISTS partial (path TEXT PRIMARY KEY, " \
	"tmp TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT " \
	"NULL, have INTEGER NOT NULL) WITHOUT ROWID"

/* The upgrades of an older schema, one transaction per step, each ending
 * on the version it makes (NULL-terminated). Schema 4 to 5 is up_to_5. */
static const char *const up_to_2[] = {
	/* Schema 1 (no block signatures): one column more. */
	"ALTER TABLE files ADD COLUMN sig BLOB",
	PARTIAL_TABLE,
	"PRAGMA user_version = 2",
	NULL
};
static const char *const up_to_3[] = {
	/* Schema 2 kept the path itself as the key (another order):
	 * rewritten once. */
	PARTIAL_TABLE,
	FILES_TABLE("files3"),
	"INSERT INTO files3 (k, lsize, lmtime, rsize, rmtime, hash, sig) "
	"SELECT replace(path, '/', char(1)), lsize, lmtime, rsize, "
	"rmtime, hash, sig FROM files",
	"DROP TABLE files",
	"ALTER TABLE files3 RENAME TO files",
	"PRAGMA user_version = 3",
	NULL
};
static const char *const up_to_4[] = {
	/* Schema 3 had no backup series: two tables more. */
	BACKUP_TABLES,
	"PRAGMA user_version = 4",
	NULL
};

/* Runs the statements of sql (up to its NULL) in one transaction, all or
 * nothing. */
static int
txn(struct ph_state *st, const char *const *sql)
{
	int rc;

	if ((rc = ph_statedb_exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	for (; *sql != NULL; sql++)
		if ((rc = ph_statedb_exec(st, *sql)) != 0)
			goto fail;
	if ((rc = ph_statedb_exec(st, "COMMIT")) == 0)
		return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Schema 4 had no hread and no local identity: five columns more (a files
 * table rebuilt from schema 2 by up_to_3 has them already). Old rows get
 * NULL: a hash not known to be the remote's (an offload reads that file
 * whole first) and no identity (size and time alone, as before, until the
 * file is recorded again). */
static int
up_to_5(struct ph_state *st)
{
	static const char *const cols[] = {
		"ALTER TABLE files ADD COLUMN hread INTEGER",
		"ALTER TABLE files ADD COLUMN lctime INTEGER",
		"ALTER TABLE files ADD COLUMN lino INTEGER",
		"ALTER TABLE files ADD COLUMN ldev INTEGER",
		"ALTER TABLE files ADD COLUMN lrun INTEGER",
		NULL
	};
	const char *const *c;
	int rc;

	if ((rc = ph_statedb_exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	if ((rc = has_lrun(st)) < 0)
		goto fail;
	for (c = cols; rc == 0 && *c != NULL; c++)
		if ((rc = ph_statedb_exec(st, *c)) != 0)
			goto fail;
	if ((rc = ph_statedb_exec(st, "PRAGMA user_version = 5")) != 0 ||
	    (rc = ph_statedb_exec(st, "COMMIT")) != 0)
		goto fail;
	return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Brings a store of schema ver (ours) up to PH_STATE_SCHEMA, step by step. */
static int
migrate(struct ph_state *st, int64_t ver)
{
	static const char *const *const steps[] = { NULL, up_to_2, up_to_3, up_to_4 };
	int rc;

	for (; ver >= 1 && ver <= 3; ver++)
		if ((rc = txn(st, steps[ver])) != 0)
			return rc;
	return ver == 4 ? up_to_5(st) : 0;
}

/* Makes a new, empty file ours: the schema, its version, the pair. */
static int
create(struct ph_state *st, const char *remote, const char *local)
{
	char sql[128];
	int rc;

	if ((rc = ph_statedb_exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d",
	         APP_ID, PH_STATE_SCHEMA);
	if ((rc = ph_statedb_exec(st, schema)) != 0 || (rc = ph_statedb_exec(st, sql)) != 0 ||
	    (rc = ph_statedb_meta_put(st, "remote", remote)) != 0 ||
	    (rc = ph_statedb_meta_put(st, "local", local)) != 0 ||
	    (rc = ph_statedb_exec(st, "COMMIT")) != 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return 0;
}

/* Checks the file is ours and of a schema we know; upgrades an older one,
 * creates it if new. */
static int
setup(struct ph_state *st, const char *remote, const char *local)
{
	int64_t app = 0, ver = 0, tables = 0;
	int rc;

	sqlite3_busy_timeout(st->db, PH_STATEDB_BUSY_MS);
	if (pragma_int(st, "PRAGMA application_id", &app) != 0 ||
	    pragma_int(st, "PRAGMA user_version", &ver) != 0)
		return ph_statedb_err(st, "reading its header");
	if (app != APP_ID && pragma_int(st, "SELECT COUNT(*) FROM sqlite_master", &tables) != 0)
		return ph_statedb_err(st, "reading its header");
	/* Another program's database (another application_id, or none and
	 * tables or a version of its own): refused in one line, never set up
	 * over. Only an empty file is made ours. */
	if (app != APP_ID && (app != 0 || ver != 0 || tables > 0))
		return ph_err(st->ctx, PHSYNC_ECORRUPT, "%s is not a phsync state file; move it "
		              "away, or run again with --reset-state to replace it", st->path);
	if (ver > PH_STATE_SCHEMA)
		return ph_err(st->ctx, PHSYNC_EUNSUPPORTED, "the sync state %s was written by a "
		              "newer phsync (schema %lld; this one knows %d): use that version, or "
		              "--reset-state to start it over", st->path, (long long)ver,
		              PH_STATE_SCHEMA);
	if (st->readonly) {
		st->legacy = app == APP_ID && ver < 3;
		st->nolid = app == APP_ID && ver < 5;
		return 0;
	}
	/* WAL: readers (phsync status) never block the run; NORMAL: a power cut
	 * may lose the last transactions, never the file's consistency, and a
	 * lost row only makes the state claim less. */
	if ((rc = ph_statedb_exec(st, "PRAGMA journal_mode = WAL")) != 0 ||
	    (rc = ph_statedb_exec(st, "PRAGMA synchronous = NORMAL")) != 0)
		return rc;
	if (app == APP_ID)
		return migrate(st, ver);
	if (app == 0 && ver == 0)
		return create(st, remote, local);
	return 0;
}

const char *
ph_state_moved_from(const struct ph_state *st)
{
	return st != NULL && st->moved_from[0] != '\0' ? st->moved_from : NULL;
}

/* Where a pair's store lies: the state folder, the file and its lock
 * under the pair's id, the id an older phsync gave it (by address), and
 * the remote as the store records it. */
struct where {
	char sdir[PATH_MAX], db[PATH_MAX + 32], lock[PATH_MAX + 32], id[17], legacy[17];
	char remote[PATH_MAX + 512];
};

/* Frees an unfinished handle: its statements, database and lock. */
static void
discard(struct ph_state *st)
{
	ph_statedb_records_finalize(st);
	sqlite3_close(st->db);
	if (st->lockfd >= 0)
		ph_close(st->lockfd);
	free(st);
}

/* A dry run's open: reads what the last run left (a state an older phsync
 * named by the address too, without taking it over); with --reset-state,
 * or with nothing there, *out stays NULL and it plans as a first contact.
 * st is used up. */
static int
open_ro(struct ph_state *st, struct where *w, const struct ph_state_key *key, int reset,
        struct ph_state **out)
{
	int use_legacy = 0, rc = 0;

	if (!reset && !ph_statedb_exists(w->db) && strcmp(w->id, w->legacy) != 0) {
		key_paths(w->sdir, w->legacy, w->db, w->lock, sizeof(w->db));
		snprintf(st->path, sizeof(st->path), "%s", w->db);
		use_legacy = 1;
	}
	if (reset || !ph_statedb_exists(w->db)) {
		discard(st);
		return 0;
	}
	if (sqlite3_open_v2(w->db, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK || (rc = setup(st, w->remote, key->lpath)) != 0) {
		rc = st->db ? (rc ? rc : ph_statedb_err(st, "opening")) :
		     ph_err(st->ctx, PHSYNC_ENOMEM, "cannot open %s", w->db);
		goto fail;
	}
	if (use_legacy && ph_pairid_hostkey_ok(st->db, key->hostkey) != 1) {
		/* another phone's, at the address this one has now */
		discard(st);
		return 0;
	}
	if ((rc = ph_pairid_meta(st->ctx, st->db, st->path, key, w->remote, 1, st->moved_from,
	                         sizeof(st->moved_from))) != 0)
		goto fail;
	*out = st;
	return 0;
fail:
	discard(st);
	return rc;
}

/* A run's open: the pair's lock, a state an older phsync kept under the
 * address adopted, the file (emptied by --reset-state) set up, and this
 * run's row in runs. st is used up. */
static int
open_rw(struct ph_state *st, struct where *w, const struct ph_state_key *key, int reset,
        struct ph_state **out)
{
	sqlite3_stmt *s = NULL;
	int adopted = 0, rc;

	if ((rc = ph_state_lock(st->ctx, w->lock, &st->lockfd)) != 0)
		goto fail;
	/* Nothing under the phone's name yet: a state an older phsync kept
	 * under the address is this pair's when it names no other host key. */
	if (strcmp(w->id, w->legacy) != 0 && !ph_statedb_exists(w->db) &&
	    (rc = ph_pairid_adopt(st->ctx, w->sdir, w->legacy, key->hostkey, w->db,
	                          &adopted)) != 0)
		goto fail;
	if (reset) {
		char side[PATH_MAX + 40];

		ph_unlinkat(PH_AT_CWD, w->db, 0);
		snprintf(side, sizeof(side), "%s-wal", w->db);
		ph_unlinkat(PH_AT_CWD, side, 0);
		snprintf(side, sizeof(side), "%s-shm", w->db);
		ph_unlinkat(PH_AT_CWD, side, 0);
	}
	if (sqlite3_open_v2(w->db, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = st->db ? ph_statedb_err(st, "opening") :
		     ph_err(st->ctx, PHSYNC_ENOMEM, "cannot open %s", w->db);
		goto fail;
	}
	if ((rc = setup(st, w->remote, key->lpath)) != 0 ||
	    (rc = ph_pairid_meta(st->ctx, st->db, st->path, key, w->remote, 0, st->moved_from,
	                         sizeof(st->moved_from))) != 0)
		goto fail;
	if (ph_statedb_records_prepare(st) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "INSERT INTO runs (started) VALUES (?)", -1, &s,
	                       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 1, (int64_t)time(NULL)) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_DONE) {
		rc = ph_statedb_err(st, "preparing");
		goto fail;
	}
	st->run_id = sqlite3_last_insert_rowid(st->db);
	sqlite3_finalize(s);
	*out = st;
	return 0;
fail:
	sqlite3_finalize(s);
	discard(st);
	return rc;
}

int
ph_state_open(phsync_ctx *ctx, const char *dir, const struct ph_state_key *key, int flags,
              struct ph_state **out)
{
	int reset = flags & PH_STATE_RESET, ro = flags & PH_STATE_READONLY;
	struct ph_state *st;
	struct where w;
	int rc;

	*out = NULL;
	if ((rc = ph_statedb_dir(ctx, dir, w.sdir, sizeof(w.sdir), !ro)) != 0)
		return rc;
	snprintf(w.remote, sizeof(w.remote), "%s@%s:%u:%s", key->user ? key->user : "",
	         key->host, key->port, key->rpath);
	if ((rc = ph_pairid_make(key, w.id, w.legacy)) != 0)
		return rc;
	key_paths(w.sdir, w.id, w.db, w.lock, sizeof(w.db));
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return PHSYNC_ENOMEM;
	st->ctx = ctx;
	st->lockfd = -1;
	st->readonly = ro;
	snprintf(st->path, sizeof(st->path), "%s", w.db);
	return ro ? open_ro(st, &w, key, reset, out) : open_rw(st, &w, key, reset, out);
}

void
ph_state_close(struct ph_state *st, int result, const struct phsync_stats *stats)
{
	sqlite3_stmt *s = NULL;

	if (st == NULL)
		return;
	if (st->readonly) {
		sqlite3_close(st->db);
		free(st);
		return;
	}
	ph_state_flush(st);
	if (sqlite3_prepare_v2(st->db, "UPDATE runs SET ended = ?, result = ?, files_done = ?, "
	                       "files_failed = ?, bytes = ? WHERE id = ?", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, (int64_t)time(NULL));
		sqlite3_bind_int(s, 2, result);
		sqlite3_bind_int64(s, 3, stats ? (int64_t)stats->files_done : 0);
		sqlite3_bind_int64(s, 4, stats ? (int64_t)stats->files_failed : 0);
		sqlite3_bind_int64(s, 5, stats ? (int64_t)stats->bytes_committed : 0);
		sqlite3_bind_int64(s, 6, st->run_id);
		sqlite3_step(s);
	}
	sqlite3_finalize(s);
	/* Keep only the last 100 runs. */
	sqlite3_exec(st->db, "DELETE FROM runs WHERE id <= (SELECT MAX(id) - 100 FROM runs);"
	             "PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	ph_statedb_records_finalize(st);
	sqlite3_close(st->db);
	if (st->lockfd >= 0)
		ph_close(st->lockfd);
	free(st);
}

/* Reads one pair's description and last run (read-only; never blocks). */
static int
read_pair(const char *db, const char *lock, phsync_pair_fn fn, void *arg)
{
	struct phsync_pair_info pi;
	sqlite3 *h = NULL;
	sqlite3_stmt *s = NULL;
	char *remote = NULL, *local = NULL, *hostkey = NULL;
	int fd, ok = 0;

	memset(&pi, 0, sizeof(pi));
	if ((fd = ph_openat(PH_AT_CWD, lock, PH_O_RDONLY, 0)) >= 0) {
		pi.running = ph_lock(fd, PH_LOCK_SH | PH_LOCK_NB) != 0;
		ph_close(fd);
	}
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		goto out;
	sqlite3_busy_timeout(h, PH_STATEDB_BUSY_MS);
	if (sqlite3_prepare_v2(h, "SELECT k, v FROM meta", -1, &s, NULL) != SQLITE_OK)
		goto out;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		const char *v = (const char *)sqlite3_column_text(s, 1);

		if (k != NULL && v != NULL && strcmp(k, "remote") == 0 && remote == NULL)
			remote = strdup(v);
		else if (k != NULL && v != NULL && strcmp(k, "local") == 0 && local == NULL)
			local = strdup(v);
		else if (k != NULL && v != NULL && strcmp(k, "hostkey") == 0 && hostkey == NULL)
			hostkey = strdup(v);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (remote == NULL || local == NULL)
		goto out;
	if (sqlite3_prepare_v2(h, "SELECT started, ended, result, files_done, files_failed, bytes "
	                       "FROM runs ORDER BY id DESC LIMIT 1", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		pi.last_start = sqlite3_column_int64(s, 0);
		pi.last_end = sqlite3_column_int64(s, 1);
		pi.last_result = sqlite3_column_int(s, 2);
		pi.last_files_done = (uint64_t)sqlite3_column_int64(s, 3);
		pi.last_files_failed = (uint64_t)sqlite3_column_int64(s, 4);
		pi.last_bytes = (uint64_t)sqlite3_column_int64(s, 5);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(h, "SELECT COUNT(*) FROM files", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		pi.files_known = (uint64_t)sqlite3_column_int64(s, 0);
	pi.remote = remote;
	pi.local = local;
	pi.host_key = hostkey;
	fn(&pi, arg);
	ok = 1;
out:
	sqlite3_finalize(s);
	sqlite3_close(h);
	free(remote);
	free(local);
	free(hostkey);
	return ok;
}

int
phsync_pairs(phsync_ctx *ctx, const char *dir, phsync_pair_fn fn, void *arg)
{
	char sdir[PATH_MAX], db[PATH_MAX + 32], lock[PATH_MAX + 32];
	struct ph_dirent de;
	struct ph_dir *d = NULL;
	int rc, fd;

	if ((rc = ph_statedb_dir(ctx, dir, sdir, sizeof(sdir), 0)) != 0)
		return rc;
	if ((fd = ph_dir_open_path(sdir)) < 0 || (rc = ph_dir_list(fd, &d)) != 0) {
		rc = fd < 0 ? fd : rc;
		if (fd >= 0)
			ph_close(fd);
		return rc == -ENOENT ? 0 :
		       ph_err(ctx, ph_err_from_errno(-rc), "%s: %s", sdir, strerror(-rc));
	}
	/* A name the listing cannot give (-EILSEQ on Windows) is no pair's. */
	while ((rc = ph_dir_read(d, &de)) != 0) {
		size_t n;
		char id[24];

		if (rc == -EILSEQ)
			continue;
		if (rc < 0)
			break;
		n = strlen(de.name);
		if (n != 19 || strcmp(de.name + 16, ".db") != 0)
			continue;
		memcpy(id, de.name, 16);
		id[16] = '\0';
		key_paths(sdir, id, db, lock, sizeof(db));
		read_pair(db, lock, fn, arg);
	}
	ph_dir_end(d);
	ph_close(fd);
	return 0;
}
