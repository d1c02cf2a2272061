/* SPDX-License-Identifier: ISC */
/* Delta uploads over plain SFTP: the plan of a new file as pieces of the
 * remote old version (copied by the server, copy-data) and literal bytes,
 * made locally against the block signature the state kept of what phsync
 * last wrote there. No I/O but the local file's reads. Internal. */
#ifndef PH_PDELTA_H
#define PH_PDELTA_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/delta.h"

/* One piece of the new file, in the new file's order. */
struct ph_dop {
	uint64_t out_off;          /* where it goes in the new file */
	uint64_t off;              /* COPY: where it is in the old file */
	uint64_t len;
	int copy;                  /* 1: copy-data from the old file; 0: literal
	                              bytes, read again from the local file */
};

#define PH_PDELTA_CHECKS 2

struct ph_pdelta {
	struct ph_dop *ops;
	size_t n, cap;
	uint64_t copy_bytes;       /* bytes the server copies */
	uint64_t literal_bytes;    /* bytes that travel */
	/* Old-file blocks read back and compared with the signature before
	 * any copy (a file changed behind phsync's back with its size and
	 * time put back is caught here, most likely). */
	uint64_t check[PH_PDELTA_CHECKS];
	unsigned nchecks;
	phsync_sig *sig;
	struct phsync_sig_info info;
};

/* Called with every byte of the local file, in order, once (end on the
 * last call): the caller hashes and signs the new file on the same read. */
typedef void ph_pdelta_feed_fn(void *arg, const void *p, size_t n, int end);

/* Plans the upload of the size bytes of fd against the serialized
 * signature sig (of the remote old file, old_size bytes), with the diff
 * *diff, made on first use and reused for the caller's next files (its
 * window stays warm; the caller frees it). Returns 0 with
 * d filled (d->copy_bytes may be 0: nothing to gain), PHSYNC_ECORRUPT when
 * the signature is unusable or describes another length, PHSYNC_EIO when
 * the local file cannot be read whole, PHSYNC_ENOMEM. */
int ph_pdelta_plan(phsync_ctx *ctx, phsync_diff **diff, int fd, uint64_t size,
                   const uint8_t *sig, size_t siglen, uint64_t old_size,
                   ph_pdelta_feed_fn *feed, void *feed_arg, struct ph_pdelta *d);

/* The byte range of old-file block b: [*off, *off + *len). */
void ph_pdelta_block(const struct ph_pdelta *d, uint64_t b, uint64_t *off, uint32_t *len);

/* Does data (block b of the old file as the server has it now) match the
 * signature? */
int ph_pdelta_block_ok(const struct ph_pdelta *d, uint64_t b, const void *data, size_t len);

void ph_pdelta_free(struct ph_pdelta *d);

#endif
