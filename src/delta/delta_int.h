/* SPDX-License-Identifier: ISC */
/* Internal to the delta engine: the loaded signature and its match index,
 * shared by delta_sig.c (which builds it) and delta_diff.c (which searches
 * it), plus the byte-order helpers of the formats in docs/DELTA.md. */
#ifndef PH_DELTA_INT_H
#define PH_DELTA_INT_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "phsync/delta.h"

#define PH_SIG_MAGIC "PHSS"
#define PH_SIG_HDR_LEN 20
#define PH_DELTA_MAGIC "PHSD"
#define PH_DELTA_HDR_LEN 8
#define PH_OP_COPY 'C'    /* off u64, len u64 */
#define PH_OP_LITERAL 'L' /* len u32, then len bytes */
#define PH_OP_END 'E'     /* new length u64, XXH3-128 (16 bytes) */
#define PH_OP_COPY_LEN 17
#define PH_OP_LITERAL_LEN 5
#define PH_OP_END_LEN 25

/* One index entry: a distinct (weak, strong) pair and its first block. */
struct ph_sig_entry {
	uint32_t weak;
	uint32_t block;
};

struct phsync_sig {
	phsync_ctx *ctx;
	int err;
	int complete;
	struct phsync_sig_info info;
	uint64_t nfull;        /* full-length blocks (the index holds only these) */
	uint32_t last_len;     /* length of the last block */
	uint32_t *weak;        /* per block */
	uint64_t *strong;      /* per block, truncated to info.strong_len */
	uint64_t n, cap;       /* blocks loaded so far, allocated */
	/* streaming parse */
	uint8_t hdr[PH_SIG_HDR_LEN];
	size_t hdr_len;
	uint8_t rec[4 + PHSYNC_SIG_MAX_STRONG];
	size_t rec_len;
	/* match index: entries sorted by weak, bucketed by its top tbits,
	 * behind a bitmap filter of 2^fbits bits: the top fbits - 6 bits of
	 * the weak sum pick a 64-bit word, its bits 0..5 and 6..11 two bits
	 * in it, which are both set for each entry */
	struct ph_sig_entry *entries;
	uint32_t *bucket;      /* 2^tbits + 1 start offsets into entries */
	uint64_t *filter;      /* 2^fbits bits */
	unsigned tshift, fshift; /* 32 - tbits, 32 - (fbits - 6) */
};

/* Makes d use the portable scan loop even where a CPU-specific one exists
 * (tests compare the two). */
void ph_diff_force_portable(phsync_diff *d);

/* Nonzero when the CPU can run ph_rollsum_block_fast's AVX2 path. */
int ph_rollsum_have_avx2(void);
/* ph_rollsum_block (rollsum.h), the same a and b, with AVX2 when avx2 is
 * set (from ph_rollsum_have_avx2) and the build has it. */
void ph_rollsum_block_fast(const uint8_t *p, size_t n, uint32_t *pa, uint32_t *pb,
                           int avx2);

/* Strong hash of a block: the top strong_len bytes of its XXH3-64. */
static inline uint64_t
ph_delta_strong(const void *p, size_t n, unsigned strong_len)
{
	return XXH3_64bits(p, n) >> (64 - 8 * strong_len);
}

static inline void
ph_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
ph_put_be64(uint8_t *p, uint64_t v)
{
	ph_put_be32(p, (uint32_t)(v >> 32));
	ph_put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t
ph_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
ph_get_be64(const uint8_t *p)
{
	return (uint64_t)ph_get_be32(p) << 32 | ph_get_be32(p + 4);
}

#endif
