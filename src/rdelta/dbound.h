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

/* The most an honest delta of a file listed at listed bytes, made against
 * a signature of block-byte blocks, can hold: COPY ops (each but the last
 * covers a whole block at least, so listed / block + 1) and bytes on the
 * wire (header, END, the literal bytes, and per op its header: a LITERAL
 * before each COPY, one per PHSYNC_DELTA_MAX_LITERAL bytes, one more).
 * Saturates at UINT64_MAX. */
uint64_t ph_dbound_delta_copies(uint64_t listed, uint32_t block);
uint64_t ph_dbound_delta_len(uint64_t listed, uint32_t block);

/* Checks the work a delta made so far, copies COPY ops in fed bytes,
 * against those bounds: 0, or PHSYNC_EREMOTE with why in msg. A helper
 * that sends copies of the old copy, or literals, without end is stopped
 * there, before its output reaches the listed size when its ops are
 * small (one-byte COPY ops: 17 wire bytes per byte built). */
int ph_dbound_work(uint64_t listed, uint32_t block, uint64_t fed, uint64_t copies, char *msg,
                   size_t len);

#endif
