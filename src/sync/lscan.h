/* SPDX-License-Identifier: ISC */
/* A run's local scan on a thread of its own, while the run's thread lists
 * the server (rsync's sender and generator overlap the same way). */
#ifndef PH_LSCAN_H
#define PH_LSCAN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ctx.h"
#include "job.h"
#include "tree.h"

/* The local walk on its own thread, with its own error buffer; the
 * failures it meets are kept and reported by the caller's thread. */
struct ph_lscan_fail {
	char *path;
	int err;
	enum phsync_event_type type;
	const char *action;     /* a constant string or NULL */
	char *msg;
};

struct ph_lscan {
	pthread_t th;
	phsync_ctx ctx;
	int root, remove_temps, check_names, rc;
	int started;               /* on its own thread (else it ran inline) */
	atomic_int walking;        /* from its start until the walk and its sort
	                              end (what the listing may wait for) */
	atomic_size_t found;       /* entries walked so far (a progress line's) */
	pthread_mutex_t mu;        /* with done: the walk's end, to wait on */
	pthread_cond_t done;
	int sync_on;               /* mu and done made */
	const struct ph_filter *filter;
	struct ph_tree *t;
	struct ph_tree *partials;  /* pull: the partial downloads found */
	struct ph_tree *stale;     /* when set, dead runs' leftovers listed
	                              here instead of removed (local.h) */
	uint64_t failed;
	struct ph_lscan_fail *fails;
	size_t nfails, capfails;
};

/* Starts the walk ls describes (ph_local_scan's arguments) on a thread
 * (the walk runs here and now if none can start). */
void ph_lscan_start(struct ph_lscan *ls);
/* Asks a walk that is no longer wanted to stop at its next folder (it
 * then ends with PHSYNC_EINTR); ph_lscan_join still waits for it. */
void ph_lscan_stop(struct ph_lscan *ls);
/* Waits for it to end (ls->rc its result, ls->t sorted when 0). */
void ph_lscan_join(struct ph_lscan *ls);
/* Waits at most timeout_ms for it to end: 1 when it has (join it then),
 * 0 when it still walks. */
int ph_lscan_wait(struct ph_lscan *ls, int timeout_ms);
/* Counts and reports, on the run's thread, what it could not read. */
void ph_lscan_report(struct ph_job *j, struct ph_lscan *ls);
void ph_lscan_free(struct ph_lscan *ls);

#endif
