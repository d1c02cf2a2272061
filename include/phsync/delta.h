/* SPDX-License-Identifier: ISC */
/* phsync delta engine: rsync-style signatures, deltas and patches.
 *
 * Every object is a state machine over caller buffers (zstd style): input
 * comes in struct phsync_in, output goes to struct phsync_out, both in any
 * chunk sizes, and the result does not depend on the chunking. The engine
 * does no I/O: a patch reads its basis through a callback. Formats and the
 * algorithm are described in docs/DELTA.md.
 *
 * Functions return 0 or a negative PHSYNC_E* code; the message goes to the
 * phsync_ctx given to the _new function (which may be NULL). Errors are
 * sticky: after a failure every later call on the object returns it again.
 * Malformed signatures and deltas give PHSYNC_ECORRUPT.
 */
#ifndef PHSYNC_DELTA_H
#define PHSYNC_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct phsync_ctx phsync_ctx;

/* Input: the engine reads ptr[pos..size) and advances pos. */
struct phsync_in {
	const void *ptr;
	size_t size;
	size_t pos;
};

/* Output: the engine writes ptr[pos..size) and advances pos. */
struct phsync_out {
	void *ptr;
	size_t size;
	size_t pos;
};

#define PHSYNC_SIG_VERSION 1
#define PHSYNC_DELTA_VERSION 1
#define PHSYNC_SIG_MIN_BLOCK 16u              /* bytes */
#define PHSYNC_SIG_MAX_BLOCK (1u << 20)       /* bytes */
#define PHSYNC_SIG_MAX_BLOCKS (1u << 26)      /* blocks in one signature */
#define PHSYNC_SIG_MIN_STRONG 4u              /* bytes of strong hash kept */
#define PHSYNC_SIG_MAX_STRONG 8u
#define PHSYNC_DELTA_MAX_LITERAL (1u << 18)   /* bytes in one LITERAL op */
#define PHSYNC_LEN_UNKNOWN UINT64_MAX

/* The block length the engine picks for a basis of len bytes (about its
 * square root, a multiple of 64, within [512 B, 128 KiB], larger for huge
 * files so the block count stays under PHSYNC_SIG_MAX_BLOCKS); 4096 when
 * len is PHSYNC_LEN_UNKNOWN. */
uint32_t phsync_delta_block_len(uint64_t len);

/* ---- Signature generation (over the basis, "old" file) ---------------- */

typedef struct phsync_sig_gen phsync_sig_gen;

/* Starts a signature of a basis of basis_len bytes (PHSYNC_LEN_UNKNOWN:
 * the records are then kept in memory and written at the end). block_len
 * 0 picks phsync_delta_block_len(basis_len); strong_len 0 picks 8.
 * Returns 0, PHSYNC_EINVAL for out-of-range parameters, PHSYNC_ENOMEM. */
int phsync_sig_gen_new(phsync_ctx *ctx, uint64_t basis_len, uint32_t block_len,
                       unsigned strong_len, phsync_sig_gen **out);
/* Consumes basis bytes from in and writes signature bytes to out. Pass
 * end = 1 once in holds the last of the basis; *done is set to 1 when the
 * signature is complete and fully written. Returns 0, PHSYNC_EINVAL when
 * the basis length differs from the declared one, PHSYNC_ENOMEM. */
int phsync_sig_gen_stream(phsync_sig_gen *g, struct phsync_out *out,
                          struct phsync_in *in, int end, int *done);
/* Frees a generator; NULL is a no-op. */
void phsync_sig_gen_free(phsync_sig_gen *g);

/* ---- A loaded signature and its match index --------------------------- */

typedef struct phsync_sig phsync_sig;

struct phsync_sig_info {
	uint32_t block_len;   /* bytes per block; the last block may be shorter */
	uint32_t strong_len;  /* bytes of XXH3-64 kept per block */
	uint64_t basis_len;   /* length of the file the signature describes */
	uint64_t count;       /* blocks: ceil(basis_len / block_len) */
};

