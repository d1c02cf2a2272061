/* SPDX-License-Identifier: ISC */
/* Delta generation: scan the new file against a signature's match index
 * and produce COPY/LITERAL ops. Algorithm: docs/DELTA.md. */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "delta_int.h"
#include "rollsum.h"

#define DIFF_CHUNK (256u * 1024) /* input taken per refill, beyond a window */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DIFF_X86_DISPATCH 1 /* pick the scan loop by CPU feature */
#endif
#define QUEUE_MAX 4

struct phsync_diff {
	phsync_ctx *ctx;
	int err;
	const phsync_sig *sig;
	uint32_t L;
	unsigned strong_len;
	/* window buffer: [start, pos) pending literal, [pos, end) unscanned */
	uint8_t *buf;
	size_t cap, start, pos, end;
	int have_sum;          /* a, b describe the window at pos */
	int checked;           /* ... and it was looked up without a match */
	uint32_t a, b;
	int try_fast;          /* pos follows a match: try block last + 1 */
	uint64_t last;
	uint32_t miss_weak;    /* last weak sum whose strong hash missed ... */
	uint64_t miss_until;   /* ... and the new-file offset it is ignored until */
	uint64_t base;         /* new-file offset of buf[0] */
	uint64_t pc_off, pc_len; /* COPY being merged, not yet queued */
	uint64_t out_off;      /* new-file offset of the next queued op */
	int finishing, ended;
	int bmi2;              /* the CPU has BMI2: use search_bmi2 */
	int avx2;              /* ... AVX2: ph_rollsum_block_fast may use it */
	XXH3_state_t *hash;
	struct phsync_delta_op q[QUEUE_MAX];
	unsigned qhead, qlen;
	struct phsync_diff_stats st;
	/* phsync_diff_stream's serializer */
	int hdr_sent, stream_done;
	uint8_t ser[PH_OP_END_LEN];
	size_t ser_len, ser_pos;
	const uint8_t *ser_data;
	size_t ser_dlen, ser_dpos;
};

