/* SPDX-License-Identifier: ISC */
/* A watched pair's timers, on the loop: the settle period after local
 * changes (push), the poll (pull), the retry after a failure, the
 * keepalive and the idle close of a held connection; and starting a job
 * on the worker thread (wjob.c). See daemon.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/sys.h"
#include "daemon.h"

static void on_settle(uv_timer_t *t);
static void on_ka(uv_timer_t *t);

/* -- starting a job ------------------------------------------------------- */

void
ph_wpair_free_hold(struct pair *p)
{
	size_t i;

	for (i = 0; i < p->job.nhold; i++)
		free(p->job.hold[i]);
	free(p->job.hold);
	p->job.hold = NULL;
	p->job.nhold = 0;
}

/* Starts a job (poll: a pull polls first) on a worker thread, unless p
 * is busy, closing, stopped or the daemon stops. */
static void
start_job(struct pair *p, int poll)
{
	int rc;

	if (p->busy || p->closing || p->d->stopping || p->state == ST_STOPPED)
		return;
	uv_timer_stop(&p->timer);
	uv_timer_stop(&p->ka);
	p->job.ka = 0;
	p->job.poll = poll && p->def.dir != PHSYNC_PUSH;
	p->job.full = 0;
	if (p->job.poll) {
		p->polls++;
		p->job.full = p->def.full_every > 0 && p->polls % p->def.full_every == 0;
	}
	/* A push or a two-way run leaves the files still open for writing
	 * for a later run: they are sent once closed and settled (a two-way
	 * run also takes nothing onto them from the phone meanwhile). */
	ph_wpair_free_hold(p);
	if (p->def.dir != PHSYNC_PULL && p->npend > 0 &&
	    (p->job.hold = calloc(p->npend, sizeof(*p->job.hold))) != NULL) {
		size_t i;

		for (i = 0; i < p->npend; i++)
			if (p->pend[i].writing && (p->job.hold[p->job.nhold] = strdup(p->pend[i].rel)) != NULL)
				p->job.nhold++;
	}
	p->busy = 1;
	if (p->state != ST_WAITING_HOST)
		p->state = ST_SYNCING;
	if ((rc = uv_thread_create(&p->th, ph_wjob_run, p)) != 0) {
		p->busy = 0;
		ph_wreport_say(p, "cannot start a thread: %s", uv_strerror(rc));
		uv_timer_start(&p->timer, ph_wpair_on_timer, 1000, 0);
	}
}

/* -- local changes (push) ------------------------------------------------- */

/* A file closed after writing (or moved in) is complete as it stands: it
 * goes at once, with no quiet period (issue 24); the settle period is
 * for changes that do not say the file was closed (p->slow). The few ms
 * let the closes of a burst go in one run, and a time set right after
 * the close (a copy keeping its time) arrive first: it makes the wait the
 * settle period, and the file goes once, with its time. */
#define CLOSED_MS 20
void
ph_wpair_restart_settle(struct pair *p)
{
	if (!p->closing && !p->d->stopping)
		uv_timer_start(&p->settle, on_settle, p->slow ? p->def.settle_ms : CLOSED_MS, 0);
}

static void
on_fs(void *arg, enum ph_fsw_kind kind, const char *rel, const char *msg)
{
	struct pair *p = arg;
	struct pend *e;
	char abs[PATH_MAX];
	size_t i;

	switch (kind) {
	case PH_FSW_FILE:
	case PH_FSW_CLOSED:
		if (kind == PH_FSW_FILE)
			p->slow = 1;
		if ((e = ph_wlocal_pend_get(p, rel)) != NULL) {
			e->writing = 0;
			e->gone = 0;
			if (ph_wlocal_stat(p, rel, &e->size, &e->mtime_ns, abs, sizeof(abs)) != 0)
				e->size = UINT64_MAX;
		}
		ph_wpair_restart_settle(p);
		break;
	case PH_FSW_WRITING:
		if ((e = ph_wlocal_pend_get(p, rel)) == NULL)
			break;
		/* Another file written while closed ones wait to go: a burst (a
		 * camera import, a copy of a folder). It goes in one run once it
		 * rests, rather than in runs that meet its files half written. */
		if (!e->writing && !p->slow && p->npend > 1 &&
		    uv_is_active((uv_handle_t *)&p->settle)) {
			p->slow = 1;
			ph_wpair_restart_settle(p);
		}
		e->writing = 1;
		break;
	case PH_FSW_GONE:
		/* A two-way pair: judged in the settle, where a delete its own
		 * run made is known (and starts no run). */
		if (p->def.dir == PHSYNC_BOTH) {
			if ((e = ph_wlocal_pend_get(p, rel)) != NULL) {
				e->writing = 0;
				e->gone = 1;
			}
			p->slow = 1;
			ph_wpair_restart_settle(p);
			break;
		}
		for (i = 0; i < p->npend; i++)
			if (strcmp(p->pend[i].rel, rel) == 0) {
				ph_wlocal_pend_drop(p, i);
				break;
			}
		if (p->def.opts.delete_missing) {
			p->dirty = 1;
			p->slow = 1;
			ph_wpair_restart_settle(p);
		}
		break;
	case PH_FSW_UNWATCHED:
		p->unwatched = 1;
		/* fall through */
	case PH_FSW_RESCAN:
		if (msg != NULL) {
			ph_wreport_say(p, "warning: %s", msg);
			ph_wreport_note(p, msg);
		}
		p->dirty = 1;
		p->slow = 1;
		ph_wpair_restart_settle(p);
		break;
	}
}

