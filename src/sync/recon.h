/* SPDX-License-Identifier: ISC */
/* Two-way sync's reconciler (docs/TWOWAY.md): the two one-way plans of a
 * pair, reconciled into what goes each way. Pure: no I/O, unit-tested
 * (tests/unit/test_recon.c) as the planner is.
 *
 * The inputs are what pull and push would plan on their own, from the same
 * two trees and the pair's records, with every delete listed
 * (ph_plan_opts.deletes):
 *   pull: ph_plan_make(remote, local, {known oriented phone -> laptop})
 *   push: ph_plan_make(local, remote, {known oriented laptop -> phone})
 * Each alone would undo the other side's changes (a pull puts back what
 * the laptop deleted); reconciled, a change on one side goes to the other,
 * a delete beats nothing but an unchanged file, and a change on both sides
 * is a conflict that keeps both versions. */
#ifndef PH_RECON_H
#define PH_RECON_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "tree.h"

enum ph_prefer {
	PH_PREFER_NONE = 0,  /* conflicts keep both versions */
	PH_PREFER_LOCAL,     /* --prefer local: the laptop's version wins, no copy */
	PH_PREFER_REMOTE,    /* --prefer remote */
	PH_PREFER_NEWER      /* --prefer newer: the later mtime wins (equal: the
	                        laptop's), no copy */
};

enum ph_side { PH_SIDE_LOCAL = 1, PH_SIDE_REMOTE = 2 };

/* A path changed on both sides since the last sync (or, at first contact,
 * present on both with other sizes or times). */
struct ph_recon_conflict {
	uint32_t l, r;       /* its entries in the local and the remote tree */
	uint8_t winner;      /* enum ph_side: the version that keeps the name */
	uint8_t first;       /* no record (first contact): equal bytes are no
	                        conflict, the executor compares them first */
	uint8_t copy;        /* 1: the other version is kept as a conflict copy
	                        on both sides; 0: --prefer dropped it */
};

struct ph_recon {
	struct ph_recon_conflict *c;
	size_t nc;
	uint64_t dropped_pull, dropped_push; /* actions the other way carries */
	uint64_t del_local, del_remote;      /* deletes that go (on that side) */
};

/* A conflict's update in the loser's plan: replace the file, keeping the
 * one replaced as the conflict copy (docs/TWOWAY.md). Another value of
 * ph_action.how for PH_A_UPDATE, after enum ph_update_how's. */
#define PH_U_ASIDE 3

/* Reconciles pull (remote -> local) and push (local -> remote), made as
 * said above, in place: actions the other plan carries, or that would undo
 * the other side's change, are taken out; each conflict is listed in out
 * and its two actions set to what docs/TWOWAY.md says (winner local: pull
 * PH_U_CONFLICT, the phone's version beside; push PH_U_ASIDE. Winner
 * remote: pull PH_U_ASIDE; push none, its version goes later from the
 * copy). Deletes: a side's delete of a file the other side changed since
 * is already kept (not deleted) by the planner; the file then goes back.
 * files_todo and bytes_todo follow. Returns 0 or PHSYNC_ENOMEM (the plans
 * are then as far as they got; free them). */
int ph_recon_make(const struct ph_tree *local, const struct ph_tree *remote,
                  struct ph_plan *pull, struct ph_plan *push, enum ph_prefer prefer,
                  struct ph_recon *out);
void ph_recon_free(struct ph_recon *r);

#endif
