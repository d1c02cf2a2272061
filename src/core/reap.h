/* SPDX-License-Identifier: ISC */
/* Letting go of files a rename or a remove replaced, off the thread that
 * replaced them (reap.c): the helper's request loop, a pull's network
 * thread. Internal. */
#ifndef PH_REAP_H
#define PH_REAP_H

struct ph_reap;

/* A reference to name in dirfd (never followed) when it is a regular file
 * big enough for its freeing to cost, to hold across the rename or remove
 * that unlinks it; -1 otherwise (nothing to hold, or it cannot be opened). */
int ph_reap_hold(int dirfd, const char *name);
/* Lets go of a held reference: closed by the reaper thread (made on first
 * use), or here when none can run or its queue is full. r may be NULL
 * (closed here). fd < 0 is a no-op. */
void ph_reap_release(struct ph_reap **r, int fd);
/* Closes what is queued and ends the thread; *r becomes NULL. */
void ph_reap_end(struct ph_reap **r);

#endif
