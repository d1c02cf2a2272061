/* SPDX-License-Identifier: ISC */
/* A run's events to the caller; see emit.h. */
#include <string.h>
#include <time.h>

#include "emit.h"

uint64_t
ph_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
ph_emit_init(struct ph_emit *e, const struct phsync_options *o, struct phsync_stats *st)
{
	e->o = o;
	e->st = st;
	e->t0_ms = e->last_progress_ms = ph_now_ms();
}

void
ph_emit_elapsed(struct ph_emit *e)
{
	e->st->elapsed_ms = ph_now_ms() - e->t0_ms;
}

void
ph_emit(struct ph_emit *e, enum phsync_event_type type, const char *path, const char *action,
        uint64_t size, int err, const char *msg)
{
	struct phsync_event ev;

	if (e->o->on_event == NULL)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.path = path;
	ev.action = action;
	ev.size = size;
	ev.err = err;
	ev.message = msg;
	ph_emit_elapsed(e);
	ev.stats = e->st;
	e->o->on_event(&ev, e->o->event_arg);
}

void
ph_emit_progress(struct ph_emit *e, const char *busy)
{
	uint64_t now;

	if (e->o->progress_ms == 0)
		return;
	now = ph_now_ms();
	if (now - e->last_progress_ms < e->o->progress_ms)
		return;
	e->last_progress_ms = now;
	ph_emit(e, PHSYNC_EV_PROGRESS, busy, NULL, 0, 0, NULL);
}
