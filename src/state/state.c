/* SPDX-License-Identifier: ISC */
/* The sync state: a SQLite store per sync pair, locked while a run uses it.
 * See state.h; docs/ARCHITECTURE.md says why WAL and synchronous=NORMAL. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <xxhash.h>

#include "ctx.h"
#include "pairid.h"
#include "state.h"

#define APP_ID PH_PAIRID_APP_ID
#define BATCH 512             /* rows per transaction */
#define BUSY_MS 5000

struct ph_state {
	phsync_ctx *ctx;
	sqlite3 *db;
	sqlite3_stmt *put, *get, *del;
	int lockfd;
	int in_txn;
	int readonly;
	int legacy;               /* read-only over a schema before 3 (no k) */
	int nolid;                /* read-only over a schema before 5 (no hread,
	                             no local identity) */
	size_t pending;
	int64_t run_id;
	char path[PATH_MAX + 32]; /* the database file, for messages */
	char moved_from[600];     /* ph_state_moved_from, "" when not moved */
};

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

/* A path's key and a key's path: '/' and char(1) swapped, so the mapping
 * is its own inverse. A key holding a '/' (no phsync writes one) reads as a
 * path with a char(1) in it, which the callers' name check refuses, and
 * ph_state_file_forget of that path removes exactly that row. */
static void
swap_sep(char *out, const char *in, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = in[i] == '/' ? '\1' : in[i] == '\1' ? '/' : in[i];
	out[n] = '\0';
}

/* Binds path as a files key (each '/' as char(1)). */
static int
bind_key(sqlite3_stmt *s, int i, const char *path)
{
	size_t n = strlen(path);
	char *k = malloc(n + 1);

	if (k == NULL)
		return SQLITE_NOMEM;
	swap_sep(k, path, n);
	return sqlite3_bind_text(s, i, k, (int)n, free);
}

/* The state folder: dir, or $XDG_STATE_HOME/phsync, or ~/.local/state/phsync. */
static int
state_dir(phsync_ctx *ctx, const char *dir, char *out, size_t len, int create)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *p;

	if (dir != NULL)
		snprintf(out, len, "%s", dir);
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(out, len, "%s/phsync", xdg);
	else if (home != NULL && home[0] == '/')
		snprintf(out, len, "%s/.local/state/phsync", home);
	else
		return ph_err(ctx, PHSYNC_EINVAL, "no place for the sync state: set HOME or "
		              "XDG_STATE_HOME");
	if (!create)
		return 0;
	/* mkdir -p, private: the state names your folders. */
	for (p = out + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(out, 0700) != 0 && errno != EEXIST) {
			int e = errno;

			*p = c;
			return ph_err(ctx, ph_err_from_errno(e), "cannot create the state folder %s: %s",
			              out, strerror(e));
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

static int
db_err(struct ph_state *st, const char *what)
{
	const char *path = st->path;
	int code = sqlite3_errcode(st->db);

	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		return ph_err(st->ctx, PHSYNC_ECORRUPT,
		              "the sync state %s is damaged (%s: %s); run again with "
		              "--reset-state to start it over (nothing else is lost: the next "
		              "run compares files by size and time)", path, what,
		              sqlite3_errmsg(st->db));
	if (code == SQLITE_FULL)
		return ph_err(st->ctx, PHSYNC_ENOSPC, "no space left for the sync state %s", path);
	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		return ph_err(st->ctx, PHSYNC_ELOCKED, "the sync state %s is busy (%s)", path,
		              sqlite3_errmsg(st->db));
	return ph_err(st->ctx, PHSYNC_EIO, "the sync state %s: %s: %s", path, what,
	              sqlite3_errmsg(st->db));
}

static int
exec(struct ph_state *st, const char *sql)
{
	char what[48];
	size_t n = strcspn(sql, "(;");

	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	/* The statement's head only (never a whole schema in one line). */
	snprintf(what, sizeof(what), "%.*s", (int)(n < 40 ? n : 40), sql);
	return db_err(st, what);
}

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

/* Takes the pair's lock (an flock on NAME.lock, which holds the owner's
 * pid for the message). */
int
ph_state_lock(phsync_ctx *ctx, const char *lockpath, int *fdp)
{
	char buf[32];
	int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return ph_err(ctx, ph_err_from_errno(errno), "cannot open %s: %s", lockpath,
		              strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		return ph_err(ctx, PHSYNC_ELOCKED, "another phsync run on this pair is in progress "
		              "(pid %s); wait for it to end, or stop it", buf[0] ? buf : "?");
	}
	snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, strlen(buf), 0) < 0) {
		/* the pid is only for the message */
	}
	*fdp = fd;
	return 0;
}

