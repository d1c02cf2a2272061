/* SPDX-License-Identifier: ISC */
/* Push, resumable uploads: a big file whose upload is cut (dead link,
 * timeout, Ctrl-C) keeps its temp file on the server and the prefix the
 * server acknowledged in the state (struct pf_resume); the next run checks
 * that prefix against the local file and goes on from it (PM_RESUME). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "local.h"
#include "pfs.h"
#include "push_int.h"

/* How much of a kept prefix is read back and compared before going on. */
#define PH_PUSH_RESUME_PROBE 65536

/* Hashes and signs the first n bytes of the local file (a kept prefix the
 * server holds): as if they had been sent now. */
int
pf_feed_prefix(struct pfile *f, uint64_t n)
{
	uint8_t *buf = malloc(1u << 20);
	uint64_t off = 0;

	if (buf == NULL)
		return PHSYNC_ENOMEM;
	while (off < n) {
		size_t want = n - off < (1u << 20) ? (size_t)(n - off) : (1u << 20);
		int64_t r = ph_pread(f->fd, buf, want, off);

		if (r == -EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return r < 0 ? ph_err_from_errno((int)-r) : PHSYNC_EIO;
		}
		XXH3_128bits_update(f->hs, buf, (size_t)r);
		pf_sig_feed(f, buf, (size_t)r, 0);
		off += (uint64_t)r;
	}
	free(buf);
	return 0;
}

/* Does the server's temp file rp hold the local file's bytes at
 * [off, off + len)? */
static int
same_on_server(struct ph_job *j, const char *rp, int fd, uint64_t off, uint32_t len)
{
	uint8_t *a = malloc(2 * (size_t)len), *b[1];
	uint32_t got = 0;
	size_t have = 0;
	int ok = 0;

	if (a == NULL)
		return 0;
	b[0] = a;
	if (ph_sftp_read_ranges_sync(j->sftp, rp, &off, &len, b, &got, 1) == 0 && got == len) {
		while (have < len) {
			int64_t r = ph_pread(fd, a + len + have, len - have, off + have);

			if (r <= 0)
				break;
			have += (size_t)r;
		}
		ok = have == len && memcmp(a, a + len, len) == 0;
	}
	free(a);
	return ok;
}

/* Whether the kept temp rp of pa still holds the local file e's first and
 * last 64 KiB of the kept prefix. */
static int
kept_bytes_agree(struct ph_job *j, const struct ph_partial *pa, const struct ph_entry *e,
                 const char *rp)
{
	char *dir;
	const char *base;
	int dfd, fd = -1, ok;
	uint32_t n = pa->have < PH_PUSH_RESUME_PROBE ? (uint32_t)pa->have : PH_PUSH_RESUME_PROBE;

	if (ph_local_split(ph_entry_raw(e), &dir, &base) == 0) {
		if (ph_local_opendir(j->lroot, dir, &dfd) == 0) {
			fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW, 0);
			ph_close(dfd);
		}
		free(dir);
	}
	ok = fd >= 0 && same_on_server(j, rp, fd, 0, n) &&
	     same_on_server(j, rp, fd, pa->have - n, n);
	if (fd >= 0)
		ph_close(fd);
	return ok;
}

/* Whether the plan still sends e (new or replaced). */
static int
still_sent(const struct ph_job *j, const struct ph_entry *e)
{
	size_t k;

	for (k = 0; e != NULL && k < j->plan.n; k++) {
		const struct ph_action *act = &j->plan.v[k];

		if (&j->src.v[act->src] == e && (act->kind == PH_A_NEW || act->kind == PH_A_UPDATE))
			return 1;
	}
	return 0;
}

/* Which uploads an earlier run kept (cut) may go on: the file is still to
 * send with the size and time it had, the temp is still on the server with
 * at least the kept bytes, and its first and last 64 KiB of them read back
 * as the local file's. The others' temps are removed and their records
 * dropped: a changed file starts over. */
void
pf_check_partials(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->npartials && j->state != NULL; i++) {
		struct ph_partial *pa = &j->partials[i];
		const struct ph_entry *e = ph_tree_find(&j->src, pa->path);
		const char *dp = e ? ph_entry_dpath(e) : pa->path, *slash = strrchr(dp, '/');
		size_t dl = slash ? (size_t)(slash - dp) + 1 : 0;
		char *rel = malloc(dl + strlen(pa->tmp) + 1), *rp = NULL;
		struct ph_sftp_attrs a;
		int ok, rc;

		if (rel == NULL)
			continue;
		memcpy(rel, dp, dl);
		strcpy(rel + dl, pa->tmp);
		rp = ph_job_rpath(j, rel);
		ok = still_sent(j, e) && e->size == pa->size && e->mtime == pa->mtime &&
		     pa->have > 0 && pa->have < e->size && rp != NULL &&
		     ph_sftp_stat_sync(j->sftp, PH_LSTAT, rp, &a) == 0 && (a.flags & PH_ATTR_SIZE) &&
		     a.size >= pa->have && kept_bytes_agree(j, pa, e, rp);
		if (ok) {
			pa->ready = 1;
		} else {
			if (rp != NULL)
				ph_sftp_remove_sync(j->sftp, rp);
			if ((rc = ph_state_partial_drop(j->state, pa->path)) != 0 && j->state_err == 0)
				j->state_err = rc;
			free(pa->path);
			pa->path = NULL;
		}
		free(rp);
		free(rel);
	}
}
