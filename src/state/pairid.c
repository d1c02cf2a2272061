/* SPDX-License-Identifier: ISC */
/* A pair's state file name, and the adoption of one an older phsync named
 * by address; see pairid.h and docs/ARCHITECTURE.md ("Which phone it is"). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "pairid.h"
#include "pfs.h"
#include "statedb.h"

static void
hex_id(const char *desc, char id[17])
{
	snprintf(id, 17, "%016llx", (unsigned long long)XXH3_64bits(desc, strlen(desc)));
}

int
ph_pairid_make(const struct ph_state_key *key, char id[17], char legacy[17])
{
	const char *user = key->user ? key->user : "";
	size_t n = strlen(user) + strlen(key->host ? key->host : "") + strlen(key->rpath) +
	           strlen(key->lpath) + (key->hostkey ? strlen(key->hostkey) : 0) +
	           (key->single ? strlen(key->single) : 0) + 80;
	size_t l;
	char *desc = malloc(n);

	if (desc == NULL)
		return PHSYNC_ENOMEM;
	/* Before: who was reached (user@host:port), the two folders. */
	snprintf(desc, n, "%s@%s:%u:%s\n%s", user, key->host ? key->host : "", key->port,
	         key->rpath, key->lpath);
	/* A single file (`pull phone:/DCIM/x.jpg DIR`) is a pair of its own,
	 * never its folders' pair: that one's records of the other files
	 * would read as gone. No older phsync had one, so no legacy id is
	 * ever one's either. */
	if (key->single != NULL && (l = strlen(desc)) < n)
		snprintf(desc + l, n - l, "\nsingle %s", key->single);
	hex_id(desc, legacy);
	if (key->hostkey == NULL) {
		memcpy(id, legacy, 17);
	} else {
		/* The phone itself. The login user stays in: another user of the
		 * same phone is another view of it (its own files, rights and
		 * home), and mixing two views' records would take one's files for
		 * the other's deletions. */
		snprintf(desc, n, "hostkey %s\nuser %s\n%s\n%s", key->hostkey, user, key->rpath,
		         key->lpath);
		if (key->single != NULL && (l = strlen(desc)) < n)
			snprintf(desc + l, n - l, "\nsingle %s", key->single);
		hex_id(desc, id);
	}
	free(desc);
	return 0;
}

void
ph_pairid_addr(const struct ph_state_key *key, char *out, size_t len)
{
	snprintf(out, len, "%s@%s:%u", key->user ? key->user : "", key->host ? key->host : "",
	         key->port);
}

int
ph_pairid_hostkey_ok(sqlite3 *h, const char *hostkey)
{
	sqlite3_stmt *s = NULL;
	int r, ok;

	if (sqlite3_prepare_v2(h, "SELECT v FROM meta WHERE k = 'hostkey'", -1, &s,
	                       NULL) != SQLITE_OK)
		return -1;
	r = sqlite3_step(s);
	if (r == SQLITE_DONE)
		ok = 1;   /* none recorded: a state an older phsync wrote */
	else if (r == SQLITE_ROW)
		ok = sqlite3_column_text(s, 0) != NULL &&
		     strcmp((const char *)sqlite3_column_text(s, 0), hostkey) == 0;
	else
		ok = -1;
	sqlite3_finalize(s);
	return ok;
}

static int
meta_err(phsync_ctx *ctx, sqlite3 *h, const char *path)
{
	int code = sqlite3_errcode(h);

	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		return ph_err(ctx, PHSYNC_ELOCKED, "the sync state %s is busy (%s)", path,
		              sqlite3_errmsg(h));
	if (code == SQLITE_FULL)
		return ph_err(ctx, PHSYNC_ENOSPC, "no space left for the sync state %s", path);
	return ph_err(ctx, code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? PHSYNC_ECORRUPT :
	              PHSYNC_EIO, "the sync state %s: the pair's description: %s", path,
	              sqlite3_errmsg(h));
}

/* Reads meta k into out ("" when absent). 0, or -1 (SQLite's error). */
static int
meta_get(sqlite3 *h, const char *k, char *out, size_t len)
{
	sqlite3_stmt *s = NULL;
	int r = SQLITE_ERROR;

	out[0] = '\0';
	if (sqlite3_prepare_v2(h, "SELECT v FROM meta WHERE k = ?", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(s, 1, k, -1, SQLITE_STATIC) == SQLITE_OK &&
	    (r = sqlite3_step(s)) == SQLITE_ROW && sqlite3_column_text(s, 0) != NULL)
		snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -1;
}

static int
meta_put(sqlite3 *h, const char *k, const char *v)
{
	sqlite3_stmt *s = NULL;
	int ok;

	ok = sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", -1, &s,
	                        NULL) == SQLITE_OK &&
	     sqlite3_bind_text(s, 1, k, -1, SQLITE_STATIC) == SQLITE_OK &&
	     sqlite3_bind_text(s, 2, v, -1, SQLITE_STATIC) == SQLITE_OK &&
	     sqlite3_step(s) == SQLITE_DONE;
	sqlite3_finalize(s);
	return ok ? 0 : -1;
}

