/* SPDX-License-Identifier: ISC */
/* Plain reads of a pull (pull_int.h): a file read whole, from a kept
 * prefix on (resume), or the blocks a check-file delta did not find in the
 * old copy. Many reads of one file are in flight; each reply's bytes go to
 * the I/O thread at their offset. */
#include <stdio.h>
#include <stdlib.h>

#include "cfdelta.h"
#include "platform.h"
#include "pull_int.h"

static void read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* Does the server answer a READ with fewer bytes than asked only at the
 * end of the file? The helper does (docs/PROTOCOL.md: it reads until it
 * has them all or the file ends); an SFTP server need not. */
static int
short_is_eof(const struct xfer *x)
{
	return ph_sftp_helper(x->p->j->sftp) >= 1;
}

/* Is there more to ask for? The listed size is a hint, never trusted: a
 * file of known size S is read up to S plus one read at S that must answer
 * EOF (else the file grew); a file of unknown size is read until EOF. From
 * the helper the last read asks one byte past S instead, and its short
 * reply is the EOF (ph_pull_whole_issue). */
int
ph_pull_whole_want(const struct xfer *x)
{
	if (x->r.eof_at != UINT64_MAX)
		return 0;
	if (x->e->nosize)
		return 1;
	return x->r.next_off < x->e->size || !x->r.probed;
}

static int
queue_read(struct xfer *x, uint64_t off, uint32_t len)
{
	struct pull *p = x->p;
	struct rreq *rq = malloc(sizeof(*rq));
	int rc;

	if (rq == NULL)
		return PHSYNC_ENOMEM;
	rq->x = x;
	rq->off = off;
	rq->len = len;
	if ((rc = ph_sftp_read(ph_sftp_in_group(p->j->sftp, &x->grp), &x->h, off, len, read_cb,
	                       rq)) != 0) {
		free(rq);
		return rc;
	}
	ph_pull_sent(x);
	return 0;
}

/* In CF_READ: the blocks the old copy holds at next_off go to the I/O
 * thread to copy; returns 1 when it did, 0 when the bytes there are to be
 * read (*len cut to them), or PHSYNC_ENOMEM. */
static int
copy_found(struct xfer *x, uint32_t *len)
{
	struct pull *p = x->p;
	int64_t src;
	uint64_t run;

	ph_cf_at(x->c.cf, x->r.next_off, &src, &run);
	if (src < 0) {
		if (run < *len)
			*len = (uint32_t)run;
		return 0;
	}
	if (ph_lio_copy(p->lio, x->wf, x->r.next_off, (uint64_t)src, (size_t)run) != 0)
		return PHSYNC_ENOMEM;
	x->r.next_off += run;
	x->r.got += run;
	x->r.hi = x->r.next_off > x->r.hi ? x->r.next_off : x->r.hi;
	x->matched += run;
	x->put += run;
	p->j->st.bytes_done += run;
	return 1;
}

int
ph_pull_whole_issue(struct xfer *x)
{
	struct pull *p = x->p;
	int rc;

	while (ph_pull_whole_want(x) && x->reads < PULL_MAX_READS_FILE &&
	       p->reads < PULL_MAX_READS) {
		uint32_t len = p->chunk;

		if (x->state == PH_XS_CF_READ && x->r.next_off < x->e->size) {
			if ((rc = copy_found(x, &len)) < 0)
				return rc;
			if (rc > 0)
				continue;
		}
		if (!x->e->nosize && x->r.next_off < x->e->size && x->e->size - x->r.next_off < len) {
			len = (uint32_t)(x->e->size - x->r.next_off);
			/* The helper's reply to the last read says where the file
			 * ends: one byte more than listed means it grew, fewer that
			 * it ends there; no read at S after it. */
			if (short_is_eof(x)) {
				len++;
				x->r.probed = 1;
			}
		}
		if ((rc = queue_read(x, x->r.next_off, len)) != 0)
			return rc;
		if (!x->e->nosize && x->r.next_off >= x->e->size)
			x->r.probed = 1;
		x->r.next_off += len;
	}
	return 0;
}

/* Commits the file only when every byte from 0 to the EOF the server
 * reported arrived in complete replies, and that EOF is the listed size
 * (or the size was unknown). Anything else aborts the file: it is retried
 * by the next run, never kept cut or padded. */
void
ph_pull_whole_complete(struct xfer *x)
{
	struct pull *p = x->p;
	char msg[160];

	if (x->r.eof_at == UINT64_MAX || x->r.got != x->r.eof_at || x->r.hi > x->r.eof_at) {
		ph_pull_fail(x, PHSYNC_EREMOTE, "the server's replies did not cover the file; "
		             "not copied (retried next run)");
		return;
	}
	if (!x->e->nosize && x->r.eof_at != x->e->size) {
		snprintf(msg, sizeof(msg), "the file ends at byte %llu, not at the %llu the "
		         "server listed (changed while read?); not copied, retried next run",
		         (unsigned long long)x->r.eof_at, (unsigned long long)x->e->size);
		ph_pull_fail(x, PHSYNC_EREMOTE, msg);
		return;
	}
	ph_sftp_close(p->j->sftp, &x->h, NULL, NULL);
	x->h.len = 0;
	x->wf->expect = x->r.got;
	x->wf->matched = x->matched;
	ph_pull_basis_done(x);
	ph_lio_finish(p->lio, x->wf, PH_LIO_COMMIT);
	x->wf = NULL;
	ph_pull_state(x, PH_XS_DONE);
}

