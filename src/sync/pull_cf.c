/* SPDX-License-Identifier: ISC */
/* A pull's delta through check-file (pull_int.h, cfdelta.h), for servers
 * without the helper: the server's digests of the new file's blocks and a
 * few sample reads come first (CF_ASK), the main loop then hashes the old
 * copy where those blocks may be (CF_MATCH), and the blocks found are
 * copied from it while the rest is read (CF_READ, pull_whole.c). OpenSSH
 * and Dropbear refuse check-file: the run's first request is a probe, and
 * the files that would ask too wait for its answer (CF_HOLD). */
#include <stdlib.h>
#include <unistd.h>

#include "cfdelta.h"
#include "pfs.h"
#include "pull_int.h"

/* Is a check-file delta worth asking for (no helper; see cfdelta.h)? */
int
ph_pull_cf_wanted(const struct xfer *x, const struct ph_entry *d)
{
	const struct pull *p = x->p;

	return ph_sftp_helper(p->j->sftp) == 0 && p->cfs != PULL_CF_REFUSED &&
	       ph_cf_available() && !x->e->nosize && x->e->size >= PULL_DELTA_MIN &&
	       x->e->size <= PH_CF_MAX_SIZE && !d->nosize && d->size >= PULL_DELTA_MIN &&
	       p->j->lroot >= 0 && p->cbuf != NULL;
}

/* Once the digests and samples are all in, the old copy is hashed by the
 * main loop's next turn (CF_MATCH); without digests the file is read
 * whole. During a stop the file stays and fails (ph_pull_maybe_done). */
static void
settle(struct xfer *x)
{
	if (x->state == PH_XS_CF_ASK && x->reads == 0 && !x->p->stopping) {
		if (x->c.cf != NULL)
			ph_pull_state(x, PH_XS_CF_MATCH);
		else
			ph_pull_go_whole(x);
	}
	ph_pull_maybe_done(x);
}

static void
cf_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;
	struct pull *p = x->p;
	int moot;

	(void)s;
	ph_pull_back(x);
	if ((moot = ph_pull_moot(x, r)) != 0) {
		/* nothing more to do with it */
	} else if (x->c.cf != NULL && ph_cf_take(x->c.cf, r) != 0) {
		/* A refusal (OpenSSH, Dropbear: unknown request) means none of
		 * this server's; an odd reply, none for this file. Either way the
		 * file is read whole. */
		if (r->type == PH_FXP_STATUS && r->status == PH_FX_OP_UNSUPPORTED)
			p->cfs = PULL_CF_REFUSED;
		ph_cf_free(x->c.cf);
		x->c.cf = NULL;
	}
	if (x->c.probe) {
		/* The files held for this answer go on (sign_next): with digests
		 * unless refused. A probe lost with its file is tried again. */
		x->c.probe = 0;
		if (p->cfs != PULL_CF_REFUSED)
			p->cfs = moot ? PULL_CF_UNTRIED : PULL_CF_WORKS;
	}
	free(rq);
	settle(x);
}

static void
sample_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;

	(void)s;
	ph_pull_back(x);
	if (r->type == 0 && x->state != PH_XS_FAILED) {
		x->quiet = 1;
		ph_pull_fail(x, r->err ? r->err : PHSYNC_EINTR, "connection lost");
	} else if (r->type == PH_FXP_DATA && x->c.cf != NULL) {
		ph_cf_sample_take(x->c.cf, (uint32_t)rq->off, r->data, r->len);
	}
	free(rq);
	settle(x);
}

/* From OPEN or CF_HOLD: asks the server for the digests of the new file's
 * blocks, with the sample reads (CF_ASK). Returns 1 when asked, 0 to read
 * the file whole. */
int
ph_pull_cf_start(struct xfer *x)
{
	struct pull *p = x->p;
	struct rreq *rq;
	uint32_t block, i, n, slen;
	uint64_t len;

	if (ph_cf_new(x->e->size, &x->c.cf) != 0)
		return 0;
	ph_cf_request(x->c.cf, &len, &block);
	if ((rq = malloc(sizeof(*rq))) == NULL ||
	    ph_sftp_check_file(ph_sftp_in_group(p->j->sftp, &x->grp), &x->h, PH_CF_ALGS, 0, len,
	                       block, cf_cb, rq) != 0) {
		free(rq);
		ph_cf_free(x->c.cf);
		x->c.cf = NULL;
		return 0;
	}
	rq->x = x;
	rq->off = 0;
	rq->len = 0;
	ph_pull_sent(x);
	n = ph_cf_samples(x->c.cf, &slen);
	for (i = 0; i < n; i++) {
		if ((rq = malloc(sizeof(*rq))) == NULL ||
		    ph_sftp_read(ph_sftp_in_group(p->j->sftp, &x->grp), &x->h,
		                 ph_cf_sample_off(x->c.cf, i), slen, sample_cb, rq) != 0) {
			free(rq);
			break;
		}
		rq->x = x;
		rq->off = i;
		rq->len = slen;
		ph_pull_sent(x);
	}
	ph_pull_state(x, PH_XS_CF_ASK);
	if (p->cfs != PULL_CF_WORKS) {
		/* Until the server answers one, this is the run's probe. */
		x->c.probe = 1;
		p->cfs = PULL_CF_PROBING;
	}
	return 1;
}

/* CF_MATCH: the old copy's blocks that the new file holds (every reply is
 * in); CF_READ when there are any, else the file is read whole. */
void
ph_pull_cf_begin(struct xfer *x, const struct ph_entry *d)
{
	struct pull *p = x->p;
	int fd = ph_pull_open_basis(p, d);

	if (fd >= 0 && ph_cf_match(x->c.cf, fd, d->size, p->cbuf, PULL_COPY_BUF) > 0 &&
	    (x->wf->basis = dup(fd)) >= 0) {
		x->basis = fd;
		ph_pull_state(x, PH_XS_CF_READ);
		return;
	}
	if (fd >= 0)
		ph_close(fd);
	ph_cf_free(x->c.cf);
	x->c.cf = NULL;
	ph_pull_state(x, PH_XS_WHOLE);
}