static void
key_paths(const char *dir, const char *id, char *db, char *lock, size_t len)
{
	snprintf(db, len, "%s/%s.db", dir, id);
	snprintf(lock, len, "%s/%s.lock", dir, id);
}

static int
meta_put(struct ph_state *st, const char *k, const char *v)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", -1, &s,
	                       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(s, 1, k, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, v, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_DONE)
		rc = db_err(st, "writing the pair's description");
	sqlite3_finalize(s);
	return rc;
}

/* 1 when the files table has schema 5's columns, 0 when not, or < 0. */
static int
has_lrun(struct ph_state *st)
{
	sqlite3_stmt *s = NULL;
	int r, found = 0;

	if (sqlite3_prepare_v2(st->db, "SELECT name FROM pragma_table_info('files')", -1, &s,
	                       NULL) != SQLITE_OK)
		return db_err(st, "reading the files table's columns");
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(s, 0);

		found |= n != NULL && strcmp(n, "lrun") == 0;
	}
	sqlite3_finalize(s);
	return r == SQLITE_DONE ? found : db_err(st, "reading the files table's columns");
}

/* Checks the file is ours and of a schema we know; creates it if new. */
static int
setup(struct ph_state *st, const char *remote, const char *local)
{
	int64_t app = 0, ver = 0, tables = 0;
	int rc;

	sqlite3_busy_timeout(st->db, BUSY_MS);
	if (pragma_int(st, "PRAGMA application_id", &app) != 0 ||
	    pragma_int(st, "PRAGMA user_version", &ver) != 0)
		return db_err(st, "reading its header");
	if (app != APP_ID && pragma_int(st, "SELECT COUNT(*) FROM sqlite_master", &tables) != 0)
		return db_err(st, "reading its header");
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
	if ((rc = exec(st, "PRAGMA journal_mode = WAL")) != 0 ||
	    (rc = exec(st, "PRAGMA synchronous = NORMAL")) != 0)
		return rc;
	if (app == APP_ID && ver == 1) {
		/* Schema 1 (no block signatures): one column more. */
		if ((rc = exec(st, "BEGIN IMMEDIATE")) != 0)
			return rc;
		if ((rc = exec(st, "ALTER TABLE files ADD COLUMN sig BLOB")) != 0 ||
		    (rc = exec(st, "CREATE TABLE IF NOT EXISTS partial (path TEXT PRIMARY KEY, "
		                   "tmp TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT "
		                   "NULL, have INTEGER NOT NULL) WITHOUT ROWID")) != 0 ||
		    (rc = exec(st, "PRAGMA user_version = 2")) != 0 ||
		    (rc = exec(st, "COMMIT")) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
		ver = 2; /* and on to 3 */
	}
	if (app == APP_ID && ver == 2) {
		/* Schema 2 kept the path itself as the key (another order):
		 * rewritten once, in one transaction. */
		if ((rc = exec(st, "BEGIN IMMEDIATE")) != 0)
			return rc;
		if ((rc = exec(st, "CREATE TABLE IF NOT EXISTS partial (path TEXT PRIMARY KEY, "
		                   "tmp TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT "
		                   "NULL, have INTEGER NOT NULL) WITHOUT ROWID")) != 0 ||
		    (rc = exec(st, FILES_TABLE("files3"))) != 0 ||
		    (rc = exec(st, "INSERT INTO files3 (k, lsize, lmtime, rsize, rmtime, hash, sig) "
		                   "SELECT replace(path, '/', char(1)), lsize, lmtime, rsize, "
		                   "rmtime, hash, sig FROM files")) != 0 ||
		    (rc = exec(st, "DROP TABLE files")) != 0 ||
		    (rc = exec(st, "ALTER TABLE files3 RENAME TO files")) != 0 ||
		    (rc = exec(st, "PRAGMA user_version = 3")) != 0 ||
		    (rc = exec(st, "COMMIT")) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
		ver = 3; /* and on to 4 */
	}
	if (app == APP_ID && ver == 3) {
		/* Schema 3 had no backup series: two tables more. */
		if ((rc = exec(st, "BEGIN IMMEDIATE")) != 0)
			return rc;
		if ((rc = exec(st, BACKUP_TABLES)) != 0 ||
		    (rc = exec(st, "PRAGMA user_version = 4")) != 0 ||
		    (rc = exec(st, "COMMIT")) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
		ver = 4; /* and on to 5 */
	}
	if (app == APP_ID && ver == 4) {
		/* Schema 4 had no hread and no local identity: five columns more
		 * (a files table rebuilt from schema 2 above has them already).
		 * Old rows get NULL: a hash not known to be the remote's (an
		 * offload reads that file whole first) and no identity (size
		 * and time alone, as before, until the file is recorded again). */
		if ((rc = exec(st, "BEGIN IMMEDIATE")) != 0)
			return rc;
		if ((rc = has_lrun(st)) < 0 ||
		    (rc == 0 && ((rc = exec(st, "ALTER TABLE files ADD COLUMN hread INTEGER")) != 0 ||
		                 (rc = exec(st, "ALTER TABLE files ADD COLUMN lctime INTEGER")) != 0 ||
		                 (rc = exec(st, "ALTER TABLE files ADD COLUMN lino INTEGER")) != 0 ||
		                 (rc = exec(st, "ALTER TABLE files ADD COLUMN ldev INTEGER")) != 0 ||
		                 (rc = exec(st, "ALTER TABLE files ADD COLUMN lrun INTEGER")) != 0)) ||
		    (rc = exec(st, "PRAGMA user_version = 5")) != 0 ||
		    (rc = exec(st, "COMMIT")) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
	}
	if (app == 0 && ver == 0) {
		char sql[128];

		if ((rc = exec(st, "BEGIN IMMEDIATE")) != 0)
			return rc;
		snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d",
		         APP_ID, PH_STATE_SCHEMA);
		if ((rc = exec(st, schema)) != 0 || (rc = exec(st, sql)) != 0 ||
		    (rc = meta_put(st, "remote", remote)) != 0 ||
		    (rc = meta_put(st, "local", local)) != 0 ||
		    (rc = exec(st, "COMMIT")) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
	}
	return 0;
}

const char *
ph_state_moved_from(const struct ph_state *st)
{
	return st != NULL && st->moved_from[0] != '\0' ? st->moved_from : NULL;
}

int
ph_state_open(phsync_ctx *ctx, const char *dir, const struct ph_state_key *key, int flags,
              struct ph_state **out)
{
	int reset = flags & PH_STATE_RESET, ro = flags & PH_STATE_READONLY, adopted = 0;
	int use_legacy = 0;
	char sdir[PATH_MAX], db[PATH_MAX + 32], lock[PATH_MAX + 32], id[17], legacy[17];
	char remote[PATH_MAX + 512];
	struct ph_state *st = NULL;
	sqlite3_stmt *s = NULL;
	int rc;

	*out = NULL;
	if ((rc = state_dir(ctx, dir, sdir, sizeof(sdir), !ro)) != 0)
		return rc;
	snprintf(remote, sizeof(remote), "%s@%s:%u:%s", key->user ? key->user : "", key->host,
	         key->port, key->rpath);
	if ((rc = ph_pairid_make(key, id, legacy)) != 0)
		return rc;
	key_paths(sdir, id, db, lock, sizeof(db));
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return PHSYNC_ENOMEM;
	st->ctx = ctx;
	st->lockfd = -1;
	st->readonly = ro;
	snprintf(st->path, sizeof(st->path), "%s", db);
	if (ro) {
		/* A dry run reads what the last run left (a state an older phsync
		 * named by the address too, without taking it over); with
		 * --reset-state, or with nothing there, it plans as a first
		 * contact. */
		if (!reset && access(db, F_OK) != 0 && strcmp(id, legacy) != 0) {
			key_paths(sdir, legacy, db, lock, sizeof(db));
			snprintf(st->path, sizeof(st->path), "%s", db);
			use_legacy = 1;
		}
		if (reset || access(db, F_OK) != 0) {
			free(st);
			return 0;
		}
		if (sqlite3_open_v2(db, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
		                    NULL) != SQLITE_OK || (rc = setup(st, remote, key->lpath)) != 0) {
			rc = st->db ? (rc ? rc : db_err(st, "opening")) :
			     ph_err(ctx, PHSYNC_ENOMEM, "cannot open %s", db);
			goto fail;
		}
		if (use_legacy && ph_pairid_hostkey_ok(st->db, key->hostkey) != 1) {
			/* another phone's, at the address this one has now */
			sqlite3_close(st->db);
			free(st);
			return 0;
		}
		if ((rc = ph_pairid_meta(ctx, st->db, st->path, key, remote, 1, st->moved_from,
		                         sizeof(st->moved_from))) != 0)
			goto fail;
		*out = st;
		return 0;
	}
	if ((rc = ph_state_lock(ctx, lock, &st->lockfd)) != 0)
		goto fail;
	/* Nothing under the phone's name yet: a state an older phsync kept
	 * under the address is this pair's when it names no other host key. */
	if (strcmp(id, legacy) != 0 && access(db, F_OK) != 0 &&
	    (rc = ph_pairid_adopt(ctx, sdir, legacy, key->hostkey, db, &adopted)) != 0)
		goto fail;
	if (reset) {
		char side[PATH_MAX + 40];

		unlink(db);
		snprintf(side, sizeof(side), "%s-wal", db);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", db);
		unlink(side);
	}
	if (sqlite3_open_v2(db, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = st->db ? db_err(st, "opening") :
		     ph_err(ctx, PHSYNC_ENOMEM, "cannot open %s", db);
		goto fail;
	}
	if ((rc = setup(st, remote, key->lpath)) != 0 ||
	    (rc = ph_pairid_meta(ctx, st->db, st->path, key, remote, 0, st->moved_from,
	                         sizeof(st->moved_from))) != 0)
		goto fail;
	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO files (k, lsize, lmtime, rsize, "
	                       "rmtime, hash, sig, hread, lctime, lino, ldev, lrun) VALUES "
	                       "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &st->put,
	                       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "SELECT lsize, lmtime, rsize, rmtime, hash, sig, hread "
	                       "FROM files WHERE k = ?", -1, &st->get, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "DELETE FROM files WHERE k = ?", -1, &st->del,
	                       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "INSERT INTO runs (started) VALUES (?)", -1, &s,
	                       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 1, (int64_t)time(NULL)) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_DONE) {
		rc = db_err(st, "preparing");
		goto fail;
	}
	st->run_id = sqlite3_last_insert_rowid(st->db);
	sqlite3_finalize(s);
	*out = st;
	return 0;
fail:
	sqlite3_finalize(s);
	sqlite3_finalize(st->put);
	sqlite3_finalize(st->get);
	sqlite3_finalize(st->del);
	sqlite3_close(st->db);
	if (st->lockfd >= 0)
		close(st->lockfd);
	free(st);
	return rc;
}

int
ph_state_flush(struct ph_state *st)
{
	if (!st->in_txn)
		return 0;
	st->in_txn = 0;
	st->pending = 0;
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int rc = db_err(st, "committing");

		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return 0;
}

/* Opens the batch's transaction if none is open. */
static int
batch_begin(struct ph_state *st)
{
	if (st->in_txn)
		return 0;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(st, "starting a transaction");
	st->in_txn = 1;
	return 0;
}

/* Steps a bound row statement, resets it, and commits every BATCH rows. */
static int
batch_step(struct ph_state *st, sqlite3_stmt *s, const char *what, int rc)
{
	if (rc == 0 && sqlite3_step(s) != SQLITE_DONE)
		rc = 1;
	if (rc != 0)
		rc = db_err(st, what);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc == 0 && ++st->pending >= BATCH)
		rc = ph_state_flush(st);
	return rc;
}

int
ph_state_file_done(struct ph_state *st, const char *path, const struct ph_state_file *f)
{
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	sqlite3_reset(st->put);
	rc = bind_key(st->put, 1, path) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 2, (int64_t)f->lsize) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 3, f->lmtime) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 4, (int64_t)f->rsize) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 5, f->rmtime) != SQLITE_OK ||
	     (f->hash ? sqlite3_bind_blob(st->put, 6, f->hash, 16, SQLITE_STATIC) :
	                sqlite3_bind_null(st->put, 6)) != SQLITE_OK ||
	     (f->sig ? sqlite3_bind_blob64(st->put, 7, f->sig, f->siglen, SQLITE_STATIC) :
	               sqlite3_bind_null(st->put, 7)) != SQLITE_OK ||
	     sqlite3_bind_int(st->put, 8, f->hash != NULL && f->hread) != SQLITE_OK;
	if (rc == 0 && f->has_lid)
		rc = sqlite3_bind_int64(st->put, 9, f->lctime) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 10, (int64_t)f->lino) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 11, (int64_t)f->ldev) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 12, st->run_id) != SQLITE_OK;
	return batch_step(st, st->put, "recording a file", rc);
}

