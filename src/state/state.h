/* SPDX-License-Identifier: ISC */
/* The sync state: one SQLite database per sync pair, under
 * $XDG_STATE_HOME/phsync (default ~/.local/state/phsync), remembering what
 * each run left in place and how each run ended. A pair is the phone (its
 * SSH host key, as known_hosts checked it), the login user, the remote
 * folder and the local folder; not the address it was reached at, which a
 * phone on Wi-Fi changes (docs/ARCHITECTURE.md, "Which phone it is"). An
 * open store holds the pair's lock, so two runs on one pair never
 * interleave. Rows are written in bounded transactions as files land; the
 * caller adds a file only once it is durably in place, so a kill at any
 * point leaves a state that claims nothing that is not there. Every name a
 * row holds is input like a peer's: the callers check it before use
 * (src/sync/staterow.h). */
#ifndef PH_STATE_H
#define PH_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"

#define PH_STATE_SCHEMA 5   /* user_version of the databases this code writes
                               (1 had no sig column, 2 kept paths as keys,
                               3 had no backup tables, 4 no hread and local
                               identity columns: upgraded on open) */

struct ph_state;

struct ph_state_key {
	const char *hostkey;     /* the phone: "TYPE SHA256:..." as ph_ssh_host_key
	                            gives it, or NULL (a local backup source):
	                            the pair is then keyed by the address */
	const char *user, *host; /* who we reached, after ssh_config: kept in */
	unsigned port;           /* the state for messages and for finding a
	                            state an older phsync keyed by the address */
	const char *rpath;       /* the remote folder as given */
	const char *lpath;       /* the local folder, absolute */
	const char *single;      /* a single-file pair: the file's name in both
	                            folders (its own pair, apart from the
	                            folders' one), or NULL */
};

/* One synced file as seen on both sides after the run put it in place. */
struct ph_state_file {
	uint64_t lsize, rsize;
	int64_t lmtime, rmtime;
	const uint8_t *hash;     /* XXH3-128 of the content, 16 bytes, or NULL */
	const uint8_t *sig;      /* for a file phsync wrote to the remote: the
	                            block signature of what it wrote (the delta
	                            engine's serialized form, docs/DELTA.md), or
	                            NULL; loaded back only by ph_state_file_get_sig */
	size_t siglen;
	int hread;               /* 1: hash is of the remote path's whole bytes
	                            as read from it (a pull's copy, a move
	                            confirmed by reading it whole); 0: of bytes
	                            read elsewhere (a push's local file), or
	                            from an older phsync */
	/* The local file's identity when it was recorded, as git's index
	 * keeps it (has_lid 0: none): its ctime (ns), inode and device. Read
	 * back with lref: the end of the run that recorded it (unix ns; 0:
	 * unknown, that run did not end), for the racy-clean rule. */
	int has_lid;
	int64_t lctime, lref;
	uint64_t lino, ldev;
	int has_hash;            /* (ph_state_each, which loads no hash) one is
	                            recorded */
};

enum {
	PH_STATE_RESET = 1,     /* drop what the store held */
	PH_STATE_READONLY = 2   /* a dry run: read what is there, if anything
	                           (*out stays NULL when nothing is); no lock,
	                           nothing written */
};

/* Opens (creating it) the store of the pair key in dir (NULL: the XDG
 * state folder) and takes the pair's lock. flags: PH_STATE_*. A state an
 * older phsync keyed by the address (user@host:port) is adopted and
 * renamed to the host key's name when it records no host key or this one;
 * one of another host key is never used. Returns 0, or:
 *   PHSYNC_ELOCKED   another run holds the pair (message names its pid)
 *   PHSYNC_ECORRUPT  the file is damaged or not ours (message: --reset-state)
 *   PHSYNC_EUNSUPPORTED  written by a newer phsync (schema version)
 *   PHSYNC_EIO       the folder or file cannot be made or read */
int ph_state_open(phsync_ctx *ctx, const char *dir, const struct ph_state_key *key,
                  int flags, struct ph_state **out);

/* Where the pair's phone was reached before, when this run reached it at
 * another address or port ("user@host:port"; the state now records the new
 * one, so it is said once), else NULL. Valid until ph_state_close. */
const char *ph_state_moved_from(const struct ph_state *st);

/* Records that path (relative, '/'-separated) is in place as f says.
 * Batched: committed every PH_STATE_BATCH rows and by ph_state_flush(). */
int ph_state_file_done(struct ph_state *st, const char *path, const struct ph_state_file *f);

/* Forgets path (its file was deleted on both sides, or offloaded);
 * batched like ph_state_file_done. */
int ph_state_file_forget(struct ph_state *st, const char *path);

/* A cut download kept to be resumed: tmp (a name in path's folder) holds
 * the first `have` bytes of the source file as it was (size, mtime). */
struct ph_partial {
	char *path, *tmp;
	uint64_t size, have;
	int64_t mtime;
	int ready;               /* (the run) checked: go on from it */
};

/* Records, forgets, or lists (all; free with ph_state_partials_free) the
 * partial transfers (a pull's kept download, a push's kept upload: tmp is
 * the temp file's name in the destination folder). Batched like
 * ph_state_file_done. */
