/* SPDX-License-Identifier: ISC */
/* Check-file deltas: which blocks of a remote file a local old copy holds,
 * from block digests the SFTP server computes (check-file-handle), for
 * pulls from servers that cannot run the helper. */
#ifndef PH_CFDELTA_H
#define PH_CFDELTA_H

#include <stddef.h>
#include <stdint.h>

#include "sftp.h"

/* What a pull asks for (pull_cf.c): md5 first (every server that has check-file has
 * it, and it is the cheapest to compute here and there), sha1 else. */
#define PH_CF_ALGS "md5,sha1"
/* Larger files come whole: the server hashes the whole file before it
 * answers anything else (ProFTPD serves a session in one process), and at
 * a slow phone's 50 MB/s this stays well under the default --timeout. */
#define PH_CF_MAX_SIZE (256ull << 20)

struct ph_cf;

/* 1 when this build can compute the digests (libcrypto); else check-file
 * is never asked for. */
int ph_cf_available(void);
/* A plan for a remote file of new_size bytes (> 0): its block size.
 * Returns 0 or PHSYNC_ENOMEM. */
int ph_cf_new(uint64_t new_size, struct ph_cf **out);
void ph_cf_free(struct ph_cf *cf);
/* The one request: offset 0, len bytes (whole blocks up to the grid's end;
 * the server stops at the file's end), in blocks of block bytes. One
 * request from offset 0, because ProFTPD 1.3.8 hashes from offset to
 * offset + (offset + len): asked in parts, it would hash the file over
 * and over and answer more digests than asked. */
void ph_cf_request(const struct ph_cf *cf, uint64_t *len, uint32_t *block);
/* The samples to read with the digests: how many, each len bytes, the
 * i-th at ph_cf_sample_off. A sample that does not come (a short read)
 * is only a shift fewer to try. */
uint32_t ph_cf_samples(const struct ph_cf *cf, uint32_t *len);
uint64_t ph_cf_sample_off(const struct ph_cf *cf, uint32_t i);
void ph_cf_sample_take(struct ph_cf *cf, uint32_t i, const uint8_t *data, uint32_t len);
/* Takes the reply. PHSYNC_EPROTO for a reply of another shape or length
 * (a file that changed size since it was listed, say). */
int ph_cf_take(struct ph_cf *cf, const struct ph_sftp_reply *r);
/* Once the replies are in: hashes the old copy (fd, old_size bytes) where
 * each new block may lie: in place, shifted by the size change, or by
 * where a sample was found in the old copy (an EXIF block that grew, a
 * tail cut or appended, a flipped byte, all at once), reading through
 * buf. Returns the bytes of the new file found in the old copy. */
uint64_t ph_cf_match(struct ph_cf *cf, int fd, uint64_t old_size, uint8_t *buf, size_t bufsz);
/* From off (< the new size; a block boundary, or inside a block to read):
 * *src is where the bytes at off are in the old copy (-1: read them from
 * the server) and *run how many bytes from off share that answer, with
 * the old copy's bytes contiguous. */
void ph_cf_at(const struct ph_cf *cf, uint64_t off, int64_t *src, uint64_t *run);

#endif
