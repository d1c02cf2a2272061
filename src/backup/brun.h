/* SPDX-License-Identifier: ISC */
/* One backup, restore or verify: what its modules share (the caller's
 * options, the stats and events, a backup's source). Its own, not a
 * sync's job: backup stands on scan and session as sync does, and uses
 * nothing of sync. Internal to src/backup/. */
#ifndef PH_BRUN_H
#define PH_BRUN_H

#include <string.h>

#include "phsync/phsync.h"
#include "emit.h"
#include "sftp.h"
#include "state.h"
#include "tree.h"

struct ph_brun {
	phsync_ctx *ctx;
	const struct phsync_options *o;
	struct phsync_stats st;
	struct ph_emit ev;          /* the run's events, counting into st */
	/* A backup's source: */
	struct ph_sftp *sftp;       /* a remote one's SFTP (NULL: local) */
	char *rroot;                /* ... its root (ph_remote_root) */
	int lroot;                  /* a local one's root fd, else -1 */
	struct ph_filter filter;    /* what of it is backed up */
	struct ph_tree src;         /* what its scan found */
	struct ph_state *state;     /* the series' state (a backup's) */
};

/* Starts run (which must not move afterwards: its events point into it)
 * for ctx with options o. */
static inline void
ph_brun_init(struct ph_brun *run, phsync_ctx *ctx, const struct phsync_options *o)
{
	memset(run, 0, sizeof(*run));
	run->ctx = ctx;
	run->o = o;
	run->lroot = -1;
	ph_emit_init(&run->ev, o, &run->st);
}

#endif