int
ph_state_file_forget(struct ph_state *st, const char *path)
{
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	sqlite3_reset(st->del);
	rc = bind_key(st->del, 1, path) != SQLITE_OK;
	return batch_step(st, st->del, "forgetting a file", rc);
}

int
ph_state_partial_put(struct ph_state *st, const char *path, const struct ph_partial *pa)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO partial (path, tmp, size, mtime, "
	                        "have) VALUES (?, ?, ?, ?, ?)", -1, &s, NULL) != SQLITE_OK ||
	     sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_text(s, 2, pa->tmp, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 3, (int64_t)pa->size) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 4, pa->mtime) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, (int64_t)pa->have) != SQLITE_OK;
	rc = batch_step(st, s, "recording a partial file", rc);
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_partial_drop(struct ph_state *st, const char *path)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	rc = sqlite3_prepare_v2(st->db, "DELETE FROM partial WHERE path = ?", -1, &s,
	                        NULL) != SQLITE_OK ||
	     sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC) != SQLITE_OK;
	rc = batch_step(st, s, "forgetting a partial file", rc);
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_partial_load(struct ph_state *st, struct ph_partial **out, size_t *n)
{
	sqlite3_stmt *s = NULL;
	struct ph_partial *v = NULL;
	size_t cnt = 0;
	int r, rc = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db, "SELECT path, tmp, size, mtime, have FROM partial", -1, &s,
	                       NULL) != SQLITE_OK)
		return st->readonly ? 0 : db_err(st, "reading partial files"); /* schema 1 */
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_partial *nv = realloc(v, (cnt + 1) * sizeof(*v));
		const char *p = (const char *)sqlite3_column_text(s, 0);
		const char *t = (const char *)sqlite3_column_text(s, 1);

		if (nv == NULL) {
			rc = PHSYNC_ENOMEM;
			break;
		}
		v = nv;
		if (p == NULL || t == NULL)
			continue;
		v[cnt].path = strdup(p);
		v[cnt].tmp = strdup(t);
		v[cnt].size = (uint64_t)sqlite3_column_int64(s, 2);
		v[cnt].mtime = sqlite3_column_int64(s, 3);
		v[cnt].have = (uint64_t)sqlite3_column_int64(s, 4);
		v[cnt].ready = 0;
		if (v[cnt].path == NULL || v[cnt].tmp == NULL) {
			free(v[cnt].path);
			free(v[cnt].tmp);
			rc = PHSYNC_ENOMEM;
			break;
		}
		cnt++;
	}
	if (rc == 0 && r != SQLITE_DONE && r != SQLITE_ROW)
		rc = db_err(st, "reading partial files");
	sqlite3_finalize(s);
	*out = v;
	*n = cnt;
	return rc;
}

