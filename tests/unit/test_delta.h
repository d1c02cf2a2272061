/* SPDX-License-Identifier: ISC */
/* Helpers shared by the delta engine's tests: growable byte buffers,
 * deterministic data and edits, and the engine driven in given chunk
 * sizes. Everything is static inline so each test uses what it needs. */
#ifndef TEST_DELTA_H
#define TEST_DELTA_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/delta.h"

struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static inline void
dt_reserve(struct bytes *b, size_t n)
{
	if (b->cap >= n)
		return;
	b->cap = n > 2 * b->cap ? n : 2 * b->cap;
	b->p = realloc(b->p, b->cap);
	assert_non_null(b->p);
}

static inline void
dt_append(struct bytes *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	dt_reserve(b, b->n + n);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static inline void
dt_free(struct bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static inline void
dt_copy(struct bytes *dst, const struct bytes *src)
{
	dst->n = 0;
	dt_append(dst, src->p, src->n);
}

static inline uint64_t
dt_rand(uint64_t *s) /* splitmix64 */
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static inline void
dt_fill(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = seed == NULL ? 0 : (uint8_t)(dt_rand(seed) >> 56);
}

static inline void
dt_random(struct bytes *b, size_t n, uint64_t *seed)
{
	b->n = 0;
	dt_reserve(b, n);
	dt_fill(b->p, n, seed);
	b->n = n;
}

/* Words from a small vocabulary: text-like, low-entropy data. */
static inline void
dt_text(struct bytes *b, size_t n, uint64_t *seed)
{
	static const char *const words[] = { "the ", "photo ", "IMG_", "2024",
		"\n", "sync ", "phone ", "0000", "{\"a\": 1}, ", "    " };

	b->n = 0;
	while (b->n < n) {
		const char *w = words[dt_rand(seed) % 10];
		size_t k = strlen(w);

		dt_append(b, w, b->n + k > n ? n - b->n : k);
	}
}

/* Inserts n bytes at at (random, or zeros when seed is NULL). */
static inline void
dt_insert(struct bytes *b, size_t at, size_t n, uint64_t *seed)
{
	dt_reserve(b, b->n + n);
	memmove(b->p + at + n, b->p + at, b->n - at);
	dt_fill(b->p + at, n, seed);
	b->n += n;
}

static inline void
dt_delete(struct bytes *b, size_t at, size_t n)
{
	if (at + n > b->n)
		n = b->n - at;
	memmove(b->p + at, b->p + at + n, b->n - at - n);
	b->n -= n;
}

static inline void
dt_overwrite(struct bytes *b, size_t at, size_t n, uint64_t *seed)
{
	if (at + n > b->n)
		n = b->n - at;
	dt_fill(b->p + at, n, seed);
}

static inline void
dt_random_edit(struct bytes *b, uint64_t *seed)
{
	size_t at = b->n ? (size_t)(dt_rand(seed) % b->n) : 0;
	size_t n = (size_t)(dt_rand(seed) % 3000);

	switch (dt_rand(seed) % 5) {
	case 0:
		dt_insert(b, at, n, seed);
		break;
	case 1:
		dt_delete(b, at, n);
		break;
	case 2:
		dt_overwrite(b, at, 64, seed);
		break;
	case 3: /* move a range to the end */
		if (at + n > b->n)
			n = b->n - at;
		{
			uint8_t *t = malloc(n + 1);

			memcpy(t, b->p + at, n);
			dt_delete(b, at, n);
			dt_append(b, t, n);
			free(t);
		}
		break;
	default:
		b->n = at; /* truncate */
		break;
	}
}

static inline void
dt_assert_same(const struct bytes *a, const struct bytes *b)
{
	assert_int_equal(a->n, b->n);
	if (a->n > 0)
		assert_memory_equal(a->p, b->p, a->n);
}

typedef int (*dt_step_fn)(void *obj, struct phsync_out *out, struct phsync_in *in,
                          int end, int *done);

/* Pushes src through step in ichunk pieces, appending the output made
 * in ochunk pieces to out; returns the first error or 0. */
static inline int
dt_pump(dt_step_fn step, void *obj, const struct bytes *src, size_t ichunk,
        size_t ochunk, struct bytes *out)
{
	uint8_t *ob = malloc(ochunk);
	size_t pos = 0;
	int done = 0, rc = 0, stall = 0;

	assert_non_null(ob);
	while ((!done || pos < src->n) && rc == 0) {
		size_t n = src->n - pos < ichunk ? src->n - pos : ichunk;
		int last = pos + n == src->n;
		struct phsync_in in = { src->p ? src->p + pos : (const void *)"", n, 0 };

		do {
			struct phsync_out o = { ob, ochunk, 0 };
			size_t before = in.pos;

			rc = step(obj, &o, &in, last, &done);
			if (rc < 0)
				break;
			dt_append(out, ob, o.pos);
			stall = o.pos == 0 && in.pos == before && !done ? stall + 1 : 0;
			assert_true(stall < 3);
		} while (in.pos < in.size || (last && !done));
		pos += n;
	}
	free(ob);
	return rc;
}

static inline int
dt_step_sig(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_sig_gen_stream(o, out, in, end, done);
}

static inline int
dt_step_diff(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_diff_stream(o, out, in, end, done);
}

static inline int
dt_step_patch(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_patch_stream(o, out, in, end, done);
}

static inline void
dt_signature_len(const struct bytes *old, uint64_t declared, uint32_t block,
                 size_t ichunk, size_t ochunk, struct bytes *sig)
{
	phsync_sig_gen *g = NULL;

	sig->n = 0;
	assert_int_equal(phsync_sig_gen_new(NULL, declared, block, 0, &g), 0);
	assert_int_equal(dt_pump(dt_step_sig, g, old, ichunk, ochunk, sig), 0);
	phsync_sig_gen_free(g);
}

static inline void
dt_signature(const struct bytes *old, uint32_t block, size_t ichunk,
             size_t ochunk, struct bytes *sig)
{
	dt_signature_len(old, old->n, block, ichunk, ochunk, sig);
}

static inline void
dt_signature_unknown(const struct bytes *old, uint32_t block, size_t ichunk,
                     size_t ochunk, struct bytes *sig)
{
	dt_signature_len(old, PHSYNC_LEN_UNKNOWN, block, ichunk, ochunk, sig);
}

/* Loads sig in chunk pieces; returns rc and *out (NULL on failure). */
static inline int
dt_try_load_sig(const struct bytes *sig, size_t chunk, phsync_sig **out)
{
	phsync_sig *s = NULL;
	size_t pos = 0;
	int rc;

	assert_int_equal(phsync_sig_new(NULL, &s), 0);
	do {
		size_t n = sig->n - pos < chunk ? sig->n - pos : chunk;
		struct phsync_in in = { sig->p ? sig->p + pos : (const void *)"", n, 0 };

		rc = phsync_sig_load(s, &in, pos + n == sig->n);
		if (rc == 0)
			assert_int_equal(in.pos, n);
		pos += n;
	} while (rc == 0 && pos < sig->n);
	if (rc < 0) {
		phsync_sig_free(s);
		s = NULL;
	}
	*out = s;
	return rc;
}

static inline phsync_sig *
dt_load_sig(const struct bytes *sig, size_t chunk)
{
	phsync_sig *s;

	assert_int_equal(dt_try_load_sig(sig, chunk, &s), 0);
	return s;
}

static inline void
dt_diff(const phsync_sig *s, const struct bytes *nw, size_t ichunk, size_t ochunk,
        struct bytes *delta, struct phsync_diff_stats *st)
{
	phsync_diff *d = NULL;

	delta->n = 0;
	assert_int_equal(phsync_diff_new(NULL, s, &d), 0);
	assert_int_equal(dt_pump(dt_step_diff, d, nw, ichunk, ochunk, delta), 0);
	if (st != NULL)
		phsync_diff_get_stats(d, st);
	phsync_diff_free(d);
}

static inline void
dt_delta_of(const struct bytes *old, const struct bytes *nw, uint32_t block,
            size_t chunk, struct bytes *delta, struct phsync_diff_stats *st)
{
	struct bytes sig = { 0 };
	phsync_sig *s;

	dt_signature(old, block, chunk, chunk, &sig);
	s = dt_load_sig(&sig, chunk);
	dt_diff(s, nw, chunk, chunk, delta, st);
	phsync_sig_free(s);
	dt_free(&sig);
}

static inline int
dt_read_mem(void *arg, uint64_t off, void *buf, size_t len, size_t *got)
{
	const struct bytes *b = arg;

	assert_true(off <= b->n);
	*got = b->n - off < len ? (size_t)(b->n - off) : len;
	memcpy(buf, b->p + off, *got);
	return 0;
}

/* Applies delta to old; returns 0 with the result in out, or the error. */
static inline int
dt_patch(const struct bytes *old, const struct bytes *delta, size_t ichunk,
         size_t ochunk, struct bytes *out)
{
	phsync_patch *p = NULL;
	int rc;

	out->n = 0;
	assert_int_equal(phsync_patch_new(NULL, old->n, dt_read_mem, (void *)old, &p), 0);
	rc = dt_pump(dt_step_patch, p, delta, ichunk, ochunk, out);
	phsync_patch_free(p);
	return rc;
}

#endif