/* Looks at the pending files once more: drops those gone or written by
 * our pulls, lists the others into trig (some of their names), and
 * returns how many go; *moving is set when one changed since its last
 * event (still being written). */
static size_t
settle_scan(struct pair *p, char *trig, size_t tlen, int *moving)
{
	char abs[PATH_MAX];
	size_t i, go = 0, tl = 0;

	trig[0] = '\0';
	for (i = 0; i < p->npend;) {
		struct pend *e = &p->pend[i];
		uint64_t size;
		int64_t mt;

		if (e->writing) {
			i++;
			continue;
		}
		if (ph_wlocal_stat(p, e->rel, &size, &mt, abs, sizeof(abs)) != 0) {
			/* Gone, or no longer a file: a push's sync sees it (or not, by
			 * its --delete); a two-way pair's delete goes, unless its own
			 * run made it. */
			if (e->gone && abs[0] != '\0' && !ph_wlocal_own_match(p->d, abs, UINT64_MAX, INT64_MIN)) {
				if (tl + strlen(e->rel) + 3 < tlen)
					tl += (size_t)snprintf(trig + tl, tlen - tl, "%s%s", go ? ", " : "", e->rel);
				go++;
				i++;
				continue;
			}
			if (e->gone && p->d->verbose > 0)
				ph_wreport_say(p, "not sent back (a run deleted it): %s", e->rel);
			ph_wlocal_pend_drop(p, i);
			continue;
		}
		if (ph_wlocal_own_match(p->d, abs, size, mt)) {
			if (p->d->verbose > 0)
				ph_wreport_say(p, "not sent back (a pull wrote it): %s", e->rel);
			ph_wlocal_pend_drop(p, i);
			continue;
		}
		if (size != e->size || mt != e->mtime_ns) {
			e->size = size;
			e->mtime_ns = mt;
			*moving = 1;
		}
		if (tl + strlen(e->rel) + 3 < tlen)
			tl += (size_t)snprintf(trig + tl, tlen - tl, "%s%s", go ? ", " : "", e->rel);
		go++;
		i++;
	}
	return go;
}

/* The quiet period ended: files unchanged since their last event go. */
static void
on_settle(uv_timer_t *t)
{
	struct pair *p = t->data;
	char trig[512];
	size_t i, go;
	int moving = 0;

	if (p->busy || p->closing || p->d->stopping || p->state == ST_STOPPED ||
	    p->state == ST_WAITING_HOST)
		return; /* the end of the run (or the retry) looks again */
	if (ph_wlocal_pull_busy(p))
		return; /* its end looks again, knowing what it wrote */
	go = settle_scan(p, trig, sizeof(trig), &moving);
	if (moving) {
		p->slow = 1;
		ph_wpair_restart_settle(p); /* still being written: wait until it rests */
		return;
	}
	if (go == 0 && !p->dirty)
		return;
	if (p->d->verbose > 0)
		ph_wreport_say(p, "%zu change(s)%s%s%s", go, go ? ": " : "", trig,
		               p->dirty ? " (and a rescan)" : "");
	/* Files still open for writing stay pending (start_job holds them
	 * back) until they are closed. */
	for (i = 0; i < p->npend;) {
		if (p->pend[i].writing)
			i++;
		else
			ph_wlocal_pend_drop(p, i);
	}
	p->dirty = 0;
	p->slow = 0;
	start_job(p, 0);
}

/* -- starting a pair, retries --------------------------------------------- */

int
ph_wpair_start(struct pair *p, int quiet)
{
	char err[PATH_MAX + 256];

	if (p->def.dir != PHSYNC_PULL) {
		int rc = phsync_path_real(p->def.local, p->local_abs, sizeof(p->local_abs));

		if (rc != 0) {
			if (!quiet)
				ph_wreport_say(p, "%s: %s", p->def.local, strerror(-rc));
			return -1;
		}
		/* The watch first, then the first run: nothing made in between
		 * is missed. */
		if (ph_fsw_new(&p->d->loop, p->local_abs, on_fs, p, &p->fsw, err, sizeof(err)) != 0) {
			if (!quiet)
				ph_wreport_say(p, "%s", err);
			return -1;
		}
	}
	start_job(p, 1);
	return 0;
}

