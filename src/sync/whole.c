/* SPDX-License-Identifier: ISC */
/* Whole-content hashes of a file on either side; see whole.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "phsync/delta.h"
#include "ctx.h"
#include "job.h"
#include "lio.h"
#include "local.h"
#include "pfs.h"
#include "whole.h"

#define CHUNK (256u * 1024)   /* one READ; a server may answer less */
#define NSLOT 16              /* READs in flight */

int
ph_whole_local_errno(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size)
{
	const char *base;
	char *dir;
	int dfd, rc;

	if (ph_local_split(rel, &dir, &base) != 0)
		return -ENOMEM;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	free(dir);
	if (rc != 0)
		return -EIO;
	rc = ph_whole_hash_at(dfd, base, out, size);
	ph_close(dfd);
	return rc;
}

int
ph_whole_local(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size)
{
	int rc = ph_whole_local_errno(j, rel, out, size);

	return rc ? ph_err_from_errno(-rc) : 0;
}

/* One READ in flight. */
struct slot {
	uint64_t off;
	uint32_t want, got;
	int done, err, eof;
	uint8_t *buf;
};

static void
read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct slot *sl = arg;

	(void)s;
	sl->done = 1;
	if (r->type == PH_FXP_DATA && r->len <= sl->want) {
		memcpy(sl->buf, r->data, r->len);
		sl->got = r->len;
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		sl->eof = 1;
	} else {
		sl->err = r->err ? r->err : PHSYNC_EPROTO;
	}
}

int
ph_whole_remote(struct ph_job *j, const char *rel, uint64_t size, uint8_t out[16])
{
	XXH3_state_t *hs = XXH3_createState();
	XXH128_canonical_t c;
	uint32_t chunk = ph_sftp_max_read(j->sftp);
	struct slot *sl = calloc(NSLOT, sizeof(*sl));
	uint8_t *mem = NULL;
	struct ph_sftp_handle h = { 0 };
	uint64_t pos = 0, next = 0;
	char *rp = ph_job_rpath(j, rel);
	size_t head = 0, inflight = 0, i;
	int rc = 0, open = 0;

	if (chunk == 0 || chunk > CHUNK)
		chunk = CHUNK;
	if (hs == NULL || sl == NULL || rp == NULL ||
	    (mem = malloc((size_t)NSLOT * chunk)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	for (i = 0; i < NSLOT; i++)
		sl[i].buf = mem + i * chunk;
	if ((rc = ph_sftp_open_sync(j->sftp, rp, PH_FXF_READ, NULL, &h)) != 0)
		goto out;
	open = 1;
	XXH3_128bits_reset(hs);
	/* In order, NSLOT READs in flight; the one past the end must answer
	 * EOF (a file longer than listed is not the one confirmed). A short
	 * answer drains the window and it starts again where that one
	 * stopped. */
	while (rc == 0) {
		while (inflight < NSLOT && next <= size) {
			struct slot *q = &sl[(head + inflight) % NSLOT];

			memset(q, 0, offsetof(struct slot, buf));
			q->off = next;
			q->want = next < size ? (uint32_t)(size - next < chunk ? size - next : chunk) : 1;
			if ((rc = ph_sftp_read(j->sftp, &h, q->off, q->want, read_cb, q)) != 0)
				break;
			next += next < size ? q->want : 1;
			inflight++;
		}
		if (rc != 0 || inflight == 0)
			break;
		if ((rc = ph_sftp_wait(j->sftp, &sl[head].done)) != 0)
			break;
		{
			struct slot *q = &sl[head];

			head = (head + 1) % NSLOT;
			inflight--;
			if (q->err != 0) {
				rc = q->err;
			} else if (q->off >= size) {
				if (!q->eof)
					rc = PHSYNC_ECORRUPT; /* longer than listed */
				break;
			} else if (q->eof || q->got == 0) {
				rc = PHSYNC_ECORRUPT;     /* shorter */
			} else {
				XXH3_128bits_update(hs, q->buf, q->got);
				pos += q->got;
				if (q->got < q->want) {
					/* Drain, then go on from pos. */
					while (rc == 0 && inflight > 0) {
						if ((rc = ph_sftp_wait(j->sftp, &sl[head].done)) != 0)
							break;
						head = (head + 1) % NSLOT;
						inflight--;
					}
					next = pos;
				}
			}
		}
	}
	if (rc == 0 && j->ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == 0) {
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(hs));
		memcpy(out, c.digest, 16);
	}
out:
	/* Replies still owed write into sl: waited for, or, when the link
	 * fails meanwhile, run now by giving it up. */
	while (inflight > 0) {
		if (!sl[head].done && ph_sftp_wait(j->sftp, &sl[head].done) != 0) {
			ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EIO);
			break;
		}
		head = (head + 1) % NSLOT;
		inflight--;
	}
	if (open && !ph_sftp_dead(j->sftp))
		ph_sftp_close_sync(j->sftp, &h);
	free(rp);
	free(mem);
	free(sl);
	XXH3_freeState(hs);
	return rc;
}

