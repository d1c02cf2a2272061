/* SPDX-License-Identifier: ISC */
/* Pull executor: remote files stream into local temp files through many
 * pipelined SFTP reads, several files at once. This thread drives the
 * network; the bytes go to the local I/O thread (lio.c), which writes,
 * makes files durable and renames them into place. Folders are made first
 * and get their times back last (pull_dirs.c).
 *
 * Each file is a state machine (pull_state.h): OPEN, then one mode (whole,
 * resume, helper delta, check-file delta), then DONE or FAILED. This file
 * drives the run; a file's life (its state changes, checked against the
 * table, and the counting of its requests) is pull_xfer.c's, below the
 * modes (pull_whole.c, pull_delta.c, pull_cf.c, pull_resume.c), which it
 * reaches through the table of modes this file hands it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdelta.h"
#include "ctx.h"
#include "pull_int.h"
#include "reap.h"

/* The temp file's mode and, replacing a file, the guard of what the plan
 * saw there. */
static void
wf_setup(struct xfer *x, const struct ph_action *a)
{
	struct ph_job *j = x->p->j;

	/* New: the source's rw bits under the umask (as cp, rsync without
	 * -p). Replacing: the file keeps the bits it has. */
	if (a->kind == PH_A_UPDATE && a->dst >= 0) {
		const struct ph_entry *d = &j->dst.v[a->dst];

		x->wf->mode = d->mode & 0777;
		x->wf->exact_mode = 1;
		/* The file there is replaced only if it is still what the plan
		 * saw; a conflict goes beside it at once (a size no file has);
		 * on first contact only the same content is replaced. */
		x->wf->guard = 1;
		x->wf->guard_size = a->how == PH_U_CONFLICT ? UINT64_MAX : d->size;
		x->wf->guard_mtime = d->mtime;
		x->wf->guard_content = a->how == PH_U_FIRST;
		x->wf->conflict_time = j->started;
	} else {
		x->wf->mode = x->e->mode & 0666;
	}
	x->wf->mtime = x->e->mtime;
	x->wf->cookie = x->ai;
}

/* OPEN answered with a handle: the mode of the file. A cut download goes
 * on (RESUME). A file this side has an old copy of comes as a delta: the
 * helper's when it runs on the other end, its signing left to the main
 * loop (DELTA_SIGN: OPEN replies come in bursts, and signing them all here
 * would keep every delta start from the helper until the last was
 * signed); else check-file's, where one file asks first (OpenSSH and
 * Dropbear refuse, and a burst of OPEN replies would each send the request
 * and its sample reads before the refusal came) and the others wait for
 * that one answer (CF_HOLD). Anything else comes whole. */
static void
choose_mode(struct xfer *x)
{
	struct pull *p = x->p;
	const struct ph_action *a = &p->j->plan.v[x->ai];
	const struct ph_entry *d = a->dst >= 0 ? &p->j->dst.v[a->dst] : NULL;

	if (ph_pull_resume_try(x)) {
		ph_pull_state(x, PH_XS_RESUME);
	} else if (a->kind == PH_A_UPDATE && d != NULL && ph_pull_delta_wanted(x, d)) {
		ph_pull_state(x, PH_XS_DELTA_SIGN);
		return;
	} else if (a->kind == PH_A_UPDATE && d != NULL && ph_pull_cf_wanted(x, d) &&
	           p->cfs == PULL_CF_PROBING) {
		ph_pull_state(x, PH_XS_CF_HOLD);
		return;
	} else if (a->kind == PH_A_UPDATE && d != NULL && ph_pull_cf_wanted(x, d) &&
	           ph_pull_cf_start(x)) {
		ph_pull_maybe_done(x);
		return;
	} else {
		ph_pull_state(x, PH_XS_WHOLE);
	}
	if (ph_pull_issue(x) != 0)
		ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	ph_pull_maybe_done(x);
}

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct xfer *x = arg;

	(void)s;
	if (r->type != PH_FXP_HANDLE) {
		if (r->type == 0)
			x->quiet = 1;
		ph_pull_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		             r->msg[0] ? r->msg : "the server would not open this file");
	} else {
		(void)ph_sftp_handle_set(&x->h, r);
		if (x->p->stopping) {
			/* ph_pull_maybe_done fails it */
		} else if ((x->wf = ph_lio_file_new(ph_entry_dpath(x->e))) == NULL) {
			/* The I/O thread creates the local temp file on the first
			 * write. */
			ph_pull_fail(x, PHSYNC_ENOMEM, "out of memory");
		} else {
			wf_setup(x, &x->p->j->plan.v[x->ai]);
			choose_mode(x);
			return;
		}
	}
	ph_pull_maybe_done(x);
}

