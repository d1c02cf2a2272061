/* SPDX-License-Identifier: ISC */
/* Reading an archive entry by entry through libarchive (any tar, any
 * compression it knows), with every name checked before anyone uses it,
 * and the phsync manifests picked out. Internal to src/backup/. */
#ifndef PH_AREAD_H
#define PH_AREAD_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "phsync/phsync.h"

enum ph_ar_type {
	PH_AR_FILE = 1,
	PH_AR_DIR,
	PH_AR_MANIFEST,     /* the manifest (head or whole), parsed into the reader */
	PH_AR_REFUSED,      /* unsafe or unsupported: reason says why */
	PH_AR_ROOT          /* "." or "./": the archive's top folder */
};

struct ph_ar;

struct ph_ar_entry {
	enum ph_ar_type type;
	const char *path;       /* checked: relative, no "." or ".." parts, no
	                           unsafe names; for REFUSED, the name as given
	                           (or "?") */
	const char *reason;     /* REFUSED: why */
	uint64_t size;
	int64_t mtime;
	uint32_t nsec, mode;
};

/* Opens path (PHSYNC_ENOENT, PHSYNC_EIO... with the message in ctx). */
int ph_ar_open(phsync_ctx *ctx, const char *path, struct ph_ar **out);
/* The next entry: 1, 0 at the end of the archive, or PHSYNC_ECORRUPT (a
 * damaged or cut archive; message in ctx). A FILE's data is read with
 * ph_ar_data before the next call (or skipped). */
int ph_ar_next(struct ph_ar *ar, struct ph_ar_entry *e);
/* The file's next bytes at *off: 1 with a block, 0 at its end, or
 * PHSYNC_ECORRUPT. */
int ph_ar_data(struct ph_ar *ar, const void **p, size_t *n, int64_t *off);
/* The manifests met so far: head (first entry) and whole (last), or NULL. */
const struct ph_manifest *ph_ar_head(const struct ph_ar *ar);
const struct ph_manifest *ph_ar_manifest(const struct ph_ar *ar);
void ph_ar_close(struct ph_ar *ar);

#endif