/* The server says the file ends at off. */
static void
take_eof(struct xfer *x, uint64_t off)
{
	if (off < x->r.eof_at)
		x->r.eof_at = off;
	if (x->r.hi > x->r.eof_at)
		ph_pull_fail(x, PHSYNC_EPROTO, "the server reported an end before data it "
		             "had sent");
}

/* A file of unknown size (nosize) is read to EOF, so a broken or hostile
 * server could send bytes until the local disk is full. Its first bytes
 * fix a floor, the smaller of PULL_FLOOR_MAX and half of what is free then
 * (0, no floor, where the free space cannot be read: a full disk still
 * fails it cleanly); each PULL_FLOOR_EVERY bytes after, the free space must
 * still be above it. Returns 1, with the reason in msg, when it is not.
 * The I/O thread's queue (4 MiB) lags the check: the disk keeps at least
 * the floor less that queue and one step. */
static int
below_floor(struct xfer *x, char *msg, size_t n)
{
	struct pull *p = x->p;
	uint64_t avail;

	if (!x->e->nosize || p->j->lroot < 0 || (x->r.floor_set && (x->r.floor == 0 ||
	    x->r.got < x->r.floor_next)))
		return 0;
	x->r.floor_next = x->r.got + PULL_FLOOR_EVERY;
	if (ph_free_space(p->j->lroot, &avail) != 0) {
		x->r.floor_set = 1;   /* no floor, or this check skipped */
		return 0;
	}
	if (!x->r.floor_set) {
		x->r.floor_set = 1;
		x->r.floor = avail / 2 < PULL_FLOOR_MAX ? avail / 2 : PULL_FLOOR_MAX;
		return 0;
	}
	if (avail >= x->r.floor)
		return 0;
	snprintf(msg, n, "the server did not list this file's size and sent %llu MiB of it "
	         "without an end: the local disk's free space fell below the %llu MiB floor "
	         "kept for such files (the smaller of 1 GiB and half of what was free when it "
	         "started); not copied",
	         (unsigned long long)(x->r.got >> 20), (unsigned long long)(x->r.floor >> 20));
	return 1;
}

/* One DATA reply with bytes, or the reason it cannot be taken. */
static void
take_data(struct xfer *x, const struct rreq *rq, const struct ph_sftp_reply *r)
{
	struct pull *p = x->p;
	uint64_t end = rq->off + r->len;
	char msg[300];

	if (r->len > rq->len) {
		ph_pull_fail(x, PHSYNC_EPROTO, "the server sent more data than asked for");
	} else if (!x->e->nosize && end > x->e->size) {
		ph_pull_fail(x, PHSYNC_EREMOTE, "the file grew on the server while it was read; "
		             "not copied (retried next run)");
	} else if (end > x->r.eof_at) {
		ph_pull_fail(x, PHSYNC_EREMOTE, "the file changed on the server while it was read "
		             "(data past the end it reported); not copied, retried next run");
	} else if (below_floor(x, msg, sizeof(msg))) {
		ph_pull_fail(x, PHSYNC_EREFUSED, msg);
	} else if (ph_lio_write(p->lio, x->wf, rq->off, r->data, r->len) != 0) {
		ph_pull_fail(x, PHSYNC_ENOMEM, "out of memory");
	} else {
		x->r.got += r->len;
		x->put += r->len;
		if (end > x->r.hi)
			x->r.hi = end;
		p->j->st.bytes_done += r->len;
		/* A short read: from the helper the file ends there (else ask
		 * for the rest of this range). */
		if (r->len < rq->len && short_is_eof(x))
			take_eof(x, end);
		else if (r->len < rq->len && queue_read(x, end, rq->len - r->len) != 0)
			ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	}
}

static void
read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;

	(void)s;
	ph_pull_back(x);
	x->p->j->busy = x->e->path;
	if (ph_pull_moot(x, r)) {
		/* nothing more to do with it */
	} else if (x->p->fatal) {
		/* The local disk is full and the run stops: the bytes could not
		 * be written, and a file without an end (no size listed, or an
		 * absurd one) would be read forever. */
		ph_pull_fail(x, x->p->fatal, "no space left on the local disk; not copied");
	} else if (r->type == PH_FXP_DATA && r->len > 0) {
		take_data(x, rq, r);
	} else if (r->type == PH_FXP_DATA ||
	           (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF)) {
		/* EOF (an empty DATA reply counts as one). */
		take_eof(x, rq->off);
	} else {
		ph_pull_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		             r->msg[0] ? r->msg : "the server refused to read this file");
	}
	free(rq);
	if (x->state != PH_XS_FAILED && ph_pull_issue(x) != 0)
		ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	ph_pull_maybe_done(x);
}
