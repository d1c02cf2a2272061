/* SPDX-License-Identifier: ISC */
/* The archive's bytes on their way to the file: a writer thread behind a
 * small ring of buffers, so the disk's write path (and zstd) runs beside
 * the reads from the phone instead of between them. For .tar.zst it makes
 * the frames: stored bytes in raw blocks, the rest compressed by zstd on
 * one thread. Internal to src/backup/. */
#ifndef PH_AOUT_H
#define PH_AOUT_H

#include <stddef.h>
#include <stdint.h>

struct ph_aout;

/* Starts the writer on fd (which stays the caller's). zlevel: 0 writes the
 * bytes as given, else zstd frames at that level. durable: write-back of
 * what is written is started as it goes, so the caller's fsync is short.
 * Returns 0 or PHSYNC_ENOMEM (the thread could not start: also ENOMEM). */
int ph_aout_open(int fd, int zlevel, int durable, struct ph_aout **out);

/* Queues n bytes: store 1 puts them in raw blocks (zstd only), 0 has them
 * compressed. Blocks while the ring is full. Returns 0, or -1 once the
 * output has failed (ph_aout_error says how). */
int ph_aout_write(struct ph_aout *o, const void *p, size_t n, int store);

/* Waits until everything queued is in the file; end also ends the frame
 * in progress (after it, nothing more may be written). Returns 0 or -1. */
int ph_aout_drain(struct ph_aout *o, int end);

/* A way back: ph_aout_undo can take the file back to this point (a frame
 * boundary). Only for a caller whose writes reach here unbuffered and in
 * order (libarchive unblocked, no filter of its own). Returns 0 or -1. */
int ph_aout_mark(struct ph_aout *o);

/* From now until ph_aout_undo, writes are dropped (they would be cut). */
void ph_aout_discard(struct ph_aout *o);

/* Back to the last mark: what was written after it is cut off the file
 * and the frame in progress forgotten, as if none of it had been written.
 * Returns 0 or -1. */
int ph_aout_undo(struct ph_aout *o);

/* The failure: an errno value (0: none), and zstd's words when zstd
 * failed (errno EIO then), else NULL. */
int ph_aout_error(struct ph_aout *o, const char **zmsg);

/* Bytes in the file so far (those written by the writer). */
uint64_t ph_aout_bytes(struct ph_aout *o);

/* Stops the writer (what is still queued is dropped) and frees o. NULL
 * is a no-op. */
void ph_aout_free(struct ph_aout *o);

#endif
