/* SPDX-License-Identifier: ISC */
/* A pool of path strings, each kept once, shared by a run's two trees.
 *
 * Why: a no-change run over 1,000,000 files holds the source and the
 * destination tree at once, and their paths are the same strings: kept
 * once they cost 26 MB instead of 52 (docs/PERFORMANCE.md section 3). The
 * table holds 4-byte references, not pointers, so it costs 8 MB at that
 * size and is freed when both scans are done. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "strpool.h"

#define BLOCK_SHIFT 18
#define BLOCK ((size_t)1 << BLOCK_SHIFT)
#define MAX_BLOCKS (((size_t)1 << (32 - BLOCK_SHIFT)) - 1) /* ref + 1 fits */
#define MAX_LEN 65535

static const char *
ref_str(const struct ph_strpool *p, uint32_t ref)
{
	return p->blocks[ref >> BLOCK_SHIFT] + (ref & (BLOCK - 1));
}

static size_t
slot_of(const struct ph_strpool *p, const char *s, size_t len)
{
	return (size_t)XXH3_64bits(s, len) & p->mask;
}

/* Doubles the table (or makes the first one). Returns 0 or -1. */
static int
grow(struct ph_strpool *p)
{
	size_t nslots = p->slot ? (p->mask + 1) * 2 : 4096, i;
	uint32_t *old = p->slot;
	size_t omask = p->mask;

	if (nslots > ((size_t)1 << 30) ||
	    (p->slot = calloc(nslots, sizeof(*p->slot))) == NULL) {
		p->slot = old;
		return -1;
	}
	p->mask = nslots - 1;
	for (i = 0; old != NULL && i <= omask; i++) {
		const char *s;
		size_t k;

		if (old[i] == 0)
			continue;
		s = ref_str(p, old[i] - 1);
		k = slot_of(p, s, strlen(s));
		while (p->slot[k] != 0)
			k = (k + 1) & p->mask;
		p->slot[k] = old[i];
	}
	free(old);
	return 0;
}

/* Room for len bytes: their reference, or -1. */
static int64_t
take(struct ph_strpool *p, size_t len)
{
	if (p->nblocks == 0 || BLOCK - p->used < len) {
		if (p->nblocks == MAX_BLOCKS)
			return -1;
		if (p->nblocks == p->capblocks) {
			size_t cap = p->capblocks ? p->capblocks * 2 : 64;
			char **b = realloc(p->blocks, cap * sizeof(*b));

			if (b == NULL)
				return -1;
			p->blocks = b;
			p->capblocks = cap;
		}
		if ((p->blocks[p->nblocks] = malloc(BLOCK)) == NULL)
			return -1;
		p->nblocks++;
		p->used = 0;
	}
	p->used += len;
	return (int64_t)(((p->nblocks - 1) << BLOCK_SHIFT) | (p->used - len));
}

void
ph_strpool_init(struct ph_strpool *p)
{
	pthread_mutexattr_t a;

	memset(p, 0, sizeof(*p));
	pthread_mutexattr_init(&a);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP /* glibc */
	/* The two scans' threads take turns at it for a lookup of a few
	 * hundred ns: where glibc can, a waiter spins a while before it
	 * sleeps. A plain mutex put each waiter to sleep in the kernel and
	 * woke it again: a third of the lookups' time at a million files
	 * (perf: futex_wait, the scheduler's switch). */
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	pthread_mutex_init(&p->mu, &a);
	pthread_mutexattr_destroy(&a);
}

const char *
ph_strpool_get(struct ph_strpool *p, const char *s, size_t len)
{
	const char *out = NULL;
	size_t k;
	int64_t ref;

	if (len > MAX_LEN)
		return NULL;
	pthread_mutex_lock(&p->mu);
	if (p->sealed || ((p->n + 1) * 2 > p->mask + 1 && grow(p) != 0))
		goto out;
	for (k = slot_of(p, s, len); p->slot[k] != 0; k = (k + 1) & p->mask) {
		const char *c = ref_str(p, p->slot[k] - 1);

		if (memcmp(c, s, len) == 0 && c[len] == '\0') {
			out = c;
			goto out;
		}
	}
	if ((ref = take(p, len + 1)) < 0)
		goto out;
	p->slot[k] = (uint32_t)ref + 1;
	p->n++;
	out = ref_str(p, (uint32_t)ref);
	memcpy((char *)out, s, len);
	((char *)out)[len] = '\0';
out:
	pthread_mutex_unlock(&p->mu);
	return out;
}

void
ph_strpool_seal(struct ph_strpool *p)
{
	pthread_mutex_lock(&p->mu);
	free(p->slot);
	p->slot = NULL;
	p->mask = 0;
	p->n = 0;
	p->sealed = 1;
	pthread_mutex_unlock(&p->mu);
}

void
ph_strpool_free(struct ph_strpool *p)
{
	size_t i;

	for (i = 0; i < p->nblocks; i++)
		free(p->blocks[i]);
	free(p->blocks);
	free(p->slot);
	pthread_mutex_destroy(&p->mu);
	memset(p, 0, sizeof(*p));
}
