/* SPDX-License-Identifier: ISC */
/* The watcher's status records: what each watched pair is doing now,
 * written by the daemon / --watch process and read by `phsync status`.
 * One small file per pair in STATE/watch/ (STATE: --state-dir, else
 * $XDG_STATE_HOME/phsync, else ~/.local/state/phsync), replaced whole
 * (temp + rename) at each change; a lock file beside it is held (flock)
 * for as long as the watcher lives, so a record left by a killed watcher
 * is told apart from a live one. See docs/ARCHITECTURE.md, "The watcher". */
#ifndef PH_WSTATUS_H
#define PH_WSTATUS_H

#include <stddef.h>
#include <stdint.h>

/* What one record says. Strings are owned by whoever filled it in. */
struct ph_wst_rec {
	long pid;                  /* the watcher's process */
	const char *name;          /* the pair's name (config section, or "watch") */
	const char *direction;     /* "pull", "push" or "sync" (two-way) */
	const char *remote;        /* as configured: [user@]host:path */
	const char *local;         /* absolute when it could be resolved */
	const char *config;        /* the daemon's config file; "" for --watch */
	const char *state;         /* "starting", "watching", "syncing", "waiting",
	                              "stopped" */
	int64_t since;             /* unix seconds the state began */
	int connected;             /* an SSH connection is held now */
	uint64_t keepalives;       /* keepalives answered on the kept links */
	int64_t retry_at;          /* "waiting": unix seconds of the next try */
	int64_t last_start, last_end;  /* the last sync (0: none yet) */
	int last_result;           /* PHSYNC_E* it ended with */
	uint64_t last_files, last_failed, last_bytes;
	const char *error;         /* the last failure's message, or "" */
	const char *note;          /* a standing warning (watch limit...), or "" */
	int64_t updated;           /* unix seconds the record was written */
};

struct ph_wst;

/* The folder the records of state_dir live in (NULL: the default state
 * folder) into buf. Returns 0, or -1 when no home is known. */
int ph_wst_dir(const char *state_dir, char *buf, size_t len);

/* Takes the record of the pair (direction, remote, local) in state_dir:
 * makes the folder, holds the pair's lock file. Returns 0; -EBUSY when a
 * live watcher already keeps that pair's record (*out stays NULL: this
 * process then writes none); another negative errno otherwise. */
int ph_wst_open(const char *state_dir, const char *direction, const char *remote,
                const char *local, struct ph_wst **out);

/* Replaces the record with r (temp file + rename: a reader never sees it
 * half-written). Returns 0 or a negative errno. NULL w is a no-op. */
int ph_wst_write(struct ph_wst *w, const struct ph_wst_rec *r);

/* Removes the record (the pair is no longer watched) and lets the lock
 * go. NULL is a no-op. */
void ph_wst_close(struct ph_wst *w);

/* Calls fn for each record in state_dir's folder (NULL: the default),
 * sorted by name then remote; live is 0 when no process holds the record's
 * lock any more (its watcher was killed: the state it shows is stale).
 * Returns 0 (also when there is no folder) or a negative errno. */
typedef void (*ph_wst_fn)(const struct ph_wst_rec *r, int live, void *arg);
int ph_wst_list(const char *state_dir, ph_wst_fn fn, void *arg);

#endif
