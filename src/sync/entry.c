/* SPDX-License-Identifier: ISC */
/* phsync_sync: one way (sync.c's steps) or both (twoway.c, docs/TWOWAY.md).
 * Above both, so neither calls the other. */
#include "ctx.h"
#include "run.h"

int
phsync_sync(phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
            const char *local_dir, const struct phsync_options *opts,
            struct phsync_stats *stats)
{
	if (dir == PHSYNC_BOTH)
		return ph_sync_twoway(ctx, remote, local_dir, opts, stats);
	return ph_sync_oneway(ctx, dir, remote, local_dir, opts, stats);
}