void
ph_state_partials_free(struct ph_partial *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].tmp);
	}
	free(v);
}

int
ph_state_file_get(struct ph_state *st, const char *path, struct ph_state_file *f,
                  uint8_t hashbuf[16])
{
	return ph_state_file_get_sig(st, path, f, hashbuf, NULL);
}

int
ph_state_file_get_sig(struct ph_state *st, const char *path, struct ph_state_file *f,
                      uint8_t hashbuf[16], uint8_t **sig)
{
	int rc;

	if (sig != NULL)
		*sig = NULL;

	if (st->get == NULL)
		return 0;   /* read-only: no statements (nothing looked up) */
	sqlite3_reset(st->get);
	if (bind_key(st->get, 1, path) != SQLITE_OK)
		return db_err(st, "looking a file up");
	rc = sqlite3_step(st->get);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st->get);
		return 0;
	}
	if (rc != SQLITE_ROW) {
		rc = db_err(st, "looking a file up");
		sqlite3_reset(st->get);
		return rc;
	}
	f->lsize = (uint64_t)sqlite3_column_int64(st->get, 0);
	f->lmtime = sqlite3_column_int64(st->get, 1);
	f->rsize = (uint64_t)sqlite3_column_int64(st->get, 2);
	f->rmtime = sqlite3_column_int64(st->get, 3);
	f->hash = NULL;
	f->sig = NULL;
	f->siglen = 0;
	f->hread = sqlite3_column_int(st->get, 6) == 1;
	f->has_lid = 0;
	f->has_hash = sqlite3_column_bytes(st->get, 4) == 16;
	f->lctime = f->lref = 0;
	f->lino = f->ldev = 0;
	if (sqlite3_column_bytes(st->get, 4) == 16) {
		memcpy(hashbuf, sqlite3_column_blob(st->get, 4), 16);
		f->hash = hashbuf;
	}
	if (sig != NULL && sqlite3_column_bytes(st->get, 5) > 0) {
		size_t n = (size_t)sqlite3_column_bytes(st->get, 5);

		if ((*sig = malloc(n)) != NULL) {
			memcpy(*sig, sqlite3_column_blob(st->get, 5), n);
			f->sig = *sig;
			f->siglen = n;
		}
	}
	sqlite3_reset(st->get);
	return 1;
}

