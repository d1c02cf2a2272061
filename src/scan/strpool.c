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
 * own (its lock not waited for). One table and one lock were a fifth of a
 * million-file no-change run's client CPU, a third of that in the kernel
 * putting waiters to sleep.
 *
 * And a table per folder: with one table a part, 83 % of a lookup's time
 * was the load of its slot, a cache miss each time in 8 MB of tables
 * (perf annotate, 1M no-change run, session 38). A folder's table is a
 * few KiB that stays in cache while its names are added, its strings lie
 * next to each other in the part's blocks, and the caller's cursor
 * (struct ph_strcur) finds the folder again with one compare of its path. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "strpool.h"

#define BLOCK_SHIFT 18
#define BLOCK ((size_t)1 << BLOCK_SHIFT)
#define MAX_BLOCKS (((size_t)1 << (32 - BLOCK_SHIFT)) - 1) /* ref + 1 fits */
#define MAX_LEN 65535
#define CHUNK 256

/* A folder: its path, and the paths in it (open addressing: 0 empty, else
 * reference + 1; hashed by the name after the folder's path). A table of
 * two slots (a folder of one name) lives in the record itself: a tree of
 * many one-file folders costs a record a folder, not a record and a table
 * (150,000 such folders: 10 MB more than one table a part with a table a
 * folder, 5 MB with the two slots inside; session 38). */
struct ph_strfolder {
	uint64_t hash;     /* of the folder's path */
	uint32_t dref;     /* its first path: the folder's path is its first */
	uint32_t dl;       /* dl bytes (with the last '/') */
	uint32_t mask, n;
	union {
		uint32_t *heap; /* mask > 1 */
		uint32_t inl[2];
	} s;
};

struct ph_strfchunk {
	struct ph_strfchunk *next;
	struct ph_strfolder v[CHUNK];
};

/* (The blocks array is made whole once, never moved: a part reads it
 * without the pool's lock, another may be adding a block.) */
static const char *
ref_str(const struct ph_strpool *p, uint32_t ref)
{
	return p->blocks[ref >> BLOCK_SHIFT] + (ref & (BLOCK - 1));
}

