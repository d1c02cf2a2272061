/* SPDX-License-Identifier: ISC */
/* Push, PM_DELTA and PM_HDELTA (enum dl_state): a changed file built on
 * the server from copy-data pieces of its old version and writes of the
 * literal bytes (pdelta.h plans them). PM_DELTA plans on the signature
 * the state kept of what phsync last wrote there, and reads back a few
 * of the old version's blocks before any copy (DL_CHECK); PM_HDELTA asks
 * the helper for a fresh signature of the old version (DL_SIG) and the
 * main loop plans on it (DL_PLAN, pf_plan_next). Whatever goes wrong
 * before a piece is sent makes the file go whole (DL_WHOLE). */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "dbound.h"
#include "push_int.h"

/* Smaller files go whole: the delta's extra round trips (open the old
 * version, read back the checked blocks) cost more than they save. */
#define PH_DELTA_MIN (32u << 10)

/* The planning read's bytes: hashed and signed as a whole upload's are. */
static void
delta_feed(void *arg, const void *p, size_t n, int end)
{
	struct pfile *f = arg;

	XXH3_128bits_update(f->hs, p, n);
	pf_sig_feed(f, p, n, end);
}

/* Undoes a plan: the old version closed, the hash and signature started
 * again for a whole upload (nothing of the delta was sent yet). */
static void
delta_reset(struct pfile *f)
{
	struct ph_job *j = f->p->j;

	pf_close(f, &f->u.dl.bh);
	ph_pdelta_free(&f->u.dl.pd);
	XXH3_128bits_reset(f->hs);
	phsync_sig_gen_free(f->sig.sg);
	f->sig.len = 0;
	f->sig.done = 0;
	if (phsync_sig_gen_new(j->ctx, f->e->size, pf_sig_block_len(f->e->size), 0,
	                       &f->sig.sg) != 0)
		f->sig.sg = NULL;
}

static void
pf_delta_drop(struct pfile *f)
{
	delta_reset(f);
	pf_dl_state(f, DL_WHOLE);
}

/* Chooses f's mode when it replaces d: PM_DELTA, planned now, when the
 * state kept the signature of what phsync last wrote to this remote file
 * and the file still shows the size and time recorded then; PM_HDELTA
 * with the helper; else f stays PM_WHOLE. */
void
pf_delta_prepare(struct pfile *f, const struct ph_entry *d)
{
	struct ph_job *j = f->p->j;
	struct pf_delta *dl = &f->u.dl;
	uint8_t *sig = NULL;

	if (!(ph_sftp_exts(j->sftp) & PH_EXT_COPY_DATA) || f->e->size < PH_DELTA_MIN ||
	    d->nosize || d->size < PH_DELTA_MIN)
		return;
	if (j->state == NULL ||
	    ph_state_file_get_sig(j->state, f->e->path, &dl->rec, dl->rechash, &sig) != 1 ||
	    sig == NULL || dl->rec.rsize != d->size || dl->rec.rmtime != d->mtime) {
		free(sig);
		memset(dl, 0, sizeof(*dl));
		/* With the helper the signature of the old version is made where
		 * it lies, fresh (pf_bopen_cb asks for it). */
		if (ph_sftp_helper(j->sftp) >= 1) {
			f->mode = PM_HDELTA;
			dl->bsize = d->size;
		}
		return;
	}
	f->mode = PM_DELTA;
	f->p->planned = 1;
	if (ph_pdelta_plan(j->ctx, &f->p->diff, f->fd, f->e->size, sig, dl->rec.siglen, d->size,
	                   delta_feed, f, &dl->pd) != 0 || dl->pd.copy_bytes < f->e->size / 16) {
		/* Unusable, or hardly anything in common (every block changed: no
		 * delta penalty): whole. */
		delta_reset(f);
		memset(dl, 0, sizeof(*dl));
		f->mode = PM_WHOLE;
	}
	free(sig);
	dl->rec.sig = NULL;
	dl->rec.siglen = 0;
}

/* The checks' verdict, once all are answered. */
static void
checked(struct pfile *f)
{
	if (f->u.dl.stale == 0) {
		pf_dl_state(f, DL_READY);
		return;
	}
	if (f->u.dl.stale == 1)
		ph_job_event(f->p->j, PHSYNC_EV_WARNING, f->e->path, NULL, 0, PHSYNC_EREMOTE,
		             "the server's copy is not what phsync last wrote there, though its "
		             "size and time are; sent whole");
	pf_delta_drop(f);
}

/* One checked block (a block may take several READs). */
struct chk {
	struct pfile *f;
	uint64_t blk;
	uint8_t *buf;
	uint32_t len;
	unsigned parts;            /* READs of it in flight */
	int bad;
};

struct chkpart {
	struct chk *c;
	uint32_t at, want;
};

static void
chk_read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct chkpart *q = arg;
	struct chk *c = q->c;
	struct pfile *f = c->f;

	(void)s;
	if (r->type == 0)
		pf_reply_err(f, r, "connection lost");
	else if (r->type == PH_FXP_DATA && r->len == q->want)
		memcpy(c->buf + q->at, r->data, r->len);
	else
		c->bad = 1; /* short, long or refused: not trusted */
	free(q);
	if (--c->parts == 0) {
		if (c->bad || !ph_pdelta_block_ok(&f->u.dl.pd, c->blk, c->buf, c->len))
			f->u.dl.stale = 1;
		free(c->buf);
		free(c);
		if (--f->u.dl.checks == 0 && pf_live(f))
			checked(f);
	}
	pf_step(f);
}