int
ph_state_each(struct ph_state *st, ph_state_each_fn *fn, void *arg)
{
	sqlite3_stmt *s = NULL;
	char *path = NULL;
	size_t cap = 0;
	int rc = 0, r;

	if ((rc = ph_state_flush(st)) != 0)
		return rc;
	/* lref: the end of the run that recorded the identity; a run trimmed
	 * from runs ended before the oldest kept one started. */
	if (sqlite3_prepare_v2(st->db, st->legacy ?
	                       "SELECT replace(path, '/', char(1)) AS key, lsize, lmtime, rsize, "
	                       "rmtime FROM files ORDER BY key" : st->nolid ?
	                       "SELECT k, lsize, lmtime, rsize, rmtime FROM files ORDER BY k" :
	                       "SELECT k, lsize, lmtime, rsize, rmtime, lctime, lino, ldev, "
	                       "CASE WHEN lrun IS NULL THEN NULL WHEN EXISTS (SELECT 1 FROM runs "
	                       "WHERE id = lrun) THEN (SELECT ended FROM runs WHERE id = lrun) "
	                       "ELSE (SELECT MIN(started) FROM runs) END, length(hash) = 16 "
	                       "FROM files ORDER BY k",
	                       -1, &s, NULL) != SQLITE_OK)
		return db_err(st, "reading");
	while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		size_t n = (size_t)sqlite3_column_bytes(s, 0);
		struct ph_state_file f;

		if (k == NULL || n == 0 || memchr(k, '\0', n) != NULL)
			continue;   /* no path has a NUL: nothing phsync wrote */
		if (n + 1 > cap) {
			char *np = realloc(path, n + 1);

			if (np == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			path = np;
			cap = n + 1;
		}
		swap_sep(path, k, n);
		memset(&f, 0, sizeof(f));
		f.lsize = (uint64_t)sqlite3_column_int64(s, 1);
		f.lmtime = sqlite3_column_int64(s, 2);
		f.rsize = (uint64_t)sqlite3_column_int64(s, 3);
		f.rmtime = sqlite3_column_int64(s, 4);
		f.has_hash = sqlite3_column_count(s) > 9 && sqlite3_column_int(s, 9) == 1;
		if (sqlite3_column_count(s) > 5 && sqlite3_column_type(s, 5) == SQLITE_INTEGER &&
		    sqlite3_column_type(s, 6) == SQLITE_INTEGER &&
		    sqlite3_column_type(s, 7) == SQLITE_INTEGER) {
			f.has_lid = 1;
			f.lctime = sqlite3_column_int64(s, 5);
			f.lino = (uint64_t)sqlite3_column_int64(s, 6);
			f.ldev = (uint64_t)sqlite3_column_int64(s, 7);
			/* runs keeps seconds */
			f.lref = sqlite3_column_type(s, 8) == SQLITE_INTEGER ?
			         sqlite3_column_int64(s, 8) * 1000000000 : 0;
		}
		rc = fn(arg, path, &f);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = db_err(st, "reading");
	sqlite3_finalize(s);
	free(path);
	return rc;
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
	sqlite3_finalize(st->put);
	sqlite3_finalize(st->get);
	sqlite3_finalize(st->del);
	sqlite3_close(st->db);
	close(st->lockfd);
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
	if ((fd = open(lock, O_RDONLY | O_CLOEXEC)) >= 0) {
		pi.running = flock(fd, LOCK_SH | LOCK_NB) != 0;
		close(fd);
	}
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		goto out;
	sqlite3_busy_timeout(h, BUSY_MS);
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
	struct dirent *de;
	DIR *d;
	int rc;

	if ((rc = state_dir(ctx, dir, sdir, sizeof(sdir), 0)) != 0)
		return rc;
	if ((d = opendir(sdir)) == NULL)
		return errno == ENOENT ? 0 :
		       ph_err(ctx, ph_err_from_errno(errno), "%s: %s", sdir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		char id[24];

		if (n != 19 || strcmp(de->d_name + 16, ".db") != 0)
			continue;
		memcpy(id, de->d_name, 16);
		id[16] = '\0';
		key_paths(sdir, id, db, lock, sizeof(db));
		read_pair(db, lock, fn, arg);
	}
	closedir(d);
	return 0;
}

/* ---- hosts without a helper --------------------------------------------- */

/* The memo's path, DIR/nohelper-HASH (HASH of the login user and the
 * phone's host key: the same phone at a new address is the same host), and
 * in head its first two lines: the version and "USER HOSTKEY". Returns 0,
 * or -1 when there is no state folder. */
static int
nohelper_path(const char *dir, const char *user, const char *hostkey, int create, char *out,
              size_t len, char *head, size_t hlen)
{
	char sdir[PATH_MAX], ident[400];

	if (state_dir(NULL, dir, sdir, sizeof(sdir), create) != 0)
		return -1;
	snprintf(ident, sizeof(ident), "%s %s", user, hostkey);
	snprintf(head, hlen, "phsync %s\n%s\n", PHSYNC_VERSION, ident);
	snprintf(out, len, "%s/nohelper-%016llx", sdir,
	         (unsigned long long)XXH3_64bits(ident, strlen(ident)));
	return 0;
}

int
ph_state_nohelper_get(const char *dir, const char *user, const char *hostkey)
{
	char path[PATH_MAX + 32], buf[512], want[512];
	struct stat st;
	time_t now = time(NULL);
	ssize_t n;
	int fd, fresh;

	if (nohelper_path(dir, user, hostkey, 0, path, sizeof(path), want, sizeof(want)) != 0 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	fresh = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime <= now &&
	        now - st.st_mtime < PH_NOHELPER_TTL_S;
	n = fresh ? read(fd, buf, sizeof(buf) - 1) : -1;
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The same version and the same host (not a hash collision). */
	return strncmp(buf, want, strlen(want)) == 0;
}

void
ph_state_nohelper_put(const char *dir, const char *user, const char *hostkey, const char *why)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48], head[512], buf[1024];
	int fd, n, ok;

	if (nohelper_path(dir, user, hostkey, 1, path, sizeof(path), head, sizeof(head)) != 0)
		return;
	n = snprintf(buf, sizeof(buf), "%s%s\n", head, why);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)strlen(buf);
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
}

