/* SPDX-License-Identifier: ISC */
/* The watcher daemon: sync pairs kept in step on one libuv loop; local
 * changes (fswatch.c) and remote polls trigger phsync_sync runs on a
 * thread per running pair. This file holds the loop, its signals, the
 * pairs' list and the config; daemon.h says which file does the rest. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/console.h"
#include "phsync/sys.h"
#include "daemon.h"

/* -- pairs --------------------------------------------------------------- */

static void
free_pair(struct pair *p)
{
	ph_wlocal_free(p);
	ph_wpair_free_hold(p);
	ph_wreport_close(p);
	uv_mutex_destroy(&p->wrote_lock);
	uv_mutex_destroy(&p->rec.lock);
	phsync_conn_free(p->conn);
	phsync_ctx_free(p->ctx);
	ph_conf_pair_free(&p->cp);
	free(p);
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
	uv_mutex_init(&p->rec.lock);
	if (phsync_ctx_new(&p->ctx) != 0) {
		free_pair(p);
		return NULL;
	}
	uv_timer_init(&d->loop, &p->settle);
	uv_timer_init(&d->loop, &p->timer);
	uv_timer_init(&d->loop, &p->ka);
	uv_async_init(&d->loop, &p->done, ph_wdone_on_done);
	p->settle.data = p->timer.data = p->ka.data = p->done.data = p;
	p->nhandles = 4;
	return p;
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

/* -- stopping ------------------------------------------------------------- */

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

static void
begin_stop(struct daemon *d, const char *why)
{
	size_t i;

	if (d->stopping) {
		/* A second signal: leave now. Files are only ever renamed into
		 * place whole; the next run removes temps. */
		ph_wreport_say(NULL, "stopped at once (second signal); run again to finish");
		_exit(6);
	}
	d->stopping = 1;
	if (d->verbose >= 0)
		ph_wreport_say(NULL, "%s: stopping (the file in flight is finished or cleanly "
		               "abandoned)", why);
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
	ph_wdone_maybe_finish(d);
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
		ph_wreport_say(NULL, "%s%s", err,
		               reload ? " (the running pairs go on as they were)" : "");
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
			ph_wdone_close_pair(p);
		}
	}
	for (k = 0; k < c.n; k++) {
		struct pair *p;

		if (c.v[k].name == NULL)
			continue;
		if ((p = new_pair(d, NULL, &c.v[k])) == NULL || add_pair(d, p) != 0) {
			ph_wreport_say(NULL, "out of memory");
			if (p != NULL)
				ph_wdone_close_pair(p);
			continue;
		}
		added++;
		ph_wreport_open(p);
		ph_wpair_retry_start(p);
	}
	ph_conf_free(&c);
	if (reload)
		ph_wreport_say(NULL, "re-read %s: %zu pair(s) kept, %zu started, %zu stopped",
		               d->conf_path, kept, added, removed);
	return 0;
}

static void
on_signal(uv_signal_t *h, int sig)
{
	struct daemon *d = h->data;

	/* On Windows SIGHUP is the console window closed (libuv's
	 * CTRL_CLOSE_EVENT), and the process ends 5 s later: stop. */
	if (sig == SIGHUP && !d->single && !d->stopping && !phsync_hangup_stops()) {
		load_pairs(d, 1);
		return;
	}
	begin_stop(d, sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" :
	              phsync_hangup_stops() ? "console closed" : "SIGHUP");
}

/* The session's end (Windows: log-off, shutdown), handed to the loop
 * through d->session (wdone.c's ph_wdone_session_watch). */
static void
on_session_end(uv_async_t *h)
{
	begin_stop(h->data, "end of session");
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
	uv_async_init(&d->loop, &d->session, on_session_end);
	d->session.data = d;
	ph_wdone_session_watch(d);
#ifdef SIGPIPE
	/* A peer gone mid-write is an error return, not the end (Windows
	 * has no SIGPIPE). */
	signal(SIGPIPE, SIG_IGN);
#endif
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
		ph_wreport_say(NULL, "internal: handles left open at exit");
}

int
ph_watch_pair_main(const struct ph_watch_pair *def, int verbose)
{
	struct daemon d;
	struct pair *p;

	if (daemon_init(&d, verbose) != 0) {
		ph_wreport_say(NULL, "cannot start the event loop");
		return WX_ERROR;
	}
	d.single = 1;
	if ((p = new_pair(&d, def, NULL)) == NULL || add_pair(&d, p) != 0) {
		ph_wreport_say(NULL, "out of memory");
		return WX_ERROR;
	}
	ph_wreport_open(p);
	if (ph_wpair_start(p, 0) != 0) {
		d.exit_code = WX_ERROR;
		d.stopping = 1;
		ph_wdone_maybe_finish(&d);
	}
	daemon_run(&d);
	return d.exit_code;
}

/* One daemon per config: a lock on a file named by the config's real
 * path, in the state folder. Returns the held fd, or -1 (said why). */
static int
lock_config(const char *conf_path)
{
	char real[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64], buf[32];
	uint64_t h = 0xcbf29ce484222325ull;
	const char *c;
	int fd, n, rc;

	if ((rc = phsync_path_real(conf_path, real, sizeof(real))) != 0) {
		ph_wreport_say(NULL, "%s: %s", conf_path, strerror(-rc));
		return -1;
	}
	for (c = real; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	if ((rc = phsync_state_home(dir, sizeof(dir))) != 0) {
		ph_wreport_say(NULL, "no state folder (no home folder): %s", strerror(-rc));
		return -1;
	}
	/* Made with its parents; a failure shows in the open below. */
	(void)phsync_dir_make(dir);
	snprintf(path, sizeof(path), "%s/daemon-%016llx.lock", dir, (unsigned long long)h);
	if ((fd = phsync_file_open(path, PHSYNC_O_RDWR | PHSYNC_O_CREAT, 0600)) < 0) {
		ph_wreport_say(NULL, "%s: %s", path, strerror(-fd));
		return -1;
	}
	if (phsync_file_lock(fd, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB) != 0) {
		int64_t r = phsync_file_pread(fd, buf, sizeof(buf) - 1, 0);

		buf[r > 0 ? r : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		ph_wreport_say(NULL, "another phsync daemon already runs on %s (pid %s); this one "
		               "exits", real, buf[0] ? buf : "?");
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	/* The pid is only for the message above: a failure to write it is
	 * no reason to stop. */
	if (phsync_file_truncate(fd, 0) == 0)
		(void)phsync_file_pwrite(fd, buf, (size_t)n, 0);
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
			ph_wreport_say(NULL, "no config file given (-c) and no home folder to look "
			               "in");
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
		ph_wdone_maybe_finish(&d);
	} else if (verbose >= 0) {
		ph_wreport_say(NULL, "daemon started with %s (%zu pair(s)), pid %ld", conf_path,
		               d.npairs, (long)getpid());
	}
	daemon_run(&d);
	close(lock);
	return d.exit_code;
}
