/* SPDX-License-Identifier: ISC */
/* The watcher daemon's insides, shared by its files (internal to
 * src/watch/; the command sees only watch.h). Each file uses only the
 * ones listed before it, so no two call each other:
 *   wreport.c  what a pair tells: lines on stderr, its `phsync status` record
 *   wlocal.c   a push pair's changed files, and the files pulls wrote
 *   wjob.c     the worker thread: one poll and/or sync, or a keepalive
 *   wpair.c    a pair's timers: the settle period, polls, retries,
 *              keepalives, idle close; starting a job
 *   wdone.c    the loop side of a finished job; closing pairs, the last
 *              close when stopping
 *   daemon.c   the loop, its signals, the config, the two entry points */
#ifndef PH_DAEMON_H
#define PH_DAEMON_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "phsync/phsync.h"
#include "conf.h"
#include "fswatch.h"
#include "watch.h"
#include "wstatus.h"

/* The C library's printf rules for ph_wreport_say's format: mingw-w64's
 * stdio.h names its own (C99, %zu), which vsnprintf is there. */
#ifdef __MINGW_PRINTF_FORMAT
#define WPRINTF __MINGW_PRINTF_FORMAT
#else
#define WPRINTF printf
#endif

/* Exit codes (the CLI's, docs/phsync.1). */
enum { WX_OK = 0, WX_ERROR = 1, WX_USAGE = 2, WX_HOSTKEY = 4 };

#define BACKOFF_MIN_S 2
#define BACKOFF_MAX_S 300

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
	int gone;                /* deleted (a two-way pair): a run's own
	                            delete is matched in the settle */
};

/* A pair's record for `phsync status` (wstatus.h), kept by wreport.c:
 * written by the loop, and by the worker when a run begins. */
struct wrec {
	struct ph_wst *wst;      /* NULL: none kept (another watcher keeps it,
	                            or the pair is closed) */
	uv_mutex_t lock;         /* guards all of it */
	struct ph_wst_rec r;     /* what it says: the state word and its time,
	                            the link, the last sync; the strings are
	                            pointed at the pair and at err, note at
	                            each write */
	char err[1024], note[1024];
};

/* A pair's job on the worker thread (wjob.c): set by the loop before it
 * starts, the result read by the loop when it ended (wdone.c). */
struct job {
	int ka;                  /* a keepalive, not a poll or sync */
	int poll, full;          /* a pull polls first (full: a full listing) */
	char **hold;             /* a push's files still being written: left */
	size_t nhold;            /* for a later run */
	int rc, synced;          /* its result; a sync ran (stats in st) */
	int64_t t0;              /* unix seconds the sync began */
	struct phsync_stats st;
	char err[1024];          /* the message of a failure */
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
	int busy, closing, removed, started_once;
	int dirty;               /* something changed that no pending file shows */
	int slow;                /* a change since the last run that is not a
	                            file closed after writing (a time set, a
	                            rescan, a delete, no close events here):
	                            the settle period applies */
	int unwatched;           /* the watch limit left folders unwatched */
	int unreachable;         /* said once until it comes back */
	char local_abs[PATH_MAX];
	struct pend *pend;
	size_t npend, cappend;
	unsigned polls, backoff_s;
	struct job job;          /* the worker's, while busy */
	int timer_due;           /* the timer fired during a keepalive */
	uint64_t last_use_ms;    /* loop time the last poll or run ended */
	struct own *wrote;
	size_t nwrote, capwrote;
	uv_mutex_t wrote_lock;
	struct wrec rec;
};

struct daemon {
	uv_loop_t loop;
	uv_signal_t sigint, sigterm, sighup;
	uv_async_t session;      /* the session's end (Windows: log-off) */
	uv_timer_t stop_timer;
	int stopping, verbose, single, exit_code;
	const char *conf_path;
	struct pair **pairs;
	size_t npairs;
	struct own *own;
	size_t nown;
};

/* ---- wreport.c ---- */

/* A line on stderr, "phsync: NAME: ..." (p NULL: no name), with server
 * text made inert. */
void ph_wreport_say(const struct pair *p, const char *fmt, ...)
	__attribute__((format(WPRINTF, 2, 3)));
/* "pull", "push" or "sync" (a two-way pair). */
const char *ph_wreport_dir(const struct pair *p);
/* Takes p's record (loop thread, before p starts): a second watcher of
 * the same pair writes none. Then says "starting". */
