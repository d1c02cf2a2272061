/* SPDX-License-Identifier: ISC */
/* The remote tree, listed through SFTP: what a scan needs, and nothing of
 * the run that asks (a sync's job or a backup). Internal. */
#ifndef PH_REMOTE_H
#define PH_REMOTE_H

#include "phsync/phsync.h"
#include "emit.h"
#include "sftp.h"
#include "tree.h"

struct ph_rscan {
	phsync_ctx *ctx;
	struct ph_sftp *sftp;
	const char *rroot;              /* as ph_remote_root gives it ("" = "/") */
	const struct ph_filter *filter;
	struct ph_emit *ev;             /* failures and skips go there, and are
	                                   counted in its stats' files_failed */
	int remove_temps;               /* the destination side: a dead run's temp
	                                   files are removed, its aside copies put
	                                   back or removed */
	int dry_run;                    /* ... the aside copies then left alone */
	/* A folder ("" = the root) that could not be listed (NULL: nobody
	 * asks). */
	void (*failed)(void *arg, const char *path);
	/* Is name (a stale temp file's last component) one to keep, a cut
	 * transfer to go on from? NULL: none is. */
	int (*keep_temp)(void *arg, const char *name);
	/* More SFTP clients of the same server beside sftp, for a listing of
	 * many folders (each folder listed on one; on the phone each its own
	 * process, so the listing is not one core's), asked for once when
	 * the listing proves long: up to max put in out, their count
	 * returned, or PH_RSCAN_MORE_LATER: not yet, asked again at the
	 * listing's next turn. end_more gets them back after the listing.
	 * NULL: none. */
	size_t (*more)(void *more_arg, struct ph_sftp **out, size_t max);
	void (*end_more)(void *more_arg, struct ph_sftp **v, size_t n);
	void *more_arg;
	/* Called at each turn of the listing (every 250 ms at most) with the
	 * entries listed so far (a progress line's); NULL: none. */
	void (*tick)(void *arg, uint64_t listed);
	void *arg;                      /* failed's, keep_temp's and tick's */
};

/* A tree with a taker (tree.h) is listed no further than this many
 * entries ahead of it: no new folder is asked for meanwhile. */
#define PH_REMOTE_AHEAD 65536

/* The most clients more may add. */
#define PH_RSCAN_MORE 1
#define PH_RSCAN_MORE_LATER ((size_t)-1)

/* Lists the remote tree under in->rroot into t, pipelined, in subtree
 * order as it comes (rorder.h; an aside copy put back at the end is
 * appended: ph_tree_sort after it). Unsafe names are refused and reported.
 * Returns 0 (failures of single entries or folders reported and counted)
 * or a PHSYNC_E* that ends the scan, with the message in in->ctx. */
int ph_remote_scan(const struct ph_rscan *in, struct ph_tree *t);

#endif
