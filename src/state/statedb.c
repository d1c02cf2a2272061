/* SPDX-License-Identifier: ISC */
/* What the state's stores share (statedb.h): keys, the state folder,
 * SQLite errors as phsync's, statements, the pair's lock, the batched
 * transaction's commit. The bottom of src/state/: state.c (open and close),
 * records.c, series.c, memo.c and pairid.c stand on it and it calls none
 * of them, so no two files of the part call each other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ctx.h"
#include "pfs.h"
#include "psys.h"
#include "statedb.h"

/* A path's key and a key's path: '/' and char(1) swapped, so the mapping
 * is its own inverse. A key holding a '/' (no phsync writes one) reads as a
 * path with a char(1) in it, which the callers' name check refuses, and
 * ph_state_file_forget of that path removes exactly that row. */
void
ph_statedb_swap_sep(char *out, const char *in, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = in[i] == '/' ? '\1' : in[i] == '\1' ? '/' : in[i];
	out[n] = '\0';
}

/* Binds path as a files key (each '/' as char(1)). */
int
ph_statedb_bind_key(sqlite3_stmt *s, int i, const char *path)
{
	size_t n = strlen(path);
	char *k = malloc(n + 1);

	if (k == NULL)
		return SQLITE_NOMEM;
	ph_statedb_swap_sep(k, path, n);
	return sqlite3_bind_text(s, i, k, (int)n, free);
}

/* A row's key read back as a path, for every walk over a store's rows. */
int
ph_statedb_row_path(sqlite3_stmt *s, char **path, size_t *cap)
{
	const char *k = (const char *)sqlite3_column_text(s, 0);
	size_t n = (size_t)sqlite3_column_bytes(s, 0);

	if (k == NULL || n == 0 || memchr(k, '\0', n) != NULL)
		return 0;   /* no path has a NUL: nothing phsync wrote */
	if (n + 1 > *cap) {
		char *np = realloc(*path, n + 1);

		if (np == NULL)
			return PHSYNC_ENOMEM;
		*path = np;
		*cap = n + 1;
	}
	ph_statedb_swap_sep(*path, k, n);
	return 1;
}

/* The state folder: dir, or ph_state_home's ($XDG_STATE_HOME/phsync, or
 * ~/.local/state/phsync; %LOCALAPPDATA%\phsync on Windows). */
int
ph_statedb_dir(phsync_ctx *ctx, const char *dir, char *out, size_t len, int create)
{
	char *p;

	if (dir != NULL)
		snprintf(out, len, "%s", dir);
	else if (ph_state_home(out, len) != 0)
		return ph_err(ctx, PHSYNC_EINVAL, "no place for the sync state: set HOME or "
		              "XDG_STATE_HOME");
	if (!create)
		return 0;
	/* mkdir -p, private: the state names your folders. */
	for (p = out + 1;; p++) {
		char c = *p;
		int e;

		if (!ph_path_sep(c) && c != '\0')
			continue;
		*p = '\0';
		if ((e = -ph_mkdirat(PH_AT_CWD, out, 0700)) != 0 && e != EEXIST) {
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

int
ph_statedb_exists(const char *path)
{
	struct ph_stat st;

	return ph_fstatat(PH_AT_CWD, path, &st) == 0;
}

int
ph_statedb_err(struct ph_state *st, const char *what)
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

int
ph_statedb_exec(struct ph_state *st, const char *sql)
{
	char what[48];
	size_t n = strcspn(sql, "(;");

	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	/* The statement's head only (never a whole schema in one line). */
	snprintf(what, sizeof(what), "%.*s", (int)(n < 40 ? n : 40), sql);
	return ph_statedb_err(st, what);
}

/* Takes the pair's lock (an flock on NAME.lock, which holds the owner's
 * pid for the message). */
int
ph_state_lock(phsync_ctx *ctx, const char *lockpath, int *fdp)
{
	char buf[32];
	/* platform/pfs.h: flock, or LockFileEx on Windows. */
	int fd = ph_openat(PH_AT_CWD, lockpath, PH_O_RDWR | PH_O_CREAT, 0600);

	if (fd < 0)
		return ph_err(ctx, ph_err_from_errno(-fd), "cannot open %s: %s", lockpath,
		              strerror(-fd));
	if (ph_lock(fd, PH_LOCK_EX | PH_LOCK_NB) != 0) {
		int64_t n = ph_pread(fd, buf, sizeof(buf) - 1, 0);

		ph_close(fd);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		return ph_err(ctx, PHSYNC_ELOCKED, "another phsync run on this pair is in progress "
		              "(pid %s); wait for it to end, or stop it", buf[0] ? buf : "?");
	}
	snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ph_ftruncate(fd, 0) != 0 || ph_pwrite(fd, buf, strlen(buf), 0) < 0) {
		/* the pid is only for the message */
	}
	*fdp = fd;
	return 0;
}

int
ph_statedb_meta_put(struct ph_state *st, const char *k, const char *v)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", -1, &s,
	                       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(s, 1, k, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, v, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_DONE)
		rc = ph_statedb_err(st, "writing the pair's description");
	sqlite3_finalize(s);
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
		int rc = ph_statedb_err(st, "committing");

		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return 0;
}