int
ph_pairid_meta(phsync_ctx *ctx, sqlite3 *h, const char *path, const struct ph_state_key *key,
               const char *remote, int readonly, char *moved, size_t mlen)
{
	char addr[600], was[600], hk[256];
	int rc;

	moved[0] = '\0';
	if (meta_get(h, "hostkey", hk, sizeof(hk)) != 0 || meta_get(h, "addr", was, sizeof(was)) != 0)
		return meta_err(ctx, h, path);
	if (key->hostkey != NULL && hk[0] != '\0' && strcmp(hk, key->hostkey) != 0)
		return ph_err(ctx, PHSYNC_ECORRUPT, "the sync state %s belongs to another phone "
		              "(another host key); move it away, or run again with --reset-state "
		              "to start this pair over", path);
	ph_pairid_addr(key, addr, sizeof(addr));
	if (was[0] != '\0' && strcmp(was, addr) != 0 && key->hostkey != NULL)
		snprintf(moved, mlen, "%s", was);
	if (readonly || (was[0] != '\0' && moved[0] == '\0' &&
	                 (key->hostkey == NULL || hk[0] != '\0')))
		return 0;   /* nothing new to record */
	if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return meta_err(ctx, h, path);
	rc = (key->hostkey != NULL && meta_put(h, "hostkey", key->hostkey) != 0) ||
	     meta_put(h, "addr", addr) != 0 || meta_put(h, "remote", remote) != 0 ||
	     sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK;
	if (rc) {
		rc = meta_err(ctx, h, path);
		sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
	}
	return rc;
}

/* Is h a phsync state (its application_id)? */
static int
ours(sqlite3 *h)
{
	sqlite3_stmt *s = NULL;
	int ok;

	if (sqlite3_prepare_v2(h, "PRAGMA application_id", -1, &s, NULL) != SQLITE_OK)
		return 0;
	ok = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int64(s, 0) == PH_PAIRID_APP_ID;
	sqlite3_finalize(s);
	return ok;
}

/* Folds the write-ahead log into the file, so the file alone holds every
 * committed row. 0 when it did, else -1. */
static int
checkpoint(sqlite3 *h)
{
	sqlite3_stmt *s = NULL;
	int ok;

	if (sqlite3_prepare_v2(h, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &s, NULL) != SQLITE_OK)
		return -1;
	/* busy, log frames, checkpointed frames; a file not in WAL mode gives
	 * 0, -1, -1. */
	ok = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 0 &&
	     sqlite3_column_int(s, 1) == sqlite3_column_int(s, 2);
	sqlite3_finalize(s);
	return ok ? 0 : -1;
}

int
ph_pairid_adopt(phsync_ctx *ctx, const char *sdir, const char *legacy, const char *hostkey,
                const char *db, int *adopted)
{
	char ldb[PATH_MAX + 32], llock[PATH_MAX + 32], side[PATH_MAX + 40];
	sqlite3 *h = NULL;
	int fd = -1, rc = 0, dfd, e;

	*adopted = 0;
	snprintf(ldb, sizeof(ldb), "%s/%s.db", sdir, legacy);
	snprintf(llock, sizeof(llock), "%s/%s.lock", sdir, legacy);
	if (!ph_statedb_exists(ldb))
		return 0;
	if ((rc = ph_state_lock(ctx, llock, &fd)) != 0)
		return rc;
	if (sqlite3_open_v2(ldb, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK)
		goto leave;   /* unreadable: not adopted (opened fresh under the new name) */
	sqlite3_busy_timeout(h, 5000);
	/* Another phone's state (or not ours) stays where it is, untouched. */
	if (!ours(h) || ph_pairid_hostkey_ok(h, hostkey) != 1)
		goto leave;
	if (checkpoint(h) != 0) {
		rc = ph_err(ctx, PHSYNC_ELOCKED, "the sync state %s is busy (being read): cannot "
		            "take it over for this phone now; run again", ldb);
		goto leave;
	}
	if (sqlite3_close(h) != SQLITE_OK) {
		rc = ph_err(ctx, PHSYNC_EIO, "the sync state %s: cannot close it", ldb);
		goto leave;
	}
	h = NULL;
	if ((e = ph_renameat(PH_AT_CWD, ldb, PH_AT_CWD, db)) != 0) {
		rc = ph_err(ctx, ph_err_from_errno(-e), "cannot rename the sync state %s to %s: %s",
		            ldb, db, strerror(-e));
		goto leave;
	}
	snprintf(side, sizeof(side), "%s-wal", ldb);
	ph_unlinkat(PH_AT_CWD, side, 0);
	snprintf(side, sizeof(side), "%s-shm", ldb);
	ph_unlinkat(PH_AT_CWD, side, 0);
	if ((dfd = ph_dir_open_path(sdir)) >= 0) {
		(void)ph_dir_sync(dfd);
		ph_close(dfd);
	}
	/* Under our lock: a run of an older phsync that opens it afterwards
	 * locks a file no one else will take (and makes a fresh state). On
	 * Windows too: pfs.h opens every file shared for delete. */
	ph_unlinkat(PH_AT_CWD, llock, 0);
	*adopted = 1;
leave:
	sqlite3_close(h);
	if (fd >= 0)
		ph_close(fd);
	return rc;
}