int ph_state_partial_put(struct ph_state *st, const char *path, const struct ph_partial *pa);
int ph_state_partial_drop(struct ph_state *st, const char *path);
int ph_state_partial_load(struct ph_state *st, struct ph_partial **out, size_t *n);
void ph_state_partials_free(struct ph_partial *v, size_t n);

/* Commits the rows added so far. */
int ph_state_flush(struct ph_state *st);

/* Looks a file up; returns 1 and fills f (hash into hashbuf), 0 when
 * unknown, or a negative PHSYNC_E*. */
int ph_state_file_get(struct ph_state *st, const char *path, struct ph_state_file *f,
                      uint8_t hashbuf[16]);
/* The same, with the block signature recorded for it: *sig is set to a
 * malloc'ed copy (f->sig, f->siglen; the caller frees it) or NULL when none
 * is kept (or there was no memory for it: a signature is only ever an
 * optimisation). */
int ph_state_file_get_sig(struct ph_state *st, const char *path, struct ph_state_file *f,
                          uint8_t hashbuf[16], uint8_t **sig);

/* One remembered file, for the planner. */
/* Calls fn for every remembered file in the trees' order (ph_path_cmp:
 * a folder's subtree right after it), one row in memory at a time; path
 * and f (hash not loaded) are valid during the call. fn returns 0 to go
 * on, else that value ends the walk and is returned. Returns 0 or a
 * negative PHSYNC_E*. */
typedef int ph_state_each_fn(void *arg, const char *path, const struct ph_state_file *f);
int ph_state_each(struct ph_state *st, ph_state_each_fn *fn, void *arg);

/* Ends the run: records its end, counts and result (a PHSYNC_E* or 0),
 * commits, checkpoints, releases the lock and frees. NULL is a no-op. */
void ph_state_close(struct ph_state *st, int result, const struct phsync_stats *stats);

/* A backup series (src/backup/): the state of a pair whose local side is
 * an archive name template. One archive of the series. */
struct ph_backup_rec {
	int64_t seq;             /* 1, 2, ... in the order they were made */
	char *name;              /* the archive's path as published */
	int full;                /* 1: full, 0: incremental on base */
	int64_t base;            /* the archive it builds on (0: none) */
	int64_t created;         /* unix seconds */
	uint64_t files, bytes, deleted;
	int pruned;              /* removed by --keep */
};

/* One path the series holds as of its last archive. */
struct ph_backup_file {
	int type;                /* 1 file, 2 folder (enum ph_type) */
	uint64_t size;
	int64_t mtime;
	uint32_t nsec, mode;
	const uint8_t *hash;     /* 16 bytes or NULL */
	int64_t seq;             /* the archive holding its current bytes */
};

/* The series' random id (32 hex digits), made on first use. */
int ph_state_series_id(struct ph_state *st, char id[33]);
/* Every archive of the series, oldest first (free with
 * ph_state_backup_recs_free). */
int ph_state_backup_list(struct ph_state *st, struct ph_backup_rec **out, size_t *n);
void ph_state_backup_recs_free(struct ph_backup_rec *v, size_t n);
/* Calls fn for every path the series holds, in the trees' order; stops
 * at fn's nonzero return, which is returned. */
typedef int ph_state_bfile_fn(void *arg, const char *path, const struct ph_backup_file *f);
int ph_state_backup_each(struct ph_state *st, ph_state_bfile_fn *fn, void *arg);
/* Advances the series by one archive, all or nothing: begin (full: the
 * series forgets what it held), put and forget paths, then end, which
 * adds rec and commits. abort rolls back. */
int ph_state_backup_begin(struct ph_state *st, int full);
int ph_state_backup_put(struct ph_state *st, const char *path, const struct ph_backup_file *f);
int ph_state_backup_forget(struct ph_state *st, const char *path);
int ph_state_backup_end(struct ph_state *st, const struct ph_backup_rec *rec);
void ph_state_backup_abort(struct ph_state *st);
/* Marks archive seq as removed by --keep. */
int ph_state_backup_pruned(struct ph_state *st, int64_t seq);

/* ---- hosts without a helper ----
 * --helper auto on a server that runs no helper (and takes none by
 * bootstrap) costs each run one or two extra sessions, half a second or
 * more against OpenSSH. A memo per phone and login (user and host key, as
 * a pair's key: a phone at a new address is the same phone) in the state
 * folder dir (NULL: the default) says so for PH_NOHELPER_TTL_S seconds and
 * for this phsync version; then auto goes straight to plain SFTP. */
#define PH_NOHELPER_TTL_S (24 * 3600)
/* 1 when a fresh memo says the host runs no helper, else 0. */
int ph_state_nohelper_get(const char *dir, const char *user, const char *hostkey);
/* Writes the memo (why: for whoever reads the file); failures are
 * ignored (the next run tries the helper again). */
void ph_state_nohelper_put(const char *dir, const char *user, const char *hostkey,
                           const char *why);

/* phsync_pairs (public) is implemented in state.c too. */

#endif
