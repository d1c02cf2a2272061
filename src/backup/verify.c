/* SPDX-License-Identifier: ISC */
/* phsync_verify: every file of each archive read back and checked against
 * the archive's manifest (size and XXH3-128), and the archive whole; the
 * entries a restore would refuse and the deletions it would apply named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "phsync/backup.h"
#include "aread.h"
#include "ctx.h"
#include "buf.h"
#include "brun.h"

struct seen {
	char *path;
	uint64_t size;
	uint8_t hash[16];
};

static int
seen_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seen *)a)->path, ((const struct seen *)b)->path);
}

static void
bad(struct ph_brun *run, const char *path, const char *msg)
{
	run->st.files_failed++;
	ph_emit(&run->ev, PHSYNC_EV_FILE_FAILED, path, NULL, 0, PHSYNC_ECORRUPT, msg);
}

/* The files an archive holds, as read back: each one's size and hash. */
struct seen_list {
	struct seen *v;
	size_t n, cap;
};

static void
seen_free(struct seen_list *l)
{
	size_t k;

	for (k = 0; k < l->n; k++)
		free(l->v[k].path);
	free(l->v);
}

/* Reads the current file entry's data to its end, hashing it into h;
 * *got gets its length. */
static int
hash_data(struct ph_brun *run, struct ph_ar *ar, XXH3_state_t *h, uint64_t *got)
{
	const void *p;
	size_t n;
	int64_t off;
	int rc;

	XXH3_128bits_reset(h);
	*got = 0;
	while ((rc = ph_ar_data(ar, &p, &n, &off)) == 1) {
		XXH3_128bits_update(h, p, n);
		*got += n;
		run->st.bytes_done += n;
	}
	return rc < 0 ? rc : 0;
}

/* Adds path, with h's hash and size got, to what the archive holds. */
static int
add_seen(struct seen_list *l, const char *path, XXH3_state_t *h, uint64_t got)
{
	XXH128_canonical_t c;

	if (l->n == l->cap && ph_grow(&l->v, &l->cap, sizeof(*l->v), 256) != 0)
		return PHSYNC_ENOMEM;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
	memcpy(l->v[l->n].hash, c.digest, 16);
	l->v[l->n].size = got;
	if ((l->v[l->n].path = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	l->n++;
	return 0;
}

/* Reads every entry of the archive: the files into l, the entries a
 * restore would refuse reported. */
static int
read_entries(struct ph_brun *run, struct ph_ar *ar, XXH3_state_t *h, struct seen_list *l)
{
	struct ph_ar_entry e;
	uint64_t got;
	int rc;

	while ((rc = ph_ar_next(ar, &e)) == 1) {
		if (e.type == PH_AR_REFUSED) {
			char msg[300];

			snprintf(msg, sizeof(msg), "a restore would refuse it: %s", e.reason);
			bad(run, e.path, msg);
			continue;
		}
		if (e.type != PH_AR_FILE)
			continue;
		if ((rc = hash_data(run, ar, h, &got)) != 0 ||
		    (rc = add_seen(l, e.path, h, got)) != 0)
			return rc;
		ph_emit_progress(&run->ev, NULL);
	}
	return rc;
}

/* Checks each file the manifest names against what was read back (each
 * one verified or reported), then reports what the archive holds beyond
 * its manifest. */
static void
match_manifest(struct ph_brun *run, const struct ph_manifest *m, struct seen_list *l)
{
	size_t i, k;

	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), seen_cmp);
	for (i = 0; i < m->n; i++) {
		const struct ph_mf_file *f = &m->v[i];
		struct seen key, *s;

		if (f->dir)
			continue;
		key.path = f->path;
		s = l->n ? bsearch(&key, l->v, l->n, sizeof(*l->v), seen_cmp) : NULL;
		if (s == NULL) {
			bad(run, f->path, "named in the manifest, missing from the archive");
			continue;
		}
		s->size |= 1ull << 63;  /* matched (sizes never reach 2^63) */
		if ((s->size & ~(1ull << 63)) != f->size || memcmp(s->hash, f->hash, 16) != 0)
			bad(run, f->path, "its bytes differ from the manifest's hash and size "
			    "(damaged)");
		else {
			run->st.files_done++;
			run->st.bytes_committed += f->size;
			ph_emit(&run->ev, PHSYNC_EV_FILE_DONE, f->path, "verified", f->size, 0,
			             NULL);
		}
	}
	for (k = 0; k < l->n; k++)
		if (!(l->v[k].size >> 63))
			bad(run, l->v[k].path, "in the archive, not in its manifest");
}

