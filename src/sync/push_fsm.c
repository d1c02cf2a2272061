/* SPDX-License-Identifier: ISC */
/* The push executor's state tables. See push_fsm.h; docs/ARCHITECTURE.md
 * draws them. */
#include <stdio.h>

#include "phsync/error.h"
#include "push_fsm.h"

#define B(s) (1u << (s))

static const char *const file_names[PF_NSTATES] = {
	"OLD", "OPENING", "WRITING", "FINISHING", "CLOSING", "COMMIT", "DONE", "FAILED"
};
/* Forward only; any state but the two ends may fail. */
static const uint32_t file_to[PF_NSTATES] = {
	[PF_OLD] = B(PF_OPENING) | B(PF_DONE) | B(PF_FAILED),
	[PF_OPENING] = B(PF_WRITING) | B(PF_FAILED),
	[PF_WRITING] = B(PF_FINISHING) | B(PF_FAILED),
	[PF_FINISHING] = B(PF_CLOSING) | B(PF_FAILED),
	[PF_CLOSING] = B(PF_COMMIT) | B(PF_FAILED),
	[PF_COMMIT] = B(PF_DONE) | B(PF_FAILED),
	[PF_DONE] = 0,
	[PF_FAILED] = 0,
};
const struct ph_push_fsm ph_push_fsm_file = { "file", file_names, file_to, PF_NSTATES };

static const char *const cmp_names[CMP_NSTATES] = { "OPEN", "READ", "DIFFER", "SETTIME" };
static const uint32_t cmp_to[CMP_NSTATES] = {
	[CMP_OPEN] = B(CMP_READ) | B(CMP_DIFFER),   /* unreadable: never the same */
	[CMP_READ] = B(CMP_DIFFER) | B(CMP_SETTIME),
	[CMP_DIFFER] = 0,
	[CMP_SETTIME] = 0,
};
const struct ph_push_fsm ph_push_fsm_cmp = { "compare", cmp_names, cmp_to, CMP_NSTATES };

static const char *const dl_names[DL_NSTATES] = {
	"OPEN", "CHECK", "SIG", "PLAN", "READY", "WHOLE"
};
static const uint32_t dl_to[DL_NSTATES] = {
	[DL_OPEN] = B(DL_CHECK) | B(DL_SIG) | B(DL_READY) | B(DL_WHOLE),
	[DL_CHECK] = B(DL_READY) | B(DL_WHOLE),
	[DL_SIG] = B(DL_PLAN) | B(DL_WHOLE),
	[DL_PLAN] = B(DL_READY) | B(DL_WHOLE),
	[DL_READY] = 0,
	[DL_WHOLE] = 0,
};
const struct ph_push_fsm ph_push_fsm_delta = { "delta", dl_names, dl_to, DL_NSTATES };

static const char *const cm_names[CM_NSTATES] = {
	"START", "GUARD", "ASIDE", "RENAME", "CLASH", "BESIDE"
};
static const uint32_t cm_to[CM_NSTATES] = {
	[CM_START] = B(CM_GUARD) | B(CM_ASIDE) | B(CM_RENAME) | B(CM_BESIDE),
	[CM_GUARD] = B(CM_ASIDE) | B(CM_RENAME) | B(CM_BESIDE),
	[CM_ASIDE] = B(CM_RENAME),
	[CM_RENAME] = B(CM_CLASH),
	[CM_CLASH] = B(CM_BESIDE),
	[CM_BESIDE] = 0,
};
const struct ph_push_fsm ph_push_fsm_commit = { "commit", cm_names, cm_to, CM_NSTATES };

int
ph_push_fsm_legal(const struct ph_push_fsm *m, unsigned from, unsigned to)
{
	return from < m->n && to < m->n && (m->to[from] & B(to)) != 0;
}

int
ph_push_fsm_set(const struct ph_push_fsm *m, uint8_t *state, unsigned to, const char *who)
{
	unsigned from = *state;
	int ok = ph_push_fsm_legal(m, from, to);

	if (PH_PUSH_TRACE)
		fprintf(stderr, "push %s %s: %s -> %s%s\n", m->name, who,
		        from < m->n ? m->names[from] : "?", to < m->n ? m->names[to] : "?",
		        ok ? "" : " (illegal)");
	if (!ok)
		return PHSYNC_EINVAL;
	*state = (uint8_t)to;
	return 0;
}
