/* SPDX-License-Identifier: ISC */
/* Whole-content hashes (XXH3-128, canonical bytes) of a file on either
 * side, for the checks that must see every byte: a move's confirmation
 * and an offload's (DESIGN rule 8). Internal. */
#ifndef PH_WHOLE_H
#define PH_WHOLE_H

#include <stdint.h>

struct ph_job;

/* Hashes the local file rel (beneath the job's root, no symlink
 * followed); *size gets its length. Returns 0 or a negative PHSYNC_E*. */
int ph_whole_local(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size);

/* Reads and hashes (XXH3-128, canonical bytes) the regular file name in
 * folder dirfd, never following a symlink. Returns 0 or -errno. */
int ph_whole_hash_at(int dirfd, const char *name, uint8_t out[16], uint64_t *size);

/* ph_whole_local with the system's error as -errno (-EBUSY: another
 * program holds the file open without sharing read, on Windows). */
int ph_whole_local_errno(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size);

/* Reads the remote file rel (relative to the job's remote root) whole and
 * hashes it: exactly size bytes, then end of file. Returns 0, or
 * PHSYNC_ECORRUPT when it holds fewer or more bytes, or another negative
 * PHSYNC_E* (the link's). */
int ph_whole_remote(struct ph_job *j, const char *rel, uint64_t size, uint8_t out[16]);

/* Where the remote side runs the helper: does the remote file rrel hold
 * the same bytes as the local file lrel (both size bytes)? The helper
 * reads its file whole and sends its block signature (XXH3-64 and a
 * rolling sum a block, docs/DELTA.md); the local file's, made here with
 * the same block length, must be the same bytes. Returns 1 when they are,
 * 0 when not or when it cannot tell (no helper, a refused or foreign
 * signature): the caller then reads the remote file whole. */
int ph_whole_helper_same(struct ph_job *j, const char *rrel, const char *lrel, uint64_t size);

#endif