int
phsync_diff_new(phsync_ctx *ctx, const phsync_sig *sig, phsync_diff **out)
{
	phsync_diff *d;
	int rc;

	*out = NULL;
	if (!sig->complete)
		return ph_err(ctx, PHSYNC_EINVAL, "diff needs a complete signature");
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a diff");
	d->ctx = ctx;
	d->hash = XXH3_createState();
#ifdef DIFF_X86_DISPATCH
	__builtin_cpu_init();
	d->bmi2 = __builtin_cpu_supports("bmi2") != 0;
#endif
	d->avx2 = ph_rollsum_have_avx2();
	if (d->hash == NULL) {
		phsync_diff_free(d);
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a diff");
	}
	if ((rc = phsync_diff_reset(d, sig)) != 0) {
		phsync_diff_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int
phsync_diff_reset(phsync_diff *d, const phsync_sig *sig)
{
	phsync_ctx *ctx = d->ctx;
	XXH3_state_t *hash = d->hash;
	uint8_t *buf = d->buf;
	size_t cap = d->cap, need;
	int bmi2 = d->bmi2, avx2 = d->avx2;

	if (!sig->complete)
		return ph_err(ctx, PHSYNC_EINVAL, "diff needs a complete signature");
	need = PHSYNC_DELTA_MAX_LITERAL + 2 * (size_t)sig->info.block_len + DIFF_CHUNK;
	if (need > cap) {
		/* Grown with room to spare: the next file's block is most likely
		 * a little longer again. Nothing in it is kept. */
		size_t ncap = cap + cap / 2 > need ? cap + cap / 2 : need;
		uint8_t *nb = malloc(ncap);

		if (nb == NULL)
			return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a diff");
		free(buf);
		buf = nb;
		cap = ncap;
	}
	memset(d, 0, sizeof(*d));
	d->ctx = ctx;
	d->hash = hash;
	d->buf = buf;
	d->cap = cap;
	d->bmi2 = bmi2;
	d->avx2 = avx2;
	d->sig = sig;
	d->L = sig->info.block_len;
	d->strong_len = sig->info.strong_len;
	XXH3_128bits_reset(d->hash);
	return 0;
}

void
phsync_diff_free(phsync_diff *d)
{
	if (d == NULL)
		return;
	free(d->buf);
	XXH3_freeState(d->hash);
	free(d);
}

void
phsync_diff_get_stats(const phsync_diff *d, struct phsync_diff_stats *st)
{
	*st = d->st;
}

static void
push(phsync_diff *d, enum phsync_op_type type, uint64_t off, uint64_t len,
     const uint8_t *data)
{
	struct phsync_delta_op *op = &d->q[(d->qhead + d->qlen++) % QUEUE_MAX];

	memset(op, 0, sizeof(*op));
	op->type = type;
	op->out_off = d->out_off;
	op->off = off;
	op->len = len;
	op->data = data;
	if (type == PHSYNC_OP_END)
		return;
	d->out_off += len;
	d->st.ops++;
	if (type == PHSYNC_OP_COPY)
		d->st.copy_bytes += len;
	else
		d->st.literal_bytes += len;
}

static void
flush_copy(phsync_diff *d)
{
	if (d->pc_len > 0)
		push(d, PHSYNC_OP_COPY, d->pc_off, d->pc_len, NULL);
	d->pc_len = 0;
}

static void
flush_literal(phsync_diff *d, size_t n)
{
	flush_copy(d);
	push(d, PHSYNC_OP_LITERAL, 0, n, d->buf + d->start);
	d->start += n;
}

/* Block k matched at pos: queue what precedes it and merge the COPY. */
static void
matched(phsync_diff *d, uint64_t k, size_t len)
{
	uint64_t off = k * d->L;

	if (d->start < d->pos)
		flush_literal(d, d->pos - d->start);
	if (d->pc_len > 0 && d->pc_off + d->pc_len == off) {
		d->pc_len += len;
	} else {
		flush_copy(d);
		d->pc_off = off;
		d->pc_len = len;
	}
	d->pos += len;
	d->start = d->pos;
	d->have_sum = d->checked = 0;
	d->last = k;
	d->try_fast = 1;
}

/* Moves the window's live part down to the buffer's start when the free
 * tail is under want bytes. */
static void
make_room(phsync_diff *d, size_t want)
{
	if (d->cap - d->end < want && d->start > 0) {
		memmove(d->buf, d->buf + d->start, d->end - d->start);
		d->base += d->start;
		d->pos -= d->start;
		d->end -= d->start;
		d->start = 0;
	}
}

/* Counts n bytes put at the window's end as input. */
static void
took(phsync_diff *d, size_t n)
{
	XXH3_128bits_update(d->hash, d->buf + d->end, n);
	d->end += n;
	d->st.in_bytes += n;
}

/* Takes input into the window buffer. */
static void
fill(phsync_diff *d, struct phsync_in *in)
{
	size_t avail = in->size - in->pos, n;

	make_room(d, avail);
	n = d->cap - d->end;
	if (n > avail)
		n = avail;
	memcpy(d->buf + d->end, (const uint8_t *)in->ptr + in->pos, n);
	took(d, n);
	in->pos += n;
}

size_t
phsync_diff_space(phsync_diff *d, void **p)
{
	make_room(d, DIFF_CHUNK);
	*p = d->buf + d->end;
	return d->cap - d->end;
}

void
phsync_diff_commit(phsync_diff *d, size_t n)
{
	if (n > d->cap - d->end)
		n = d->cap - d->end;
	took(d, n);
}

/* Looks up the window at p with weak sum w; returns the matching block
 * or UINT64_MAX. Called only when w passed the filter. */
static __attribute__((noinline)) uint64_t
lookup(phsync_diff *d, const uint8_t *p, uint32_t w, uint64_t off)
{
	const phsync_sig *s = d->sig;
	uint32_t b = w >> s->tshift;
	uint64_t strong = 0;
	int have = 0;

	d->st.filter_hits++;
	if (w == d->miss_weak && off < d->miss_until)
		return UINT64_MAX;
	for (uint32_t i = s->bucket[b]; i < s->bucket[b + 1]; i++) {
		const struct ph_sig_entry *e = &s->entries[i];

		if (e->weak != w)
			continue;
		if (!have) {
			strong = ph_delta_strong(p, d->L, d->strong_len);
			d->st.strong_calls++;
			have = 1;
		}
		if (s->strong[e->block] == strong)
			return e->block;
	}
	if (have) {
		/* A weak sum that keeps colliding (a run of equal bytes) costs at
		 * most one strong hash per block length of input. */
		d->st.strong_misses++;
		d->miss_weak = w;
		d->miss_until = off + d->L;
	}
	return UINT64_MAX;
}

/* Bit 0 is set when weak sum w passes the filter: the top bits of w pick
 * a 64-bit word, which must have two bits set, picked by bits 0..5 and
 * 6..11 of w (docs/DELTA.md, "Match index"). One load; the shifts need no
 * masking on x86, which takes the count mod 64 itself. */
static inline uint64_t
filter_test(const uint64_t *filter, unsigned wshift, uint32_t w)
{
	uint64_t f = filter[w >> wshift];

	/* w rotated right by 6 has bits 6..11 at the bottom: one rorx */
	return (f >> (w & 63)) & (f >> ((w >> 6 | w << 26) & 63));
}

#define ROLL(a, b, in, out, L)                                                 \
	do {                                                                   \
		(a) += (uint32_t)(in) - (out);                                 \
		(b) += (a) - (L) * (out);                                      \
	} while (0)

/* Looks up the n positions from p one by one, rolling a and b from the
 * window at p; returns the first matching block and sets *at to its
 * offset from p, or UINT64_MAX. Kept out of search's loop so that loop
 * holds nothing but the sums. */
static __attribute__((noinline)) uint64_t
search_group(phsync_diff *d, size_t p, int n, uint32_t a, uint32_t b, int *at)
{
	const phsync_sig *s = d->sig;
	const uint8_t *q = d->buf + p, *r = q + d->L;
	const uint32_t L = d->L;

	for (int i = 0; i < n; i++) {
		uint32_t w = ph_rollsum_weak(a, b), out = q[i];

		if (filter_test(s->filter, s->fshift, w) & 1) {
			uint64_t k = lookup(d, q + i, w, d->base + p + (size_t)i);

			if (k != UINT64_MAX) {
				*at = i;
				return k;
			}
		}
		ROLL(a, b, r[i], out, L);
	}
	return UINT64_MAX;
}

/* Rolls from pos towards stop (inclusive), looking each window up.
 * Returns the matching block with pos at its window, or UINT64_MAX with
 * pos == stop and the window there checked. The main loop tests eight
 * positions per branch and keeps nothing but a, b and the OR of their
 * filter words; a group with a hit is looked at again by search_group.
 * The roll is inlined, with no calls. */
static inline __attribute__((always_inline)) uint64_t
search_body(phsync_diff *d, size_t stop)
{
	const phsync_sig *s = d->sig;
	const uint64_t *filter = s->filter;
	const unsigned wshift = s->fshift;
	const uint8_t *buf = d->buf;
	const uint32_t L = d->L;
	uint32_t a = d->a, b = d->b;
	size_t p = d->pos;
	uint64_t k = UINT64_MAX;

	while (p + 8 <= stop) {
		const uint8_t *q = buf + p, *r = q + L;
		uint32_t a0 = a, b0 = b;
		uint64_t hit = 0;

		for (int i = 0; i < 8; i++) {
			uint32_t w = ph_rollsum_weak(a, b), out = q[i];

			hit |= filter_test(filter, wshift, w);
			ROLL(a, b, r[i], out, L);
		}
		if (__builtin_expect(hit & 1, 0)) {
			int at;

			k = search_group(d, p, 8, a0, b0, &at);
			if (k != UINT64_MAX) {
				d->pos = p + (size_t)at;
				d->checked = 0;
				return k;
			}
		}
		p += 8;
	}
	for (;;) {
		uint32_t w = ph_rollsum_weak(a, b);

		if (filter_test(filter, wshift, w) & 1) {
			k = lookup(d, buf + p, w, d->base + p);
			if (k != UINT64_MAX)
				break;
		}
		if (p == stop)
			break;
		{
			uint32_t out = buf[p];

			ROLL(a, b, buf[p + L], out, L);
		}
		p++;
	}
	d->pos = p;
	d->a = a;
	d->b = b;
	d->checked = k == UINT64_MAX;
	return k;
}

static uint64_t
search_portable(phsync_diff *d, size_t stop)
{
	return search_body(d, stop);
}

#ifdef DIFF_X86_DISPATCH
/* The same loop with BMI2's shifts (shrx: any register, no flags), which
 * saves the moves through %cl that the filter test needs otherwise. */
static __attribute__((target("bmi2"))) uint64_t
search_bmi2(phsync_diff *d, size_t stop)
{
	return search_body(d, stop);
}
#endif

static uint64_t
search(phsync_diff *d, size_t stop)
{
#ifdef DIFF_X86_DISPATCH
	if (d->bmi2)
		return search_bmi2(d, stop);
#endif
	return search_portable(d, stop);
}

void
ph_diff_force_portable(phsync_diff *d)
{
	d->bmi2 = 0;
	d->avx2 = 0;
}

/* End of input: match the short last block, flush literals, queue END. */
static void
finish(phsync_diff *d)
{
	const phsync_sig *s = d->sig;
	size_t r = d->end - d->pos;
	XXH128_canonical_t c;

	if (!d->finishing) {
		d->finishing = 1;
		if (r > 0 && r == s->last_len && r < d->L &&
		    ph_delta_strong(d->buf + d->pos, r, d->strong_len) ==
		    s->strong[s->info.count - 1]) {
			matched(d, s->info.count - 1, r);
			return;
		}
		d->pos = d->end; /* the rest is literal */
	}
	if (d->start < d->end) {
		size_t n = d->end - d->start;

		flush_literal(d, n > PHSYNC_DELTA_MAX_LITERAL ? PHSYNC_DELTA_MAX_LITERAL : n);
		return;
	}
	flush_copy(d);
	push(d, PHSYNC_OP_END, 0, d->st.in_bytes, NULL);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(d->hash));
	memcpy(d->q[(d->qhead + d->qlen - 1) % QUEUE_MAX].hash, c.digest, 16);
	d->ended = 1;
}

/* Scans until at least one op is queued or input is needed. */
static void
scan(phsync_diff *d, struct phsync_in *in, int end)
{
	const phsync_sig *s = d->sig;
	const size_t L = d->L;

	while (d->qlen == 0 && !d->ended) {
		size_t stop;
		uint64_t k;

		if (d->pos - d->start >= PHSYNC_DELTA_MAX_LITERAL) {
			flush_literal(d, PHSYNC_DELTA_MAX_LITERAL);
			continue;
		}
		if (d->pos + L + d->checked > d->end) {
			if (in->pos < in->size) {
				fill(d, in);
				continue;
			}
			if (!end)
				return;
			finish(d);
			continue;
		}
		if (d->try_fast) {
			d->try_fast = 0;
			if (d->last + 1 < s->nfull &&
			    ph_delta_strong(d->buf + d->pos, L, d->strong_len) ==
			    s->strong[d->last + 1]) {
				d->st.fast_hits++;
				matched(d, d->last + 1, L);
				continue;
			}
		}
		if (!d->have_sum) {
			ph_rollsum_block_fast(d->buf + d->pos, L, &d->a, &d->b, d->avx2);
			d->have_sum = 1;
			d->checked = 0;
		} else if (d->checked) {
			uint32_t out = d->buf[d->pos];

			ROLL(d->a, d->b, d->buf[d->pos + L], out, (uint32_t)L);
			d->pos++;
			d->checked = 0;
		}
		stop = d->end - L;
		if (stop > d->start + PHSYNC_DELTA_MAX_LITERAL)
			stop = d->start + PHSYNC_DELTA_MAX_LITERAL;
		k = search(d, stop);
		if (k != UINT64_MAX)
			matched(d, k, L);
	}
}

int
phsync_diff_next(phsync_diff *d, struct phsync_in *in, int end,
                 struct phsync_delta_op *op)
{
	memset(op, 0, sizeof(*op));
	if (d->err)
		return d->err;
	if (d->qlen == 0)
		scan(d, in, end);
	if (d->qlen > 0) {
		*op = d->q[d->qhead];
		d->qhead = (d->qhead + 1) % QUEUE_MAX;
		d->qlen--;
	}
	return 0;
}

/* Encodes op's header into d->ser (and points at a literal's bytes). */
static void
encode(phsync_diff *d, const struct phsync_delta_op *op)
{
	uint8_t *p = d->ser;

	d->ser_pos = 0;
	d->ser_data = NULL;
	d->ser_dlen = d->ser_dpos = 0;
	switch (op->type) {
	case PHSYNC_OP_COPY:
		p[0] = PH_OP_COPY;
		ph_put_be64(p + 1, op->off);
		ph_put_be64(p + 9, op->len);
		d->ser_len = PH_OP_COPY_LEN;
		break;
	case PHSYNC_OP_LITERAL:
		p[0] = PH_OP_LITERAL;
		ph_put_be32(p + 1, (uint32_t)op->len);
		d->ser_len = PH_OP_LITERAL_LEN;
		d->ser_data = op->data;
		d->ser_dlen = (size_t)op->len;
		break;
	case PHSYNC_OP_END:
		p[0] = PH_OP_END;
		ph_put_be64(p + 1, op->len);
		memcpy(p + 9, op->hash, 16);
		d->ser_len = PH_OP_END_LEN;
		d->stream_done = 1;
		break;
	default:
		d->ser_len = 0;
		break;
	}
}

static size_t
put(struct phsync_out *out, const uint8_t *src, size_t n)
{
	size_t room = out->size - out->pos;

	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	memcpy((uint8_t *)out->ptr + out->pos, src, n);
	out->pos += n;
	return n;
}

int
phsync_diff_stream(phsync_diff *d, struct phsync_out *out,
                   struct phsync_in *in, int end, int *done)
{
	struct phsync_delta_op op;
	int rc;

	*done = 0;
	if (d->err)
		return d->err;
	if (!d->hdr_sent) {
		memcpy(d->ser, PH_DELTA_MAGIC, 4);
		d->ser[4] = PHSYNC_DELTA_VERSION;
		memset(d->ser + 5, 0, 3);
		d->ser_len = PH_DELTA_HDR_LEN;
		d->ser_pos = 0;
		d->hdr_sent = 1;
	}
	for (;;) {
		d->ser_pos += put(out, d->ser + d->ser_pos, d->ser_len - d->ser_pos);
		if (d->ser_pos < d->ser_len)
			return 0;
		d->ser_dpos += put(out, d->ser_data + d->ser_dpos, d->ser_dlen - d->ser_dpos);
		if (d->ser_dpos < d->ser_dlen)
			return 0;
		if (d->stream_done) {
			*done = 1;
			return 0;
		}
		rc = phsync_diff_next(d, in, end, &op);
		if (rc < 0)
			return rc;
		if (op.type == PHSYNC_OP_NONE)
			return 0;
		encode(d, &op);
	}
}