/* Creates an empty signature to be filled by phsync_sig_load.
 * Returns 0 or PHSYNC_ENOMEM. */
int phsync_sig_new(phsync_ctx *ctx, phsync_sig **out);
/* Parses serialized signature bytes from in (any chunking). When the last
 * block record has arrived the match index is built and the signature is
 * complete; pass end = 1 with the last input so a truncated signature is
 * reported. Returns 0, PHSYNC_ECORRUPT (bad magic, version, sizes, trailing
 * bytes, truncation), PHSYNC_ENOMEM. */
int phsync_sig_load(phsync_sig *sig, struct phsync_in *in, int end);
/* Builds a complete signature from its block list (for example one stored
 * in a database): weak[i] is block i's rolling sum, strong[i] its truncated
 * strong hash as returned by phsync_sig_block. Returns 0, PHSYNC_EINVAL,
 * PHSYNC_ENOMEM. */
int phsync_sig_from_blocks(phsync_ctx *ctx, const struct phsync_sig_info *info,
                           const uint32_t *weak, const uint64_t *strong,
                           phsync_sig **out);
/* Fills info; returns 0, or PHSYNC_EINVAL while the signature is incomplete. */
int phsync_sig_get_info(const phsync_sig *sig, struct phsync_sig_info *info);
/* Block i's weak rolling sum and strong hash: the first strong_len bytes of
 * the canonical (big-endian) XXH3-64 of the block, as a right-aligned
 * integer. Returns 0, or PHSYNC_EINVAL when i is out of range. */
int phsync_sig_block(const phsync_sig *sig, uint64_t i, uint32_t *weak,
                     uint64_t *strong);
/* Frees a signature; NULL is a no-op. */
void phsync_sig_free(phsync_sig *sig);

/* ---- Delta operations ------------------------------------------------- */

enum phsync_op_type {
	PHSYNC_OP_NONE = 0,   /* no op yet: give more input */
	PHSYNC_OP_COPY,       /* copy len bytes of the basis from off */
	PHSYNC_OP_LITERAL,    /* append the len bytes at data */
	PHSYNC_OP_END         /* the new file is complete: len bytes, hash */
};

struct phsync_delta_op {
	enum phsync_op_type type;
	uint64_t out_off;     /* offset in the new file of this op's bytes */
	uint64_t off;         /* COPY: offset in the basis */
	uint64_t len;         /* COPY/LITERAL: bytes; END: new file length */
	const uint8_t *data;  /* LITERAL: valid until the next call */
	uint8_t hash[16];     /* END: canonical XXH3-128 of the new file */
};

/* ---- Delta generation (over the new file) ----------------------------- */

typedef struct phsync_diff phsync_diff;

struct phsync_diff_stats {
	uint64_t in_bytes;       /* new-file bytes consumed */
	uint64_t copy_bytes;     /* bytes matched against the basis */
	uint64_t literal_bytes;  /* bytes sent as literals */
	uint64_t ops;            /* COPY + LITERAL ops produced */
	uint64_t fast_hits;      /* blocks matched by the next-block fast path */
	uint64_t filter_hits;    /* positions that passed the weak-sum filter */
	uint64_t strong_calls;   /* strong hashes computed while searching */
	uint64_t strong_misses;  /* of which matched no block */
};

/* Starts a delta against sig, which must be complete and must outlive the
 * diff (it is only read, so several diffs may share it). Returns 0,
 * PHSYNC_EINVAL, PHSYNC_ENOMEM. */
int phsync_diff_new(phsync_ctx *ctx, const phsync_sig *sig, phsync_diff **out);
/* Starts a new delta on d against sig (same rules as for phsync_diff_new),
 * dropping where d was and keeping its window: for a caller diffing many
 * files in a row, whose fresh half-MiB windows each cost page faults (and,
 * between the signatures kept in between, heap growth). Returns 0,
 * PHSYNC_EINVAL, PHSYNC_ENOMEM (d is then unchanged). */
