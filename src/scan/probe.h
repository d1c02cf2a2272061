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
/* Is path (a local file below lroot) also found under its last name with
 * the case of its letters swapped, as the same file? 1 yes (the folder
 * ignores case), 0 no (it keeps case), -1 its name has no letter (nothing
 * asked), -2 no answer (an error). */
int ph_probe_case_at(int lroot, const char *path);

/* *refuse gets 1 when a pull's destination cannot hold the names a Windows
 * folder cannot (ph_names_drop_unholdable): asked only when the source
 * has such a name, by making two empty folders at the destination's top,
 * a temp name and one with a ':' in it; a folder that takes the first and
 * refuses the second follows Windows' rules (Windows itself; FAT, exFAT
 * or NTFS with windows_names on any OS). 0 when it holds them, cannot be
 * told (nothing is written: a dry run, no destination yet, or the first
 * folder refused too; each write then fails as such) or it does not
 * matter. Returns 0. */
int ph_probe_winnames(const struct ph_probe *p, int *refuse);

#endif
