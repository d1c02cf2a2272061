/* SPDX-License-Identifier: ISC */
/* The loop side of a pair's finished job (a poll and/or sync, or a
 * keepalive): what it reports and what comes next (a retry with backoff,
 * a stop on a changed host key, the next poll); and the closing of pairs,
 * down to the last handle when the daemon stops. See daemon.h. */
#include <stdio.h>
#include <string.h>

#include "phsync/console.h"
#include "daemon.h"

static int
transient(int rc)
{
	return rc == PHSYNC_ECONNECT || rc == PHSYNC_ELOCKED;
}

/* -- closing -------------------------------------------------------------- */

static void
on_pair_handle_closed(uv_handle_t *h)
{
	struct pair *p = h->data;

	if (--p->nhandles == 0)
		p->removed = 1;
}

void
ph_wdone_close_pair(struct pair *p)
{
	p->closing = 1;
	ph_fsw_close(p->fsw);
	p->fsw = NULL;
	uv_timer_stop(&p->settle);
	uv_timer_stop(&p->timer);
	uv_timer_stop(&p->ka);
	/* Not watched any more: the record goes now (a pair re-added by the
	 * same reload takes it over), even while a job still ends. */
	ph_wreport_close(p);
	if (p->busy) {
		phsync_ctx_interrupt(p->ctx);
		return;
	}
	if (p->nhandles == 4 && !uv_is_closing((uv_handle_t *)&p->done)) {
		uv_close((uv_handle_t *)&p->settle, on_pair_handle_closed);
		uv_close((uv_handle_t *)&p->timer, on_pair_handle_closed);
		uv_close((uv_handle_t *)&p->ka, on_pair_handle_closed);
		uv_close((uv_handle_t *)&p->done, on_pair_handle_closed);
	}
}

static void
on_closed_noop(uv_handle_t *h)
{
	(void)h;
}

/* The session's end, told on another thread (phsync/console.h), goes to
 * the loop through d->session while that is open (session_mu keeps a late
 * call off a closed handle). */
static uv_mutex_t session_mu;
static uv_async_t *session_async;

static void
on_session_end_thread(void)
{
	uv_mutex_lock(&session_mu);
	if (session_async != NULL)
		uv_async_send(session_async);
	uv_mutex_unlock(&session_mu);
}

void
ph_wdone_session_watch(struct daemon *d)
{
	if (uv_mutex_init(&session_mu) != 0)
		return;
	session_async = &d->session;
	/* Nothing where there is none (POSIX: a signal says it already). */
	(void)phsync_on_session_end(on_session_end_thread);
}

static void
session_close(struct daemon *d)
{
	if (session_async != NULL) {
		uv_mutex_lock(&session_mu);
		session_async = NULL;
		uv_mutex_unlock(&session_mu);
	}
	uv_close((uv_handle_t *)&d->session, on_closed_noop);
}

void
ph_wdone_maybe_finish(struct daemon *d)
{
	size_t i;

	if (!d->stopping)
		return;
	for (i = 0; i < d->npairs; i++)
		if (d->pairs[i]->busy)
			return;
	for (i = 0; i < d->npairs; i++)
		ph_wdone_close_pair(d->pairs[i]);
	if (!uv_is_closing((uv_handle_t *)&d->sigint)) {
		uv_close((uv_handle_t *)&d->sigint, on_closed_noop);
		uv_close((uv_handle_t *)&d->sigterm, on_closed_noop);
		uv_close((uv_handle_t *)&d->sighup, on_closed_noop);
		uv_close((uv_handle_t *)&d->stop_timer, on_closed_noop);
		session_close(d);
	}
}

/* After a job, when the daemon stops or p closes: nothing more starts. */
static int
ending(struct pair *p)
{
	if (!p->d->stopping && !p->closing)
		return 0;
	if (p->closing)
		ph_wdone_close_pair(p);
	ph_wdone_maybe_finish(p->d);
	return 1;
}

/* -- a keepalive ---------------------------------------------------------- */

static void
ka_done(struct pair *p, int rc)
{
	struct daemon *d = p->d;

	p->job.ka = 0;
	if (rc == 0) {
		ph_wreport_keepalive(p);
	} else if (rc != PHSYNC_EINTR) {
		/* The phone left: no retries now; the next change or poll
		 * connects again (and backs off if it must). */
		if (d->verbose > 0)
			ph_wreport_say(p, "the kept connection is gone: %s", p->job.err);
		phsync_conn_free(p->conn);
		p->conn = NULL;
		ph_wreport_connected(p, 0);
	}
	if (ending(p))
		return;
	/* What came while it ran: changed files, a poll or an idle close due. */
	if (p->def.dir != PHSYNC_PULL && (p->npend > 0 || p->dirty))
		ph_wpair_restart_settle(p);
	if (p->timer_due) {
		p->timer_due = 0;
		ph_wpair_on_timer(&p->timer);
	}
	ph_wpair_ka_arm(p);
}

/* -- a poll and/or sync --------------------------------------------------- */

/* The phone's host key changed or is unknown: p stops until a restart or
 * a reload (and a single pair's watcher exits 4). */
