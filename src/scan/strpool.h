/* SPDX-License-Identifier: ISC */
/* Path strings shared by a run's two trees: the source and the
 * destination name mostly the same files, so each path is kept once. */
#ifndef PH_STRPOOL_H
#define PH_STRPOOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* One of the pool's parts: the paths of the folders whose path hashes to
 * it, their own lookup table and lock, their strings in their own blocks. */
struct ph_strshard {
	pthread_mutex_t mu;
	uint32_t *slot;    /* open addressing: 0 empty, else reference + 1 */
	size_t mask;       /* slots - 1 */
	size_t n;          /* strings in the table */
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
	size_t nblocks, capblocks;
	struct ph_strshard shard[PH_STRPOOL_SHARDS];
};

void ph_strpool_init(struct ph_strpool *p);
/* The pooled copy of s (len bytes, no NUL among them), added when new.
 * NULL when the pool cannot take it (full, out of memory, sealed, too
 * long): the caller then keeps a copy of its own. */
const char *ph_strpool_get(struct ph_strpool *p, const char *s, size_t len);
/* Drops the lookup table; the strings stay. */
void ph_strpool_seal(struct ph_strpool *p);
void ph_strpool_free(struct ph_strpool *p);

#endif
