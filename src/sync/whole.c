/* Whole-content hashes of a file on either side; see whole.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "ctx.h"
#include "job.h"
#include "lio.h"
#include "local.h"
#include "whole.h"

#define CHUNK (256u * 1024)   /* one READ; a server may answer less */
#define NSLOT 16              /* READs in flight */

int
ph_whole_local(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size)
{
	const char *base;
	char *dir;
	int dfd, rc;

	if ((rc = ph_local_split(rel, &dir, &base)) != 0)
		return rc;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	free(dir);
	if (rc != 0)
		return rc;
	rc = ph_lio_hash_file(dfd, base, out, size);
	close(dfd);
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
	uint32_t chunk = ph_sftp_max_read(j->sftp), hlen = 0;
	struct slot *sl = calloc(NSLOT, sizeof(*sl));
	uint8_t *mem = NULL, h[PH_SFTP_MAX_HANDLE];
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
	if ((rc = ph_sftp_open_sync(j->sftp, rp, PH_FXF_READ, NULL, h, &hlen)) != 0)
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
			if ((rc = ph_sftp_read(j->sftp, h, hlen, q->off, q->want, read_cb, q)) != 0)
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
		ph_sftp_close_sync(j->sftp, h, hlen);
	free(rp);
	free(mem);
	free(sl);
	XXH3_freeState(hs);
	return rc;
}
