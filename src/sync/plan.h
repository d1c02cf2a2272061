/* SPDX-License-Identifier: ISC */
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
	PH_A_SKIP_YOUNG,  /* file changed too recently (--min-age): maybe still written */
	PH_A_KEPT,        /* the destination changed since the last sync and the
	                     source did not: the destination's version stays */
	PH_A_RECORD,      /* unchanged once a whole-hour shift of one side's
	                     times is allowed for: only its record is renewed;
	                     or (how 1) the same size and time on both sides
	                     and no record yet (first contact): recorded */
	PH_A_MOVED        /* a PH_A_NEW carried out as a move or copy of a file
	                     already at the destination (set by the executor) */
};

/* How a PH_A_NEW may be made without a transfer: the source file has the
 * size and time recorded for a file gone from the source whose copy is
 * still at the destination, unchanged (a photo moved to another album). The
 * action's dst is then that old copy's index in the destination tree. The
 * executor confirms by content (the whole file, read on both sides; the
 * first and last PH_MOVE_PROBE bytes first) before it acts. */
enum ph_new_how {
	PH_N_PLAIN = 0,
	PH_N_MOVE,        /* --delete: rename the old copy to the new path */
	PH_N_COPY         /* keep the old copy; copy it to the new path */
};
#define PH_MOVE_PROBE 65536

/* How a PH_A_UPDATE may treat the file it replaces. */
enum ph_update_how {
	PH_U_REPLACE = 0, /* the destination is as last synced (or --overwrite):
	                     replace it, unless it changes during the run */
	PH_U_FIRST,       /* nothing recorded (first contact): replace it only if
	                     its content turns out the same, else conflict */
	PH_U_CONFLICT     /* both sides changed since the last sync: the incoming
	                     version lands beside, as a conflict copy */
};

/* A destination side recorded after a conflict: "not the synced version",
 * which never equals a real size (the destination stays kept until the
 * source changes again, which is then a conflict again). */
#define PH_KNOWN_DIVERGED UINT64_MAX

/* What the state remembers of a file, oriented as the plan sees it: the
 * source's and the destination's size and time when it was last synced.
 * An array sorted by ph_path_cmp. */
struct ph_known {
	const char *path;
	uint64_t ssize, dsize;
	int64_t smtime, dmtime;
	uint8_t touched;  /* PH_KNOWN_SRC, PH_KNOWN_DST: that side's content
	                     changed since, though its size and time are as
	                     recorded (the local side's identity said so and
	                     its bytes no longer hash as recorded) */
};
#define PH_KNOWN_SRC 1
#define PH_KNOWN_DST 2

struct ph_known_set {
	const struct ph_known *v;
	size_t n;
	uint64_t asrec;   /* records left out of v: files exactly as recorded
	                     on both sides, whose source entries carry
	                     PH_E_ASREC (and PH_E_KNOWN) instead */
};

struct ph_action {
	uint32_t src;     /* index in the source tree */
	int64_t dst;      /* index in the destination tree, -1 if absent */
	uint8_t kind;
	uint8_t how;      /* PH_A_UPDATE: enum ph_update_how; PH_A_NEW: enum
	                     ph_new_how */
};

/* A destination file whose source is gone since the last sync. */
struct ph_del {
	int64_t dst;      /* index in the destination tree */
	uint8_t kept;     /* changed at the destination since: kept, not deleted;
	                     2: moved to a new path by a PH_N_MOVE (gone already) */
	uint64_t ssize;   /* the source's size and time as recorded */
	int64_t smtime;
};

struct ph_plan {
	struct ph_action *v;
	size_t n, cap;
	struct ph_del *del;       /* candidates, dst order (deleted only with
	                             opts->deletes; else sources of copies) */
	size_t ndel, ndel_go;     /* all, and those to delete (not kept) */
	const char **forget;      /* known paths gone from both sides (point
	                             into opts->known, which must outlive them) */
	size_t nforget;
	int64_t src_shift, dst_shift; /* seconds every time of that side moved
	                                 since the last sync (a phone's time zone
	                                 or DST change), 0: none */
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
 * other (a phone that cannot set times).
 *
 * A destination file that differs from the source is never simply
 * overwritten: with a record, a destination changed since (size or time)
 * is PH_A_KEPT when the source did not change, PH_U_CONFLICT when it did;
 * without one (first contact) it is PH_U_FIRST. opts->overwrite makes each
 * of them PH_U_REPLACE. Returns 0 or PHSYNC_ENOMEM. */
/* What the plan takes besides the two trees (all optional). */
struct ph_plan_opts {
	int64_t young_after;             /* --min-age cut-off (unix time), 0: none */
	int64_t modify_window;           /* times this close are equal (FAT: 2 s) */
	const struct ph_known_set *known;/* the state's records, or NULL */
	int overwrite;                   /* --overwrite: the source wins every
	                                    difference (no conflict copies) */
	int deletes;                     /* --delete: list what went from the source */
	const struct ph_filter *filter;  /* paths it excludes are never "gone" */
	int src_incomplete;              /* a source listing failed: moves are
	                                    made as copies (the old copy stays) */
};

int ph_plan_make(const struct ph_tree *src, const struct ph_tree *dst,
                 const struct ph_plan_opts *opts, struct ph_plan *plan);
void ph_plan_free(struct ph_plan *plan);

/* Whole-hour shifts: when at least PH_SHIFT_MIN files of a side that the
 * state knows, with their recorded size, and PH_SHIFT_SHARE percent of them
 * show a time moved by the same whole number of hours (up to 14) since the
 * last sync, that side's times are compared minus the shift: a phone that
 * changed time zone re-sends nothing. */
#define PH_SHIFT_MIN 4
#define PH_SHIFT_SHARE 90

/* Deletes and forgotten records (filled by ph_plan_make from opts->known):
 * a recorded path is gone from the source when no source entry has it,
 * the filter does not exclude it, and no folder above it became anything
 * but a folder in the source (a symlinked album is not a deleted one).
 * Gone at the destination too: forgotten. Still there: a delete
 * candidate (opts->deletes), kept when its size or time differ from the
 * record (changed here since). */

/* Marks a folder subtree blocked: every action after index i whose path
 * lies under src path p becomes PH_A_BLOCKED. Returns how many. */
size_t ph_plan_block_subtree(struct ph_plan *plan, const struct ph_tree *src, size_t i);

#endif
