/* SPDX-License-Identifier: ISC */
/* The watcher daemon: sync pairs kept in step on one libuv loop; local
 * changes (fswatch.c) and remote polls trigger phsync_sync runs on a
 * thread per running pair. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "phsync/phsync.h"
#include "conf.h"
#include "fswatch.h"
#include "watch.h"
#include "wstatus.h"

/* Exit codes (the CLI's, docs/phsync.1). */
enum { WX_OK = 0, WX_ERROR = 1, WX_USAGE = 2, WX_HOSTKEY = 4 };

#define BACKOFF_MIN_S 2
#define BACKOFF_MAX_S 300
#define MAX_PENDING 100000   /* changed files remembered one by one; beyond: all */
#define MAX_OWN 100000       /* files pulls wrote, remembered against echoes */
#define LOGMSG 4200

enum pstate { ST_IDLE, ST_SYNCING, ST_WAITING_HOST, ST_STOPPED };

/* A file a pull of this daemon wrote into a local folder: a push pair
 * watching that folder must not take it for a change to send back. */
struct own {
	char *path;              /* absolute */
	uint64_t size;
	int64_t mtime_ns;
};

/* A changed local file waiting for its settle period. */
struct pend {
	char *rel;
	uint64_t size;
	int64_t mtime_ns;
	int writing;             /* modified and not yet closed */
};

struct daemon;

struct pair {
	struct daemon *d;
	struct ph_watch_pair def;
	struct ph_conf_pair cp;  /* what def points into (daemon pairs) */
	phsync_ctx *ctx;
	phsync_conn *conn;
	struct ph_fsw *fsw;
	uv_timer_t settle;       /* push: quiet period before a sync */
	uv_timer_t timer;        /* next poll, retry, rescan or idle close */
	uv_timer_t ka;           /* next keepalive: armed only while a
	                            connection is held and unused */
	uv_async_t done;         /* the worker finished */
	uv_thread_t th;
	int nhandles;            /* handles not yet closed */
	enum pstate state;
	int busy, closing, removed, started_once, first_failed;
	int dirty;               /* something changed that no pending file shows */
	int unwatched;           /* the watch limit left folders unwatched */
	int unreachable;         /* said once until it comes back */
	char local_abs[PATH_MAX];
	struct pend *pend;
	size_t npend, cappend;
	unsigned polls, backoff_s;
	/* the worker's job and result */
	int job_poll, job_full;
	char **hold;
	size_t nhold;
	int job_rc, job_synced, job_ka;
	int timer_due;           /* the timer fired during a keepalive */
	uint64_t last_use_ms;    /* loop time the last poll or run ended */
	int64_t job_t0;          /* unix seconds the job's sync began */
	struct phsync_stats job_st;
	char job_err[1024];
	struct own *wrote;
	size_t nwrote, capwrote;
	uv_mutex_t wrote_lock;
	/* `phsync status`'s record (wstatus.h): written by the loop, and by
	 * the worker when a run begins; st_lock guards it and the fields
	 * below. */
	struct ph_wst *wst;
	uv_mutex_t st_lock;
	const char *st_word;     /* "starting", "watching", "syncing", ... */
	int64_t st_since, st_retry_at;
	int st_connected;
	uint64_t st_keepalives;
	int64_t st_last_start, st_last_end;
	int st_last_rc;
	uint64_t st_last_files, st_last_failed, st_last_bytes;
	char st_err[1024], st_note[1024];
};

struct daemon {
	uv_loop_t loop;
	uv_signal_t sigint, sigterm, sighup;
	uv_timer_t stop_timer;
	int stopping, verbose, single, exit_code, stop_timer_on;
	const char *conf_path;
	struct pair **pairs;
	size_t npairs;
	struct own *own;
	size_t nown;
};

static void pair_kick(struct pair *p);
static void start_job(struct pair *p, int poll);
static void maybe_finish(struct daemon *d);

/* -- messages ------------------------------------------------------------ */

