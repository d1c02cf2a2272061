/* The planner: two sorted trees in, an ordered list of actions out. Pure:
 * no I/O, so every rule is unit-tested (tests/unit/test_plan.c). */
#ifndef PH_PLAN_H
#define PH_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tree.h"

enum ph_action_kind {
	PH_A_MKDIR = 1,   /* create folder src (times set at the end) */
	PH_A_NEW,         /* copy file src, absent at the destination */
	PH_A_UPDATE,      /* copy file src over a differing destination file */
	PH_A_DIRTIME,     /* folder exists; its mtime differs */
	PH_A_SKIP_LINK,   /* symlink in the source: never followed nor created */
	PH_A_SKIP_OTHER,  /* device, fifo, socket */
	PH_A_CONFLICT,    /* destination holds another kind of entry: left alone */
	PH_A_BLOCKED,     /* inside a folder that could not be made */
	PH_A_SKIP_YOUNG   /* file changed too recently (--min-age): maybe still written */
};

/* What the state remembers of a file, oriented as the plan sees it: the
 * source's and the destination's size and time when it was last synced.
 * An array sorted by ph_path_cmp. */
struct ph_known {
	const char *path;
	uint64_t ssize, dsize;
	int64_t smtime, dmtime;
};

struct ph_known_set {
	const struct ph_known *v;
	size_t n;
};

struct ph_action {
	uint32_t src;     /* index in the source tree */
	int64_t dst;      /* index in the destination tree, -1 if absent */
	uint8_t kind;
};

struct ph_plan {
	struct ph_action *v;
	size_t n;
	uint64_t files_total; /* regular files in the source */
	uint64_t files_todo, bytes_todo;
};

/* Compares src with dst (both sorted by ph_tree_sort) and fills plan in
 * source order, so folders come before their contents. A file moves when
 * it is absent or its size or mtime (seconds, within opts->modify_window)
 * differ, or either side
 * could not tell its size; a source file whose mtime is after opts->young_after
 * (0: none) is left for a later run instead (PH_A_SKIP_YOUNG). A file whose
 * two sides still show the size and time the state (opts->known)
 * recorded at its last sync is unchanged even if those differ from each
 * other (a phone that cannot set times).  Returns 0 or
 * PHSYNC_ENOMEM. */
/* What the plan takes besides the two trees (all optional). */
struct ph_plan_opts {
	int64_t young_after;             /* --min-age cut-off (unix time), 0: none */
	int64_t modify_window;           /* times this close are equal (FAT: 2 s) */
	const struct ph_known_set *known;/* the state's records, or NULL */
};

int ph_plan_make(const struct ph_tree *src, const struct ph_tree *dst,
                 const struct ph_plan_opts *opts, struct ph_plan *plan);
void ph_plan_free(struct ph_plan *plan);

/* Marks a folder subtree blocked: every action after index i whose path
 * lies under src path p becomes PH_A_BLOCKED. Returns how many. */
size_t ph_plan_block_subtree(struct ph_plan *plan, const struct ph_tree *src, size_t i);

#endif