/* ---- backup series (schema 4) ------------------------------------------ */

int
ph_state_series_id(struct ph_state *st, char id[33])
{
	sqlite3_stmt *s = NULL;
	uint8_t r[16];
	int rc = 0, i, fd;

	if (sqlite3_prepare_v2(st->db, "SELECT v FROM meta WHERE k = 'series'", -1, &s,
	                       NULL) != SQLITE_OK)
		return db_err(st, "reading the series id");
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_bytes(s, 0) == 32) {
		memcpy(id, sqlite3_column_text(s, 0), 32);
		id[32] = '\0';
		sqlite3_finalize(s);
		return 0;
	}
	sqlite3_finalize(s);
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0 ||
	    read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
		if (fd >= 0)
			close(fd);
		return ph_err(st->ctx, PHSYNC_EIO, "cannot read /dev/urandom for a series id");
	}
	close(fd);
	for (i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	if ((rc = ph_state_flush(st)) != 0 || (rc = exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	if ((rc = meta_put(st, "series", id)) != 0 || (rc = exec(st, "COMMIT")) != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

void
ph_state_backup_recs_free(struct ph_backup_rec *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

int
ph_state_backup_list(struct ph_state *st, struct ph_backup_rec **out, size_t *n)
{
	sqlite3_stmt *s = NULL;
	struct ph_backup_rec *v = NULL;
	size_t cnt = 0;
	int r, rc = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db, "SELECT seq, name, kind, base, created, files, bytes, "
	                       "deleted, pruned FROM backup_archives ORDER BY seq", -1, &s,
	                       NULL) != SQLITE_OK)
		return db_err(st, "reading the backup series");
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_backup_rec *nv = realloc(v, (cnt + 1) * sizeof(*v));
		const char *name = (const char *)sqlite3_column_text(s, 1);
		const char *kind = (const char *)sqlite3_column_text(s, 2);

		if (nv == NULL || (name != NULL && (nv[cnt].name = strdup(name)) == NULL)) {
			v = nv ? nv : v;
			rc = PHSYNC_ENOMEM;
			break;
		}
		v = nv;
		if (name == NULL || kind == NULL)
			continue;
		v[cnt].seq = sqlite3_column_int64(s, 0);
		v[cnt].full = strcmp(kind, "full") == 0;
		v[cnt].base = sqlite3_column_int64(s, 3);
		v[cnt].created = sqlite3_column_int64(s, 4);
		v[cnt].files = (uint64_t)sqlite3_column_int64(s, 5);
		v[cnt].bytes = (uint64_t)sqlite3_column_int64(s, 6);
		v[cnt].deleted = (uint64_t)sqlite3_column_int64(s, 7);
		v[cnt].pruned = sqlite3_column_int(s, 8);
		cnt++;
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = db_err(st, "reading the backup series");
	sqlite3_finalize(s);
	*out = v;
	*n = cnt;
	return rc;
}

int
ph_state_backup_each(struct ph_state *st, ph_state_bfile_fn *fn, void *arg)
{
	sqlite3_stmt *s = NULL;
	char *path = NULL;
	size_t cap = 0;
	int rc = 0, r = SQLITE_DONE;

	if (sqlite3_prepare_v2(st->db, "SELECT k, type, size, mtime, nsec, mode, hash, seq FROM "
	                       "backup_files ORDER BY k", -1, &s, NULL) != SQLITE_OK)
		return db_err(st, "reading the backup series");
	while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		size_t n = (size_t)sqlite3_column_bytes(s, 0);
		struct ph_backup_file f;

		if (k == NULL || n == 0 || memchr(k, '\0', n) != NULL)
			continue;   /* no path has a NUL: nothing phsync wrote */
		if (n + 1 > cap) {
			char *np = realloc(path, n + 1);

			if (np == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			path = np;
			cap = n + 1;
		}
		swap_sep(path, k, n);
		f.type = sqlite3_column_int(s, 1);
		f.size = (uint64_t)sqlite3_column_int64(s, 2);
		f.mtime = sqlite3_column_int64(s, 3);
		f.nsec = (uint32_t)sqlite3_column_int64(s, 4);
		f.mode = (uint32_t)sqlite3_column_int64(s, 5);
		f.hash = sqlite3_column_bytes(s, 6) == 16 ? sqlite3_column_blob(s, 6) : NULL;
		f.seq = sqlite3_column_int64(s, 7);
		rc = fn(arg, path, &f);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = db_err(st, "reading the backup series");
	sqlite3_finalize(s);
	free(path);
	return rc;
}

int
ph_state_backup_begin(struct ph_state *st, int full)
{
	int rc;

	if ((rc = ph_state_flush(st)) != 0 || (rc = exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	if (full && (rc = exec(st, "DELETE FROM backup_files")) != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
ph_state_backup_put(struct ph_state *st, const char *path, const struct ph_backup_file *f)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO backup_files (k, type, size, mtime, "
	                        "nsec, mode, hash, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", -1, &s,
	                        NULL) != SQLITE_OK ||
	     bind_key(s, 1, path) != SQLITE_OK ||
	     sqlite3_bind_int(s, 2, f->type) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 3, (int64_t)f->size) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 4, f->mtime) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, f->nsec) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 6, f->mode) != SQLITE_OK ||
	     (f->hash ? sqlite3_bind_blob(s, 7, f->hash, 16, SQLITE_TRANSIENT) :
	                sqlite3_bind_null(s, 7)) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 8, f->seq) != SQLITE_OK ||
	     sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = db_err(st, "recording a backed-up file");
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_backup_forget(struct ph_state *st, const char *path)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "DELETE FROM backup_files WHERE k = ?", -1, &s,
	                        NULL) != SQLITE_OK ||
	     bind_key(s, 1, path) != SQLITE_OK || sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = db_err(st, "forgetting a backed-up file");
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_backup_end(struct ph_state *st, const struct ph_backup_rec *rec)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "INSERT INTO backup_archives (seq, name, kind, base, "
	                        "created, files, bytes, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	                        -1, &s, NULL) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 1, rec->seq) != SQLITE_OK ||
	     sqlite3_bind_text(s, 2, rec->name, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_text(s, 3, rec->full ? "full" : "incremental", -1,
	                       SQLITE_STATIC) != SQLITE_OK ||
	     (rec->base ? sqlite3_bind_int64(s, 4, rec->base) :
	                  sqlite3_bind_null(s, 4)) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, rec->created) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 6, (int64_t)rec->files) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 7, (int64_t)rec->bytes) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 8, (int64_t)rec->deleted) != SQLITE_OK ||
	     sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = db_err(st, "recording the archive");
	sqlite3_finalize(s);
	if (rc == 0)
		rc = exec(st, "COMMIT");
	if (rc != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

void
ph_state_backup_abort(struct ph_state *st)
{
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

int
ph_state_backup_pruned(struct ph_state *st, int64_t seq)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "UPDATE backup_archives SET pruned = 1 WHERE seq = %lld",
	         (long long)seq);
	return exec(st, sql);
}
