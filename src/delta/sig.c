/* SPDX-License-Identifier: ISC */
/* Signatures: generation over a basis, streaming parse, and the match
 * index the diff searches. Format and design: docs/DELTA.md. */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "delta_int.h"
#include "rollsum.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SIG_X86_DISPATCH 1 /* pick the block sum by CPU feature */
#endif

#define SIG_UNKNOWN_BLOCK 4096u
#define SIG_AUTO_MIN_BLOCK 512u
#define SIG_AUTO_MAX_BLOCK (128u * 1024)
#define SIG_STAGE_HIGH (64u * 1024)  /* record bytes buffered before output */
#define CHAIN_MAX 32                 /* entries kept per hash bucket */

struct phsync_sig_gen {
	phsync_ctx *ctx;
	int err;
	int finished;
	int known;            /* basis_len was given up front */
	uint64_t basis_len;
	uint64_t seen;        /* basis bytes consumed */
	uint64_t blocks;      /* records produced */
	uint32_t block_len;
	unsigned strong_len;
	uint8_t *blk;         /* a block split across input chunks */
	size_t blk_len;
	uint8_t *stage;       /* header and records not yet written */
	size_t stage_len, stage_pos, stage_cap;
	int avx2;             /* the CPU has AVX2: use rollsum_block_avx2 */
};

#ifdef SIG_X86_DISPATCH
static __attribute__((target("avx2"))) uint32_t
hsum32(__m256i v)
{
	__m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4E));
	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xB1));
	return (uint32_t)_mm_cvtsi128_si32(x);
}

/* ph_rollsum_block with AVX2, same result: per 32 bytes, psadbw gives
 * the byte sum (a) and pmaddubsw/pmaddwd the sum weighted 32..1 (b's
 * share of the chunk); b also gains 32 * a as it was before each chunk,
 * accumulated in vpre. All lanes wrap mod 2^32 like the scalar sums. */
static __attribute__((target("avx2"))) void
rollsum_block_avx2(const uint8_t *p, size_t n, uint32_t *pa, uint32_t *pb)
{
	const __m256i wt = _mm256_setr_epi8(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21,
	                                    20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9,
	                                    8, 7, 6, 5, 4, 3, 2, 1);
	const __m256i ones = _mm256_set1_epi16(1), zero = _mm256_setzero_si256();
	__m256i va = zero, vpre = zero, vb = zero;
	uint32_t a, b;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));

		vpre = _mm256_add_epi32(vpre, va);
		va = _mm256_add_epi32(va, _mm256_sad_epu8(x, zero));
		vb = _mm256_add_epi32(vb, _mm256_madd_epi16(_mm256_maddubs_epi16(x, wt), ones));
	}
	a = hsum32(va);
	b = hsum32(vb) + 32 * hsum32(vpre);
	for (; i < n; i++) {
		a += p[i];
		b += a;
	}
	*pa = a;
	*pb = b;
}

int
ph_rollsum_have_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") != 0;
}
#else
int
ph_rollsum_have_avx2(void)
{
	return 0;
}
#endif

void
ph_rollsum_block_fast(const uint8_t *p, size_t n, uint32_t *pa, uint32_t *pb, int avx2)
{
#ifdef SIG_X86_DISPATCH
	if (avx2) {
		rollsum_block_avx2(p, n, pa, pb);
		return;
	}
#endif
	ph_rollsum_block(p, n, pa, pb);
}

