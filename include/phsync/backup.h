/* SPDX-License-Identifier: ISC */
/* libphsync backups: a folder (on a phone over SFTP, or local) streamed
 * into tar (pax) archives, full or incremental, restored and verified.
 *
 * Same conventions as phsync.h: 0 or a negative PHSYNC_E*, the message in
 * phsync_ctx_error(), events through the options' callback (FILE_DONE per
 * file archived or restored, DELETED per deletion recorded or applied,
 * SKIPPED, FILE_FAILED, WARNING, PROGRESS, SUMMARY).
 */
#ifndef PHSYNC_BACKUP_H
#define PHSYNC_BACKUP_H

#include <stddef.h>

#include "phsync/phsync.h"

#ifdef __cplusplus
extern "C" {
#endif

enum phsync_backup_mode {
	PHSYNC_BACKUP_FULL = 0,        /* every file */
	PHSYNC_BACKUP_INCREMENTAL = 1  /* what changed since the series' last
	                                  archive, and what was deleted; full
	                                  when the series has none */
};

struct phsync_backup_options {
	const struct phsync_options *sync; /* ssh, filters, state dir, events,
	                                      timeout, fsync (NULL: defaults) */
	enum phsync_backup_mode mode;
	unsigned keep;                 /* after success, remove the oldest
	                                  chains (a full and its incrementals)
	                                  beyond this many; 0: keep all */
	int level;                     /* zstd/gzip/xz level, 0: the default */
};

/* Fills bo with the defaults (full, keep all, default level). */
void phsync_backup_options_init(struct phsync_backup_options *bo);

/* Writes one archive of the series (src, name_template): src is
 * "[user@]host:dir" or a local folder; name_template a path whose last
 * part may hold %Y %m %d %H %M (local time) and ends in .tar, .tar.zst,
 * .tar.gz or .tar.xz. The archive appears under its name (with "-2"...
 * before the extension when taken) only complete and durable; its path
 * is copied into published (len bytes) when not NULL. Returns 0,
 * PHSYNC_EPARTIAL when some files could not be read (they are left out,
 * named in events; the archive holds the rest), or an error (no archive,
 * the series unchanged). */
int phsync_backup(phsync_ctx *ctx, const char *src, const char *name_template,
                  const struct phsync_backup_options *bo, struct phsync_stats *stats,
                  char *published, size_t len);

/* Applies archives[0..n-1] in order (a full and its incrementals, or any
 * tar archive) into dir, made if missing: files through temp files
 * renamed into place, deletions recorded by incrementals, nothing written
 * outside dir, no symlink followed or created; unsafe entries (absolute,
 * "..", symlinks, hard links, devices) are refused and reported. An archive
 * whose manifest does not match what it holds applies nothing. Returns 0,
 * PHSYNC_EPARTIAL (entries refused or failed), or an error. */
int phsync_restore(phsync_ctx *ctx, const char *const *archives, size_t n, const char *dir,
                   const struct phsync_options *opts, struct phsync_stats *stats);

/* Reads archives[0..n-1] and checks every file against its manifest
 * (size, XXH3-128) and that the archive is whole. Returns 0 when all
 * match, PHSYNC_ECORRUPT (mismatches named in events) or another error. */
int phsync_verify(phsync_ctx *ctx, const char *const *archives, size_t n,
                  const struct phsync_options *opts, struct phsync_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
