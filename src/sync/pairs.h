/* SPDX-License-Identifier: ISC */
/* The files a one-way pull finds exactly as recorded on both sides, taken
 * out of both trees while the phone is listed and the laptop walked: a
 * million unchanged files are never held whole, on either side (the walk
 * is held a few folders ahead; docs/PERFORMANCE.md, "Pairs taken out as
 * they come"). What is taken is a count and a bit for its state row; the
 * planner sees the rest. Internal. */
#ifndef PH_PAIRS_H
#define PH_PAIRS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "tree.h"

struct ph_job;
struct ph_pairs;

/* A taker for j's pull from rt (the listing) into lt (the walk), both with
 * their feeds attached (tree.h); stop: set when the run no longer wants
 * it. NULL: no memory. */
struct ph_pairs *ph_pairs_new(struct ph_job *j, struct ph_tree *lt, struct ph_tree *rt,
                              const atomic_int *stop);
/* One ordered read of the state's rows merged with both trees as they
 * fill (the early thread's, before its own read): a row whose path is
 * plain (ASCII, a name every system holds: no name matching can touch it),
 * whose local file and remote file are both exactly as recorded (the
 * identity checked, ident.c) and have no twin of the same key, leaves
 * both trees and is counted. Nothing is taken until one local file's
 * name, its case swapped, tells that the destination keeps case (else name
 * matching could pair other entries with these). 0 or a PHSYNC_E*; either
 * way the trees hold what was not taken, in order, and the walk is no
 * longer held back. */
int ph_pairs_run(struct ph_pairs *p);
/* Wakes a taker waiting for entries, after stop was set. */
void ph_pairs_wake(struct ph_pairs *p);
/* The second read (known.c's): fn called for each row not taken out, in
 * order: from those held by the first read when few, else from the state
 * again, then checked to have seen the rows the first saw (else
 * PHSYNC_ECORRUPT: the state changed between the reads). 0, fn's non-zero
 * result, or a PHSYNC_E*. */
int ph_pairs_each(struct ph_pairs *p, struct ph_state *st, ph_state_each_fn *fn, void *arg);
/* Files taken out. */
uint64_t ph_pairs_count(const struct ph_pairs *p);
void ph_pairs_free(struct ph_pairs *p);

#endif
