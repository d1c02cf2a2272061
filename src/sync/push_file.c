/* SPDX-License-Identifier: ISC */
/* Push: a file's life, under every mode: its state changes (checked
 * against push_fsm.c's tables), its failure and what that cleans up on the
 * server, its freeing once nothing of it is in flight (the SFTP client
 * counts that: f->grp), the signature of what was sent, and the step that
 * moves it along after each reply. The work of the states above this
 * file (writing, closing, the commit) is reached through p->steps, which
 * the driver (push.c) fills, so no file here calls back up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pfs.h"
#include "push_int.h"

struct ph_sftp *
pf_sftp(struct pfile *f)
{
	return ph_sftp_in_group(f->p->j->sftp, &f->grp);
}

int
pf_status_ok(const struct ph_sftp_reply *r)
{
	return r->type == PH_FXP_STATUS && r->status == PH_FX_OK;
}

const char *
pf_msg_of(const struct ph_sftp_reply *r, const char *dflt)
{
	return r->msg != NULL && r->msg[0] ? r->msg : dflt;
}

int
pf_live(const struct pfile *f)
{
	return f->state != PF_DONE && f->state != PF_FAILED;
}

/* A change a table refuses is a bug: the file fails, saying so. */
static int
set_state(struct pfile *f, const struct ph_push_fsm *m, uint8_t *state, unsigned to)
{
	unsigned from = *state;
	char msg[160];

	if (ph_push_fsm_set(m, state, to, f->e->path) == 0)
		return 0;
	snprintf(msg, sizeof(msg), "internal error: the push's %s state cannot go from %s to %s",
	         m->name, from < m->n ? m->names[from] : "?", to < m->n ? m->names[to] : "?");
	pf_fail(f, PHSYNC_EINVAL, msg);
	return PHSYNC_EINVAL;
}

int
pf_state(struct pfile *f, enum pf_state to)
{
	return set_state(f, &ph_push_fsm_file, &f->state, to);
}

int
pf_cmp_state(struct pfile *f, enum cmp_state to)
{
	return set_state(f, &ph_push_fsm_cmp, &f->u.cmp.state, to);
}

int
pf_dl_state(struct pfile *f, enum dl_state to)
{
	return set_state(f, &ph_push_fsm_delta, &f->u.dl.state, to);
}

int
pf_cm_state(struct pfile *f, enum cm_state to)
{
	return set_state(f, &ph_push_fsm_commit, &f->cm.state, to);
}

static void
cleanup_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	pf_step(arg);
}

/* Closes the handle h of f (if open) without waiting for the answer. */
void
pf_close(struct pfile *f, struct ph_sftp_handle *h)
{
	if (h->len > 0)
		(void)ph_sftp_close(pf_sftp(f), h, cleanup_cb, f);
	h->len = 0;
}

/* Removes the temp file of f without waiting for the answer. */
void
pf_remove_temp(struct pfile *f)
{
	(void)ph_sftp_remove(pf_sftp(f), f->rtmp, cleanup_cb, f);
}

/* The prefix the server acknowledged without a gap. Chunks count from
 * where this run started writing (rs.have0). */
uint64_t
pf_acked_prefix(const struct pfile *f)
{
	uint64_t c = f->p->chunk, n = (f->e->size - f->rs.have0 + c - 1) / c, i;

	for (i = 0; i < n && (f->rs.acked[i / 8] & (1u << (i % 8))); i++)
		;
	return f->rs.have0 + i * c < f->e->size ? f->rs.have0 + i * c : f->e->size;
}

/* Failing with err: a cut while a resumable file was being written keeps
 * its temp, for the next run to go on from. */
void
pf_resume_cut(struct pfile *f, int err)
{
	/* Nothing acknowledged yet: nothing to go on from (pf_resume_free
	 * would drop the record and leave the temp known to no run). */
	if (f->rs.acked != NULL && f->p->j->state != NULL && (f->silent || err == PHSYNC_EINTR) &&
	    (f->mode == PM_RESUME || (f->tmp_made && f->state == PF_WRITING)) &&
	    pf_acked_prefix(f) > 0)
		f->rs.keep = 1;
}

