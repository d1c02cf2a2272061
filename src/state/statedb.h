/* SPDX-License-Identifier: ISC */
/* What the state's store files share (internal to src/state/): the open
 * database's handle and the few helpers around it. state.c owns the handle
 * (the folder, the lock, the schema and its migrations, open and close);
 * records.c (the sync records) and series.c (a backup series) keep their
 * rows in it; memo.c (the no-helper memo) uses only the state folder. */
#ifndef PH_STATEDB_H
#define PH_STATEDB_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "ctx.h"
#include "state.h"

#define PH_STATEDB_BUSY_MS 5000   /* how long a statement waits for a reader */

struct ph_state {
	phsync_ctx *ctx;
	sqlite3 *db;
	sqlite3_stmt *put, *get, *del;  /* the records' (records.c), prepared at
	                                   open when not read-only */
	int lockfd;
	int in_txn;               /* the records' batch transaction is open */
	int readonly;
	int legacy;               /* read-only over a schema before 3 (no k) */
	int nolid;                /* read-only over a schema before 5 (no hread,
	                             no local identity) */
	size_t pending;           /* rows in the open batch */
	int64_t run_id;
	char path[PATH_MAX + 32]; /* the database file, for messages */
	char moved_from[600];     /* ph_state_moved_from, "" when not moved */
};

/* The state folder into out: dir, or $XDG_STATE_HOME/phsync, or
 * ~/.local/state/phsync; made (private, with its parents) when create.
 * Returns 0 or a negative PHSYNC_E* (message in ctx, which may be NULL). */
int ph_statedb_dir(phsync_ctx *ctx, const char *dir, char *out, size_t len, int create);

/* 1 when a file (of any type, a symlink not followed) has the name path. */
int ph_statedb_exists(const char *path);

/* The message for the database's last error, about what was being done;
 * returns its PHSYNC_E* (ECORRUPT, ENOSPC, ELOCKED or EIO). */
int ph_statedb_err(struct ph_state *st, const char *what);

/* Runs sql (no rows). Returns 0 or ph_statedb_err's code, naming the
 * statement's head. */
int ph_statedb_exec(struct ph_state *st, const char *sql);

/* Sets the meta row k to v (inside the caller's transaction). */
int ph_statedb_meta_put(struct ph_state *st, const char *k, const char *v);

/* A path's key and a key's path: '/' and char(1) swapped in the n bytes
 * of in, written with a NUL to out (n + 1 bytes). The mapping is its own
 * inverse. */
void ph_statedb_swap_sep(char *out, const char *in, size_t n);

/* Binds path as a key (each '/' as char(1)) to parameter i of s; returns
 * an SQLITE_* code. */
int ph_statedb_bind_key(sqlite3_stmt *s, int i, const char *path);

/* The path of s's current row, whose column 0 is a key, into *path (grown
 * as needed, *cap its size; the caller frees it). Returns 1 with the path,
 * 0 for a row to skip (no key, or one holding a NUL: nothing phsync
 * wrote), or PHSYNC_ENOMEM. */
int ph_statedb_row_path(sqlite3_stmt *s, char **path, size_t *cap);

/* The records' statements (records.c): prepared by ph_state_open for a
 * writable store, finalized by its close (NULL ones are a no-op). Returns
 * SQLITE_OK or the failing call's code. */
int ph_statedb_records_prepare(struct ph_state *st);
void ph_statedb_records_finalize(struct ph_state *st);

/* Takes the flock of lockpath, writing our pid into it for the message
 * another run gives. Returns 0 or PHSYNC_ELOCKED / an errno code. */
int ph_state_lock(phsync_ctx *ctx, const char *lockpath, int *fdp);

#endif
