/* SPDX-License-Identifier: ISC */
/* The states of one file of a pull and the table of legal changes between
 * them (docs/ARCHITECTURE.md, "A pull's transfers"). A file is in one mode
 * at a time: whole (plain reads from offset 0), resume (plain reads from a
 * kept prefix on), helper delta, or check-file delta; the states are named
 * by mode, in one enum because a file changes mode (a refused delta comes
 * whole) and one table must check those changes too. Pure: no I/O. */
#ifndef PH_PULL_STATE_H
#define PH_PULL_STATE_H

#include <stdint.h>

enum ph_xs {
	PH_XS_OPEN = 0,     /* OPEN sent; no handle yet */
	PH_XS_WHOLE,        /* reads of the whole file in flight */
	PH_XS_RESUME,       /* reads from the kept prefix of a cut download on */
	PH_XS_DELTA_SIGN,   /* helper delta: waits for the main loop to sign the old copy */
	PH_XS_DELTA_START,  /* phsync-delta-start sent (and the first delta read) */
	PH_XS_DELTA_READ,   /* the helper took the signature: delta reads in flight */
	PH_XS_CF_HOLD,      /* check-file: waits for the run's probe to be answered */
	PH_XS_CF_ASK,       /* the check-file request and its sample reads in flight */
	PH_XS_CF_MATCH,     /* digests in: waits for the main loop to hash the old copy */
	PH_XS_CF_READ,      /* blocks found copied from the old copy, the rest read */
	PH_XS_DONE,         /* handed to the I/O thread to commit (final) */
	PH_XS_FAILED,       /* failed or abandoned, reported unless quiet (final) */
	PH_XS_N
};

/* The state's name for a trace ("DELTA_READ"); "?" out of range. */
const char *ph_xs_name(int s);
/* 1 when the table allows from -> to, else 0 (also out of range). */
int ph_xs_legal(int from, int to);
/* 1 for the states that wait for the main loop's turn (sign_next), with
 * nothing of the file on the wire: the file may not be freed there. */
int ph_xs_parked(int s);
/* Moves *cur to to when the table allows it and returns 0; else leaves
 * *cur and returns PHSYNC_EINVAL. */
int ph_xs_step(uint8_t *cur, int to);

#endif