/* Files held for the check-file probe's answer go on once it came: each
 * asks now (a probe lost with its file: the first asks again, and the
 * rest wait again) or reads whole. Returns 1 when any was let go. */
static int
release_held(struct pull *p)
{
	size_t i;
	int held = 0;

	for (i = 0; p->cfs != PULL_CF_PROBING && i < p->nactive;) {
		struct xfer *x = p->active[i];
		const struct ph_action *a = &p->j->plan.v[x->ai];

		if (x->state != PH_XS_CF_HOLD) {
			i++;
			continue;
		}
		held = 1;
		if (p->stopping) {
			ph_pull_fail(x, PHSYNC_EINTR, "interrupted");
		} else if (!(ph_pull_cf_wanted(x, &p->j->dst.v[a->dst]) && ph_pull_cf_start(x))) {
			ph_pull_go_whole(x);
		}
		if (!ph_pull_maybe_done(x))
			i++;   /* else slot i now holds another file */
	}
	return held;
}

/* Signs one old copy waiting for it (DELTA_SIGN), or hashes one where the
 * check-file digests say (CF_MATCH); the pump that follows sends its delta
 * start at once, so the helper works on it while the next is signed.
 * Files held for the check-file probe go first. Returns 1 when one was
 * signed or any let go. */
static int
sign_next(struct pull *p)
{
	size_t i;

	if (release_held(p))
		return 1;
	for (i = 0; i < p->nactive; i++) {
		struct xfer *x = p->active[i];
		const struct ph_entry *d;

		if (x->state != PH_XS_DELTA_SIGN && x->state != PH_XS_CF_MATCH)
			continue;
		d = &p->j->dst.v[p->j->plan.v[x->ai].dst];
		if (p->stopping)
			ph_pull_fail(x, PHSYNC_EINTR, "interrupted");
		else if (x->state == PH_XS_CF_MATCH)
			ph_pull_cf_begin(x, d);
		else if (!ph_pull_delta_begin(x, d))
			ph_pull_state(x, PH_XS_WHOLE);
		if (x->state != PH_XS_FAILED && ph_pull_issue(x) != 0)
			ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
		ph_pull_maybe_done(x);
		return 1;
	}
	return 0;
}

static int
start_file(struct pull *p, size_t ai)
{
	struct ph_job *j = p->j;
	const struct ph_entry *e = &j->src.v[j->plan.v[ai].src];
	uint64_t need = ph_pull_space_need(j, e);
	struct xfer *x;
	char *rp;
	int rc;

	if (!ph_pull_space_take(p, ai, need))
		return 0; /* refused: no room for it */
	x = calloc(1, sizeof(*x));
	if (x == NULL || (rp = ph_job_rpath(j, ph_entry_raw(e))) == NULL) {
		free(x);
		return PHSYNC_ENOMEM;
	}
	x->p = p;
	x->ai = ai;
	x->e = e;
	x->need = need;
	x->state = PH_XS_OPEN;
	x->r.eof_at = UINT64_MAX;
	x->basis = -1;
	x->grp.idle = ph_pull_idle;
	x->grp.arg = x;
	rc = ph_sftp_open(ph_sftp_in_group(j->sftp, &x->grp), rp, PH_FXF_READ, NULL, open_cb, x);
	free(rp);
	if (rc != 0) {
		free(x);
		return rc;
	}
	x->slot = p->nactive;
	p->active[p->nactive++] = x;
	return 0;
}

/* One turn of the main loop before the pump: new files while there is
 * room, then more reads for the files that hit the run's read cap. A file
 * that fails here with nothing in flight is freed now (it would otherwise
 * wait forever for a reply that never comes), and so is one an illegal
 * state change failed where nothing frees it (ph_pull_state). */
static int
turn(struct pull *p, size_t *ai)
{
	struct ph_job *j = p->j;
	size_t i;
	int rc;

	while (!p->fatal && *ai < j->plan.n && p->nactive < p->max_files &&
	       p->reads < PULL_MAX_READS) {
		uint8_t k = j->plan.v[*ai].kind;

		if ((k == PH_A_NEW || k == PH_A_UPDATE) && !(j->nofit != NULL && j->nofit[*ai]) &&
		    (rc = start_file(p, *ai)) != 0)
			return rc;
		(*ai)++;
	}
	for (i = 0; i < p->nactive && p->reads < PULL_MAX_READS;) {
		struct xfer *x = p->active[i];

		if (x->state == PH_XS_FAILED && ph_pull_maybe_done(x))
			continue; /* failed by an illegal state change */
		if (ph_pull_reading(x) && x->reads < PULL_MAX_READS_FILE && ph_pull_want_more(x) &&
		    ph_pull_issue(x) != 0) {
			ph_pull_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
			if (ph_pull_maybe_done(x))
				continue; /* slot i now holds another file */
		}
		i++;
	}
	return 0;
}