void ph_wreport_open(struct pair *p);
/* Removes p's record: it is not watched any more. */
void ph_wreport_close(struct pair *p);
/* A standing warning for the record (the watch limit, a queue overflow). */
void ph_wreport_note(struct pair *p, const char *msg);
/* A run begins (the worker): connected, "syncing". */
void ph_wreport_syncing(struct pair *p);
/* The link is held (1) or not (0) now. */
void ph_wreport_connected(struct pair *p, int alive);
/* One more keepalive answered. */
void ph_wreport_keepalive(struct pair *p);
/* "waiting" with err, until retry_s seconds from now. */
void ph_wreport_waiting(struct pair *p, const char *err, unsigned retry_s);
/* The record after a job (rc, p->job): its state word, the sync's
 * result, the link; retry_s: when the next try comes (0: none). */
void ph_wreport_done(struct pair *p, int rc, const char *word, unsigned retry_s);

/* ---- wlocal.c ---- */

/* (worker) rel was written by p's pull: remembered until the job ends. */
void ph_wlocal_remember(struct pair *p, const char *rel);
/* (worker) rel was deleted here by p's two-way run: remembered as a
 * write of no size (UINT64_MAX, INT64_MIN) until the job ends. */
void ph_wlocal_remember_gone(struct pair *p, const char *rel);
/* (loop, job ended) p's writes join the daemon's list. */
void ph_wlocal_take_writes(struct pair *p);
/* Was abs written by one of our pulls, and is it still as written? The
 * entry is used up either way once the path matches. */
int ph_wlocal_own_match(struct daemon *d, const char *abs, uint64_t size, int64_t mtime_ns);
/* Does a pull of this daemon run now into p's folder (or one above or
 * below it)? Its writes are then not yet all known. */
int ph_wlocal_pull_busy(const struct pair *p);
/* A regular file rel under p's folder: its size and mtime, and its path
 * in abs. Returns 0, or -1 (gone, not a file, too long). */
int ph_wlocal_stat(const struct pair *p, const char *rel, uint64_t *size, int64_t *mtime_ns,
                   char *abs, size_t abslen);
/* rel's pending entry, made if new; NULL when too many or no memory (the
 * pair is then marked dirty: a plain sync sees it). */
struct pend *ph_wlocal_pend_get(struct pair *p, const char *rel);
/* Drops pending entry i (the last one takes its place). */
void ph_wlocal_pend_drop(struct pair *p, size_t i);
/* Frees p's pending entries and remembered writes. */
void ph_wlocal_free(struct pair *p);

/* ---- wjob.c ---- */

/* The worker thread's bodies (arg: the pair); both end with
 * uv_async_send(&p->done). */
void ph_wjob_run(void *arg);
void ph_wjob_keepalive(void *arg);

/* ---- wpair.c ---- */

/* Frees the list of files a push holds back. */
void ph_wpair_free_hold(struct pair *p);
/* Starts p: its local watch (push) and its first run. Returns 0 or -1
 * (said why, unless quiet). */
int ph_wpair_start(struct pair *p, int quiet);
/* Starts p, or tries again later (backing off) when its folder cannot be
 * watched yet. */
void ph_wpair_retry_start(struct pair *p);
/* Doubles p's backoff (from BACKOFF_MIN_S, up to BACKOFF_MAX_S) and arms
 * the timer for it. */
void ph_wpair_backoff(struct pair *p);
/* p's timer fired (also called when it came due during a keepalive). */
void ph_wpair_on_timer(uv_timer_t *t);
/* Restarts the settle period (push): settle_ms while p->slow, else none
 * (files closed after writing go at once). */
void ph_wpair_restart_settle(struct pair *p);
/* What an idle pair waits for next. */
void ph_wpair_kick(struct pair *p);
/* Arms the keepalive while p holds a connection it does not use. */
void ph_wpair_ka_arm(struct pair *p);

/* ---- wdone.c ---- */

/* (uv_async_t of the pair) the worker finished: report, then what next. */
void ph_wdone_on_done(uv_async_t *a);
/* Stops p's watch and timers; once its job (if any) ended, its handles
 * close and p is freed by the daemon's reap. */
void ph_wdone_close_pair(struct pair *p);
/* When stopping and no job runs any more: closes everything, so the loop
 * ends. */
void ph_wdone_maybe_finish(struct daemon *d);
/* Hands the session's end (phsync_on_session_end) to d->session, which
 * ph_wdone_maybe_finish closes. */
void ph_wdone_session_watch(struct daemon *d);

#endif