/* f is let go of (every reply is in): a kept upload's acknowledged
 * prefix is what the server holds (the next run checks it before it
 * trusts it); a resumed one that ended otherwise has nothing to go on
 * from any more. */
void
pf_resume_free(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	int rc = 0;

	if (f->rs.keep) {
		const char *b = strrchr(f->rtmp, '/');
		struct ph_partial pa = { NULL, (char *)(b ? b + 1 : f->rtmp), f->e->size,
		                         pf_acked_prefix(f), f->e->mtime, 0 };

		rc = pa.have > 0 && pa.have < f->e->size ?
		     ph_state_partial_put(j->state, f->e->path, &pa) :
		     ph_state_partial_drop(j->state, f->e->path);
	} else if (f->mode == PM_RESUME && j->state != NULL) {
		rc = ph_state_partial_drop(j->state, f->e->path);
	}
	if (rc != 0 && j->state_err == 0)
		j->state_err = rc;
	free(f->rs.acked);
	f->rs.acked = NULL;
}

int
pf_delta_mode(const struct pfile *f)
{
	return f->mode == PM_DELTA || f->mode == PM_HDELTA;
}

int
pf_delta_live(const struct pfile *f)
{
	return pf_delta_mode(f) && f->u.dl.state != DL_WHOLE;
}

void
pf_delta_free(struct pfile *f)
{
	if (!pf_delta_mode(f))
		return;
	free(f->u.dl.hsig_data);
	f->u.dl.hsig_data = NULL;
	ph_pdelta_free(&f->u.dl.pd);
}

/* The server's old version did not take the delta (a copy failed, the
 * result came out wrong): the state forgets its signature, so the next run
 * sends the file whole. */
void
pf_delta_forget(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	int rc;

	if (f->mode != PM_DELTA)
		return;   /* the state had no signature to forget */
	f->u.dl.rec.sig = NULL;
	f->u.dl.rec.siglen = 0;
	if (j->state != NULL &&
	    (rc = ph_state_file_done(j->state, f->e->path, &f->u.dl.rec)) != 0 &&
	    j->state_err == 0)
		j->state_err = rc;
}

void
pf_fail(struct pfile *f, int err, const char *msg)
{
	struct ph_job *j = f->p->j;

	if (!pf_live(f))
		return;
	pf_close(f, &f->h);
	if (f->mode == PM_DELTA || f->mode == PM_HDELTA)
		pf_close(f, &f->u.dl.bh);
	/* Cut (the link died, timed out, or Ctrl-C) while a big file was being
	 * written: its temp stays, for the next run to go on from
	 * (pf_resume_free records how much of it the server acknowledged). */
	pf_resume_cut(f, err);
	if (f->tmp_made && !f->rs.keep) {
		pf_remove_temp(f);
		f->tmp_made = 0;
	}
	/* An illegal change to FAILED cannot be: every live state may fail. */
	(void)ph_push_fsm_set(&ph_push_fsm_file, &f->state, PF_FAILED, f->e->path);
	if (err == PHSYNC_ENOSPC && !f->p->fatal)
		f->p->fatal = ph_err(j->ctx, PHSYNC_ENOSPC,
		                     "no space left on the server; stopped (partial files "
		                     "were removed, existing files are intact)");
	/* A write taken back unsent after Ctrl-C (sftp.c) is the stop too. */
	if (f->silent || f->p->stopping || err == PHSYNC_EINTR)
		return;
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, f->e->path, NULL, f->e->size, err, msg);
}

void
pf_queue_failed(struct pfile *f, int rc)
{
	if (pf_live(f)) {
		free(f->cm.raside);
		f->cm.raside = NULL; /* nothing was moved aside */
		pf_fail(f, rc, "cannot queue a request");
	}
	pf_step(f);
}

void
pf_reply_err(struct pfile *f, const struct ph_sftp_reply *r, const char *what)
{
	if (r->type == 0)
		f->silent = 1;
	pf_fail(f, r->err ? r->err : PHSYNC_EPROTO, pf_msg_of(r, what));
}