static void
say(const struct pair *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(const struct pair *p, const char *fmt, ...)
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

static const char *
dir_word(const struct pair *p)
{
	return p->def.dir == PHSYNC_PULL ? "pull" : "push";
}

/* -- the status record (phsync status) --------------------------------------- */

/* Writes p's record from its st_ fields; the caller holds st_lock. */
static void
status_write_locked(struct pair *p)
{
	struct ph_wst_rec r;

	if (p->wst == NULL)
		return;
	memset(&r, 0, sizeof(r));
	r.pid = (long)getpid();
	r.name = p->def.name;
	r.direction = dir_word(p);
	r.remote = p->def.remote;
	r.local = p->local_abs[0] ? p->local_abs : p->def.local;
	r.config = p->d->conf_path ? p->d->conf_path : "";
	r.state = p->st_word;
	r.since = p->st_since;
	r.connected = p->st_connected;
	r.keepalives = p->st_keepalives;
	r.retry_at = p->st_retry_at;
	r.last_start = p->st_last_start;
	r.last_end = p->st_last_end;
	r.last_result = p->st_last_rc;
	r.last_files = p->st_last_files;
	r.last_failed = p->st_last_failed;
	r.last_bytes = p->st_last_bytes;
	r.error = p->st_err;
	r.note = p->st_note;
	r.updated = (int64_t)time(NULL);
	/* A full disk or a removed state folder must not stop the syncs:
	 * the record is a window on them, not part of them. */
	(void)ph_wst_write(p->wst, &r);
}

/* Sets p's state word (the time it began moves only when it changes) and
 * writes the record. Any thread. */
static void
status_set(struct pair *p, const char *word)
{
	uv_mutex_lock(&p->st_lock);
	if (p->st_word == NULL || strcmp(p->st_word, word) != 0) {
		p->st_word = word;
		p->st_since = (int64_t)time(NULL);
	}
	if (strcmp(word, "waiting") != 0)
		p->st_retry_at = 0;
	status_write_locked(p);
	uv_mutex_unlock(&p->st_lock);
}

/* A standing warning for the record (the watch limit, a queue overflow). */
static void
status_note(struct pair *p, const char *msg)
{
	uv_mutex_lock(&p->st_lock);
	snprintf(p->st_note, sizeof(p->st_note), "%s", msg);
	status_write_locked(p);
	uv_mutex_unlock(&p->st_lock);
}

/* Takes p's record (loop thread, before p starts). A second watcher of
 * the same pair writes none: the first one's record stays the truth. */
static void
status_open(struct pair *p)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	const char *local = p->def.local;
	int rc;

	if (realpath(p->def.local, abs) != NULL) {
		local = abs;
	} else if (p->def.local[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL &&
	           (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, p->def.local) < sizeof(abs)) {
		local = abs;
	}
	if (local == abs && p->local_abs[0] == '\0')
		snprintf(p->local_abs, sizeof(p->local_abs), "%s", abs);
	rc = ph_wst_open(p->def.opts.state_dir, dir_word(p), p->def.remote, local, &p->wst);
	if (rc == -EBUSY)
		say(p, "another phsync watches this pair too; `phsync status` shows that one's state");
	else if (rc != 0 && p->d->verbose > 0)
		say(p, "no status record for `phsync status`: %s", strerror(-rc));
	status_set(p, "starting");
}

/* Removes p's record: it is not watched any more. */
static void
status_close(struct pair *p)
{
	uv_mutex_lock(&p->st_lock);
	ph_wst_close(p->wst);
	p->wst = NULL;
	uv_mutex_unlock(&p->st_lock);
}

/* -- events of a run (on the worker thread) -------------------------------- */

static void
remember_write(struct pair *p, const char *rel)
{
	char path[PATH_MAX], abs[PATH_MAX];
	struct stat st;
	struct own *o;

	if (snprintf(path, sizeof(path), "%s/%s", p->def.local, rel) >= (int)sizeof(path) ||
	    realpath(path, abs) == NULL || lstat(abs, &st) != 0)
		return;
	uv_mutex_lock(&p->wrote_lock);
	if (p->nwrote == p->capwrote && p->nwrote < MAX_OWN) {
		size_t nc = p->capwrote ? p->capwrote * 2 : 64;
		struct own *v = realloc(p->wrote, nc * sizeof(*v));

		if (v != NULL) {
			p->wrote = v;
			p->capwrote = nc;
		}
	}
	if (p->nwrote < p->capwrote && ((o = &p->wrote[p->nwrote])->path = strdup(abs)) != NULL) {
		o->size = (uint64_t)st.st_size;
		o->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		p->nwrote++;
	}
	uv_mutex_unlock(&p->wrote_lock);
}

static void
on_event(const struct phsync_event *ev, void *arg)
{
	struct pair *p = arg;
	int v = p->d->verbose;

	switch (ev->type) {
	case PHSYNC_EV_FILE_DONE:
		if (p->def.dir == PHSYNC_PULL)
			remember_write(p, ev->path);
		if (v > 0)
			say(p, "%s %s%s%s", ev->action ? ev->action : "copied", ev->path,
			    ev->message ? " from " : "", ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_FILE_FAILED:
		if (v >= 0)
			say(p, "failed: %s: %s", ev->path, ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_CONFLICT:
		if (v >= 0)
			say(p, "conflict: %s: %s", ev->path, ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_WARNING:
		if (v >= 0)
			say(p, "warning: %s%s%s", ev->path ? ev->path : "", ev->path ? ": " : "",
			    ev->message ? ev->message : "");
		break;
	case PHSYNC_EV_SKIPPED:
		if (v > 0)
			say(p, "skip %s (%s)", ev->path, ev->action ? ev->action : "");
		break;
	case PHSYNC_EV_DELETED:
		if (v > 0)
			say(p, "%s %s", ev->action ? ev->action : "delete", ev->path);
		break;
	default:
		break;
	}
}

/* -- the worker: one poll and/or run, off the loop ---------------------- */

static int
transient(int rc)
{
	return rc == PHSYNC_ECONNECT || rc == PHSYNC_ELOCKED;
}

static int
connect_pair(struct pair *p)
{
	phsync_conn_free(p->conn);
	p->conn = NULL;
	return phsync_conn_open(p->ctx, p->def.remote, &p->def.opts, &p->conn);
}

static void
worker(void *arg)
{
	struct pair *p = arg;
	struct phsync_options o = p->def.opts;
	int rc = 0, changed = 1, fresh = 0;

	p->job_synced = 0;
	memset(&p->job_st, 0, sizeof(p->job_st));
	if (!phsync_conn_alive(p->conn)) {
		rc = connect_pair(p);
		fresh = 1;
	}
	if (rc == 0 && p->job_poll) {
		rc = phsync_conn_poll(p->conn, p->job_full);
		if (rc < 0 && !fresh && !phsync_conn_alive(p->conn) && rc != PHSYNC_EINTR) {
			/* The kept link had died (the phone left): once more. */
			if ((rc = connect_pair(p)) == 0)
				rc = phsync_conn_poll(p->conn, p->job_full);
			fresh = 1;
		}
		if (rc >= 0) {
			changed = rc;
			rc = 0;
		}
	}
	if (rc == 0 && changed) {
		p->job_t0 = (int64_t)time(NULL);
		uv_mutex_lock(&p->st_lock);
		p->st_connected = 1;
		uv_mutex_unlock(&p->st_lock);
		status_set(p, "syncing");
		o.on_event = on_event;
		o.event_arg = p;
		o.prompt = NULL;
		o.hold_paths = (const char *const *)p->hold;
		o.n_hold = p->nhold;
		o.conn = p->conn;
		rc = phsync_sync(p->ctx, p->def.dir, p->def.remote, p->def.local, &o, &p->job_st);
		if (rc == PHSYNC_ECONNECT && !fresh && !phsync_conn_alive(p->conn) &&
		    p->job_st.files_done == 0 && (rc = connect_pair(p)) == 0) {
			o.conn = p->conn;
			rc = phsync_sync(p->ctx, p->def.dir, p->def.remote, p->def.local, &o,
			                 &p->job_st);
		}
		p->job_synced = 1;
	}
	p->job_rc = rc;
	snprintf(p->job_err, sizeof(p->job_err), "%s", rc ? phsync_ctx_error(p->ctx) : "");
	uv_async_send(&p->done);
}

/* A keepalive on the held connection (the worker of on_ka). */
static void
ka_worker(void *arg)
{
	struct pair *p = arg;

	p->job_rc = phsync_conn_keepalive(p->conn);
	snprintf(p->job_err, sizeof(p->job_err), "%s", p->job_rc ? phsync_ctx_error(p->ctx) : "");
	uv_async_send(&p->done);
}

/* -- files pulls wrote ---------------------------------------------------- */

static void
own_add(struct daemon *d, struct own *o)
{
	struct own *v;

	if (d->nown >= MAX_OWN) {
		free(o->path);
		return;
	}
	if ((v = realloc(d->own, (d->nown + 1) * sizeof(*v))) == NULL) {
		free(o->path);
		return;
	}
	d->own = v;
	d->own[d->nown++] = *o;
}

/* Was abs written by one of our pulls, and is it still as written? The
 * entry is used up either way once the path matches. */
static int
own_match(struct daemon *d, const char *abs, uint64_t size, int64_t mtime_ns)
{
	size_t i;

	for (i = 0; i < d->nown; i++) {
		if (strcmp(d->own[i].path, abs) == 0) {
			int same = d->own[i].size == size && d->own[i].mtime_ns == mtime_ns;

			free(d->own[i].path);
			d->own[i] = d->own[--d->nown];
			return same;
		}
	}
	return 0;
}

/* Does a pull of this daemon run now into p's folder (or one above or
 * below it)? Its writes are then not yet all known. */
static int
pull_into_busy(const struct pair *p)
{
	size_t i, n = strlen(p->local_abs);

	for (i = 0; i < p->d->npairs; i++) {
		const struct pair *q = p->d->pairs[i];
		char qa[PATH_MAX];
		size_t m;

		if (q == p || q->def.dir != PHSYNC_PULL || !q->busy ||
		    realpath(q->def.local, qa) == NULL)
			continue;
		m = strlen(qa);
		if ((m <= n && strncmp(qa, p->local_abs, m) == 0 && (m == n || p->local_abs[m] == '/')) ||
		    (n < m && strncmp(qa, p->local_abs, n) == 0 && qa[n] == '/'))
			return 1;
	}
	return 0;
}

/* -- pending local changes ------------------------------------------------ */

static int
stat_rel(const struct pair *p, const char *rel, uint64_t *size, int64_t *mtime_ns, char *abs,
         size_t abslen)
{
	struct stat st;

	if ((size_t)snprintf(abs, abslen, "%s/%s", p->local_abs, rel) >= abslen ||
	    lstat(abs, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	*size = (uint64_t)st.st_size;
	*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

static struct pend *
pend_get(struct pair *p, const char *rel)
{
	struct pend *e;
	size_t i;

	for (i = p->npend; i-- > 0;)
		if (strcmp(p->pend[i].rel, rel) == 0)
			return &p->pend[i];
	if (p->npend >= MAX_PENDING) {
		p->dirty = 1; /* too many to follow one by one: a plain sync sees them */
		return NULL;
	}
	if (p->npend == p->cappend) {
		size_t nc = p->cappend ? p->cappend * 2 : 32;
		struct pend *v = realloc(p->pend, nc * sizeof(*v));

		if (v == NULL) {
			p->dirty = 1;
			return NULL;
		}
		p->pend = v;
		p->cappend = nc;
	}
	e = &p->pend[p->npend];
	memset(e, 0, sizeof(*e));
	if ((e->rel = strdup(rel)) == NULL) {
		p->dirty = 1;
		return NULL;
	}
	p->npend++;
	return e;
}

static void
pend_drop(struct pair *p, size_t i)
{
	free(p->pend[i].rel);
	p->pend[i] = p->pend[--p->npend];
}

static void on_settle(uv_timer_t *t);

static void
restart_settle(struct pair *p)
{
	if (!p->closing && !p->d->stopping)
		uv_timer_start(&p->settle, on_settle, p->def.settle_ms, 0);
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
		if ((e = pend_get(p, rel)) != NULL) {
			e->writing = 0;
			if (stat_rel(p, rel, &e->size, &e->mtime_ns, abs, sizeof(abs)) != 0)
				e->size = UINT64_MAX;
		}
		restart_settle(p);
		break;
	case PH_FSW_WRITING:
		if ((e = pend_get(p, rel)) != NULL)
			e->writing = 1;
		break;
	case PH_FSW_GONE:
		for (i = 0; i < p->npend; i++)
			if (strcmp(p->pend[i].rel, rel) == 0) {
				pend_drop(p, i);
				break;
			}
		if (p->def.opts.delete_missing) {
			p->dirty = 1;
			restart_settle(p);
		}
		break;
	case PH_FSW_UNWATCHED:
		p->unwatched = 1;
		/* fall through */
	case PH_FSW_RESCAN:
		if (msg != NULL) {
			say(p, "warning: %s", msg);
			status_note(p, msg);
		}
		p->dirty = 1;
		restart_settle(p);
		break;
	}
}

/* The quiet period ended: files unchanged since their last event go. */
static void
on_settle(uv_timer_t *t)
{
	struct pair *p = t->data;
	char abs[PATH_MAX], trig[512];
	size_t i, go = 0, tl = 0;
	int moving = 0;

	if (p->busy || p->closing || p->d->stopping || p->state == ST_STOPPED ||
	    p->state == ST_WAITING_HOST)
		return; /* the end of the run (or the retry) looks again */
	if (pull_into_busy(p))
		return; /* its end looks again, knowing what it wrote */
	trig[0] = '\0';
	for (i = 0; i < p->npend;) {
		struct pend *e = &p->pend[i];
		uint64_t size;
		int64_t mt;

		if (e->writing) {
			i++;
			continue;
		}
		if (stat_rel(p, e->rel, &size, &mt, abs, sizeof(abs)) != 0) {
			pend_drop(p, i); /* gone, or no longer a file */
			continue;
		}
		if (own_match(p->d, abs, size, mt)) {
			if (p->d->verbose > 0)
				say(p, "not sent back (a pull wrote it): %s", e->rel);
			pend_drop(p, i);
			continue;
		}
		if (size != e->size || mt != e->mtime_ns) {
			e->size = size;
			e->mtime_ns = mt;
			moving = 1;
		}
		if (tl + strlen(e->rel) + 3 < sizeof(trig))
			tl += (size_t)snprintf(trig + tl, sizeof(trig) - tl, "%s%s", go ? ", " : "",
			                       e->rel);
		go++;
		i++;
	}
	if (moving) {
		restart_settle(p); /* still being written: wait until it rests */
		return;
	}
	if (go == 0 && !p->dirty)
		return;
	if (p->d->verbose > 0)
		say(p, "%zu change(s)%s%s%s", go, go ? ": " : "", trig,
		    p->dirty ? " (and a rescan)" : "");
	/* Files still open for writing stay pending (start_job holds them
	 * back) until they are closed. */
	for (i = 0; i < p->npend;) {
		if (p->pend[i].writing)
			i++;
		else
			pend_drop(p, i);
	}
	p->dirty = 0;
	start_job(p, 0);
}

/* -- running jobs ------------------------------------------------------- */

static void
on_stop_timer(uv_timer_t *t)
{
	struct daemon *d = t->data;
	size_t i;

	/* phsync_sync clears a stop asked before it began: ask again until
	 * every run has ended. */
	for (i = 0; i < d->npairs; i++)
		if (d->pairs[i]->busy && (d->stopping || d->pairs[i]->closing))
			phsync_ctx_interrupt(d->pairs[i]->ctx);
}

static void on_timer(uv_timer_t *t);
static void free_hold(struct pair *p);

static void
start_job(struct pair *p, int poll)
{
	int rc;

	if (p->busy || p->closing || p->d->stopping || p->state == ST_STOPPED)
		return;
	uv_timer_stop(&p->timer);
	uv_timer_stop(&p->ka);
	p->job_ka = 0;
	p->job_poll = poll && p->def.dir == PHSYNC_PULL;
	p->job_full = 0;
	if (p->job_poll) {
		p->polls++;
		p->job_full = p->def.full_every > 0 && p->polls % p->def.full_every == 0;
	}
	/* A push leaves the files still open for writing for a later run:
	 * they are sent once closed and settled. */
	free_hold(p);
	if (p->def.dir == PHSYNC_PUSH && p->npend > 0 &&
	    (p->hold = calloc(p->npend, sizeof(*p->hold))) != NULL) {
		size_t i;

		for (i = 0; i < p->npend; i++)
			if (p->pend[i].writing && (p->hold[p->nhold] = strdup(p->pend[i].rel)) != NULL)
				p->nhold++;
	}
	p->busy = 1;
	if (p->state != ST_WAITING_HOST)
		p->state = ST_SYNCING;
	if ((rc = uv_thread_create(&p->th, worker, p)) != 0) {
		p->busy = 0;
		say(p, "cannot start a thread: %s", uv_strerror(rc));
		uv_timer_start(&p->timer, on_timer, 1000, 0);
	}
}

static void
free_hold(struct pair *p)
{
	size_t i;

	for (i = 0; i < p->nhold; i++)
		free(p->hold[i]);
	free(p->hold);
	p->hold = NULL;
	p->nhold = 0;
}

static void close_pair(struct pair *p);

/* The record after a job: its state, the sync's result, the link. */
static void
status_done(struct pair *p, int rc, const char *word, unsigned retry_s)
{
	int64_t now = (int64_t)time(NULL);
	int alive = phsync_conn_alive(p->conn);

	uv_mutex_lock(&p->st_lock);
	if (!p->job_synced && !retry_s && !rc && p->st_word != NULL && !strcmp(p->st_word, word) &&
	    p->st_connected == alive && p->st_err[0] == '\0') {
		/* A poll that found nothing: the record already says it all
		 * (no file write every poll). */
		uv_mutex_unlock(&p->st_lock);
		return;
	}
	if (p->job_synced) {
		p->st_last_start = p->job_t0 ? p->job_t0 : now;
		p->st_last_end = now;
		p->st_last_rc = rc;
		p->st_last_files = p->job_st.files_done;
		p->st_last_failed = p->job_st.files_failed;
		p->st_last_bytes = p->job_st.bytes_committed;
	}
	snprintf(p->st_err, sizeof(p->st_err), "%s", rc ? p->job_err : "");
	p->st_connected = alive;
	uv_mutex_unlock(&p->st_lock);
	status_set(p, word);
	if (retry_s) {
		uv_mutex_lock(&p->st_lock);
		p->st_retry_at = now + retry_s;
		status_write_locked(p);
		uv_mutex_unlock(&p->st_lock);
	}
}

static void on_ka(uv_timer_t *t);

/* Long idle: the phone need not keep our connection. */
static void
idle_close(struct pair *p)
{
	phsync_conn_free(p->conn);
	p->conn = NULL;
	uv_timer_stop(&p->ka);
	if (p->d->verbose > 0)
		say(p, "idle for %u s: connection closed", p->def.idle_close_s);
	uv_mutex_lock(&p->st_lock);
	p->st_connected = 0;
	status_write_locked(p);
	uv_mutex_unlock(&p->st_lock);
}

/* Arms the keepalive while p holds a connection it does not use: none at
 * all without one (an idle, disconnected pair has no timer running), and
 * none for a pull whose polls come at least as often. */
static void
ka_arm(struct pair *p)
{
	if (p->closing || p->d->stopping || p->busy || p->state == ST_STOPPED ||
	    !phsync_conn_alive(p->conn) ||
	    (p->def.dir == PHSYNC_PULL && p->def.keepalive_s >= p->def.interval_s)) {
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
	if (p->def.dir == PHSYNC_PULL &&
	    uv_now(&p->d->loop) - p->last_use_ms >= (uint64_t)p->def.idle_close_s * 1000) {
		idle_close(p);
		return;
	}
	/* Off the loop: a phone that left without a word takes up to the
	 * timeout to be found gone. */
	p->job_ka = 1;
	p->busy = 1;
	if ((rc = uv_thread_create(&p->th, ka_worker, p)) != 0) {
		p->busy = 0;
		p->job_ka = 0;
		say(p, "cannot start a thread: %s", uv_strerror(rc));
		ka_arm(p);
	}
}

/* Loop side of a keepalive. */
static void
ka_done(struct pair *p, int rc)
{
	struct daemon *d = p->d;

	p->job_ka = 0;
	if (rc == 0) {
		uv_mutex_lock(&p->st_lock);
		p->st_keepalives++;
		status_write_locked(p);
		uv_mutex_unlock(&p->st_lock);
	} else if (rc != PHSYNC_EINTR) {
		/* The phone left: no retries now; the next change or poll
		 * connects again (and backs off if it must). */
		if (d->verbose > 0)
			say(p, "the kept connection is gone: %s", p->job_err);
		phsync_conn_free(p->conn);
		p->conn = NULL;
		uv_mutex_lock(&p->st_lock);
		p->st_connected = 0;
		status_write_locked(p);
		uv_mutex_unlock(&p->st_lock);
	}
	if (d->stopping || p->closing) {
		if (p->closing)
			close_pair(p);
		maybe_finish(d);
		return;
	}
	/* What came while it ran: changed files, a poll or an idle close due. */
	if (p->def.dir == PHSYNC_PUSH && (p->npend > 0 || p->dirty))
		restart_settle(p);
	if (p->timer_due) {
		p->timer_due = 0;
		on_timer(&p->timer);
	}
	ka_arm(p);
}

/* Loop side of a finished job: report, then decide what comes next. */
static void
on_done(uv_async_t *a)
{
	struct pair *p = a->data;
	struct daemon *d = p->d;
	int rc, first = !p->started_once;
	size_t i;

	if (!p->busy)
		return;
	uv_thread_join(&p->th);
	p->busy = 0;
	rc = p->job_rc;
	if (p->job_ka) {
		ka_done(p, rc);
		return;
	}
	p->last_use_ms = uv_now(&d->loop);
	free_hold(p);
	uv_mutex_lock(&p->wrote_lock);
	for (i = 0; i < p->nwrote; i++)
		own_add(d, &p->wrote[i]);
	p->nwrote = 0;
	uv_mutex_unlock(&p->wrote_lock);
	/* Push pairs waiting for this pull's writes to be known look again. */
	for (i = 0; i < d->npairs; i++)
		if (d->pairs[i] != p && d->pairs[i]->def.dir == PHSYNC_PUSH &&
		    (d->pairs[i]->npend > 0 || d->pairs[i]->dirty))
			restart_settle(d->pairs[i]);

	if (rc == PHSYNC_EINTR && (d->stopping || p->closing)) {
		/* asked to stop */
	} else if (rc == PHSYNC_EHOSTKEY || rc == PHSYNC_EHOSTUNKNOWN) {
		say(p, "STOPPED: %s. This pair is not retried: check the phone's key (a new "
		    "phone or a reinstalled SSH server?), fix known_hosts, then restart phsync "
		    "(or send the daemon SIGHUP)", p->job_err);
		p->state = ST_STOPPED;
		ph_fsw_close(p->fsw);
		p->fsw = NULL;
		phsync_conn_free(p->conn);
		p->conn = NULL;
		status_done(p, rc, "stopped", 0);
		if (d->single) {
			d->exit_code = WX_HOSTKEY;
			d->stopping = 1;
		}
	} else if (rc != 0 && rc != PHSYNC_EPARTIAL && rc != PHSYNC_ECONFLICT) {
		if (first && d->single && !transient(rc) && rc != PHSYNC_EAUTH) {
			/* A typo in a path should not be retried quietly forever. */
			say(p, "%s", p->job_err);
			d->exit_code = rc == PHSYNC_EINVAL ? WX_USAGE : WX_ERROR;
			d->stopping = 1;
		} else {
			if (!p->unreachable || d->verbose > 0)
				say(p, "%s%s; retrying (backing off up to %d s)", p->job_err,
				    transient(rc) ? "" : "", BACKOFF_MAX_S);
			p->unreachable = 1;
			p->state = ST_WAITING_HOST;
			p->backoff_s = p->backoff_s ? p->backoff_s * 2 : BACKOFF_MIN_S;
			if (p->backoff_s > BACKOFF_MAX_S)
				p->backoff_s = BACKOFF_MAX_S;
			uv_timer_start(&p->timer, on_timer, (uint64_t)p->backoff_s * 1000, 0);
			status_done(p, rc, "waiting", p->backoff_s);
		}
	} else {
		if (p->unreachable)
			say(p, "reachable again");
		p->unreachable = 0;
		p->backoff_s = 0;
		p->state = ST_IDLE;
		if (rc != 0)
			say(p, "%s", p->job_err);
		if (p->job_synced && d->verbose >= 0 &&
		    (p->job_st.files_done || p->job_st.files_deleted || p->job_st.files_failed))
			say(p, "%s: %llu file(s) copied (%.1f MB), %llu deleted, %llu failed, %.1f s",
			    dir_word(p), (unsigned long long)p->job_st.files_done,
			    p->job_st.bytes_committed / 1e6,
			    (unsigned long long)p->job_st.files_deleted,
			    (unsigned long long)p->job_st.files_failed,
			    p->job_st.elapsed_ms / 1000.0);
		if (first) {
			if (p->def.dir == PHSYNC_PUSH)
				say(p, "watching %s (%zu folder(s)); changes go to %s", p->def.local,
				    p->fsw ? ph_fsw_count(p->fsw) : (size_t)0, p->def.remote);
			else
				say(p, "watching %s (polled every %u s); changes come to %s",
				    p->def.remote, p->def.interval_s, p->def.local);
		}
		p->started_once = 1;
		status_done(p, rc, "watching", 0);
		pair_kick(p);
		ka_arm(p);
	}
	if (d->stopping || p->closing) {
		if (p->closing)
			close_pair(p);
		maybe_finish(d);
		return;
	}
}

/* What an idle pair waits for next. */
static void
pair_kick(struct pair *p)
{
	if (p->closing || p->d->stopping || p->busy || p->state == ST_STOPPED)
		return;
	if (p->def.dir == PHSYNC_PULL) {
		uv_timer_start(&p->timer, on_timer, (uint64_t)p->def.interval_s * 1000, 0);
		return;
	}
	if (p->npend > 0 || p->dirty)
		restart_settle(p);
	if (p->unwatched)
		uv_timer_start(&p->timer, on_timer, (uint64_t)p->def.interval_s * 1000, 0);
	else if (p->conn != NULL)
		uv_timer_start(&p->timer, on_timer, (uint64_t)p->def.idle_close_s * 1000, 0);
}

static int start_pair(struct pair *p, int quiet);

/* Starts p, or tries again later (backing off) when its folder cannot be
 * watched yet; the first failure is said, the retries quietly. */
static void
retry_start(struct pair *p)
{
	int quiet = p->state == ST_WAITING_HOST && p->d->verbose <= 0;

	if (start_pair(p, quiet) == 0)
		return;
	if (!quiet)
		say(p, "retrying (backing off up to %d s)", BACKOFF_MAX_S);
	p->state = ST_WAITING_HOST;
	p->backoff_s = p->backoff_s ? p->backoff_s * 2 : BACKOFF_MIN_S;
	if (p->backoff_s > BACKOFF_MAX_S)
		p->backoff_s = BACKOFF_MAX_S;
	uv_timer_start(&p->timer, on_timer, (uint64_t)p->backoff_s * 1000, 0);
	uv_mutex_lock(&p->st_lock);
	snprintf(p->st_err, sizeof(p->st_err), "%s: the local folder cannot be watched (yet)",
	         p->def.local);
	uv_mutex_unlock(&p->st_lock);
	status_set(p, "waiting");
	uv_mutex_lock(&p->st_lock);
	p->st_retry_at = (int64_t)time(NULL) + p->backoff_s;
	status_write_locked(p);
	uv_mutex_unlock(&p->st_lock);
}

static void
on_timer(uv_timer_t *t)
{
	struct pair *p = t->data;

	if (p->busy && p->job_ka)
		p->timer_due = 1; /* its end runs this */
	if (p->busy || p->closing || p->d->stopping)
		return;
	if (p->def.dir == PHSYNC_PUSH && p->fsw == NULL) {
		retry_start(p); /* its folder was missing (a disk not mounted yet?) */
		return;
	}
	if (p->state == ST_WAITING_HOST || !p->started_once) {
		start_job(p, 1); /* a retry: a pull polls, a push syncs */
	} else if (p->def.dir == PHSYNC_PULL) {
		start_job(p, 1);
	} else if (p->unwatched) {
		p->dirty = 1; /* folders the watch limit left out: look at all */
		restart_settle(p);
	} else {
		idle_close(p);
	}
}

/* -- pairs --------------------------------------------------------------- */

static void
free_pair(struct pair *p)
{
	size_t i;

	for (i = 0; i < p->npend; i++)
		free(p->pend[i].rel);
	free(p->pend);
	for (i = 0; i < p->nwrote; i++)
		free(p->wrote[i].path);
	free(p->wrote);
	free_hold(p);
	status_close(p);
	uv_mutex_destroy(&p->wrote_lock);
	uv_mutex_destroy(&p->st_lock);
	phsync_conn_free(p->conn);
	phsync_ctx_free(p->ctx);
	ph_conf_pair_free(&p->cp);
	free(p);
}

static void
on_pair_handle_closed(uv_handle_t *h)
{
	struct pair *p = h->data;

	if (--p->nhandles == 0)
		p->removed = 1;
}

/* Stops p's watch and timers; once its job (if any) ended, its handles
 * close and p is freed by maybe_finish / the reload. */
static void
close_pair(struct pair *p)
{
	p->closing = 1;
	ph_fsw_close(p->fsw);
	p->fsw = NULL;
	uv_timer_stop(&p->settle);
	uv_timer_stop(&p->timer);
	uv_timer_stop(&p->ka);
	/* Not watched any more: the record goes now (a pair re-added by the
	 * same reload takes it over), even while a job still ends. */
	status_close(p);
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

static struct pair *
new_pair(struct daemon *d, const struct ph_watch_pair *def, struct ph_conf_pair *cp)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->d = d;
	if (cp != NULL) {
		p->cp = *cp;
		memset(cp, 0, sizeof(*cp));
		p->def.name = p->cp.name;
		p->def.dir = p->cp.dir;
		p->def.remote = p->cp.remote;
		p->def.local = p->cp.local;
		ph_conf_pair_options(&p->cp, &p->def.opts);
		p->def.interval_s = p->cp.interval_s;
		p->def.full_every = p->cp.full_every;
		p->def.settle_ms = p->cp.settle_ms;
		p->def.idle_close_s = p->cp.idle_close_s;
		p->def.keepalive_s = p->cp.keepalive_s;
	} else {
		p->def = *def;
	}
	if (p->def.interval_s == 0)
		p->def.interval_s = PH_CONF_INTERVAL_S;
	if (p->def.idle_close_s == 0)
		p->def.idle_close_s = PH_CONF_IDLE_CLOSE_S;
	if (p->def.keepalive_s == 0)
		p->def.keepalive_s = PH_CONF_KEEPALIVE_S;
	uv_mutex_init(&p->wrote_lock);
	uv_mutex_init(&p->st_lock);
	if (phsync_ctx_new(&p->ctx) != 0) {
		free_pair(p);
		return NULL;
	}
	uv_timer_init(&d->loop, &p->settle);
	uv_timer_init(&d->loop, &p->timer);
	uv_timer_init(&d->loop, &p->ka);
	uv_async_init(&d->loop, &p->done, on_done);
	p->settle.data = p->timer.data = p->ka.data = p->done.data = p;
	p->nhandles = 4;
	return p;
}

/* Starts p: its local watch (push) and its first run. Returns 0 or -1
 * (said why). */
static int
start_pair(struct pair *p, int quiet)
{
	char err[PATH_MAX + 256];

	if (p->def.dir == PHSYNC_PUSH) {
		if (realpath(p->def.local, p->local_abs) == NULL) {
			if (!quiet)
				say(p, "%s: %s", p->def.local, strerror(errno));
			return -1;
		}
		/* The watch first, then the first run: nothing made in between
		 * is missed. */
		if (ph_fsw_new(&p->d->loop, p->local_abs, on_fs, p, &p->fsw, err, sizeof(err)) != 0) {
			if (!quiet)
				say(p, "%s", err);
			return -1;
		}
	}
	start_job(p, 1);
	return 0;
}

static int
add_pair(struct daemon *d, struct pair *p)
{
	struct pair **v = realloc(d->pairs, (d->npairs + 1) * sizeof(*v));

	if (v == NULL)
		return -1;
	d->pairs = v;
	d->pairs[d->npairs++] = p;
	return 0;
}

/* Frees the pairs whose handles are all closed. */
static void
reap_pairs(struct daemon *d)
{
	size_t i, k;

	for (i = k = 0; i < d->npairs; i++) {
		if (d->pairs[i]->removed)
			free_pair(d->pairs[i]);
		else
			d->pairs[k++] = d->pairs[i];
	}
	d->npairs = k;
}

static void
on_closed_noop(uv_handle_t *h)
{
	(void)h;
}

/* When stopping and no job runs any more: close everything, so the loop
 * ends. */
static void
maybe_finish(struct daemon *d)
{
	size_t i;

	if (!d->stopping)
		return;
	for (i = 0; i < d->npairs; i++)
		if (d->pairs[i]->busy)
			return;
	for (i = 0; i < d->npairs; i++)
		close_pair(d->pairs[i]);
	if (!uv_is_closing((uv_handle_t *)&d->sigint)) {
		uv_close((uv_handle_t *)&d->sigint, on_closed_noop);
		uv_close((uv_handle_t *)&d->sigterm, on_closed_noop);
		uv_close((uv_handle_t *)&d->sighup, on_closed_noop);
		uv_close((uv_handle_t *)&d->stop_timer, on_closed_noop);
	}
}

static void
begin_stop(struct daemon *d, const char *why)
{
	size_t i;

	if (d->stopping) {
		/* A second signal: leave now. Files are only ever renamed into
		 * place whole; the next run removes temps. */
		say(NULL, "stopped at once (second signal); run again to finish");
		_exit(6);
	}
	d->stopping = 1;
	if (d->verbose >= 0)
		say(NULL, "%s: stopping (the file in flight is finished or cleanly abandoned)", why);
	for (i = 0; i < d->npairs; i++) {
		struct pair *p = d->pairs[i];

		ph_fsw_close(p->fsw);
		p->fsw = NULL;
		uv_timer_stop(&p->settle);
		uv_timer_stop(&p->timer);
		uv_timer_stop(&p->ka);
		if (p->busy)
			phsync_ctx_interrupt(p->ctx);
	}
	uv_timer_start(&d->stop_timer, on_stop_timer, 100, 100);
	maybe_finish(d);
}

/* -- the config (daemon) ------------------------------------------------ */

static int
load_pairs(struct daemon *d, int reload)
{
	struct ph_conf c;
	char err[1024];
	size_t i, k, kept = 0, added = 0, removed = 0;

	reap_pairs(d);
	if (ph_conf_load(d->conf_path, &c, err, sizeof(err)) != 0) {
		say(NULL, "%s%s", err, reload ? " (the running pairs go on as they were)" : "");
		return -1;
	}
	/* Pairs whose settings did not change go on undisturbed (a stopped
	 * one is started afresh: a reload is how its host key is retried). */
	for (i = 0; i < d->npairs; i++) {
		struct pair *p = d->pairs[i];
		int keep = 0;

		for (k = 0; k < c.n && !p->closing; k++)
			if (c.v[k].name != NULL && p->state != ST_STOPPED &&
			    ph_conf_pair_same(&p->cp, &c.v[k])) {
				ph_conf_pair_free(&c.v[k]);
				keep = 1;
				break;
			}
		if (keep) {
			kept++;
		} else if (!p->closing) {
			removed++;
			close_pair(p);
		}
	}
	for (k = 0; k < c.n; k++) {
		struct pair *p;

		if (c.v[k].name == NULL)
			continue;
		if ((p = new_pair(d, NULL, &c.v[k])) == NULL || add_pair(d, p) != 0) {
			say(NULL, "out of memory");
			if (p != NULL)
				close_pair(p);
			continue;
		}
		added++;
		status_open(p);
		retry_start(p);
	}
	ph_conf_free(&c);
	if (reload)
		say(NULL, "re-read %s: %zu pair(s) kept, %zu started, %zu stopped", d->conf_path,
		    kept, added, removed);
	return 0;
}

static void
on_signal(uv_signal_t *h, int sig)
{
	struct daemon *d = h->data;

	if (sig == SIGHUP && !d->single && !d->stopping) {
		load_pairs(d, 1);
		return;
	}
	begin_stop(d, sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP");
}

/* -- the loop --------------------------------------------------------------- */

static int
daemon_init(struct daemon *d, int verbose)
{
	memset(d, 0, sizeof(*d));
	d->verbose = verbose;
	if (uv_loop_init(&d->loop) != 0)
		return -1;
	uv_signal_init(&d->loop, &d->sigint);
	uv_signal_init(&d->loop, &d->sigterm);
	uv_signal_init(&d->loop, &d->sighup);
	uv_timer_init(&d->loop, &d->stop_timer);
	d->sigint.data = d->sigterm.data = d->sighup.data = d->stop_timer.data = d;
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sighup, on_signal, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static void
on_walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void
daemon_run(struct daemon *d)
{
	size_t i;

	while (uv_run(&d->loop, UV_RUN_DEFAULT) != 0)
		;
	reap_pairs(d);
	/* Anything left (should be nothing): close it, so the loop closes. */
	uv_walk(&d->loop, on_walk_close, NULL);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	reap_pairs(d);
	for (i = 0; i < d->npairs; i++)
		free_pair(d->pairs[i]);
	free(d->pairs);
	for (i = 0; i < d->nown; i++)
		free(d->own[i].path);
	free(d->own);
	if (uv_loop_close(&d->loop) != 0)
		say(NULL, "internal: handles left open at exit");
}

int
ph_watch_pair_main(const struct ph_watch_pair *def, int verbose)
{
	struct daemon d;
	struct pair *p;

	if (daemon_init(&d, verbose) != 0) {
		say(NULL, "cannot start the event loop");
		return WX_ERROR;
	}
	d.single = 1;
	if ((p = new_pair(&d, def, NULL)) == NULL || add_pair(&d, p) != 0) {
		say(NULL, "out of memory");
		return WX_ERROR;
	}
	status_open(p);
	if (start_pair(p, 0) != 0) {
		d.exit_code = WX_ERROR;
		d.stopping = 1;
		maybe_finish(&d);
	}
	daemon_run(&d);
	return d.exit_code;
}

/* One daemon per config: an flock on a file named by the config's real
 * path, in the state folder. Returns the held fd, or -1 (said why). */
static int
lock_config(const char *conf_path)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char real[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64], buf[32];
	uint64_t h = 0xcbf29ce484222325ull;
	const char *c;
	int fd, n;

	if (realpath(conf_path, real) == NULL) {
		say(NULL, "%s: %s", conf_path, strerror(errno));
		return -1;
	}
	for (c = real; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	if (x != NULL && x[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/phsync", x);
	else if (home != NULL && home[0] != '\0')
		n = snprintf(dir, sizeof(dir), "%s/.local/state/phsync", home);
	else
		n = snprintf(dir, sizeof(dir), "/tmp/phsync-%u", (unsigned)getuid());
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -1;
	/* Make the folder and its parents (mkdir -p). */
	for (char *s = dir + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(dir, 0700);
			*s = '/';
		}
	}
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/daemon-%016llx.lock", dir, (unsigned long long)h);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		say(NULL, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		ssize_t r = read(fd, buf, sizeof(buf) - 1);

		buf[r > 0 ? r : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		say(NULL, "another phsync daemon already runs on %s (pid %s); this one exits",
		    real, buf[0] ? buf : "?");
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	/* The pid is only for the message above: a failure to write it is
	 * no reason to stop. */
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, buf, (size_t)n, 0);
	return fd;
}

int
ph_watch_daemon_main(const char *conf_path, int verbose)
{
	struct daemon d;
	char def[PATH_MAX];
	int lock;

	if (conf_path == NULL) {
		if (ph_conf_default_path(def, sizeof(def)) != 0) {
			say(NULL, "no config file given (-c) and no home folder to look in");
			return WX_USAGE;
		}
		conf_path = def;
	}
	if ((lock = lock_config(conf_path)) < 0)
		return WX_ERROR;
	if (daemon_init(&d, verbose) != 0) {
		close(lock);
		return WX_ERROR;
	}
	d.conf_path = conf_path;
	if (load_pairs(&d, 0) != 0) {
		d.exit_code = WX_ERROR;
		d.stopping = 1;
		maybe_finish(&d);
	} else if (verbose >= 0) {
		say(NULL, "daemon started with %s (%zu pair(s)), pid %ld", conf_path, d.npairs,
		    (long)getpid());
	}
	daemon_run(&d);
	close(lock);
	return d.exit_code;
}
