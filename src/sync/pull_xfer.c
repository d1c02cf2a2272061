/* SPDX-License-Identifier: ISC */
/* A pulled file's life (pull_int.h): its state changes, each checked
 * against the table (pull_state.c), the counting of its requests, its
 * failure and its end. Below the modes: they call this file, and this file
 * reaches them only through the run's table of modes (struct pull_modes,
 * filled by pull.c), so no two files of the pull call each other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdelta.h"
#include "ctx.h"
#include "pfs.h"
#include "pull_int.h"
#include "reap.h"

/* The one way a file changes state: the table (pull_state.c) must allow
 * it. A change it does not allow is a bug here; the file fails rather than
 * go on in a state nobody listed. Built with -DPH_TRACE_PULL, every change
 * is traced to stderr. */
void
ph_pull_state(struct xfer *x, int to)
{
	int from = x->state;
	char msg[120];

	if (ph_xs_step(&x->state, to) == 0) {
#ifdef PH_TRACE_PULL
		fprintf(stderr, "phsync: pull %s: %s -> %s\n", x->e->path, ph_xs_name(from),
		        ph_xs_name(to));
#endif
		return;
	}
	snprintf(msg, sizeof(msg), "internal error: a transfer may not go from %s to %s; not copied",
	         ph_xs_name(from), ph_xs_name(to));
	ph_pull_fail(x, PHSYNC_EINVAL, msg);
}

/* The read windows (32 reads per file, 96 per run, a delta's own): the
 * one place a read of x (plain, delta, check-file, sample) is counted out
 * and back. Flow control only: how long x lives is its group's count
 * (x->grp, kept by the SFTP client for every request of x). */
void
ph_pull_sent(struct xfer *x)
{
	x->reads++;
	x->p->reads++;
}

void
ph_pull_back(struct xfer *x)
{
	x->reads--;
	x->p->reads--;
}

/* The group's idle hook: the last request of x in flight has called back;
 * x completes or ends now if it can (its callbacks could not free it). */
void
ph_pull_idle(void *arg)
{
	ph_pull_maybe_done(arg);
}

/* The states in which a file reads (and may complete). */
int
ph_pull_reading(const struct xfer *x)
{
	return x->state == PH_XS_WHOLE || x->state == PH_XS_RESUME ||
	       x->state == PH_XS_DELTA_READ || x->state == PH_XS_CF_READ;
}

/* Does x have more to read? */
int
ph_pull_want_more(const struct xfer *x)
{
	if (x->state == PH_XS_DELTA_START || x->state == PH_XS_DELTA_READ)
		return x->p->modes->delta_want(x);
	return x->p->modes->whole_want(x);
}

/* Sends the reads its state allows; 0 or a negative PHSYNC_E*. */
int
ph_pull_issue(struct xfer *x)
{
	switch (x->state) {
	case PH_XS_WHOLE:
	case PH_XS_RESUME:
	case PH_XS_CF_READ:
		return x->p->modes->whole_issue(x);
	case PH_XS_DELTA_START:
	case PH_XS_DELTA_READ:
		return x->p->modes->delta_issue(x);
	default:
		return 0;
	}
}

/* The fallback of both deltas (refused, answered without digests, or a
 * held file let go without one): the file is read whole over the handle it
 * has (WHOLE, through ph_pull_state, so the table checks the change), its
 * first reads sent at once; a read that cannot be queued fails it. */
void
ph_pull_go_whole(struct xfer *x)
{
	ph_pull_state(x, PH_XS_WHOLE);
	if (ph_pull_issue(x) != 0)
		ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
}

void
ph_pull_fail(struct xfer *x, int err, const char *msg)
{
	struct pull *p = x->p;

	if (x->state == PH_XS_FAILED || x->state == PH_XS_DONE)
		return;
	ph_pull_state(x, PH_XS_FAILED);
	if (x->wf != NULL) {
		ph_lio_finish(p->lio, x->wf, ph_pull_resume_keep(x, err) ? PH_LIO_KEEP :
		              PH_LIO_ABORT);
		x->wf = NULL;
	}
	if (x->h.len > 0) {
		ph_sftp_close(p->j->sftp, &x->h, NULL, NULL);
		x->h.len = 0;
	}
	if (err == PHSYNC_ENOSPC && !p->fatal)
		p->fatal = ph_err(p->j->ctx, PHSYNC_ENOSPC,
		                  "no space left on the local disk; stopped (partial "
		                  "files were removed, existing files are intact)");
	if (x->quiet || p->stopping)
		return;
	p->j->st.files_failed++;
	ph_job_event(p->j, PHSYNC_EV_FILE_FAILED, x->e->path, NULL, x->e->size, err, msg);
}

/* x's new file is handed over to be placed: the network thread's reference
 * to the old copy is kept to the end where a rename may replace an open
 * file (ph_pull_free), closed now where it may not (Windows). */
void
ph_pull_basis_done(struct xfer *x)
{
	if (x->basis >= 0 && ph_open_blocks_replace()) {
		ph_close(x->basis);
		x->basis = -1;
	}
}

/* Frees x (its slot taken by the last active file). */
void
ph_pull_free(struct xfer *x)
{
	struct pull *p = x->p;

	p->active[x->slot] = p->active[--p->nactive];
	p->active[x->slot]->slot = x->slot;
	if (x->wf != NULL)
		ph_lio_file_free(x->wf);
	/* The I/O thread's copy of it (wf) may be the last reference to the
	 * old copy, or this one: see ph_pull_reap(). */
	ph_reap_release(&p->j->reap, x->basis);
	phsync_delta_reader_free(x->d.dr);
	ph_cf_free(x->c.cf);
	free(x);
}

/* Frees x when nothing of it is in flight or parked, completing it first
 * when it read all there is; returns 1 when it did. */
int
ph_pull_maybe_done(struct xfer *x)
{
	if (x->reads > 0 || x->grp.inflight > 0 || ph_xs_parked(x->state))
		return 0;
	if (x->state != PH_XS_FAILED && x->p->stopping)
		ph_pull_fail(x, PHSYNC_EINTR, "interrupted");
	if (ph_pull_reading(x) && !ph_pull_want_more(x)) {
		if (x->state == PH_XS_DELTA_READ)
			x->p->modes->delta_complete(x);
		else
			x->p->modes->whole_complete(x);
	}
	if (x->state == PH_XS_FAILED || x->state == PH_XS_DONE) {
		ph_pull_free(x);
		return 1;
	}
	return 0;
}

/* A reply to a file that already failed, through a dead link (type 0) or
 * during a stop: fails the file if it has not failed yet and says the
 * reply is moot. */
int
ph_pull_moot(struct xfer *x, const struct ph_sftp_reply *r)
{
	if (x->state != PH_XS_FAILED && r->type != 0 && !x->p->stopping)
		return 0;
	if (r->type == 0)
		x->quiet = 1;
	if (x->state != PH_XS_FAILED)
		ph_pull_fail(x, r->err ? r->err : PHSYNC_EINTR, "connection lost");
	return 1;
}
