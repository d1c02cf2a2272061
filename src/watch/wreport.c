/* SPDX-License-Identifier: ISC */
/* What a watched pair tells: its lines on stderr, and its record for
 * `phsync status` (struct wrec; wstatus.c writes the file). See daemon.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phsync/sys.h"
#include "daemon.h"

#define LOGMSG 4200

void
ph_wreport_say(const struct pair *p, const char *fmt, ...)
{
	char raw[LOGMSG], shown[LOGMSG];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Server text and names reach these lines: keep them inert. */
	phsync_escape(shown, sizeof(shown), raw);
	if (p != NULL)
		fprintf(stderr, "phsync: %s: %s\n", p->def.name, shown);
	else
		fprintf(stderr, "phsync: %s\n", shown);
}

const char *
ph_wreport_dir(const struct pair *p)
{
	return p->def.dir == PHSYNC_PULL ? "pull" : p->def.dir == PHSYNC_PUSH ? "push" : "sync";
}

/* Writes p's record; the caller holds its lock. */
static void
write_locked(struct pair *p)
{
	struct wrec *w = &p->rec;

	if (w->wst == NULL)
		return;
	w->r.pid = (long)getpid();
	w->r.name = p->def.name;
	w->r.direction = ph_wreport_dir(p);
	w->r.remote = p->def.remote;
	w->r.local = p->local_abs[0] ? p->local_abs : p->def.local;
	w->r.config = p->d->conf_path ? p->d->conf_path : "";
	w->r.error = w->err;
	w->r.note = w->note;
	w->r.updated = (int64_t)time(NULL);
	/* A full disk or a removed state folder must not stop the syncs:
	 * the record is a window on them, not part of them. */
	(void)ph_wst_write(w->wst, &w->r);
}

/* Sets the state word (its time moves only when it changes) and, when at
 * is not 0, the next try's time, and writes the record once: a reader never
 * sees "waiting" without its time. Any thread. */
static void
set_word_at(struct pair *p, const char *word, int64_t at)
{
	struct ph_wst_rec *r = &p->rec.r;

	uv_mutex_lock(&p->rec.lock);
	if (r->state == NULL || strcmp(r->state, word) != 0) {
		r->state = word;
		r->since = (int64_t)time(NULL);
	}
	if (at != 0)
		r->retry_at = at;
	else if (strcmp(word, "waiting") != 0)
		r->retry_at = 0;
	write_locked(p);
	uv_mutex_unlock(&p->rec.lock);
}

static void
set_word(struct pair *p, const char *word)
{
	set_word_at(p, word, 0);
}

void
ph_wreport_note(struct pair *p, const char *msg)
{
	uv_mutex_lock(&p->rec.lock);
	snprintf(p->rec.note, sizeof(p->rec.note), "%s", msg);
	write_locked(p);
	uv_mutex_unlock(&p->rec.lock);
}

void
ph_wreport_open(struct pair *p)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	const char *local = p->def.local;
	int rc;

	if (phsync_path_real(p->def.local, abs, sizeof(abs)) == 0) {
		local = abs;
	} else if (p->def.local[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL &&
	           (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, p->def.local) < sizeof(abs)) {
		local = abs;
	}
	if (local == abs && p->local_abs[0] == '\0')
		snprintf(p->local_abs, sizeof(p->local_abs), "%s", abs);
	rc = ph_wst_open(p->def.opts.state_dir, ph_wreport_dir(p), p->def.remote, local,
	                 &p->rec.wst);
	if (rc == -EBUSY)
		ph_wreport_say(p, "another phsync watches this pair too; `phsync status` shows "
		               "that one's state");
	else if (rc != 0 && p->d->verbose > 0)
		ph_wreport_say(p, "no status record for `phsync status`: %s", strerror(-rc));
	set_word(p, "starting");
}

void
ph_wreport_close(struct pair *p)
{
	uv_mutex_lock(&p->rec.lock);
	ph_wst_close(p->rec.wst);
	p->rec.wst = NULL;
	uv_mutex_unlock(&p->rec.lock);
}

void
ph_wreport_syncing(struct pair *p)
{
	uv_mutex_lock(&p->rec.lock);
	p->rec.r.connected = 1;
	uv_mutex_unlock(&p->rec.lock);
	set_word(p, "syncing");
}

void
ph_wreport_connected(struct pair *p, int alive)
{
	uv_mutex_lock(&p->rec.lock);
	p->rec.r.connected = alive;
	write_locked(p);
	uv_mutex_unlock(&p->rec.lock);
}

void
ph_wreport_keepalive(struct pair *p)
{
	uv_mutex_lock(&p->rec.lock);
	p->rec.r.keepalives++;
	write_locked(p);
	uv_mutex_unlock(&p->rec.lock);
}

void
ph_wreport_waiting(struct pair *p, const char *err, unsigned retry_s)
{
	uv_mutex_lock(&p->rec.lock);
	snprintf(p->rec.err, sizeof(p->rec.err), "%s", err);
	uv_mutex_unlock(&p->rec.lock);
	set_word_at(p, "waiting", (int64_t)time(NULL) + retry_s);
}

void
ph_wreport_done(struct pair *p, int rc, const char *word, unsigned retry_s)
{
	struct ph_wst_rec *r = &p->rec.r;
	int64_t now = (int64_t)time(NULL);
	int alive = phsync_conn_alive(p->conn);

	uv_mutex_lock(&p->rec.lock);
	if (!p->job.synced && !retry_s && !rc && r->state != NULL && !strcmp(r->state, word) &&
	    r->connected == alive && p->rec.err[0] == '\0') {
		/* A poll that found nothing: the record already says it all
		 * (no file write every poll). */
		uv_mutex_unlock(&p->rec.lock);
		return;
	}
	if (p->job.synced) {
		r->last_start = p->job.t0 ? p->job.t0 : now;
		r->last_end = now;
		r->last_result = rc;
		r->last_files = p->job.st.files_done;
		r->last_failed = p->job.st.files_failed;
		r->last_bytes = p->job.st.bytes_committed;
	}
	snprintf(p->rec.err, sizeof(p->rec.err), "%s", rc ? p->job.err : "");
	r->connected = alive;
	uv_mutex_unlock(&p->rec.lock);
	set_word_at(p, word, retry_s ? now + retry_s : 0);
}