static uint64_t
isqrt64(uint64_t v)
{
	uint64_t lo = 0, hi = 1ull << 32;

	while (hi - lo > 1) { /* invariant: lo^2 <= v < hi^2 */
		uint64_t mid = lo + (hi - lo) / 2;

		if (mid * mid <= v)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t
round_up64(uint64_t v)
{
	return (v + 63) & ~(uint64_t)63;
}

static uint64_t
blocks_for(uint64_t len, uint32_t block_len)
{
	return len / block_len + (len % block_len != 0);
}

uint32_t
phsync_delta_block_len(uint64_t len)
{
	uint64_t b, need;

	if (len == PHSYNC_LEN_UNKNOWN)
		return SIG_UNKNOWN_BLOCK;
	b = round_up64(isqrt64(len));
	if (b < SIG_AUTO_MIN_BLOCK)
		b = SIG_AUTO_MIN_BLOCK;
	if (b > SIG_AUTO_MAX_BLOCK)
		b = SIG_AUTO_MAX_BLOCK;
	need = round_up64(blocks_for(len, PHSYNC_SIG_MAX_BLOCKS));
	if (b < need)
		b = need;
	return b > PHSYNC_SIG_MAX_BLOCK ? PHSYNC_SIG_MAX_BLOCK : (uint32_t)b;
}

static void
put_sig_header(uint8_t *h, unsigned strong_len, uint32_t block_len,
               uint64_t basis_len)
{
	memcpy(h, PH_SIG_MAGIC, 4);
	h[4] = PHSYNC_SIG_VERSION;
	h[5] = (uint8_t)strong_len;
	h[6] = 0;
	h[7] = 0;
	ph_put_be32(h + 8, block_len);
	ph_put_be64(h + 12, basis_len);
}

int
phsync_sig_gen_new(phsync_ctx *ctx, uint64_t basis_len, uint32_t block_len,
                   unsigned strong_len, phsync_sig_gen **out)
{
	phsync_sig_gen *g = NULL;
	int rc = PHSYNC_ENOMEM;

	*out = NULL;
	if (block_len == 0)
		block_len = phsync_delta_block_len(basis_len);
	if (strong_len == 0)
		strong_len = PHSYNC_SIG_MAX_STRONG;
	if (block_len < PHSYNC_SIG_MIN_BLOCK || block_len > PHSYNC_SIG_MAX_BLOCK)
		return ph_err(ctx, PHSYNC_EINVAL, "block length %u outside [%u, %u]",
		              block_len, PHSYNC_SIG_MIN_BLOCK, PHSYNC_SIG_MAX_BLOCK);
	if (strong_len < PHSYNC_SIG_MIN_STRONG || strong_len > PHSYNC_SIG_MAX_STRONG)
		return ph_err(ctx, PHSYNC_EINVAL, "strong hash length %u outside [%u, %u]",
		              strong_len, PHSYNC_SIG_MIN_STRONG, PHSYNC_SIG_MAX_STRONG);
	if (basis_len != PHSYNC_LEN_UNKNOWN &&
	    blocks_for(basis_len, block_len) > PHSYNC_SIG_MAX_BLOCKS)
		return ph_err(ctx, PHSYNC_EINVAL, "file too long for block length %u",
		              block_len);
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		goto fail;
	g->ctx = ctx;
	g->known = basis_len != PHSYNC_LEN_UNKNOWN;
	g->basis_len = basis_len;
	g->block_len = block_len;
	g->strong_len = strong_len;
	g->avx2 = ph_rollsum_have_avx2();
	g->blk = malloc(block_len);
	g->stage_cap = PH_SIG_HDR_LEN + SIG_STAGE_HIGH + 4 + PHSYNC_SIG_MAX_STRONG;
	g->stage = malloc(g->stage_cap);
	if (g->blk == NULL || g->stage == NULL)
		goto fail;
	/* Unknown length: the header is filled in at the end. */
	put_sig_header(g->stage, strong_len, block_len, g->known ? basis_len : 0);
	g->stage_len = PH_SIG_HDR_LEN;
	*out = g;
	return 0;
fail:
	phsync_sig_gen_free(g);
	return ph_err(ctx, rc, "out of memory for a signature");
}

void
phsync_sig_gen_free(phsync_sig_gen *g)
{
	if (g == NULL)
		return;
	free(g->blk);
	free(g->stage);
	free(g);
}

/* Appends the record of one block (full, or the short last one). */
static int
gen_block(phsync_sig_gen *g, const uint8_t *p, size_t n)
{
	size_t rec = 4 + g->strong_len;
	uint32_t a, b;
	uint64_t strong;

	if (g->stage_len + rec > g->stage_cap) { /* unknown length only */
		size_t ncap = g->stage_cap * 2;
		uint8_t *ns;

		if (g->blocks >= PHSYNC_SIG_MAX_BLOCKS)
			return ph_err(g->ctx, PHSYNC_EINVAL, "file too long for block length %u",
			              g->block_len);
		ns = realloc(g->stage, ncap);
		if (ns == NULL)
			return ph_err(g->ctx, PHSYNC_ENOMEM, "out of memory for a signature");
		g->stage = ns;
		g->stage_cap = ncap;
	}
	ph_rollsum_block_fast(p, n, &a, &b, g->avx2);
	ph_put_be32(g->stage + g->stage_len, ph_rollsum_weak(a, b));
	strong = ph_delta_strong(p, n, g->strong_len);
	for (unsigned i = 0; i < g->strong_len; i++)
		g->stage[g->stage_len + 4 + i] =
			(uint8_t)(strong >> (8 * (g->strong_len - 1 - i)));
	g->stage_len += rec;
	g->blocks++;
	return 0;
}

/* Writes staged bytes to out; returns nonzero when all were written. */
static int
gen_drain(phsync_sig_gen *g, struct phsync_out *out)
{
	size_t n = g->stage_len - g->stage_pos;
	size_t room = out->size - out->pos;

	if (!g->known && !g->finished)
		return 1; /* nothing may leave before the header is known */
	if (n > room)
		n = room;
	memcpy((uint8_t *)out->ptr + out->pos, g->stage + g->stage_pos, n);
	out->pos += n;
	g->stage_pos += n;
	if (g->stage_pos < g->stage_len)
		return 0;
	g->stage_pos = g->stage_len = 0;
	return 1;
}

static int
gen_finish(phsync_sig_gen *g)
{
	int rc;

	if (g->blk_len > 0) {
		rc = gen_block(g, g->blk, g->blk_len);
		if (rc < 0)
			return rc;
		g->blk_len = 0;
	}
	if (g->known && g->seen != g->basis_len)
		return ph_err(g->ctx, PHSYNC_EINVAL,
		              "file is %llu bytes, %llu were declared",
		              (unsigned long long)g->seen,
		              (unsigned long long)g->basis_len);
	if (!g->known)
		put_sig_header(g->stage, g->strong_len, g->block_len, g->seen);
	g->finished = 1;
	return 0;
}

int
phsync_sig_gen_stream(phsync_sig_gen *g, struct phsync_out *out,
                      struct phsync_in *in, int end, int *done)
{
	const uint8_t *src = in->ptr;
	int rc = 0;

	*done = 0;
	if (g->err)
		return g->err;
	for (;;) {
		size_t avail = in->size - in->pos;

		if (!gen_drain(g, out))
			return 0;
		if (g->finished) {
			*done = 1;
			return 0;
		}
		if (avail == 0) {
			if (!end)
				return 0;
			rc = gen_finish(g);
			if (rc < 0)
				goto fail;
			continue;
		}
		if (g->known && avail > g->basis_len - g->seen) {
			rc = ph_err(g->ctx, PHSYNC_EINVAL,
			            "file is longer than the declared %llu bytes",
			            (unsigned long long)g->basis_len);
			goto fail;
		}
		/* Hash whole blocks straight from the input, stopping when the
		 * stage is full so memory stays bounded. */
		while (g->blk_len == 0 && avail >= g->block_len &&
		       (!g->known || g->stage_len < SIG_STAGE_HIGH)) {
			rc = gen_block(g, src + in->pos, g->block_len);
			if (rc < 0)
				goto fail;
			in->pos += g->block_len;
			g->seen += g->block_len;
			avail -= g->block_len;
		}
		if (avail > 0 && (!g->known || g->stage_len < SIG_STAGE_HIGH)) {
			size_t n = g->block_len - g->blk_len;

			if (n > avail)
				n = avail;
			memcpy(g->blk + g->blk_len, src + in->pos, n);
			g->blk_len += n;
			in->pos += n;
			g->seen += n;
			if (g->blk_len == g->block_len) {
				rc = gen_block(g, g->blk, g->blk_len);
				if (rc < 0)
					goto fail;
				g->blk_len = 0;
			}
		}
	}
fail:
	g->err = rc;
	return rc;
}

/* ---- loading ---------------------------------------------------------- */

int
phsync_sig_new(phsync_ctx *ctx, phsync_sig **out)
{
	phsync_sig *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (s == NULL)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a signature");
	s->ctx = ctx;
	*out = s;
	return 0;
}

void
phsync_sig_free(phsync_sig *s)
{
	if (s == NULL)
		return;
	free(s->weak);
	free(s->strong);
	free(s->entries);
	free(s->bucket);
	free(s->filter);
	free(s);
}

static int
parse_header(phsync_sig *s)
{
	const uint8_t *h = s->hdr;
	uint32_t block_len = ph_get_be32(h + 8);
	uint64_t basis_len = ph_get_be64(h + 12);

	if (memcmp(h, PH_SIG_MAGIC, 4) != 0)
		return ph_err(s->ctx, PHSYNC_ECORRUPT, "not a phsync signature (bad magic)");
	if (h[4] != PHSYNC_SIG_VERSION)
		return ph_err(s->ctx, PHSYNC_ECORRUPT, "signature version %u not supported",
		              h[4]);
	if (h[5] < PHSYNC_SIG_MIN_STRONG || h[5] > PHSYNC_SIG_MAX_STRONG ||
	    h[6] != 0 || h[7] != 0)
		return ph_err(s->ctx, PHSYNC_ECORRUPT,
		              "signature header: bad strong length or flags");
	if (block_len < PHSYNC_SIG_MIN_BLOCK || block_len > PHSYNC_SIG_MAX_BLOCK)
		return ph_err(s->ctx, PHSYNC_ECORRUPT, "signature block length %u out of range",
		              block_len);
	if (blocks_for(basis_len, block_len) > PHSYNC_SIG_MAX_BLOCKS)
		return ph_err(s->ctx, PHSYNC_ECORRUPT, "signature has too many blocks");
	s->info.block_len = block_len;
	s->info.strong_len = h[5];
	s->info.basis_len = basis_len;
	s->info.count = blocks_for(basis_len, block_len);
	return 0;
}

static int
add_block(phsync_sig *s, uint32_t weak, uint64_t strong)
{
	if (s->n == s->cap) {
		uint64_t ncap = s->cap ? s->cap * 2 : 1024;
		uint32_t *nw;
		uint64_t *ns;

		if (ncap > s->info.count)
			ncap = s->info.count;
		nw = realloc(s->weak, ncap * sizeof(*nw));
		if (nw == NULL)
			return ph_err(s->ctx, PHSYNC_ENOMEM, "out of memory for a signature");
		s->weak = nw;
		ns = realloc(s->strong, ncap * sizeof(*ns));
		if (ns == NULL)
			return ph_err(s->ctx, PHSYNC_ENOMEM, "out of memory for a signature");
		s->strong = ns;
		s->cap = ncap;
	}
	s->weak[s->n] = weak;
	s->strong[s->n] = strong;
	s->n++;
	return 0;
}

/* Appends the block described by one serialized record. */
static int
add_record(phsync_sig *s, const uint8_t *p)
{
	uint64_t strong = 0;

	for (size_t i = 0; i < s->info.strong_len; i++)
		strong = strong << 8 | p[4 + i];
	return add_block(s, ph_get_be32(p), strong);
}

struct sort_ent {
	uint32_t weak;
	uint32_t block;
	uint64_t strong;
};

static int
cmp_ent(const void *x, const void *y)
{
	const struct sort_ent *a = x, *b = y;

	if (a->weak != b->weak)
		return a->weak < b->weak ? -1 : 1;
	if (a->strong != b->strong)
		return a->strong < b->strong ? -1 : 1;
	return a->block < b->block ? -1 : a->block > b->block;
}

static unsigned
ceil_log2(uint64_t v)
{
	unsigned r = 0;

	while ((1ull << r) < v)
		r++;
	return r;
}

/* Builds the index over the full blocks: one entry per distinct
 * (weak, strong) pair, at most CHAIN_MAX per bucket, and the filter. */
static int
build_index(phsync_sig *s)
{
	uint64_t n = s->nfull, uniq = 0, i;
	unsigned tbits, fbits;
	struct sort_ent *tmp = NULL;
	uint32_t kept = 0, cur = 0, chain = 0;
	int rc = PHSYNC_ENOMEM;

	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	if (tmp == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		tmp[i].weak = s->weak[i];
		tmp[i].block = (uint32_t)i;
		tmp[i].strong = s->strong[i];
	}
	qsort(tmp, n, sizeof(*tmp), cmp_ent);
	for (i = 0; i < n; i++)
		if (i == 0 || tmp[i].weak != tmp[uniq - 1].weak ||
		    tmp[i].strong != tmp[uniq - 1].strong)
			tmp[uniq++] = tmp[i];
	tbits = ceil_log2(uniq);
	if (tbits < 4)
		tbits = 4;
	fbits = ceil_log2(uniq) + 6;
	if (fbits < 12)
		fbits = 12;
	if (fbits > 27)
		fbits = 27;
	s->tshift = 32 - tbits;
	s->fshift = 32 - (fbits - 6);
	s->entries = malloc((uniq ? uniq : 1) * sizeof(*s->entries));
	s->bucket = calloc(((size_t)1 << tbits) + 1, sizeof(*s->bucket));
	s->filter = calloc((size_t)1 << (fbits - 6), sizeof(*s->filter));
	if (s->entries == NULL || s->bucket == NULL || s->filter == NULL)
		goto out;
	/* Entries sorted by weak are sorted by bucket; bucket[b] ends up as the
	 * first entry of bucket b. Chains longer than CHAIN_MAX are cut. */
	for (i = 0; i < uniq; i++) {
		uint32_t b = tmp[i].weak >> s->tshift;
		uint32_t f = tmp[i].weak >> s->fshift;

		if (i == 0 || b != cur) {
			for (uint32_t k = i == 0 ? 0 : cur + 1; k <= b; k++)
				s->bucket[k] = kept;
			cur = b;
			chain = 0;
		}
		if (chain++ >= CHAIN_MAX)
			continue;
		s->entries[kept].weak = tmp[i].weak;
		s->entries[kept].block = tmp[i].block;
		kept++;
		s->filter[f] |= 1ull << (tmp[i].weak & 63) | 1ull << (tmp[i].weak >> 6 & 63);
	}
	for (uint64_t k = uniq ? (uint64_t)cur + 1 : 0; k <= (1ull << tbits); k++)
		s->bucket[k] = kept;
	rc = 0;
out:
	free(tmp);
	if (rc < 0)
		return ph_err(s->ctx, rc, "out of memory for a signature index");
	return 0;
}

static int
sig_complete(phsync_sig *s)
{
	uint64_t tail = s->info.basis_len % s->info.block_len;

	s->nfull = s->info.basis_len / s->info.block_len;
	s->last_len = tail ? (uint32_t)tail : s->info.block_len;
	s->complete = 1;
	return build_index(s);
}

int
phsync_sig_load(phsync_sig *s, struct phsync_in *in, int end)
{
	const uint8_t *src = in->ptr;
	int rc = 0;

	if (s->err)
		return s->err;
	if (s->complete && in->pos < in->size) {
		rc = ph_err(s->ctx, PHSYNC_ECORRUPT, "trailing bytes after the signature");
		goto fail;
	}
	while (!s->complete) {
		size_t avail = in->size - in->pos;
		size_t rec = 4 + s->info.strong_len;

		if (s->hdr_len < PH_SIG_HDR_LEN) {
			size_t n = PH_SIG_HDR_LEN - s->hdr_len;

			if (n > avail)
				n = avail;
			memcpy(s->hdr + s->hdr_len, src + in->pos, n);
			s->hdr_len += n;
			in->pos += n;
			if (s->hdr_len < PH_SIG_HDR_LEN)
				break;
			rc = parse_header(s);
			if (rc < 0)
				goto fail;
			if (s->info.count == 0) {
				rc = sig_complete(s);
				if (rc < 0)
					goto fail;
			}
			continue;
		}
		if (avail == 0)
			break;
		while (s->rec_len == 0 && avail >= rec && s->n < s->info.count) {
			rc = add_record(s, src + in->pos);
			if (rc < 0)
				goto fail;
			in->pos += rec;
			avail -= rec;
		}
		if (avail > 0 && s->n < s->info.count) {
			size_t n = rec - s->rec_len;

			if (n > avail)
				n = avail;
			memcpy(s->rec + s->rec_len, src + in->pos, n);
			s->rec_len += n;
			in->pos += n;
			if (s->rec_len == rec) {
				rc = add_record(s, s->rec);
				if (rc < 0)
					goto fail;
				s->rec_len = 0;
			}
		}
		if (s->n == s->info.count) {
			rc = sig_complete(s);
			if (rc < 0)
				goto fail;
		}
	}
	if (s->complete && in->pos < in->size) {
		rc = ph_err(s->ctx, PHSYNC_ECORRUPT, "trailing bytes after the signature");
		goto fail;
	}
	if (!s->complete && end && in->pos == in->size) {
		rc = ph_err(s->ctx, PHSYNC_ECORRUPT, "signature is truncated");
		goto fail;
	}
	return 0;
fail:
	s->err = rc;
	return rc;
}

int
phsync_sig_from_blocks(phsync_ctx *ctx, const struct phsync_sig_info *info,
                       const uint32_t *weak, const uint64_t *strong,
                       phsync_sig **out)
{
	phsync_sig *s = NULL;
	int rc;

	*out = NULL;
	if (info->block_len < PHSYNC_SIG_MIN_BLOCK ||
	    info->block_len > PHSYNC_SIG_MAX_BLOCK ||
	    info->strong_len < PHSYNC_SIG_MIN_STRONG ||
	    info->strong_len > PHSYNC_SIG_MAX_STRONG ||
	    blocks_for(info->basis_len, info->block_len) > PHSYNC_SIG_MAX_BLOCKS ||
	    info->count != blocks_for(info->basis_len, info->block_len))
		return ph_err(ctx, PHSYNC_EINVAL, "inconsistent signature parameters");
	rc = phsync_sig_new(ctx, &s);
	if (rc < 0)
		return rc;
	s->info = *info;
	s->hdr_len = PH_SIG_HDR_LEN;
	for (uint64_t i = 0; i < info->count; i++) {
		rc = add_block(s, weak[i], strong[i] & (~0ull >> (64 - 8 * info->strong_len)));
		if (rc < 0)
			goto out;
	}
	rc = sig_complete(s);
out:
	if (rc < 0)
		phsync_sig_free(s);
	else
		*out = s;
	return rc;
}

int
phsync_sig_get_info(const phsync_sig *s, struct phsync_sig_info *info)
{
	if (!s->complete)
		return PHSYNC_EINVAL;
	*info = s->info;
	return 0;
}

int
phsync_sig_block(const phsync_sig *s, uint64_t i, uint32_t *weak, uint64_t *strong)
{
	if (!s->complete || i >= s->info.count)
		return PHSYNC_EINVAL;
	*weak = s->weak[i];
	*strong = s->strong[i];
	return 0;
}