void
pf_free(struct pfile *f)
{
	struct push *p = f->p;

	p->active[f->slot] = p->active[--p->nactive];
	p->active[f->slot]->slot = f->slot;
	pf_resume_free(f);
	if (f->fd >= 0)
		ph_close(f->fd);
	free(f->rtmp);
	free(f->rfinal);
	free(f->cm.raside);
	free(f->cm.rbeside);
	XXH3_freeState(f->hs);
	phsync_sig_gen_free(f->sig.sg);
	free(f->sig.buf);
	pf_delta_free(f);
	free(f);
}

/* Frees f when it is finished and nothing of it is in flight; returns 1
 * when it did. (Never inside one of f's callbacks: its own request still
 * counts there.) */
int
pf_settle(struct pfile *f)
{
	if (!pf_live(f) && f->grp.inflight == 0) {
		pf_free(f);
		return 1;
	}
	return 0;
}

/* Whether Ctrl-C may still abandon f: until its commit starts (or, for
 * a compared file found the same, its time is being set); from there the
 * few requests left finish it (or put the old version back). */
int
pf_abandonable(const struct pfile *f)
{
	return pf_live(f) && f->state < PF_COMMIT &&
	       !(f->mode == PM_COMPARE && f->u.cmp.state == CMP_SETTIME);
}

/* Moves a file along; frees it when it is done or failed and nothing of
 * it is in flight. Called after each of its replies, and by the SFTP
 * client once its last request in flight is answered (grp.idle). f may
 * be gone when this returns. */
void
pf_step(struct pfile *f)
{
	if (f->p->stopping && pf_abandonable(f))
		pf_fail(f, PHSYNC_EINTR, "interrupted");
	if (pf_settle(f) || !pf_live(f))
		return;
	if (f->state == PF_WRITING) {
		f->p->steps->writing(f);
		return;
	}
	if (f->grp.inflight > 0)
		return;
	if (f->state == PF_FINISHING)
		f->p->steps->finished(f);
	else if (f->state == PF_COMMIT)
		f->p->steps->commit(f);
}

void
pf_idle(void *arg)
{
	pf_step(arg);
}

/* The block length of the signature kept for a pushed file: the delta
 * engine's choice, but at most 1024 blocks a file (with 12 bytes a block, a
 * photo's signature stays within 12 KiB of state). Smaller blocks would
 * make a photo's edit cheaper still on the link and its state larger;
 * measured with bench/bench_wire.py (docs/PERFORMANCE.md): 256 blocks of
 * 12 KiB made a photo's typical edit cost more than rsync's whole
 * exchange. */
uint32_t
pf_sig_block_len(uint64_t size)
{
	uint64_t b = phsync_delta_block_len(size), min = (size / 1024 + 63) / 64 * 64;

	if (b < min)
		b = min;
	return b > PHSYNC_SIG_MAX_BLOCK ? PHSYNC_SIG_MAX_BLOCK : (uint32_t)b;
}

/* Feeds sent bytes to the signature; end with the last of them. */
void
pf_sig_feed(struct pfile *f, const void *data, size_t len, int end)
{
	struct pf_sig *g = &f->sig;
	struct phsync_in in = { data, len, 0 };
	int done = 0;

	while (g->sg != NULL && (in.pos < in.size || (end && !done))) {
		struct phsync_out out;

		if (g->cap - g->len < 4096) {
			size_t nc = g->cap ? g->cap * 2 : 16384;
			uint8_t *nb = realloc(g->buf, nc);

			if (nb == NULL)
				goto drop;
			g->buf = nb;
			g->cap = nc;
		}
		out.ptr = g->buf;
		out.size = g->cap;
		out.pos = g->len;
		if (phsync_sig_gen_stream(g->sg, &out, &in, end, &done) != 0)
			goto drop;
		g->len = out.pos;
	}
	if (done)
		g->done = 1;
	return;
drop:
	phsync_sig_gen_free(g->sg);
	g->sg = NULL;
}
