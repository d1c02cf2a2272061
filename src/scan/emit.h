/* SPDX-License-Identifier: ISC */
/* Where a run's events go: the caller's callback (phsync_options'
 * on_event), with the run's stats attached and the time since its start
 * in them; progress at the caller's interval. Shared by every run (a
 * sync's job, a backup, a restore, a verify) and by the scanners and the
 * login, which report through it. Internal. */
#ifndef PH_EMIT_H
#define PH_EMIT_H

#include <stdint.h>

#include "phsync/phsync.h"

struct ph_emit {
	const struct phsync_options *o; /* on_event, event_arg, progress_ms */
	struct phsync_stats *st;        /* the run's counters, attached to each event */
	uint64_t t0_ms;                 /* the run's start (monotonic) */
	uint64_t last_progress_ms;
};

/* Milliseconds of the monotonic clock. */
uint64_t ph_now_ms(void);

/* Starts e for a run with options o counting into st, now. */
void ph_emit_init(struct ph_emit *e, const struct phsync_options *o, struct phsync_stats *st);

/* Sends an event to the caller, if one listens (the stats are attached,
 * their elapsed_ms set). */
void ph_emit(struct ph_emit *e, enum phsync_event_type type, const char *path,
             const char *action, uint64_t size, int err, const char *msg);

/* A PROGRESS event naming busy (the file whose bytes moved last, or
 * NULL), when the caller's interval has passed since the last one. */
void ph_emit_progress(struct ph_emit *e, const char *busy);

/* Sets the stats' elapsed_ms to the time since the run's start. */
void ph_emit_elapsed(struct ph_emit *e);

#endif