/* Queues the READs of block c, max bytes each; returns how many went. */
static unsigned
chk_block(struct pfile *f, struct chk *c, uint64_t off, uint32_t max)
{
	uint32_t at;

	for (at = 0; at < c->len; at += max) {
		struct chkpart *q = malloc(sizeof(*q));

		if (q == NULL) {
			c->bad = 1;
			break;
		}
		q->c = c;
		q->at = at;
		q->want = c->len - at < max ? c->len - at : max;
		if (ph_sftp_read(pf_sftp(f), &f->u.dl.bh, off + at, q->want,
		                 chk_read_cb, q) != 0) {
			free(q);
			c->bad = 1;
			break;
		}
		c->parts++;
	}
	return c->parts;
}

/* Reads the blocks of the old version the plan checks. Returns the number
 * of blocks queued; a block that cannot be queued makes the file whole. */
static unsigned
chk_queue(struct pfile *f)
{
	struct pf_delta *dl = &f->u.dl;
	uint32_t max = ph_sftp_max_read(f->p->j->sftp);
	unsigned i, queued = 0;

	for (i = 0; i < dl->pd.nchecks; i++) {
		struct chk *c = calloc(1, sizeof(*c));
		uint64_t off;

		if (c == NULL) {
			dl->stale = 2;
			break;
		}
		c->f = f;
		c->blk = dl->pd.check[i];
		ph_pdelta_block(&dl->pd, c->blk, &off, &c->len);
		if ((c->buf = malloc(c->len)) == NULL || chk_block(f, c, off, max) == 0) {
			free(c->buf);
			free(c);
			dl->stale = 2;
			break;
		}
		queued++;
	}
	return queued;
}

/* The helper's signature of the old version: kept for the main loop,
 * which plans one delta a turn (pf_plan_next). Planned here, in the reply
 * callback, a burst of 60 signatures was planned in a row (0.15 s of the
 * client's CPU for the bench's photos) with nothing sent to the helper
 * until the last: it sat idle, then wrote and made durable every file
 * after that. */
static void
hsig_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct pf_delta *dl = &f->u.dl;

	(void)s;
	if (r->type == 0)
		pf_reply_err(f, r, "connection lost");
	if (!pf_live(f))
		return;
	/* Only the old version's signature, of exactly its length, is kept
	 * (dbound.h): 64 files could otherwise hold 4 MiB each. Refused,
	 * failed, or no memory: pf_plan_next sends it whole. */
	if (r->type == PH_FXP_EXTENDED_REPLY && r->len > 0 &&
	    r->len == ph_dbound_sig_len(dl->bsize) && (dl->hsig_data = malloc(r->len)) != NULL) {
		memcpy(dl->hsig_data, r->data, r->len);
		dl->hsig_len = r->len;
	}
	pf_dl_state(f, DL_PLAN);
}

/* The old version's signature is in hand (or the delta given up): the
 * temp file is made. */
static void
open_after_old(struct pfile *f)
{
	if (pf_state(f, PF_OPENING) == 0 && pf_open_temp(f) != 0)
		pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
}

/* Plans the next file whose helper signature came (hsig_cb), then makes
 * its temp file. Returns 1 when one was taken. */
int
pf_plan_next(struct push *p)
{
	size_t i;

	if (p->planned || p->stopping)
		return 0;
	for (i = 0; i < p->nactive; i++) {
		struct pfile *f = p->active[i];
		struct pf_delta *dl = &f->u.dl;
		struct ph_job *j = p->j;

		if (!pf_live(f) || f->mode != PM_HDELTA || dl->state != DL_PLAN)
			continue;
		p->planned = 1;
		if (dl->hsig_data == NULL ||
		    ph_pdelta_plan(j->ctx, &p->diff, f->fd, f->e->size, dl->hsig_data,
		                   dl->hsig_len, dl->bsize, delta_feed, f, &dl->pd) != 0 ||
		    dl->pd.copy_bytes < f->e->size / 16)
			pf_delta_drop(f); /* refused, changed size, or little in common */
		else
			pf_dl_state(f, DL_READY);
		free(dl->hsig_data);
		dl->hsig_data = NULL;
		dl->hsig_len = 0;
		open_after_old(f);
		pf_step(f);
		return 1;
	}
	return 0;
}

void
pf_bopen_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct pf_delta *dl = &f->u.dl;
	unsigned n;

	(void)s;
	if (r->type == PH_FXP_HANDLE) {
		(void)ph_sftp_handle_set(&dl->bh, r);
		if (!pf_live(f)) /* interrupted meanwhile */
			pf_close(f, &dl->bh);
	} else if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	}
	if (!pf_live(f)) {
		pf_step(f);
		return;
	}
	if (dl->bh.len == 0) {
		pf_delta_drop(f); /* unreadable: whole, without a word */
	} else if (f->mode == PM_HDELTA) {
		if (ph_sftp_helper_sig(pf_sftp(f), &dl->bh, 0, hsig_cb, f) == 0) {
			pf_dl_state(f, DL_SIG);
			pf_step(f);
			return;   /* the temp file is made once the plan is */
		}
		pf_delta_drop(f);
	} else if ((n = chk_queue(f)) > 0) {
		dl->checks = n;
		pf_dl_state(f, DL_CHECK);
	} else {
		checked(f);
	}
	open_after_old(f);
	pf_step(f);
}
