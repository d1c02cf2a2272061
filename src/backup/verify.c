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
#include "job.h"

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
bad(struct ph_job *j, const char *path, const char *msg)
{
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, path, NULL, 0, PHSYNC_ECORRUPT, msg);
}

static int
verify_one(struct ph_job *j, const char *name)
{
	struct ph_ar *ar = NULL;
	struct ph_ar_entry e;
	struct seen *v = NULL;
	const struct ph_manifest *m;
	size_t nv = 0, cap = 0, i, k;
	uint64_t failed0 = j->st.files_failed;
	XXH3_state_t *h = XXH3_createState();
	int rc;

	if (h == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = ph_ar_open(j->ctx, name, &ar)) != 0) {
		XXH3_freeState(h);
		return rc;
	}
	while ((rc = ph_ar_next(ar, &e)) == 1) {
		const void *p;
		size_t n;
		int64_t off;
		XXH128_canonical_t c;
		uint64_t got = 0;

		if (e.type == PH_AR_REFUSED) {
			char msg[300];

			snprintf(msg, sizeof(msg), "a restore would refuse it: %s", e.reason);
			bad(j, e.path, msg);
			continue;
		}
		if (e.type != PH_AR_FILE)
			continue;
		XXH3_128bits_reset(h);
		while ((rc = ph_ar_data(ar, &p, &n, &off)) == 1) {
			XXH3_128bits_update(h, p, n);
			got += n;
			j->st.bytes_done += n;
		}
		if (rc < 0)
			break;
		if (nv == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct seen *nn = realloc(v, nc * sizeof(*nn));

			if (nn == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			v = nn;
			cap = nc;
		}
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
		memcpy(v[nv].hash, c.digest, 16);
		v[nv].size = got;
		if ((v[nv].path = strdup(e.path)) == NULL) {
			rc = PHSYNC_ENOMEM;
			break;
		}
		nv++;
		ph_job_progress(j);
	}
	if (rc == 0 && ph_ar_head(ar) == NULL)
		rc = ph_err(j->ctx, PHSYNC_ECORRUPT, "%s: no phsync manifest at its start: not a "
		            "phsync archive, nothing to check it against", name);
	if (rc == 0 && (m = ph_ar_manifest(ar)) == NULL)
		rc = ph_err(j->ctx, PHSYNC_ECORRUPT, "%s: cut short: the manifest that ends a "
		            "complete archive is missing", name);
	if (rc == 0) {
		m = ph_ar_manifest(ar);
		if (nv > 1)
			qsort(v, nv, sizeof(*v), seen_cmp);
		for (i = 0; i < m->n; i++) {
			const struct ph_mf_file *f = &m->v[i];
			struct seen key, *s;

			if (f->dir)
				continue;
			key.path = f->path;
			s = nv ? bsearch(&key, v, nv, sizeof(*v), seen_cmp) : NULL;
			if (s == NULL) {
				bad(j, f->path, "named in the manifest, missing from the archive");
				continue;
			}
			s->size |= 1ull << 63;  /* matched (sizes never reach 2^63) */
			if ((s->size & ~(1ull << 63)) != f->size || memcmp(s->hash, f->hash, 16) != 0)
				bad(j, f->path, "its bytes differ from the manifest's hash and size "
				    "(damaged)");
			else {
				j->st.files_done++;
				j->st.bytes_committed += f->size;
				ph_job_event(j, PHSYNC_EV_FILE_DONE, f->path, "verified", f->size, 0,
				             NULL);
			}
		}
		for (k = 0; k < nv; k++)
			if (!(v[k].size >> 63))
				bad(j, v[k].path, "in the archive, not in its manifest");
		/* What a restore of it would delete (of what the chain put in
		 * place before it), named so that it can be reviewed. */
		for (i = 0; i < m->ndel; i++) {
			j->st.files_deleted++;
			ph_job_event(j, PHSYNC_EV_DELETED, m->del[i], "would delete", 0, 0, name);
		}
		if (j->st.files_failed > failed0)
			rc = ph_err(j->ctx, PHSYNC_ECORRUPT, "%s: %llu entr%s not match its manifest "
			            "or would be refused by a restore (named above)", name,
			            (unsigned long long)(j->st.files_failed - failed0),
			            j->st.files_failed - failed0 == 1 ? "y does" : "ies do");
	}
	for (k = 0; k < nv; k++)
		free(v[k].path);
	free(v);
	XXH3_freeState(h);
	ph_ar_close(ar);
	return rc;
}

int
phsync_verify(phsync_ctx *ctx, const char *const *archives, size_t n,
              const struct phsync_options *opts, struct phsync_stats *stats)
{
	struct phsync_options defaults;
	struct ph_job j;
	size_t i;
	int rc = 0, r;

	ctx->err[0] = '\0';
	ctx->interrupted = 0;
	if (opts == NULL) {
		phsync_options_init(&defaults);
		opts = &defaults;
	}
	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	j.o = opts;
	j.lroot = -1;
	j.t0_ms = j.last_progress_ms = ph_now_ms();
	if (n == 0)
		rc = ph_err(ctx, PHSYNC_EINVAL, "no archive to verify");
	for (i = 0; i < n; i++) {
		/* Every archive is checked; the first failure is the answer. */
		r = verify_one(&j, archives[i]);
		if (r != 0) {
			if (rc == 0)
				rc = r;
			ph_job_event(&j, PHSYNC_EV_WARNING, archives[i], NULL, 0, r, ctx->err);
		}
		if (ctx->interrupted) {
			rc = PHSYNC_EINTR;
			break;
		}
	}
	if (rc != 0 && n > 1)
		ph_err(ctx, rc, "%s", "some archives do not check out (named above)");
	j.st.elapsed_ms = ph_now_ms() - j.t0_ms;
	if (stats != NULL)
		*stats = j.st;
	ph_job_event(&j, PHSYNC_EV_SUMMARY, NULL, NULL, 0, rc, rc ? ctx->err : NULL);
	return rc;
}
