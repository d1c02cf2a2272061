/* SPDX-License-Identifier: ISC */
/* The pair's records merged with both trees for the planner (known.c).
 * Internal. */
#ifndef PH_KNOWN_H
#define PH_KNOWN_H

#include <pthread.h>
#include <stdatomic.h>

#include "job.h"
#include "lscan.h"
#include "plan.h"

/* The state's records merged with j's trees (pull: the remote is the
 * source) into known, each local file's identity checked (ident.h); with
 * mj (a two-way run's other pass, its trees j's swapped) mknown is filled
 * too from the same read and checks. 0 or a negative PHSYNC_E*. */
int ph_known_load(struct ph_job *j, int pull, struct ph_known_set *known, struct ph_job *mj,
                  struct ph_known_set *mknown);

/* A one-way pull's records in two halves: each row's local side (its
 * file's entry, its identity checked: the state read, and any local file
 * hashed) on a thread while the server is listed, its remote side once the
 * listing is in. The thread first waits for the local walk, and gives the
 * local tree its keys (normalized, kept apart: the destination's part of
 * the run's name matching, which then skips it). */
struct ph_known_early {
	pthread_t th;
	int on;                    /* started, not joined */
	atomic_int stop;           /* the run no longer wants it */
	int named;                 /* the local tree's keys set (names.h) */
	int rc;
	struct ph_job *j;
	struct ph_lscan *ls;
	struct early *e;           /* its half, or NULL */
	/* When set, the pairs both sides hold as recorded are taken out of
	 * both trees first, while they fill (pairs.h); the thread's own read
	 * then skips their rows, and known->asrec counts them. */
	struct ph_pairs *pairs;
	uint64_t paired;           /* how many were taken out */
};

/* Starts the early half of j's records (a pull with a state) after the walk
 * ls (whose join is then the thread's). Returns 1, or 0 when no thread
 * could start (the run then merges as before; the walk is joined by the
 * caller). */
int ph_known_early_start(struct ph_known_early *ke, struct ph_job *j, struct ph_lscan *ls,
                         struct ph_pairs *pairs);
/* Waits for it (stop: asked to end at its next row first). */
void ph_known_early_join(struct ph_known_early *ke, int stop);
/* The records merged: the kept half with the remote tree (the listing
 * in, sorted, the names matched). 1 when known was filled, 0 when the
 * early half did not run (the walk failed or was stopped) or redo says
 * the local tree's keys changed since (a destination that ignores case
 * takes the phone's keys: names.h), the caller then loading them itself;
 * or a negative PHSYNC_E*. Frees the early half. With pairs taken out,
 * never 0: the trees no longer hold them, and a merge of the trees alone
 * would read their records as files gone. */
int ph_known_early_finish(struct ph_known_early *ke, struct ph_known_set *known, int redo);
void ph_known_early_free(struct ph_known_early *ke);

/* A record whose names phsync could not have written, said. */
void ph_bad_row(struct ph_job *j, const char *path, const char *what);

#endif
