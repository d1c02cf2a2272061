/* SPDX-License-Identifier: ISC */
/* Local change watching for the daemon: every folder of a tree, on a libuv
 * loop. Linux: an inotify fd of our own under uv_poll_t; macOS and
 * Windows: one recursive uv_fs_event; elsewhere (the BSDs, PHSYNC_PORTABLE)
 * a uv_fs_event per folder. See docs/ARCHITECTURE.md, "The watcher". */
#ifndef PH_FSWATCH_H
#define PH_FSWATCH_H

#include <stddef.h>

#include <uv.h>

enum ph_fsw_kind {
	PH_FSW_FILE = 1,   /* a file changed: its time set, met in a folder that
	                      just appeared, or any change where no close event
	                      exists (it may still be written: let it rest) */
	PH_FSW_CLOSED,     /* a file was closed after writing, or moved in
	                      (inotify's IN_CLOSE_WRITE, IN_MOVED_TO): complete
	                      as it stands */
	PH_FSW_WRITING,    /* a file is being written (modified, not yet closed) */
	PH_FSW_GONE,       /* an entry was deleted or moved out */
	PH_FSW_RESCAN,     /* events were lost (queue overflow) or a folder could
	                      not be watched (watch limit): look at everything;
	                      msg says why, naming the sysctl */
	PH_FSW_UNWATCHED   /* RESCAN, and some folders stay unwatched: the
	                      caller must look at everything from time to time */
};

/* rel is relative to the root ('/'-separated; "" for the root itself).
 * msg is set for RESCAN and UNWATCHED. */
typedef void (*ph_fsw_fn)(void *arg, enum ph_fsw_kind kind, const char *rel,
                          const char *msg);

struct ph_fsw;

/* Starts watching root and every folder below it on loop (symlinks are
 * not followed; phsync's own temp names are not reported). Returns 0, or
 * a negative errno with a message in err. Events arrive through fn from
 * the loop. */
int ph_fsw_new(uv_loop_t *loop, const char *root, ph_fsw_fn fn, void *arg,
               struct ph_fsw **out, char *err, size_t errlen);

/* Folders watched now. */
size_t ph_fsw_count(const struct ph_fsw *w);

/* Stops watching; the memory goes once libuv has closed the handles.
 * NULL is a no-op. */
void ph_fsw_close(struct ph_fsw *w);

#endif
