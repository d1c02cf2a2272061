/* SPDX-License-Identifier: ISC */
/* The archive writer: tar (pax) entries through libarchive into a temp
 * file beside the archive's final name, published only complete and
 * durable. Internal to src/backup/. */
#ifndef PH_AWRITE_H
#define PH_AWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"

enum ph_aw_kind { PH_AW_TAR = 1, PH_AW_ZSTD, PH_AW_GZIP, PH_AW_XZ };

struct ph_aw;

struct ph_aw_entry {
	const char *path;        /* relative, '/'-separated, raw bytes */
	int dir;                 /* a folder (size 0) */
	uint64_t size;           /* the exact number of bytes ph_aw_data will get */
	int64_t mtime;
	uint32_t nsec, mode;
};

/* The kind an archive name asks for by its ending (.tar, .tar.zst or
 * .tzst, .tar.gz or .tgz, .tar.xz or .txz), and the ending's length in
 * *extlen; 0 when none fits. */
int ph_aw_kind_of(const char *name, size_t *extlen);

/* Creates the temp file beside final (a path; its folder must exist),
 * removing temps of this name's kind that dead runs left there. level: 0
 * for the default. Returns 0 or PHSYNC_E* (message in ctx). */
int ph_aw_open(phsync_ctx *ctx, const char *final, int level, int do_fsync, struct ph_aw **out);

/* For the next entries, store (1) or compress (0) their bytes. Only
 * .tar.zst can: its stored bytes go in zstd raw blocks (no CPU spent on
 * media that does not compress); other kinds ignore it. */
void ph_aw_store(struct ph_aw *aw, int store);

/* One entry: its header, exactly e->size bytes of data, its end. A file
 * whose bytes cannot all be given must never be ended (the tar format has
 * promised its size): abort the archive instead. Each returns 0 or
 * PHSYNC_E* (ENOSPC, EIO) with the message in ctx. */
int ph_aw_header(struct ph_aw *aw, const struct ph_aw_entry *e);
int ph_aw_data(struct ph_aw *aw, const void *p, size_t n);
int ph_aw_end(struct ph_aw *aw);

/* Whether this kind can take an entry back (ph_aw_undo): .tar.zst. */
int ph_aw_can_undo(const struct ph_aw *aw);
/* Before an entry's header: the point ph_aw_undo goes back to. */
int ph_aw_mark(struct ph_aw *aw);
/* Takes the entry begun after the mark out of the archive, as if it had
 * never been begun (left: the bytes it was still owed). After it the next
 * entry may begin. Returns 0 or PHSYNC_E*. */
int ph_aw_undo(struct ph_aw *aw, uint64_t left);

/* Bytes written to the archive file so far (after what is queued is written). */
uint64_t ph_aw_bytes(struct ph_aw *aw);
/* The temp file's path (for messages and tests). */
const char *ph_aw_temp(const struct ph_aw *aw);

/* Ends the archive (tar trailer, last frame), fsyncs it, renames it to
 * its final name, or to NAME-2.EXT, NAME-3.EXT... when that is taken
 * (never replacing a file), and fsyncs the folder. The name used goes to
 * published (len bytes). Frees aw; on failure the temp is removed.
 * Returns 0 or PHSYNC_E*. */
int ph_aw_commit(struct ph_aw *aw, char *published, size_t len);
/* Removes the temp file and frees aw. NULL is a no-op. */
void ph_aw_abort(struct ph_aw *aw);

#endif
