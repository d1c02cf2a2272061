/* SPDX-License-Identifier: ISC */
/* The block signature of a file read through a descriptor: what the helper
 * answers phsync-sig with and what a pull sends with phsync-delta-start.
 * The engine's one adapter to a file (pread, nothing else): it lives with
 * the engine because both ends use it, the helper (src/helper) and the
 * client's pull (src/sync), and neither may use the other's folder.
 * Internal. */
#ifndef PH_SIGFD_H
#define PH_SIGFD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Appends to out the signature (docs/DELTA.md) of the first size bytes of
 * fd, read from offset 0 through buf (bufsize bytes). block_len 0 lets the
 * engine choose; strong_len 0 means 8. Returns 0; -errno for a failed read;
 * -EIO when the file ends before size bytes (it shrank) or the engine
 * refuses; -ENOMEM when out cannot grow (its max, or memory). On failure
 * out->len is as it was. */
int ph_sig_fd(int fd, uint64_t size, uint32_t block_len, unsigned strong_len, void *buf,
              size_t bufsize, struct ph_buf *out);

#endif
