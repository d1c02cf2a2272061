/* SPDX-License-Identifier: ISC */
/* A pull's delta through the helper (pull_int.h, docs/PROTOCOL.md): the
 * local old copy is signed and the signature sent with phsync-delta-start
 * (DELTA_SIGN, DELTA_START); the delta is read in order and applied as it
 * comes (DELTA_READ). A refused start reads the file whole instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "dbound.h"
#include "local.h"
#include "pfs.h"
#include "pull_int.h"
#include "sigfd.h"

/* Bytes of strong hash per block in the signature a pull sends: with the
 * 4-byte rolling sum, a wrong block match needs a 72-bit coincidence, and
 * the delta's END hash (XXH3-128 of the whole file) is checked anyway: a
 * file built wrong is never kept. 5 instead of 8 cuts the signature by a
 * quarter (bench/bench_wire.py: 1.25 MB up for 60 edited photos, then
 * 0.94 MB). */
#define PULL_STRONG 5

static void dread_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);
static void dstart_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* Is a delta worth asking for, the destination's old copy being d? */
int
ph_pull_delta_wanted(const struct xfer *x, const struct ph_entry *d)
{
	const struct pull *p = x->p;

	return ph_sftp_helper(p->j->sftp) >= 1 && !x->e->nosize &&
	       x->e->size >= PULL_DELTA_MIN && !d->nosize && d->size >= PULL_DELTA_MIN &&
	       p->j->lroot >= 0 && p->cbuf != NULL;
}

/* The local old copy (the plan's destination entry d) opened for reading,
 * or -1 when it is no longer what the plan saw: no basis to trust. */
int
ph_pull_open_basis(struct pull *p, const struct ph_entry *d)
{
	char *dir = NULL;
	const char *base;
	struct ph_stat st;
	int dfd = -1, fd = -1;

	if (ph_local_split(ph_entry_dpath(d), &dir, &base) == 0 &&
	    ph_local_opendir(p->j->lroot, dir, &dfd) == 0 &&
	    (fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW | PH_O_NONBLOCK, 0)) >= 0 &&
	    (ph_fstat(fd, &st) != 0 || st.type != PH_FT_REG || st.size != d->size ||
	     st.mtime_sec != d->mtime)) {
		ph_close(fd);
		fd = -1;
	}
	if (dfd >= 0)
		ph_close(dfd);
	free(dir);
	return fd < 0 ? -1 : fd;
}

/* DELTA_SIGN: the signature of the local old copy (the plan's destination
 * entry d, for which ph_pull_delta_wanted said yes); the file stays open as
 * the delta's basis. Returns 1 with the delta asked for (DELTA_START), 0 to
 * read the file whole. */
int
ph_pull_delta_begin(struct xfer *x, const struct ph_entry *d)
{
	struct pull *p = x->p;
	struct ph_job *j = p->j;
	struct ph_buf sig = { NULL, 0, 0, PH_SFTP_MAX_PACKET - 1024 };
	int fd, ok = 0;

	if ((fd = ph_pull_open_basis(p, d)) < 0)
		return 0;
	/* A signature too large for one request (its buffer's max) means
	 * the file comes whole. */
	if (ph_sig_fd(fd, d->size, 0, PULL_STRONG, p->cbuf, PULL_COPY_BUF, &sig) != 0)
		goto out;
	if (phsync_delta_reader_new(j->ctx, d->size, &x->d.dr) != 0)
		goto out;
	if (ph_sftp_helper_delta_start(ph_sftp_in_group(j->sftp, &x->grp), &x->h, sig.data,
	                               sig.len, dstart_cb, x) != 0) {
		phsync_delta_reader_free(x->d.dr);
		x->d.dr = NULL;
		goto out;
	}
	ph_pull_state(x, PH_XS_DELTA_START);
	x->d.block = phsync_delta_block_len(d->size); /* ph_sig_fd's, asked with 0 */
	/* One read first: the delta of an edited photo is a few KiB and comes
	 * whole in it. Eight each (PULL_DELTA_READS_FILE) held slots of the
	 * global window with seven reads that could only answer EOF. A full
	 * reply (a big delta) opens the window. */
	x->d.win = 1;
	x->basis = fd;
	fd = -1;
	ok = 1;
out:
	ph_buf_free(&sig);
	if (fd >= 0)
		ph_close(fd);
	return ok;
}

int
ph_pull_delta_want(const struct xfer *x)
{
	return !x->d.end && !x->d.shorted && !x->d.eof;
}

/* Delta reads go out in DELTA_START too, behind the start: the helper
 * answers in order, so the first comes right after its answer. */
int
ph_pull_delta_issue(struct xfer *x)
{
	struct pull *p = x->p;
	int rc;

	while (ph_pull_delta_want(x) && x->reads < x->d.win && p->reads < PULL_MAX_READS) {
		struct rreq *rq = malloc(sizeof(*rq));

		if (rq == NULL)
			return PHSYNC_ENOMEM;
		rq->x = x;
		rq->off = x->d.next;
		rq->len = p->chunk;
		if ((rc = ph_sftp_helper_delta_read(ph_sftp_in_group(p->j->sftp, &x->grp), &x->h,
		                                    rq->off, rq->len, dread_cb, rq)) != 0) {
			free(rq);
			return rc;
		}
		x->d.next += rq->len;
		ph_pull_sent(x);
	}
	return 0;
}

