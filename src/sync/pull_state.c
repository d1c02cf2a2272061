/* SPDX-License-Identifier: ISC */
/* The table of a pull file's legal state changes (pull_state.h). */
#include "phsync/error.h"

#include "pull_state.h"

#define B(s) (1u << PH_XS_##s)

static const char *const names[PH_XS_N] = {
	"OPEN", "WHOLE", "RESUME", "DELTA_SIGN", "DELTA_START", "DELTA_READ",
	"CF_HOLD", "CF_ASK", "CF_MATCH", "CF_READ", "DONE", "FAILED",
};

/* next[s]: the states s may go to. Every state but the two final ones may
 * fail (a lost link, a stop, the run abandoned); only a reading state
 * completes; a delta of either kind falls back to reading the file whole. */
static const uint32_t next[PH_XS_N] = {
	[PH_XS_OPEN] = B(WHOLE) | B(RESUME) | B(DELTA_SIGN) | B(CF_HOLD) | B(CF_ASK) | B(FAILED),
	[PH_XS_WHOLE] = B(DONE) | B(FAILED),
	[PH_XS_RESUME] = B(DONE) | B(FAILED),
	[PH_XS_DELTA_SIGN] = B(DELTA_START) | B(WHOLE) | B(FAILED),
	[PH_XS_DELTA_START] = B(DELTA_READ) | B(WHOLE) | B(FAILED),
	[PH_XS_DELTA_READ] = B(DONE) | B(FAILED),
	[PH_XS_CF_HOLD] = B(CF_ASK) | B(WHOLE) | B(FAILED),
	[PH_XS_CF_ASK] = B(CF_MATCH) | B(WHOLE) | B(FAILED),
	[PH_XS_CF_MATCH] = B(CF_READ) | B(WHOLE) | B(FAILED),
	[PH_XS_CF_READ] = B(DONE) | B(FAILED),
	[PH_XS_DONE] = 0,
	[PH_XS_FAILED] = 0,
};

const char *
ph_xs_name(int s)
{
	return s >= 0 && s < PH_XS_N ? names[s] : "?";
}

int
ph_xs_legal(int from, int to)
{
	if (from < 0 || from >= PH_XS_N || to < 0 || to >= PH_XS_N)
		return 0;
	return (next[from] >> to) & 1u;
}

int
ph_xs_parked(int s)
{
	return s == PH_XS_DELTA_SIGN || s == PH_XS_CF_HOLD || s == PH_XS_CF_MATCH;
}

int
ph_xs_step(uint8_t *cur, int to)
{
	if (!ph_xs_legal(*cur, to))
		return PHSYNC_EINVAL;
	*cur = (uint8_t)to;
	return 0;
}