/* The helper's signature reply, copied. */
struct sig_wait {
	int done;
	uint8_t *data;
	size_t len;
};

static void
sig_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct sig_wait *w = arg;

	(void)s;
	w->done = 1;
	if (r->type == PH_FXP_EXTENDED_REPLY && r->len > 0 && (w->data = malloc(r->len)) != NULL) {
		memcpy(w->data, r->data, r->len);
		w->len = r->len;
	}
}

/* Does the local file lrel (size bytes) sign, with block length block,
 * as the bytes want? */
static int
local_signs_as(struct ph_job *j, const char *lrel, uint64_t size, uint32_t block,
               const uint8_t *want, size_t wlen)
{
	phsync_sig_gen *g = NULL;
	uint8_t *in = malloc(CHUNK), out[16384];
	size_t at = 0;
	const char *base;
	char *dir = NULL;
	int fd = -1, dfd = -1, same = 0, done = 0, end = 0;
	ssize_t n;

	if (in == NULL || ph_local_split(lrel, &dir, &base) != 0 ||
	    ph_local_opendir(j->lroot, dir, &dfd) != 0 ||
	    (fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW, 0)) < 0 ||
	    phsync_sig_gen_new(NULL, size, block, 0, &g) != 0)
		goto out;
	while (!done) {
		struct phsync_in i = { in, 0, 0 };
		struct phsync_out o = { out, sizeof(out), 0 };

		if (!end) {
			if ((n = read(fd, in, CHUNK)) < 0)
				goto out;
			i.size = (size_t)n;
			end = n == 0;
		}
		do {
			o.pos = 0;
			if (phsync_sig_gen_stream(g, &o, &i, end, &done) != 0)
				goto out;
			if (o.pos > wlen - at || memcmp(out, want + at, o.pos) != 0)
				goto out;
			at += o.pos;
		} while (i.pos < i.size || (end && !done && o.pos > 0));
		if (end && !done)
			goto out;
	}
	same = at == wlen;
out:
	phsync_sig_gen_free(g);
	if (fd >= 0)
		ph_close(fd);
	if (dfd >= 0)
		ph_close(dfd);
	free(dir);
	free(in);
	return same;
}

int
ph_whole_helper_same(struct ph_job *j, const char *rrel, const char *lrel, uint64_t size)
{
	struct sig_wait w = { 0, NULL, 0 };
	struct ph_sftp_handle h = { 0 };
	uint32_t block = phsync_delta_block_len(size);
	char *rp;
	int rc, same = 0;

	if (ph_sftp_helper(j->sftp) < 1 || (rp = ph_job_rpath(j, rrel)) == NULL)
		return 0;
	rc = ph_sftp_open_sync(j->sftp, rp, PH_FXF_READ, NULL, &h);
	free(rp);
	if (rc != 0)
		return 0;
	if ((rc = ph_sftp_helper_sig(j->sftp, &h, block, sig_cb, &w)) == 0 &&
	    (rc = ph_sftp_wait(j->sftp, &w.done)) != 0 && !w.done)
		ph_sftp_abort(j->sftp, rc); /* w must not outlive this call */
	if (!ph_sftp_dead(j->sftp))
		ph_sftp_close_sync(j->sftp, &h);
	if (w.data != NULL)
		same = local_signs_as(j, lrel, size, block, w.data, w.len);
	free(w.data);
	return same;
}