/* Runs the files of the plan until all are done, the run is stopped or
 * the link dies. */
static int
run_files(struct pull *p)
{
	struct ph_job *j = p->j;
	size_t ai = 0;
	int rc = 0;

	while (rc == 0) {
		if (j->ctx->interrupted) {
			/* Stop now, without waiting for the replies in flight (the
			 * server may be the reason for the Ctrl-C): the files in
			 * flight are abandoned and their temp files removed. */
			p->stopping = 1;
			break;
		}
		if ((rc = turn(p, &ai)) != 0)
			break;
		ph_pull_reap(p, 0);
		ph_job_progress(j);
		if (p->nactive == 0 && (ai >= j->plan.n || p->fatal || p->stopping))
			break;
		/* One signature a turn, replies taken in between without waiting. */
		rc = ph_sftp_pump(j->sftp, sign_next(p) ? 0 : 200);
		if (rc == PHSYNC_EINTR)
			rc = 0; /* handled at the top of the loop */
	}
	if (rc != 0) {
		/* The link died: every callback has run; drop what is left. */
		p->stopping = 1;
	}
	return rc;
}

/* Callbacks still pending would touch freed files: abandons them with
 * their temp files removed. */
static void
abandon(struct pull *p, int rc)
{
	size_t i;

	if (p->nactive > 0) {
		for (i = 0; i < p->nactive; i++)
			p->active[i]->quiet = 1;
		ph_sftp_abort(p->j->sftp, rc ? rc : PHSYNC_EINTR);
	}
	while (p->nactive > 0) {
		struct xfer *x = p->active[p->nactive - 1];

		ph_pull_fail(x, PHSYNC_EINTR, "abandoned");
		ph_pull_free(x);
	}
}

static const struct pull_modes modes = {
	ph_pull_whole_want, ph_pull_whole_issue, ph_pull_whole_complete,
	ph_pull_delta_want, ph_pull_delta_issue, ph_pull_delta_complete,
};

int
ph_pull_run(struct ph_job *j)
{
	struct pull p;
	uint64_t mh = ph_sftp_max_handles(j->sftp);
	size_t i;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	p.j = j;
	p.modes = &modes;
	p.chunk = ph_sftp_max_read(j->sftp);
	p.max_files = PULL_MAX_FILES;
	if (mh > 0 && mh / 2 < p.max_files)
		p.max_files = mh / 2 ? (size_t)(mh / 2) : 1;
	for (i = 0; i < j->plan.n; i++)
		if (j->plan.v[i].kind == PH_A_DIRTIME)
			j->dirty[j->plan.v[i].src] = 1;
	/* Room for what the plan copies, before anything is done. */
	if ((rc = ph_pull_space_plan(&p)) != 0)
		goto out;
	ph_pull_make_dirs(&p);
	if (j->o->dry_run) {
		ph_job_dry_run_files(j);
		goto out;
	}
	ph_move_run(j);
	if ((p.active = calloc(p.max_files, sizeof(*p.active))) == NULL)
		return PHSYNC_ENOMEM;
	/* For deltas (the helper's or check-file's); without it files simply
	 * come whole. */
	if (ph_sftp_helper(j->sftp) >= 1 || ph_cf_available())
		p.cbuf = malloc(PULL_COPY_BUF);
	if ((rc = ph_lio_new(j->lroot, j->o->fsync, &p.lio)) != 0)
		goto out;
	rc = run_files(&p);
	/* What the I/O thread already has is local work: let it finish, so
	 * every file committed is counted and its folder made durable. */
	ph_pull_drain(&p);
	ph_pull_finish_dirs(&p);
	if (rc == 0)
		rc = p.fatal;
	if (rc == 0 && p.stopping)
		rc = PHSYNC_EINTR;
out:
	abandon(&p, rc);
	if (p.lio != NULL) {
		ph_pull_drain(&p);
		ph_lio_free(p.lio);
	}
	free(p.active);
	free(p.cbuf);
	free(j->nofit);
	j->nofit = NULL;
	return rc;
}
