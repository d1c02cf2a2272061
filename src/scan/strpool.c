/* SPDX-License-Identifier: ISC */
/* A pool of path strings, each kept once, shared by a run's two trees.
 *
 * Why: a no-change run over 1,000,000 files holds the source and the
 * destination tree at once, and their paths are the same strings: kept
 * once they cost 26 MB instead of 52 (docs/PERFORMANCE.md section 3). The
 * tables hold 4-byte references, not pointers, so they cost 8 MB at that
 * size and are freed when both scans are done.
 *
 * In 16 parts by the path's folder: the walk and the listing each add a
 * folder's names together, so each thread mostly works in a part of its
 * own (its lock not waited for), in a table a sixteenth of the size, over
 * strings laid down folder by folder in that part's blocks (a lookup's
 * string compare then reads what the one before it read next to). One
 * table and one lock were a fifth of a million-file no-change run's client
 * CPU, a third of that in the kernel putting waiters to sleep. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "strpool.h"

#define BLOCK_SHIFT 18
#define BLOCK ((size_t)1 << BLOCK_SHIFT)
#define MAX_BLOCKS (((size_t)1 << (32 - BLOCK_SHIFT)) - 1) /* ref + 1 fits */
#define MAX_LEN 65535

/* (The blocks array is made whole once, never moved: a part reads it
 * without the pool's lock, another may be adding a block.) */
static const char *
ref_str(const struct ph_strpool *p, uint32_t ref)
{
	return p->blocks[ref >> BLOCK_SHIFT] + (ref & (BLOCK - 1));
}

static size_t
slot_of(const struct ph_strshard *sh, const char *s, size_t len)
{
	return (size_t)XXH3_64bits(s, len) & sh->mask;
}

/* Doubles a part's table (or makes its first one). Returns 0 or -1. */
static int
grow(const struct ph_strpool *p, struct ph_strshard *sh)
{
	size_t nslots = sh->slot ? (sh->mask + 1) * 2 : 1024, i;
	uint32_t *old = sh->slot;
	size_t omask = sh->mask;

	if (nslots > ((size_t)1 << 30) ||
	    (sh->slot = calloc(nslots, sizeof(*sh->slot))) == NULL) {
		sh->slot = old;
		return -1;
	}
	sh->mask = nslots - 1;
	for (i = 0; old != NULL && i <= omask; i++) {
		const char *s;
		size_t k;

		if (old[i] == 0)
			continue;
		s = ref_str(p, old[i] - 1);
		k = slot_of(sh, s, strlen(s));
		while (sh->slot[k] != 0)
			k = (k + 1) & sh->mask;
		sh->slot[k] = old[i];
	}
	free(old);
	return 0;
}

/* Room for len bytes in the part's block: their reference, or -1. A new
 * block is taken under the pool's lock. */
static int64_t
take(struct ph_strpool *p, struct ph_strshard *sh, size_t len)
{
	if (!sh->has_block || BLOCK - sh->used < len) {
		char *b = malloc(BLOCK);
		int ok = 0;

		if (b == NULL)
			return -1;
		pthread_mutex_lock(&p->mu);
		if (p->blocks == NULL)
			p->blocks = calloc(MAX_BLOCKS, sizeof(*p->blocks));
		if (p->blocks != NULL && p->nblocks < MAX_BLOCKS) {
			p->blocks[p->nblocks] = b;
			sh->block = (uint32_t)p->nblocks++;
			ok = 1;
		}
		pthread_mutex_unlock(&p->mu);
		if (!ok) {
			free(b);
			return -1;
		}
		sh->used = 0;
		sh->has_block = 1;
	}
	sh->used += len;
	return (int64_t)(((size_t)sh->block << BLOCK_SHIFT) | (sh->used - len));
}

void
ph_strpool_init(struct ph_strpool *p)
{
	pthread_mutexattr_t a;
	size_t i;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutexattr_init(&a);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP /* glibc */
	/* When both threads are in one part, for a lookup of a few hundred
	 * ns: where glibc can, a waiter spins a while before it sleeps (a
	 * plain mutex put each one to sleep in the kernel and woke it). */
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	for (i = 0; i < PH_STRPOOL_SHARDS; i++)
		pthread_mutex_init(&p->shard[i].mu, &a);
	pthread_mutexattr_destroy(&a);
}

const char *
ph_strpool_get(struct ph_strpool *p, const char *s, size_t len)
{
	struct ph_strshard *sh;
	const char *out = NULL;
	size_t k, dl = len;
	int64_t ref;

	if (len > MAX_LEN)
		return NULL;
	/* The part: by the folder's path (s up to its last '/'). */
	while (dl > 0 && s[dl - 1] != '/')
		dl--;
	sh = &p->shard[XXH3_64bits(s, dl) % PH_STRPOOL_SHARDS];
	pthread_mutex_lock(&sh->mu);
	if (sh->sealed || ((sh->n + 1) * 2 > sh->mask + 1 && grow(p, sh) != 0))
		goto out;
	for (k = slot_of(sh, s, len); sh->slot[k] != 0; k = (k + 1) & sh->mask) {
		const char *c = ref_str(p, sh->slot[k] - 1);

		if (memcmp(c, s, len) == 0 && c[len] == '\0') {
			out = c;
			goto out;
		}
	}
	if ((ref = take(p, sh, len + 1)) < 0)
		goto out;
	sh->slot[k] = (uint32_t)ref + 1;
	sh->n++;
	out = ref_str(p, (uint32_t)ref);
	memcpy((char *)out, s, len);
	((char *)out)[len] = '\0';
out:
	pthread_mutex_unlock(&sh->mu);
	return out;
}

void
ph_strpool_seal(struct ph_strpool *p)
{
	size_t i;

	for (i = 0; i < PH_STRPOOL_SHARDS; i++) {
		struct ph_strshard *sh = &p->shard[i];

		pthread_mutex_lock(&sh->mu);
		free(sh->slot);
		sh->slot = NULL;
		sh->mask = 0;
		sh->n = 0;
		sh->sealed = 1;
		pthread_mutex_unlock(&sh->mu);
	}
}

void
ph_strpool_free(struct ph_strpool *p)
{
	size_t i;

	for (i = 0; i < p->nblocks; i++)
		free(p->blocks[i]);
	free(p->blocks);
	for (i = 0; i < PH_STRPOOL_SHARDS; i++) {
		free(p->shard[i].slot);
		pthread_mutex_destroy(&p->shard[i].mu);
	}
	pthread_mutex_destroy(&p->mu);
	memset(p, 0, sizeof(*p));
}
