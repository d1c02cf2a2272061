/* SPDX-License-Identifier: ISC */
/* Delta engine past 4 GiB: a synthetic 4 GiB + basis and an edited copy
 * are generated on the fly and streamed through signature, diff and patch,
 * never held in memory; the patched output is compared with the expected
 * bytes chunk by chunk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_delta.h"

#define UNIT (1u << 20)                     /* block length and chunk */
#define GIB4 (1ull << 32)
#define OLD_LEN (GIB4 + 6 * UNIT + 777)

/* The basis: a random 1 MiB pattern whose first 16 bytes in each unit are
 * replaced by the unit number, so every block differs. */
struct gen {
	uint8_t *pattern;
	uint8_t lit1[1000], lit2[100];
};

struct seg {
	int literal;        /* 0: basis range, 1: lit1, 2: lit2 */
	uint64_t off, len;  /* basis range */
};

/* The new file: edits only past 4 GiB. */
static const struct seg new_segs[] = {
	{ 0, 0, GIB4 + UNIT + 5000 },
	{ 1, 0, 1000 },                                        /* insert */
	{ 0, GIB4 + UNIT + 5000, UNIT - 4900 },
	{ 0, GIB4 + 2 * UNIT + 150, OLD_LEN - (GIB4 + 2 * UNIT + 150) }, /* 50 deleted */
	{ 2, 0, 100 },                                         /* append */
};

static void
gen_old(const struct gen *g, uint64_t off, uint8_t *out, size_t len)
{
	while (len > 0) {
		uint64_t unit = off / UNIT;
		size_t in = (size_t)(off % UNIT), n = UNIT - in;

		if (n > len)
			n = len;
		memcpy(out, g->pattern + in, n);
		for (size_t i = in; i < 16 && i < in + n; i++)
			out[i - in] = (uint8_t)(unit >> (8 * (i % 8)));
		off += n;
		out += n;
		len -= n;
	}
}

static uint64_t
new_len(void)
{
	uint64_t t = 0;

	for (size_t i = 0; i < sizeof(new_segs) / sizeof(new_segs[0]); i++)
		t += new_segs[i].len;
	return t;
}

static void
gen_new(const struct gen *g, uint64_t off, uint8_t *out, size_t len)
{
	uint64_t base = 0;

	for (size_t i = 0; len > 0; i++) {
		const struct seg *s = &new_segs[i];
		uint64_t in, n;

		if (off >= base + s->len) {
			base += s->len;
			continue;
		}
		in = off - base;
		n = s->len - in < len ? s->len - in : len;
		if (s->literal == 0)
			gen_old(g, s->off + in, out, (size_t)n);
		else
			memcpy(out, (s->literal == 1 ? g->lit1 : g->lit2) + in, (size_t)n);
		off += n;
		out += n;
		len -= (size_t)n;
		base += s->len;
	}
}

static int
read_basis(void *arg, uint64_t off, void *buf, size_t len, size_t *got)
{
	assert_true(off + len <= OLD_LEN);
	gen_old(arg, off, buf, len);
	*got = len;
	return 0;
}

static void
test_past_4gib(void **state)
{
	struct gen g;
	uint8_t *chunk = malloc(UNIT), *want = malloc(UNIT);
	uint8_t *obuf = malloc(UNIT);
	struct bytes sig = { 0 }, delta = { 0 };
	phsync_sig_gen *sg;
	phsync_sig *s;
	phsync_diff *d;
	phsync_patch *p;
	phsync_delta_reader *r;
	struct phsync_diff_stats st;
	struct phsync_delta_op op;
	struct phsync_in in;
	uint64_t seed = 4, off, nlen = new_len(), max_copy = 0, end_len = 0;
	int done = 0;

	(void)state;
	g.pattern = malloc(UNIT);
	dt_fill(g.pattern, UNIT, &seed);
	dt_fill(g.lit1, sizeof(g.lit1), &seed);
	dt_fill(g.lit2, sizeof(g.lit2), &seed);

	/* signature of the basis, streamed */
	assert_int_equal(phsync_sig_gen_new(NULL, OLD_LEN, UNIT, 0, &sg), 0);
	for (off = 0; !done;) {
		size_t n = OLD_LEN - off < UNIT ? (size_t)(OLD_LEN - off) : UNIT;
		struct phsync_out o = { obuf, UNIT, 0 };

		gen_old(&g, off, chunk, n);
		in.ptr = chunk;
		in.size = n;
		in.pos = 0;
		assert_int_equal(phsync_sig_gen_stream(sg, &o, &in, off + n == OLD_LEN, &done), 0);
		assert_int_equal(in.pos, n);
		dt_append(&sig, obuf, o.pos);
		off += n;
	}
	phsync_sig_gen_free(sg);
	s = dt_load_sig(&sig, sig.n);

	/* delta of the new file, streamed */
	assert_int_equal(phsync_diff_new(NULL, s, &d), 0);
	done = 0;
	for (off = 0; !done;) {
		size_t n = nlen - off < UNIT ? (size_t)(nlen - off) : UNIT;

		gen_new(&g, off, chunk, n);
		in.ptr = chunk;
		in.size = n;
		in.pos = 0;
		do {
			struct phsync_out o = { obuf, UNIT, 0 };

			assert_int_equal(phsync_diff_stream(d, &o, &in, off + n == nlen, &done), 0);
			dt_append(&delta, obuf, o.pos);
		} while (in.pos < in.size || (off + n == nlen && !done));
		off += n;
	}
	phsync_diff_get_stats(d, &st);
	phsync_diff_free(d);
	assert_int_equal(st.in_bytes, nlen);
	assert_true(st.copy_bytes >= OLD_LEN - 4 * UNIT);
	assert_true(st.literal_bytes <= 4 * UNIT);
	assert_true(st.ops <= 24); /* literals come in 256 KiB ops */
	assert_true(delta.n < 5 * UNIT);

	/* its ops reach past 4 GiB in both files */
	assert_int_equal(phsync_delta_reader_new(NULL, OLD_LEN, &r), 0);
	in.ptr = delta.p;
	in.size = delta.n;
	in.pos = 0;
	do {
		assert_int_equal(phsync_delta_read(r, &in, 1, &op), 0);
		if (op.type == PHSYNC_OP_COPY && op.off > max_copy)
			max_copy = op.off;
		if (op.type == PHSYNC_OP_END)
			end_len = op.len;
	} while (op.type != PHSYNC_OP_NONE);
	phsync_delta_reader_free(r);
	assert_true(max_copy > GIB4);
	assert_int_equal(end_len, nlen);

	/* patch, checking every output byte */
	assert_int_equal(phsync_patch_new(NULL, OLD_LEN, read_basis, &g, &p), 0);
	in.ptr = delta.p;
	in.size = delta.n;
	in.pos = 0;
	done = 0;
	for (off = 0; !done;) {
		struct phsync_out o = { obuf, UNIT, 0 };

		assert_int_equal(phsync_patch_stream(p, &o, &in, 1, &done), 0);
		assert_true(off + o.pos <= nlen);
		gen_new(&g, off, want, o.pos);
		assert_memory_equal(obuf, want, o.pos);
		off += o.pos;
	}
	assert_int_equal(off, nlen);
	phsync_patch_free(p);
	phsync_sig_free(s);
	dt_free(&sig);
	dt_free(&delta);
	free(g.pattern);
	free(chunk);
	free(want);
	free(obuf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_past_4gib),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
