/* SPDX-License-Identifier: ISC */
/* The watcher: what the phsync command calls for `pull --watch`,
 * `push --watch` and `phsync daemon`. It drives libphsync only through
 * include/phsync/ (phsync_sync and its events, phsync_conn_*). */
#ifndef PH_WATCH_H
#define PH_WATCH_H

#include "phsync/phsync.h"

/* One sync pair to keep in step. */
struct ph_watch_pair {
	const char *name;             /* for messages */
	enum phsync_direction dir;
	const char *remote, *local;
	struct phsync_options opts;   /* the watcher sets on_event, conn, hold
	                                 paths and prompt (never asks) itself */
	unsigned interval_s;          /* remote poll period (pull); the rescan
	                                 period of a tree the watch limit left
	                                 partly unwatched (push) */
	unsigned full_every;          /* a full listing every Nth poll */
	unsigned settle_ms;           /* quiet period before a changed file goes */
	unsigned idle_close_s;        /* an unused connection is closed after */
	unsigned keepalive_s;         /* a held, unused connection is proved
	                                 alive every (0: the default) */
};

/* Keeps one pair in step until SIGINT, SIGTERM or SIGHUP. verbose: 0
 * (syncs that moved files, problems), 1 (each file and trigger), -1
 * (problems only). Returns an exit code of cli.h: 0 on a requested stop,
 * 4 when the host key changed, or the first run's error when it cannot
 * start (no such folder, ...). */
int ph_watch_pair_main(const struct ph_watch_pair *p, int verbose);

/* `phsync daemon`: every pair of the config file at conf_path (NULL: the
 * default), one instance per config (a lock), SIGHUP re-reads it. Returns
 * an exit code of cli.h (0 on SIGINT/SIGTERM). */
int ph_watch_daemon_main(const char *conf_path, int verbose);

#endif
