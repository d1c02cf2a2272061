/* SPDX-License-Identifier: ISC */
/* The push executor's state machines, as tables (curl's multi state
 * machine is the model): for each machine its states, their names for the
 * trace, and from each state the states it may go to. Every change goes
 * through ph_push_fsm_set, which refuses one the table does not list.
 * No I/O: the unit test drives the tables directly. Internal. */
#ifndef PH_PUSH_FSM_H
#define PH_PUSH_FSM_H

#include <stdint.h>

/* Built with -DPH_PUSH_TRACE=1, every change is written to stderr as
 * "push MACHINE PATH: OLD -> NEW". */
#ifndef PH_PUSH_TRACE
#define PH_PUSH_TRACE 0
#endif

/* A file's life, every mode. */
enum pf_state {
	PF_OLD,       /* before the temp file: the mode's work on the remote
	                 file (compare, the old version's signature) */
	PF_OPENING,   /* OPEN of the temp file sent */
	PF_WRITING,   /* WRITEs (and copies) queued and answered */
	PF_FINISHING, /* all sent: fsync, times and FSTAT sent; CLOSE next */
	PF_CLOSING,   /* CLOSE sent */
	PF_COMMIT,    /* closed: the commit machine moves it into place */
	PF_DONE,      /* in place (or the same already) */
	PF_FAILED,    /* given up; its cleanup requests may be in flight */
	PF_NSTATES
};

/* PM_COMPARE, in PF_OLD: is the remote file of the same size the same? */
enum cmp_state {
	CMP_OPEN,     /* OPEN of the remote file sent */
	CMP_READ,     /* READs compared as they come */
	CMP_DIFFER,   /* not the same: put beside (the file goes PF_OPENING) */
	CMP_SETTIME,  /* the same: its time set and read back (then PF_DONE) */
	CMP_NSTATES
};

/* PM_DELTA, PM_HDELTA: the old version on the server. */
enum dl_state {
	DL_OPEN,      /* OPEN of the old version sent */
	DL_CHECK,     /* the plan's check blocks read back (the temp file is
	                 made meanwhile; no copy goes before they agree) */
	DL_SIG,       /* PM_HDELTA: the helper's signature asked */
	DL_PLAN,      /* PM_HDELTA: the signature came; the main loop plans */
	DL_READY,     /* planned and checked: copies and writes go */
	DL_WHOLE,     /* given up before anything was sent: the file goes whole */
	DL_NSTATES
};

/* In PF_COMMIT: the closed temp file into place. */
enum cm_state {
	CM_START,     /* nothing sent yet */
	CM_GUARD,     /* LSTAT of the file to replace: still what the plan saw? */
	CM_ASIDE,     /* no posix-rename: the old file renamed aside */
	CM_RENAME,    /* the temp renamed onto the name */
	CM_CLASH,     /* a new file's RENAME failed: LSTAT of the name */
	CM_BESIDE,    /* the temp renamed to a conflict name beside */
	CM_NSTATES
};

struct ph_push_fsm {
	const char *name;
	const char *const *names;  /* n state names */
	const uint32_t *to;        /* to[s]: bit t set when s -> t is legal */
	unsigned n;
};

extern const struct ph_push_fsm ph_push_fsm_file, ph_push_fsm_cmp, ph_push_fsm_delta,
	ph_push_fsm_commit;

/* Whether m allows from -> to (both below m->n). */
int ph_push_fsm_legal(const struct ph_push_fsm *m, unsigned from, unsigned to);
/* Moves *state to `to` when m allows it (traced with who, the file's
 * path); returns 0, or PHSYNC_EINVAL with *state unchanged. */
int ph_push_fsm_set(const struct ph_push_fsm *m, uint8_t *state, unsigned to, const char *who);

#endif
