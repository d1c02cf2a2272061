/* SPDX-License-Identifier: ISC */
/* Path strings shared by a run's two trees: the source and the
 * destination name mostly the same files, so each path is kept once. */
#ifndef PH_STRPOOL_H
#define PH_STRPOOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct ph_strfolder;
struct ph_strfchunk;

/* One of the pool's parts: the folders whose path hashes to it, each with
 * its own table of the paths in it, under the part's lock, their strings in
 * the part's own blocks. */
struct ph_strshard {
	pthread_mutex_t mu;
	struct ph_strfolder **ftab; /* open addressing by the folder's path */
	size_t fmask;      /* ftab's slots - 1 */
	size_t nf;         /* folders in ftab */
	struct ph_strfchunk *chunk; /* its folders' records, 256 a chunk */
	size_t chunk_used; /* records used in the newest chunk */
	uint32_t block;    /* the block it fills (a global number), */
	size_t used;       /* ... and the bytes used in it (0 with none yet) */
	int has_block;
	int sealed;
};

#define PH_STRPOOL_SHARDS 16

/* Thread-safe: the local walk and the remote listing add at once, each
 * mostly in its own folder, so each in its own part. The strings live
 * until ph_strpool_free; the lookup tables only until ph_strpool_seal
 * (once both scans are done nothing more is looked up). */
struct ph_strpool {
	pthread_mutex_t mu; /* the blocks array */
	char **blocks;     /* 256 KiB each: a string's reference is its
	                      block number and offset in 32 bits */
	size_t nblocks;
	struct ph_strshard shard[PH_STRPOOL_SHARDS];
};

/* One caller's place in the pool (a tree's: one thread fills it): the
 * folder its last path was in. Zeroed, it has none. */
struct ph_strcur {
	struct ph_strshard *sh;
	struct ph_strfolder *f;
	const char *dir;   /* that folder's path (the pool's copy) */
	size_t dl;         /* its length, with the last '/' */
};

void ph_strpool_init(struct ph_strpool *p);
/* The pool's copy of s (len bytes), made now when it has none; NULL when
 * sealed or out of memory. cur, or NULL: the caller's place, kept up. */
const char *ph_strpool_get(struct ph_strpool *p, struct ph_strcur *cur, const char *s,
                           size_t len);
void ph_strpool_seal(struct ph_strpool *p);
void ph_strpool_free(struct ph_strpool *p);

#endif