int phsync_diff_reset(phsync_diff *d, const phsync_sig *sig);
/* Op by op: consumes new-file bytes from in and returns the next op in
 * *op; PHSYNC_OP_NONE means in is used up (pass end = 1 with the last
 * input; then ops continue until PHSYNC_OP_END). Consecutive COPYs are
 * merged. Do not mix with phsync_diff_stream on one diff. */
int phsync_diff_next(phsync_diff *d, struct phsync_in *in, int end,
                     struct phsync_delta_op *op);
/* Serialized: consumes new-file bytes and writes the delta format to out;
 * *done is set to 1 once the whole delta is written. */
int phsync_diff_stream(phsync_diff *d, struct phsync_out *out,
                       struct phsync_in *in, int end, int *done);
/* Input without a copy: where the caller may read new-file bytes itself
 * (the free end of the diff's own window, *p, the return value bytes),
 * after which phsync_diff_commit says how many it put there. For a caller
 * that reads a file anyway (a pread straight into the window instead of
 * into a buffer the diff then copies from). Ask only when the diff wants
 * input (next or stream gave nothing more with an empty in); then the room
 * is at least 256 KiB. Do not pass bytes in `in` between the two calls. */
size_t phsync_diff_space(phsync_diff *d, void **p);
void phsync_diff_commit(phsync_diff *d, size_t n);
/* Copies the diff's counters into st. */
void phsync_diff_get_stats(const phsync_diff *d, struct phsync_diff_stats *st);
/* Frees a diff; NULL is a no-op. */
void phsync_diff_free(phsync_diff *d);

/* ---- Reading a serialized delta op by op ------------------------------ */

typedef struct phsync_delta_reader phsync_delta_reader;

/* Starts reading a delta meant for a basis of basis_len bytes; every COPY
 * is checked against it. Returns 0 or PHSYNC_ENOMEM. */
int phsync_delta_reader_new(phsync_ctx *ctx, uint64_t basis_len,
                            phsync_delta_reader **out);
/* Returns the next op in *op, PHSYNC_OP_NONE when in is used up. LITERAL
 * ops arrive in pieces as their bytes do (data points into in); out_off
 * says where each piece goes. The END op is returned once, after which any
 * further byte is PHSYNC_ECORRUPT; end = 1 before END is PHSYNC_ECORRUPT.
 * The caller verifies END's hash over the file it builds. */
int phsync_delta_read(phsync_delta_reader *r, struct phsync_in *in, int end,
                      struct phsync_delta_op *op);
/* Frees a reader; NULL is a no-op. */
void phsync_delta_reader_free(phsync_delta_reader *r);

/* ---- Patch: basis + delta -> new file --------------------------------- */

/* Reads up to len bytes of the basis at off into buf and sets *got (> 0
 * unless at the end of the basis). Returns 0 or a negative PHSYNC_E*. */
typedef int (*phsync_read_basis_fn)(void *arg, uint64_t off, void *buf,
                                    size_t len, size_t *got);

typedef struct phsync_patch phsync_patch;

/* Starts applying a delta to a basis of basis_len bytes read through
 * read_basis. Returns 0, PHSYNC_EINVAL, PHSYNC_ENOMEM. */
int phsync_patch_new(phsync_ctx *ctx, uint64_t basis_len,
                     phsync_read_basis_fn read_basis, void *arg,
                     phsync_patch **out);
/* Consumes delta bytes from in and writes new-file bytes to out; *done is
 * set to 1 when the delta's END was reached and the length and XXH3-128 of
 * everything written matched it. Returns 0, PHSYNC_ECORRUPT for a malformed
 * or mismatching delta, or the callback's error. */
int phsync_patch_stream(phsync_patch *p, struct phsync_out *out,
                        struct phsync_in *in, int end, int *done);
/* Frees a patch; NULL is a no-op. */
void phsync_patch_free(phsync_patch *p);

#ifdef __cplusplus
}
#endif
#endif
