/* SPDX-License-Identifier: ISC */
/* The files of a backup, read in archive order and handed over in order:
 * from SFTP through many pipelined reads (several files at once, memory
 * bounded by a byte budget, whatever the files' sizes), or from a local
 * folder. Internal to src/backup/. */
#ifndef PH_FETCH_H
#define PH_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "brun.h"

/* Files up to this size are left out of the archive whole when they fail
 * while read: held until all their bytes, and the check that the server
 * has exactly the listed size, are in, so a file that fails is left out
 * before its header is written; or, where the archive can take an entry
 * back (undo_ok), small ones held and the others streamed after a mark and
 * taken back (undo) when they fail. Larger files stream; their header
 * promises the listed size (checked once before with a read across its
 * end), and a failure after it abandons the archive. */
#define PH_FETCH_HOLD (8u << 20)

struct ph_fetch_item {
	const struct ph_entry *e;   /* the source entry (file or folder) */
};

/* What the caller does with each item, in order. begin: the item's bytes
 * follow (size, time: as read; first: its first bytes, n of them, for a
 * look at the format; dirs get NULL, 0). data: the next bytes. end: all
 * given. failed: the item could not be read and nothing of it was given
 * (err, msg say why). With undo_ok, mark comes before the begin of a file
 * that may be taken back, and undo takes back the file begun after it
 * (then failed follows). A nonzero return from begin, data, end, mark or
 * undo stops the run with that error. */
struct ph_fetch_ops {
	int (*begin)(void *arg, size_t i, uint64_t size, int64_t mtime, uint32_t nsec,
	             const uint8_t *first, size_t n);
	int (*data)(void *arg, size_t i, const uint8_t *p, size_t n);
	int (*end)(void *arg, size_t i);
	void (*failed)(void *arg, size_t i, int err, const char *msg);
	int (*mark)(void *arg);
	int (*undo)(void *arg, size_t i);
	void *arg;
	int undo_ok;
};

/* Reads items over run->sftp (paths under run->rroot) or, when run->lroot >= 0,
 * beneath that local folder. Returns 0 (items that failed alone were
 * reported through failed), or a PHSYNC_E* that ends the archive: the
 * link died, a callback failed, or a file whose header was already
 * written came with another number of bytes than it had promised. */
int ph_fetch_run(struct ph_brun *run, const struct ph_fetch_item *items, size_t n,
                 const struct ph_fetch_ops *ops);

#endif
