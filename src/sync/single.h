/* SPDX-License-Identifier: ISC */
/* A single file as the source (`pull phone:/DCIM/x.jpg DIR`, `push
 * ~/x.pdf phone:/Documents/`), as scp's: the file's folder becomes the
 * source root and the filter admits its one name (tree.h, ph_filter.only),
 * nothing else and nothing below; the pair is its own (state.h, single).
 * Internal to phsync_sync. */
#ifndef PH_SINGLE_H
#define PH_SINGLE_H

#include "job.h"

struct ph_ssh;

/* A push's local source path: a regular file makes the run a single
 * file's (*dir its folder, *name its name, both malloc'ed); a folder, or
 * what does not exist, leaves them NULL (a folder run, which says what is
 * wrong). A symlink to anything but a folder is refused (PHSYNC_EUNSAFE):
 * phsync follows none. Returns 0 or a PHSYNC_E* with the message in ctx. */
int ph_single_local(struct ph_job *j, const char *path, char **dir, char **name);

/* A pull's local destination: refused (PHSYNC_EINVAL) when it is a file
 * (or a symlink to one): the copy goes into a folder, and a file named as
 * the destination is never overwritten. Returns 0 otherwise. */
int ph_single_pull_dest(struct ph_job *j, const char *path);

/* The remote root j->rroot, a regular file by its stat: j->rroot becomes
 * its folder and *name (malloc'ed) its name, a helper (which serves one
 * root) is started again for that folder on the same session (a kept
 * connection's, kept_conn, cannot be: refused), plain SFTP is kept,
 * and the name is checked with LSTAT beneath its folder: a symlink or
 * anything but a regular file is refused (PHSYNC_EUNSAFE). Returns 0 or a
 * PHSYNC_E* with the message in ctx. */
int ph_single_remote(struct ph_job *j, struct ph_ssh *ssh, const char *host,
                     const char *rpath, int kept_conn, char **name);

/* The options a single file's run cannot honour, refused before anything
 * moves (PHSYNC_EINVAL): --delete (nothing else is synced, so nothing is
 * ever gone). Returns 0 when none is asked for. */
int ph_single_options(struct ph_job *j, const char *shown);

#endif