void
ph_pull_delta_complete(struct xfer *x)
{
	struct pull *p = x->p;
	char msg[160];

	if (!x->d.end) {
		ph_pull_fail(x, PHSYNC_EPROTO, "the helper's delta ended before its end; not "
		             "copied (retried next run)");
		return;
	}
	if (!x->e->nosize && x->d.len != x->e->size) {
		snprintf(msg, sizeof(msg), "the file is %llu bytes now, not the %llu the "
		         "helper listed (changed while read?); not copied, retried next run",
		         (unsigned long long)x->d.len, (unsigned long long)x->e->size);
		ph_pull_fail(x, PHSYNC_EREMOTE, msg);
		return;
	}
	ph_sftp_close(p->j->sftp, &x->h, NULL, NULL);
	x->h.len = 0;
	x->wf->expect = x->d.len;
	x->wf->check_hash = 1;
	memcpy(x->wf->want_hash, x->d.hash, 16);
	x->wf->matched = x->matched;
	ph_pull_basis_done(x);
	ph_lio_finish(p->lio, x->wf, PH_LIO_COMMIT);
	x->wf = NULL;
	ph_pull_state(x, PH_XS_DONE);
}

/* Applies delta bytes as they come: COPY from the old copy, LITERAL as
 * sent, both written at their place in the new file. No op may write past
 * the listed size, nor the COPY ops outnumber what a file of that size can
 * need (dbound.h): else msg says why. */
static int
delta_apply(struct xfer *x, const uint8_t *data, size_t len, char *msg, size_t msglen)
{
	struct pull *p = x->p;
	struct phsync_in in = { data, len, 0 };
	struct phsync_delta_op op;
	int rc;

	for (;;) {
		if ((rc = phsync_delta_read(x->d.dr, &in, 0, &op)) != 0)
			return rc;
		if (op.type == PHSYNC_OP_NONE)
			return 0;
		if ((rc = ph_dbound_op(&op, x->e->size, msg, msglen)) != 0)
			return rc;
		if (op.type == PHSYNC_OP_END) {
			x->d.end = 1;
			x->d.len = op.len;
			memcpy(x->d.hash, op.hash, 16);
		} else if (op.type == PHSYNC_OP_LITERAL) {
			if (ph_lio_write(p->lio, x->wf, op.out_off, op.data, (size_t)op.len) != 0)
				return PHSYNC_ENOMEM;
			x->put += op.len;
			p->j->st.bytes_done += op.len;
		} else {
			if ((rc = ph_dbound_work(x->e->size, x->d.block, x->d.fed, ++x->d.copies,
			                         msg, msglen)) != 0)
				return rc;
			/* The I/O thread reads the old copy itself (one copy of the
			 * bytes fewer, and off this thread). */
			if (x->wf->basis < 0 && (x->wf->basis = dup(x->basis)) < 0)
				return PHSYNC_ENOMEM;
			if (ph_lio_copy(p->lio, x->wf, op.out_off, op.off, (size_t)op.len) != 0)
				return PHSYNC_ENOMEM;
			x->matched += op.len;
			x->put += op.len;
			p->j->st.bytes_done += op.len;
		}
	}
}

/* One DATA reply of the delta: in order, never after a short one, and
 * only once the helper took the signature. */
static void
take_delta(struct xfer *x, const struct rreq *rq, const struct ph_sftp_reply *r)
{
	char msg[300];
	int rc;

	if (x->state != PH_XS_DELTA_READ || r->len == 0 || r->len > rq->len || x->d.shorted ||
	    rq->off != x->d.fed) {
		ph_pull_fail(x, PHSYNC_EPROTO, "the helper sent delta bytes out of order or "
		             "more than asked for");
		return;
	}
	if (r->len < rq->len)
		x->d.shorted = 1; /* only the last reply may be short */
	else
		x->d.win = PULL_DELTA_READS_FILE;
	x->d.fed += r->len;
	/* Its ops first (one reply is bounded: at most what was asked), then
	 * the delta's length so far. */
	if ((rc = delta_apply(x, r->data, r->len, msg, sizeof(msg))) == 0)
		rc = ph_dbound_work(x->e->size, x->d.block, x->d.fed, x->d.copies, msg,
		                    sizeof(msg));
	if (rc != 0)
		ph_pull_fail(x, rc == PHSYNC_ENOMEM || rc == PHSYNC_EREMOTE ? rc : PHSYNC_EPROTO,
		             rc == PHSYNC_ENOMEM ? "out of memory" :
		             rc == PHSYNC_EREMOTE ? msg :
		             "the helper sent a malformed delta; not copied");
}

static void
dread_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;

	(void)s;
	ph_pull_back(x);
	x->p->j->busy = x->e->path;
	if (x->state != PH_XS_DELTA_START && x->state != PH_XS_DELTA_READ &&
	    x->state != PH_XS_FAILED) {
		/* The helper refused the delta and the file went back to plain
		 * reads: what was asked of the delta is moot. */
	} else if (ph_pull_moot(x, r)) {
		/* nothing more to do with it */
	} else if (r->type == PH_FXP_DATA) {
		take_delta(x, rq, r);
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		x->d.eof = 1;
	} else {
		ph_pull_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		             r->msg[0] ? r->msg : "the helper refused the delta");
	}
	free(rq);
	if (x->state != PH_XS_FAILED && ph_pull_issue(x) != 0)
		ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	ph_pull_maybe_done(x);
}

static void
dstart_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct xfer *x = arg;

	(void)s;
	if (ph_pull_moot(x, r)) {
		/* nothing more to do with it */
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_OK) {
		ph_pull_state(x, PH_XS_DELTA_READ);
	} else {
		/* The helper would not take the signature (too many deltas at
		 * once, say): the file comes whole over the same handle. */
		ph_close(x->basis);
		x->basis = -1;
		ph_pull_go_whole(x);
	}
	ph_pull_maybe_done(x);
}
