/* SPDX-License-Identifier: ISC */
/* A two-way run's state (twoway.c) and its conflicts' steps (twoway_cf.c).
 * Internal. */
#ifndef PH_TWOWAY_H
#define PH_TWOWAY_H

#include <stdint.h>

#include "recon.h"
#include "run.h"

/* A pass's events go to the caller with the way their files went. */
struct ph_fwd {
	phsync_event_fn fn;
	void *arg;
	enum phsync_direction dir;   /* 0 outside the passes */
};

/* One conflict of the run and what became of it. */
struct ph_two_cf {
	uint32_t l, r;          /* its entries in the local and remote tree */
	uint8_t winner, first, copy;
	uint8_t adopted;        /* first contact, the same bytes: recorded */
	uint8_t moved;          /* the loser's version renamed to its copy */
	struct ph_action *pa, *pb;   /* its actions in the pull and push plan */
	char *beside;           /* winner local: the copy's name (the pull's) */
	char *cpath;            /* the copy's path (a tree key) once made */
};

struct ph_two {
	struct run a;           /* the pull pass: the connection, the state, both trees */
	struct run b;           /* the push pass: borrows from a */
	struct phsync_options oa, ob;
	struct ph_fwd fa, fb;
	struct ph_recon rec;
	const struct ph_tree *ltree, *rtree;
	struct ph_two_cf *c;
	size_t nc;
	const char **excl;      /* the caller's excludes and the trash folder's */
	char *trash_rule;
};

/* The reconciler's conflicts with their actions found. 0 or ENOMEM. */
int ph_two_conflicts_init(struct ph_two *t);
void ph_two_conflicts_free(struct ph_two *t);
/* A conflict with the same size on both sides (first contact or not): the
 * bytes compared before anything is written; the same: adopted (recorded,
 * no copy). */
int ph_two_first_contact(struct ph_two *t);
/* The phone's version wins: the laptop's renamed to the conflict copy
 * before the pull pass (then sent by the last pass). */
int ph_two_aside_local(struct ph_two *t);
/* The laptop's version wins: the phone's renamed to the copy the pull
 * pass made here, before the push pass. */
int ph_two_aside_remote(struct ph_two *t);
/* Sends the laptop's conflict copies (ph_two_aside_local) to the phone. */
int ph_two_last_pass(struct ph_two *t);
/* Records the conflict copies the phone's rename made. */
int ph_two_record_copies(struct ph_two *t);
/* Names --prefer's decisions in a warning; returns rc. */
int ph_two_prefer_said(struct ph_two *t, int rc);

#endif
