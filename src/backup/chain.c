/* SPDX-License-Identifier: ISC */
/* A restore's chain, read and ordered before anything is written
 * (chain.h). */
#include <stdlib.h>
#include <string.h>

#include "aread.h"
#include "chain.h"
#include "ctx.h"

/* The head of one archive: its first entry, nothing more is read. */
static int
read_head(phsync_ctx *ctx, const char *name, struct ph_chain_link *l)
{
	struct ph_ar *ar = NULL;
	struct ph_ar_entry e;
	const struct ph_manifest *h;
	int rc;

	memset(l, 0, sizeof(*l));
	l->name = name;
	if ((rc = ph_ar_open(ctx, name, &ar)) != 0)
		return rc;
	rc = ph_ar_next(ar, &e);
	if (rc >= 0 && (h = ph_ar_head(ar)) != NULL) {
		l->phsync = 1;
		memcpy(l->series, h->series, sizeof(l->series));
		l->seq = h->seq;
		l->base = h->base;
		l->full = h->full;
	}
	ph_ar_close(ar);
	return rc < 0 ? rc : 0;
}

static int
by_seq(const void *a, const void *b)
{
	const struct ph_chain_link *x = *(const struct ph_chain_link *const *)a;
	const struct ph_chain_link *y = *(const struct ph_chain_link *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Is the sorted chain p[0..np-1] whole? */
static int
check(phsync_ctx *ctx, struct ph_chain_link **p, size_t np)
{
	size_t k;

	if (!p[0]->full)
		return ph_err(ctx, PHSYNC_EINVAL, "%s is an incremental archive (number %lld of its "
		              "series, on number %lld), and no full archive of its chain was given: "
		              "give the full archive and every incremental after it", p[0]->name,
		              (long long)p[0]->seq, (long long)p[0]->base);
	for (k = 1; k < np; k++) {
		const struct ph_chain_link *a = p[k - 1], *b = p[k];

		if (strcmp(a->series, b->series) != 0)
			return ph_err(ctx, PHSYNC_EINVAL, "%s and %s belong to different series "
			              "(backups of another folder or name): give one chain", a->name,
			              b->name);
		if (a->seq == b->seq)
			return ph_err(ctx, PHSYNC_EINVAL, "%s and %s are the same archive (number %lld "
			              "of the series): give each once", a->name, b->name,
			              (long long)a->seq);
		if (b->full)
			return ph_err(ctx, PHSYNC_EINVAL, "%s and %s are both full archives (numbers "
			              "%lld and %lld), two chains: give one full archive and its "
			              "incrementals", a->name, b->name, (long long)a->seq,
			              (long long)b->seq);
		if (b->base != a->seq)
			return ph_err(ctx, PHSYNC_EINVAL, "%s (number %lld of the series) is on number "
			              "%lld, which was not given (the one before it is %s, number "
			              "%lld): give every incremental of the chain", b->name,
			              (long long)b->seq, (long long)b->base, a->name, (long long)a->seq);
	}
	return 0;
}

int
ph_chain_order(phsync_ctx *ctx, const char *const *archives, size_t n,
               struct ph_chain_link *v)
{
	struct ph_chain_link **p = NULL, *sorted = NULL;
	size_t i, np = 0;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if ((rc = read_head(ctx, archives[i], &v[i])) != 0)
			return rc;
		np += v[i].phsync;
	}
	if (np == 0)
		return 0;
	if ((p = calloc(np, sizeof(*p))) == NULL || (sorted = calloc(np, sizeof(*sorted))) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	for (i = 0, np = 0; i < n; i++)
		if (v[i].phsync)
			p[np++] = &v[i];
	qsort(p, np, sizeof(*p), by_seq);
	if ((rc = check(ctx, p, np)) != 0)
		goto out;
	for (i = 0; i < np; i++)
		sorted[i] = *p[i];
	for (i = 0, np = 0; i < n; i++)
		if (v[i].phsync)
			v[i] = sorted[np++];
out:
	free(p);
	free(sorted);
	return rc;
}
