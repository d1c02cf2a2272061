/* SPDX-License-Identifier: ISC */
/* The local file's identity, as git's index keeps it: a content change
 * that keeps size and mtime (an edit whose time was set back, two edits
 * within one clock tick) still moves the ctime, or comes within the
 * racy window of the run that recorded the file. Such a file's content is
 * hashed and compared with its record. Internal. */
#ifndef PH_IDENT_H
#define PH_IDENT_H

#include <stdint.h>

#include "state.h"
#include "tree.h"

struct ph_job;

/* Times this close to the end of the recording run (ns) are not trusted:
 * a later change within the same clock step (a second; FAT keeps 2 s)
 * would leave the same times. */
#define PH_IDENT_RACY_NS 2000000000LL

struct ph_ident {
	uint64_t size, ino, dev;
	int64_t mtime;               /* seconds */
	int64_t mtime_ns, ctime_ns;  /* since the epoch */
};

/* Stats the local file rel beneath the job's root (no symlink followed).
 * Returns 0, or a negative PHSYNC_E* (not a regular file: PHSYNC_ENOENT). */
int ph_ident_stat(struct ph_job *j, const char *rel, struct ph_ident *id);
/* Closes the folder ph_ident_stat keeps open (a folder the run may now
 * rename or remove; at the end). */
void ph_ident_close(struct ph_job *j);

/* Does f's recorded identity leave the file showing id in doubt: its
 * inode, device or ctime moved, or its times lie within the racy window
 * of the run that recorded it (f->lref, 0: unknown)? Pure. */
int ph_ident_suspect(const struct ph_state_file *f, const struct ph_ident *id);

/* Sets f's identity for the record of path (a key of the job's source
 * tree) being written now: the local file must show f's local size and
 * time, and f carry a hash; a push's local file changed during the run
 * gets an identity that never matches (checked next run). With
 * j->lid_st set, that stat of the file is used instead of a new one. */
void ph_ident_fill(struct ph_job *j, const char *path, struct ph_state_file *f);

/* For the local file rel that shows the size and time recorded for path
 * (f, as ph_state_each gives it): 1 when its content changed since (its
 * identity is in doubt and it no longer hashes to the recorded hash, or
 * none is recorded), 0 when not; when only its identity moved, a renewed
 * record is queued for ph_ident_renew, as for a record with a hash and no
 * identity yet (written before schema 5). Negative PHSYNC_E* on a failure
 * of the state. */
int ph_ident_changed(struct ph_job *j, const char *rel, const char *path,
                     const struct ph_state_file *f);
/* The same, given what the local scan saw of the file: seen, the digest
 * of its identity (ph_tree_ident_sum; 0 when not kept) and mtime, its
 * time in seconds. An identity the digest shows as recorded, recorded
 * well before the racy window (git's rule, above) whatever the file's
 * nanoseconds, is trusted with no second stat; any other goes through
 * ph_ident_changed. */
int ph_ident_changed_seen(struct ph_job *j, const char *rel, const char *path,
                          const struct ph_state_file *f, uint64_t seen, int64_t mtime);

/* Writes the renewed records queued by ph_ident_changed (call after the
 * state walk, before anything is carried out). Returns 0 or PHSYNC_E*. */
int ph_ident_renew(struct ph_job *j);
void ph_ident_renew_free(struct ph_job *j);

#endif