static void
job_hostkey(struct pair *p, int rc)
{
	struct daemon *d = p->d;

	ph_wreport_say(p, "STOPPED: %s. This pair is not retried: check the phone's key (a new "
	               "phone or a reinstalled SSH server?), fix known_hosts, then restart "
	               "phsync (or send the daemon SIGHUP)", p->job.err);
	p->state = ST_STOPPED;
	ph_fsw_close(p->fsw);
	p->fsw = NULL;
	phsync_conn_free(p->conn);
	p->conn = NULL;
	ph_wreport_done(p, rc, "stopped", 0);
	if (d->single) {
		d->exit_code = WX_HOSTKEY;
		d->stopping = 1;
	}
}

/* The job failed: a single pair's first run that can never work ends the
 * watcher; anything else is retried, backing off. */
static void
job_failed(struct pair *p, int rc, int first)
{
	struct daemon *d = p->d;

	if (first && d->single && !transient(rc) && rc != PHSYNC_EAUTH) {
		/* A typo in a path should not be retried quietly forever. */
		ph_wreport_say(p, "%s", p->job.err);
		d->exit_code = rc == PHSYNC_EINVAL ? WX_USAGE : WX_ERROR;
		d->stopping = 1;
		return;
	}
	if (!p->unreachable || d->verbose > 0)
		ph_wreport_say(p, "%s%s; retrying (backing off up to %d s)", p->job.err,
		               transient(rc) ? "" : "", BACKOFF_MAX_S);
	p->unreachable = 1;
	p->state = ST_WAITING_HOST;
	ph_wpair_backoff(p);
	ph_wreport_done(p, rc, "waiting", p->backoff_s);
}

/* The job ended well (or with only some files failed or in conflict):
 * say what moved, and wait for the next change or poll. */
static void
job_ok(struct pair *p, int rc, int first)
{
	struct daemon *d = p->d;
	const struct phsync_stats *s = &p->job.st;

	if (p->unreachable)
		ph_wreport_say(p, "reachable again");
	p->unreachable = 0;
	p->backoff_s = 0;
	p->state = ST_IDLE;
	if (rc != 0)
		ph_wreport_say(p, "%s", p->job.err);
	if (p->job.synced && d->verbose >= 0 &&
	    (s->files_done || s->files_deleted || s->files_failed))
		ph_wreport_say(p, "%s: %llu file(s) copied (%.1f MB), %llu deleted, %llu failed, "
		               "%.1f s", ph_wreport_dir(p), (unsigned long long)s->files_done,
		               s->bytes_committed / 1e6, (unsigned long long)s->files_deleted,
		               (unsigned long long)s->files_failed, s->elapsed_ms / 1000.0);
	if (first) {
		if (p->def.dir == PHSYNC_BOTH)
			ph_wreport_say(p, "watching %s (%zu folder(s)) and %s (polled every %u s); "
			               "changes on either side go to the other", p->def.local,
			               p->fsw ? ph_fsw_count(p->fsw) : (size_t)0, p->def.remote,
			               p->def.interval_s);
		else if (p->def.dir == PHSYNC_PUSH)
			ph_wreport_say(p, "watching %s (%zu folder(s)); changes go to %s",
			               p->def.local, p->fsw ? ph_fsw_count(p->fsw) : (size_t)0,
			               p->def.remote);
		else
			ph_wreport_say(p, "watching %s (polled every %u s); changes come to %s",
			               p->def.remote, p->def.interval_s, p->def.local);
	}
	p->started_once = 1;
	ph_wreport_done(p, rc, "watching", 0);
	ph_wpair_kick(p);
	ph_wpair_ka_arm(p);
}

void
ph_wdone_on_done(uv_async_t *a)
{
	struct pair *p = a->data;
	struct daemon *d = p->d;
	int rc, first = !p->started_once;
	size_t i;

	if (!p->busy)
		return;
	uv_thread_join(&p->th);
	p->busy = 0;
	rc = p->job.rc;
	if (p->job.ka) {
		ka_done(p, rc);
		return;
	}
	p->last_use_ms = uv_now(&d->loop);
	ph_wpair_free_hold(p);
	ph_wlocal_take_writes(p);
	/* Push pairs waiting for this pull's writes to be known look again. */
	for (i = 0; i < d->npairs; i++)
		if (d->pairs[i] != p && d->pairs[i]->def.dir != PHSYNC_PULL &&
		    (d->pairs[i]->npend > 0 || d->pairs[i]->dirty))
			ph_wpair_restart_settle(d->pairs[i]);

	if (rc == PHSYNC_EINTR && (d->stopping || p->closing)) {
		/* asked to stop */
	} else if (rc == PHSYNC_EHOSTKEY || rc == PHSYNC_EHOSTUNKNOWN) {
		job_hostkey(p, rc);
	} else if (rc != 0 && rc != PHSYNC_EPARTIAL && rc != PHSYNC_ECONFLICT) {
		job_failed(p, rc, first);
	} else {
		job_ok(p, rc, first);
	}
	ending(p);
}
