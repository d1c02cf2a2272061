/* SPDX-License-Identifier: ISC */
/* The worker thread of a pair: one poll and/or sync run, or a keepalive on
 * the held connection, off the loop; it ends by waking the loop
 * (wdone.c). See daemon.h. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon.h"

/* -- events of a run ------------------------------------------------------ */

static void
on_event(const struct phsync_event *ev, void *arg)
{
	struct pair *p = arg;
	int v = p->d->verbose;

	switch (ev->type) {
	case PHSYNC_EV_FILE_DONE:
		/* A file written here (a pull's, or a two-way run's way in):
		 * its own watch must not send it back. */
		if (p->def.dir == PHSYNC_PULL ||
		    (p->def.dir == PHSYNC_BOTH && ev->dir == PHSYNC_PULL))
			ph_wlocal_remember(p, ev->path);
		if (v > 0)
			ph_wreport_say(p, "%s %s%s%s%s", ev->action ? ev->action : "copied", ev->path,
			               ev->message ? " from " : "", ev->message ? ev->message : "",
			               ev->dir == PHSYNC_PULL ? " (pull)" :
			               ev->dir == PHSYNC_PUSH ? " (push)" : "");
		break;
	case PHSYNC_EV_FILE_FAILED:
		if (v >= 0)
			ph_wreport_say(p, "failed: %s: %s", ev->path,
			               ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_CONFLICT:
		if (v >= 0)
			ph_wreport_say(p, "conflict: %s: %s", ev->path,
			               ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_WARNING:
		if (v >= 0)
			ph_wreport_say(p, "warning: %s%s%s", ev->path ? ev->path : "",
			               ev->path ? ": " : "", ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_SKIPPED:
		if (v > 0)
			ph_wreport_say(p, "skip %s (%s)", ev->path, ev->action ? ev->action : "");
		break;
	case PHSYNC_EV_DELETED:
		if (p->def.dir == PHSYNC_BOTH && ev->dir == PHSYNC_PULL)
			ph_wlocal_remember_gone(p, ev->path);
		if (v > 0)
			ph_wreport_say(p, "%s %s", ev->action ? ev->action : "delete", ev->path);
		break;
	default:
		break;
	}
}

/* -- the worker ----------------------------------------------------------- */

static int
connect_pair(struct pair *p)
{
	phsync_conn_free(p->conn);
	p->conn = NULL;
	return phsync_conn_open(p->ctx, p->def.remote, &p->def.opts, &p->conn);
}

/* The sync run, once more on a fresh link when the kept one had died. */
static int
run_sync(struct pair *p, int fresh)
{
	struct phsync_options o = p->def.opts;
	int rc;

	p->job.t0 = (int64_t)time(NULL);
	ph_wreport_syncing(p);
	if (p->def.dir == PHSYNC_BOTH && p->d->verbose > 0)
		ph_wreport_say(p, "two-way run (%s)", p->job.poll ? "polled" : "local changes");
	o.on_event = on_event;
	o.event_arg = p;
	o.prompt = NULL;
	o.hold_paths = (const char *const *)p->job.hold;
	o.n_hold = p->job.nhold;
	o.conn = p->conn;
	rc = phsync_sync(p->ctx, p->def.dir, p->def.remote, p->def.local, &o, &p->job.st);
	if (rc == PHSYNC_ECONNECT && !fresh && !phsync_conn_alive(p->conn) &&
	    p->job.st.files_done == 0 && (rc = connect_pair(p)) == 0) {
		o.conn = p->conn;
		rc = phsync_sync(p->ctx, p->def.dir, p->def.remote, p->def.local, &o, &p->job.st);
	}
	p->job.synced = 1;
	return rc;
}

void
ph_wjob_run(void *arg)
{
	struct pair *p = arg;
	int rc = 0, changed = 1, fresh = 0;

	p->job.synced = 0;
	memset(&p->job.st, 0, sizeof(p->job.st));
	if (!phsync_conn_alive(p->conn)) {
		rc = connect_pair(p);
		fresh = 1;
	}
	if (rc == 0 && p->job.poll) {
		rc = phsync_conn_poll(p->conn, p->job.full);
		if (rc < 0 && !fresh && !phsync_conn_alive(p->conn) && rc != PHSYNC_EINTR) {
			/* The kept link had died (the phone left): once more. */
			if ((rc = connect_pair(p)) == 0)
				rc = phsync_conn_poll(p->conn, p->job.full);
			fresh = 1;
		}
		if (rc >= 0) {
			changed = rc;
			rc = 0;
		}
	}
	if (rc == 0 && changed)
		rc = run_sync(p, fresh);
	p->job.rc = rc;
	snprintf(p->job.err, sizeof(p->job.err), "%s", rc ? phsync_ctx_error(p->ctx) : "");
	uv_async_send(&p->done);
}

void
ph_wjob_keepalive(void *arg)
{
	struct pair *p = arg;

	p->job.rc = phsync_conn_keepalive(p->conn);
	snprintf(p->job.err, sizeof(p->job.err), "%s", p->job.rc ? phsync_ctx_error(p->ctx) : "");
	uv_async_send(&p->done);
}
