/* SPDX-License-Identifier: ISC */
/* The sync records of a pair's store (records.c): each file a run left in
 * place, as seen on both sides, and the partial transfers kept to be
 * resumed. Included by state.h, which opens and closes the store. */
#ifndef PH_RECORDS_H
#define PH_RECORDS_H

#include <stddef.h>
#include <stdint.h>

struct ph_state;

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

/* Records that path (relative, '/'-separated) is in place as f says.
 * Batched: committed every 512 rows (records.c's BATCH) and by
 * ph_state_flush(). */
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

/* For the planner: calls fn for every remembered file in the trees'
 * order (ph_path_cmp: a folder's subtree right after it), one row in memory at a time; path
 * and f (hash not loaded) are valid during the call. fn returns 0 to go
 * on, else that value ends the walk and is returned. Returns 0 or a
 * negative PHSYNC_E*. */
typedef int ph_state_each_fn(void *arg, const char *path, const struct ph_state_file *f);
int ph_state_each(struct ph_state *st, ph_state_each_fn *fn, void *arg);

#endif