static uint32_t *
slots(struct ph_strfolder *f)
{
	return f->mask > 1 ? f->s.heap : f->s.inl;
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

/* len bytes of s, and a NUL, kept in the part: their reference, or -1. */
static int64_t
keep(struct ph_strpool *p, struct ph_strshard *sh, const char *s, size_t len)
{
	int64_t ref = take(p, sh, len + 1);
	char *c;

	if (ref < 0)
		return -1;
	c = (char *)ref_str(p, (uint32_t)ref);
	memcpy(c, s, len);
	c[len] = '\0';
	return ref;
}

/* Doubles a folder's table (the first one past its record's). Returns 0
 * or -1. */
static int
names_grow(const struct ph_strpool *p, struct ph_strfolder *f)
{
	size_t nslots = ((size_t)f->mask + 1) * 2, i;
	uint32_t *old = slots(f), *nv, omask = f->mask;

	if (nslots > ((size_t)1 << 30) || (nv = calloc(nslots, sizeof(*nv))) == NULL)
		return -1;
	for (i = 0; i <= omask; i++) {
		const char *name;
		size_t k;

		if (old[i] == 0)
			continue;
		name = ref_str(p, old[i] - 1) + f->dl;
		k = (size_t)XXH3_64bits(name, strlen(name)) & (nslots - 1);
		while (nv[k] != 0)
			k = (k + 1) & (nslots - 1);
		nv[k] = old[i];
	}
	if (omask > 1)
		free(old);
	f->s.heap = nv;
	f->mask = (uint32_t)(nslots - 1);
	return 0;
}

/* Doubles a part's table of folders (or makes its first one). Returns 0
 * or -1. */
static int
folders_grow(struct ph_strshard *sh)
{
	size_t nslots = sh->ftab ? (sh->fmask + 1) * 2 : 64, i;
	struct ph_strfolder **old = sh->ftab;
	size_t omask = sh->fmask;

	if (nslots > ((size_t)1 << 30) || (sh->ftab = calloc(nslots, sizeof(*sh->ftab))) == NULL) {
		sh->ftab = old;
		return -1;
	}
	sh->fmask = nslots - 1;
	for (i = 0; old != NULL && i <= omask; i++) {
		size_t k;

		if (old[i] == NULL)
			continue;
		for (k = (size_t)(old[i]->hash >> 8) & sh->fmask; sh->ftab[k] != NULL;
		     k = (k + 1) & sh->fmask)
			;
		sh->ftab[k] = old[i];
	}
	free(old);
	return 0;
}

/* The path s (len bytes) in its folder f: the pool's copy, made now when
 * it has none; NULL when out of memory. */
static const char *
name_get(struct ph_strpool *p, struct ph_strshard *sh, struct ph_strfolder *f, const char *s,
         size_t len)
{
	const char *name = s + f->dl;
	size_t nl = len - f->dl, k;
	uint32_t *v;
	int64_t ref;

	if ((f->n + 1) * 2 > f->mask + 1 && names_grow(p, f) != 0)
		return NULL;
	v = slots(f);
	for (k = (size_t)XXH3_64bits(name, nl) & f->mask; v[k] != 0; k = (k + 1) & f->mask) {
		const char *c = ref_str(p, v[k] - 1);

		/* (strlen first: a name the caller has with a NUL in it is never
		 * one of these, and nothing is read past a kept string's end.) */
		if (strlen(c + f->dl) == nl && memcmp(c + f->dl, name, nl) == 0)
			return c;
	}
	if ((ref = keep(p, sh, s, len)) < 0)
		return NULL;
	v[k] = (uint32_t)ref + 1;
	f->n++;
	return ref_str(p, (uint32_t)ref);
}

/* The part's record of the folder s[0..dl) (h its hash), made now when it
 * has none (its first path s, len bytes, then kept); NULL when out of
 * memory. */
static struct ph_strfolder *
folder_get(struct ph_strpool *p, struct ph_strshard *sh, uint64_t h, const char *s,
           size_t len, size_t dl)
{
	struct ph_strfolder *f;
	int64_t ref;
	size_t k;

	if ((sh->nf + 1) * 2 > sh->fmask + 1 && folders_grow(sh) != 0)
		return NULL;
	for (k = (size_t)(h >> 8) & sh->fmask; (f = sh->ftab[k]) != NULL; k = (k + 1) & sh->fmask)
		if (f->hash == h && f->dl == dl && memcmp(ref_str(p, f->dref), s, dl) == 0)
			return f;
	if (sh->chunk == NULL || sh->chunk_used == CHUNK) {
		struct ph_strfchunk *c = malloc(sizeof(*c));

		if (c == NULL)
			return NULL;
		c->next = sh->chunk;
		sh->chunk = c;
		sh->chunk_used = 0;
	}
	if ((ref = keep(p, sh, s, len)) < 0)
		return NULL;
	f = &sh->chunk->v[sh->chunk_used++];
	memset(f, 0, sizeof(*f));
	f->hash = h;
	f->dref = (uint32_t)ref;
	f->dl = (uint32_t)dl;
	f->mask = 1;
	f->n = 1;
	f->s.inl[(size_t)XXH3_64bits(s + dl, len - dl) & 1] = (uint32_t)ref + 1;
	sh->ftab[k] = f;
	sh->nf++;
	return f;
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
ph_strpool_get(struct ph_strpool *p, struct ph_strcur *cur, const char *s, size_t len)
{
	struct ph_strshard *sh;
	struct ph_strfolder *f;
	const char *out = NULL;
	size_t dl = len;

	if (len > MAX_LEN)
		return NULL;
	/* The folder: s up to its last '/'. The cursor's when it is the same
	 * (its path lives as long as the pool; its record is looked at only
	 * once the part is known not sealed: sealing frees it). */
	while (dl > 0 && s[dl - 1] != '/')
		dl--;
	if (cur != NULL && cur->f != NULL && cur->dl == dl && memcmp(cur->dir, s, dl) == 0) {
		sh = cur->sh;
		pthread_mutex_lock(&sh->mu);
		if (sh->sealed)
			goto out;
		f = cur->f;
	} else {
		uint64_t h = XXH3_64bits(s, dl);

		sh = &p->shard[h % PH_STRPOOL_SHARDS];
		pthread_mutex_lock(&sh->mu);
		if (sh->sealed || (f = folder_get(p, sh, h, s, len, dl)) == NULL)
			goto out;
		if (cur != NULL) {
			cur->sh = sh;
			cur->f = f;
			cur->dir = ref_str(p, f->dref);
			cur->dl = dl;
		}
	}
	out = name_get(p, sh, f, s, len);
out:
	pthread_mutex_unlock(&sh->mu);
	return out;
}

/* The part's folders and their tables freed (its strings kept). */
static void
folders_free(struct ph_strshard *sh)
{
	struct ph_strfchunk *c, *next;
	size_t used = sh->chunk_used, i;

	for (c = sh->chunk; c != NULL; c = next, used = CHUNK) {
		next = c->next;
		for (i = 0; i < used; i++)
			if (c->v[i].mask > 1)
				free(c->v[i].s.heap);
		free(c);
	}
	free(sh->ftab);
	sh->chunk = NULL;
	sh->chunk_used = 0;
	sh->ftab = NULL;
	sh->fmask = 0;
	sh->nf = 0;
}

void
ph_strpool_seal(struct ph_strpool *p)
{
	size_t i;

	for (i = 0; i < PH_STRPOOL_SHARDS; i++) {
		struct ph_strshard *sh = &p->shard[i];

		pthread_mutex_lock(&sh->mu);
		folders_free(sh);
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
		folders_free(&p->shard[i]);
		pthread_mutex_destroy(&p->shard[i].mu);
	}
	pthread_mutex_destroy(&p->mu);
	memset(p, 0, sizeof(*p));
}