void
ph_wpair_backoff(struct pair *p)
{
	p->backoff_s = p->backoff_s ? p->backoff_s * 2 : BACKOFF_MIN_S;
	if (p->backoff_s > BACKOFF_MAX_S)
		p->backoff_s = BACKOFF_MAX_S;
	uv_timer_start(&p->timer, ph_wpair_on_timer, (uint64_t)p->backoff_s * 1000, 0);
}

/* The first failure is said, the retries quietly. */
void
ph_wpair_retry_start(struct pair *p)
{
	int quiet = p->state == ST_WAITING_HOST && p->d->verbose <= 0;
	char err[sizeof(p->rec.err)];

	if (ph_wpair_start(p, quiet) == 0)
		return;
	if (!quiet)
		ph_wreport_say(p, "retrying (backing off up to %d s)", BACKOFF_MAX_S);
	p->state = ST_WAITING_HOST;
	ph_wpair_backoff(p);
	snprintf(err, sizeof(err), "%s: the local folder cannot be watched (yet)", p->def.local);
	ph_wreport_waiting(p, err, p->backoff_s);
}

/* -- the held connection -------------------------------------------------- */

/* Long idle: the phone need not keep our connection. */
static void
idle_close(struct pair *p)
{
	phsync_conn_free(p->conn);
	p->conn = NULL;
	uv_timer_stop(&p->ka);
	if (p->d->verbose > 0)
		ph_wreport_say(p, "idle for %u s: connection closed", p->def.idle_close_s);
	ph_wreport_connected(p, 0);
}

/* None at all without a connection (an idle, disconnected pair has no
 * timer running), and none for a pull whose polls come at least as
 * often. */
void
ph_wpair_ka_arm(struct pair *p)
{
	if (p->closing || p->d->stopping || p->busy || p->state == ST_STOPPED ||
	    !phsync_conn_alive(p->conn) ||
	    (p->def.dir != PHSYNC_PUSH && p->def.keepalive_s >= p->def.interval_s)) {
		uv_timer_stop(&p->ka);
		return;
	}
	uv_timer_start(&p->ka, on_ka, (uint64_t)p->def.keepalive_s * 1000, 0);
}

static void
on_ka(uv_timer_t *t)
{
	struct pair *p = t->data;
	int rc;

	if (p->busy || p->closing || p->d->stopping || !phsync_conn_alive(p->conn))
		return;
	/* A pull polling less often than idle-close lets its link go between
	 * polls (a push pair's own timer does that for it). */
	if (p->def.dir != PHSYNC_PUSH &&
	    uv_now(&p->d->loop) - p->last_use_ms >= (uint64_t)p->def.idle_close_s * 1000) {
		idle_close(p);
		return;
	}
	/* Off the loop: a phone that left without a word takes up to the
	 * timeout to be found gone. */
	p->job.ka = 1;
	p->busy = 1;
	if ((rc = uv_thread_create(&p->th, ph_wjob_keepalive, p)) != 0) {
		p->busy = 0;
		p->job.ka = 0;
		ph_wreport_say(p, "cannot start a thread: %s", uv_strerror(rc));
		ph_wpair_ka_arm(p);
	}
}

/* -- what comes next ------------------------------------------------------ */

void
ph_wpair_kick(struct pair *p)
{
	if (p->closing || p->d->stopping || p->busy || p->state == ST_STOPPED)
		return;
	/* A two-way pair is both: its local changes settle, the phone's
	 * are polled. */
	if (p->def.dir != PHSYNC_PULL && (p->npend > 0 || p->dirty))
		ph_wpair_restart_settle(p);
	if (p->def.dir != PHSYNC_PUSH) {
		uv_timer_start(&p->timer, ph_wpair_on_timer, (uint64_t)p->def.interval_s * 1000, 0);
		return;
	}
	if (p->unwatched)
		uv_timer_start(&p->timer, ph_wpair_on_timer, (uint64_t)p->def.interval_s * 1000, 0);
	else if (p->conn != NULL)
		uv_timer_start(&p->timer, ph_wpair_on_timer, (uint64_t)p->def.idle_close_s * 1000, 0);
}

void
ph_wpair_on_timer(uv_timer_t *t)
{
	struct pair *p = t->data;

	if (p->busy && p->job.ka)
		p->timer_due = 1; /* its end runs this */
	if (p->busy || p->closing || p->d->stopping)
		return;
	if (p->def.dir != PHSYNC_PULL && p->fsw == NULL) {
		ph_wpair_retry_start(p); /* its folder was missing (a disk not mounted yet?) */
		return;
	}
	if (p->state == ST_WAITING_HOST || !p->started_once) {
		start_job(p, 1); /* a retry: a pull polls, a push syncs */
	} else if (p->def.dir != PHSYNC_PUSH) {
		/* Folders the watch limit left out: a plain run looks at all. */
		start_job(p, !(p->def.dir == PHSYNC_BOTH && p->unwatched));
	} else if (p->unwatched) {
		p->dirty = 1; /* folders the watch limit left out: look at all */
		p->slow = 1;
		ph_wpair_restart_settle(p);
	} else {
		idle_close(p);
	}
}
