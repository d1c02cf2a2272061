/* SPDX-License-Identifier: ISC */
/* Does the destination's file system ignore case in names? Internal. */
#ifndef PH_PROBE_H
#define PH_PROBE_H

#include "sftp.h"
#include "tree.h"

/* The destination to ask, and the two trees a run scanned. */
struct ph_probe {
	int local;                 /* the destination is the local folder (a pull) */
	int lroot;                 /* ... its root fd, -1 when not made yet */
	struct ph_sftp *sftp;      /* else the server, under rroot */
	const char *rroot;
	const struct ph_tree *src, *dst;
	int dry_run;               /* nothing is written to ask */
};

/* *fold gets 1 when the destination ignores case or cannot be told, 0
 * when it keeps case or it does not matter (no source names differ by
 * case alone and the destination has nothing to ask). Returns 0 or
 * PHSYNC_ENOMEM. */
int ph_probe_fold(const struct ph_probe *p, int *fold);

#endif
