/* SPDX-License-Identifier: ISC */
/* The local side: every file and folder is reached beneath a root folder
 * fd without following symlinks (openat2 RESOLVE_BENEATH where the kernel
 * has it, else openat with O_NOFOLLOW per component). */
#ifndef PH_LOCAL_H
#define PH_LOCAL_H

#include <stdatomic.h>

#include "phsync/phsync.h"
#include "tree.h"

/* Opens (and with create, makes, as mkdir -p would) the root folder the
 * user named. The user's own path may contain symlinks; below it nothing
 * is followed. Returns 0 or PHSYNC_E*. */
enum { PH_ROOT_OPEN = 0, PH_ROOT_MAKE = 1 }; /* ph_local_open_root's create */
int ph_local_open_root(phsync_ctx *ctx, const char *path, int create, int *fd);

/* Opens folder rel ("" for the root itself) beneath root, refusing
 * symlinks anywhere on the way. Returns 0 or PHSYNC_E* (PHSYNC_EUNSAFE for a
 * symlink, PHSYNC_ENOENT, ...). */
int ph_local_opendir(int root, const char *rel, int *fd);

/* Splits rel into its folder and its last component: *dir gets a copy of
 * the folder part ("" at top level), *base points into rel. */
int ph_local_split(const char *rel, char **dir, const char **base);

/* Walks the tree under root into t, skipping excluded paths; the entries
 * come in tree order (a folder's names sorted), so ph_tree_sort has
 * nothing to move.
 * Our temp files (tempname.h) are never listed; with remove_temps, those a
 * dead run left are removed, or, when stale is not NULL, listed there (their
 * paths) for ph_local_remove_stale to remove once the caller knows it may. With check_names, names that are unsafe to
 * send (ph_name_safe) are reported as skipped and counted in *failed.
 * Partial downloads (tempname.h) are added to partials when it is not
 * NULL (their paths only), else left alone.
 * Unreadable folders are reported through on_event as failures and counted
 * in *failed. The walk stops with PHSYNC_EINTR once ctx->interrupted is set
 * (checked at each folder). found, when not NULL, is kept at the count of
 * entries walked at each folder's end, for another thread's progress line.
 * A tree with a feed (tree.h) is walked no more than PH_LOCAL_AHEAD
 * entries ahead of its taker (checked at each folder's end). */
#define PH_LOCAL_AHEAD 65536
int ph_local_scan(phsync_ctx *ctx, int root, const struct ph_filter *filter,
                  int remove_temps, int check_names, struct ph_tree *t,
                  struct ph_tree *partials, struct ph_tree *stale,
                  phsync_event_fn on_event, void *event_arg, uint64_t *failed,
                  atomic_size_t *found);
/* Removes the leftovers a scan listed in stale, each only if it is still a
 * dead run's leftover (tested again through its folder's descriptor). */
void ph_local_remove_stale(int root, const struct ph_tree *stale);

#endif
