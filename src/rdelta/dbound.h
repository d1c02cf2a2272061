/* SPDX-License-Identifier: ISC */
/* Bounds on the work a peer's delta or signature may make this side do
 * (issue 22, item 7). A delta names its output only at its END op, so a
 * hostile helper could otherwise make a pull write past the file's listed
 * size forever (one-byte COPY ops: 17 wire bytes each), and a push hold
 * whatever signature the helper sends. Pure: no I/O. Internal. */
#ifndef PH_DBOUND_H
#define PH_DBOUND_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/delta.h"

/* Checks op, one op of the delta of a file listed at listed bytes: no
 * COPY or LITERAL may write past listed, and END must say listed. Returns
 * 0, or PHSYNC_EREMOTE with why in msg (len bytes; the file then fails at
 * once, before any byte past its size reaches the disk). */
int ph_dbound_op(const struct phsync_delta_op *op, uint64_t listed, char *msg, size_t len);

/* The exact length of the signature the helper (protocol 1) sends for a
 * file of size bytes asked with block_len 0 (docs/PROTOCOL.md: the block
 * length phsync_delta_block_len chooses, 8-byte strong hashes); 0 when the
 * helper would refuse it (over 3 MiB). A reply of any other length is not
 * the old file's signature and is not kept. */
size_t ph_dbound_sig_len(uint64_t size);

#endif