/* The archive's manifests: the head must open it, the closing copy end
 * it; *m gets the closing one. */
static int
manifests(struct ph_brun *run, struct ph_ar *ar, const char *name,
          const struct ph_manifest **m)
{
	if (ph_ar_head(ar) == NULL)
		return ph_err(run->ctx, PHSYNC_ECORRUPT, "%s: no phsync manifest at its start: not "
		              "a phsync archive, nothing to check it against", name);
	if ((*m = ph_ar_manifest(ar)) == NULL)
		return ph_err(run->ctx, PHSYNC_ECORRUPT, "%s: cut short: the manifest that ends a "
		              "complete archive is missing", name);
	return 0;
}

static int
verify_one(struct ph_brun *run, const char *name)
{
	struct ph_ar *ar = NULL;
	struct seen_list l;
	const struct ph_manifest *m;
	size_t i;
	uint64_t failed0 = run->st.files_failed;
	XXH3_state_t *h = XXH3_createState();
	int rc;

	if (h == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = ph_ar_open(run->ctx, name, &ar)) != 0) {
		XXH3_freeState(h);
		return rc;
	}
	memset(&l, 0, sizeof(l));
	if ((rc = read_entries(run, ar, h, &l)) != 0 || (rc = manifests(run, ar, name, &m)) != 0)
		goto out;
	match_manifest(run, m, &l);
	/* What a restore of it would delete (of what the chain put in place
	 * before it), named so that it can be reviewed. */
	for (i = 0; i < m->ndel; i++) {
		run->st.files_deleted++;
		ph_emit(&run->ev, PHSYNC_EV_DELETED, m->del[i], "would delete", 0, 0, name);
	}
	if (run->st.files_failed > failed0)
		rc = ph_err(run->ctx, PHSYNC_ECORRUPT, "%s: %llu entr%s not match its manifest "
		            "or would be refused by a restore (named above)", name,
		            (unsigned long long)(run->st.files_failed - failed0),
		            run->st.files_failed - failed0 == 1 ? "y does" : "ies do");
out:
	seen_free(&l);
	XXH3_freeState(h);
	ph_ar_close(ar);
	return rc;
}

int
phsync_verify(phsync_ctx *ctx, const char *const *archives, size_t n,
              const struct phsync_options *opts, struct phsync_stats *stats)
{
	struct phsync_options defaults;
	struct ph_brun run;
	size_t i;
	int rc = 0, r;

	ctx->err[0] = '\0';
	ctx->interrupted = 0;
	if (opts == NULL) {
		phsync_options_init(&defaults);
		opts = &defaults;
	}
	ph_brun_init(&run, ctx, opts);
	if (n == 0)
		rc = ph_err(ctx, PHSYNC_EINVAL, "no archive to verify");
	for (i = 0; i < n; i++) {
		/* Every archive is checked; the first failure is the answer. */
		r = verify_one(&run, archives[i]);
		if (r != 0) {
			if (rc == 0)
				rc = r;
			ph_emit(&run.ev, PHSYNC_EV_WARNING, archives[i], NULL, 0, r, ctx->err);
		}
		if (ctx->interrupted) {
			rc = PHSYNC_EINTR;
			break;
		}
	}
	if (rc != 0 && n > 1)
		ph_err(ctx, rc, "%s", "some archives do not check out (named above)");
	ph_emit_elapsed(&run.ev);
	if (stats != NULL)
		*stats = run.st;
	ph_emit(&run.ev, PHSYNC_EV_SUMMARY, NULL, NULL, 0, rc, rc ? ctx->err : NULL);
	return rc;
}
