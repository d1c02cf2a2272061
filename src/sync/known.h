/* SPDX-License-Identifier: ISC */
/* The pair's records merged with both trees for the planner (known.c).
 * Internal. */
#ifndef PH_KNOWN_H
#define PH_KNOWN_H

#include "job.h"
#include "plan.h"

/* The state's records merged with j's trees (pull: the remote is the
 * source) into known, each local file's identity checked (ident.h); with
 * mj (a two-way run's other pass, its trees j's swapped) mknown is filled
 * too from the same read and checks. 0 or a negative PHSYNC_E*. */
int ph_known_load(struct ph_job *j, int pull, struct ph_known_set *known, struct ph_job *mj,
                  struct ph_known_set *mknown);

/* A record whose names phsync could not have written, said. */
void ph_bad_row(struct ph_job *j, const char *path, const char *what);

#endif
