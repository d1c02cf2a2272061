/* SPDX-License-Identifier: ISC */
/* Delta engine: round trips, chunking invariance, the op-by-op API and
 * pathological inputs. Malformed inputs are in test_delta_corrupt.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <xxhash.h>

#include "test_delta.h"
#include "rollsum.h"

/* ---- round trips ----------------------------------------------------- */

struct edit_case {
	const char *name;
	size_t old_len;
	uint32_t block;
};

static void
check_roundtrip(const struct bytes *old, const struct bytes *nw, uint32_t block,
                struct phsync_diff_stats *st)
{
	struct bytes d = { 0 }, out = { 0 };

	dt_delta_of(old, nw, block, 4096, &d, st);
	assert_int_equal(dt_patch(old, &d, 4096, 4096, &out), 0);
	dt_assert_same(&out, nw);
	dt_free(&d);
	dt_free(&out);
}

static void
test_structured_edits(void **state)
{
	struct bytes old = { 0 }, nw = { 0 };
	struct phsync_diff_stats st;
	uint64_t seed = 42;
	const uint32_t L = 512;

	(void)state;
	dt_random(&old, 64 * 1024, &seed);

	/* no change: one COPY of everything, no literal */
	dt_copy(&nw, &old);
	check_roundtrip(&old, &nw, L, &st);
	assert_int_equal(st.literal_bytes, 0);
	assert_int_equal(st.copy_bytes, old.n);
	assert_int_equal(st.ops, 1);

	/* insert 100 bytes in the middle */
	dt_copy(&nw, &old);
	dt_insert(&nw, 30000, 100, &seed);
	check_roundtrip(&old, &nw, L, &st);
	assert_true(st.literal_bytes <= 100 + L);
	assert_true(st.copy_bytes >= old.n - 2 * L);

	/* delete 1000 bytes */
	dt_copy(&nw, &old);
	dt_delete(&nw, 10000, 1000);
	check_roundtrip(&old, &nw, L, &st);
	assert_true(st.literal_bytes <= 2 * L);

	/* overwrite 64 bytes */
	dt_copy(&nw, &old);
	dt_overwrite(&nw, 40000, 64, &seed);
	check_roundtrip(&old, &nw, L, &st);
	assert_true(st.literal_bytes <= 2 * L);
	assert_true(st.literal_bytes >= 64);

	/* append */
	dt_copy(&nw, &old);
	dt_insert(&nw, nw.n, 5000, &seed);
	check_roundtrip(&old, &nw, L, &st);
	assert_int_equal(st.copy_bytes, old.n);
	assert_int_equal(st.literal_bytes, 5000);

	/* truncate, to a block boundary and inside a block */
	dt_copy(&nw, &old);
	nw.n = 32 * L;
	check_roundtrip(&old, &nw, L, &st);
	assert_int_equal(st.literal_bytes, 0);
	nw.n = 32 * L + 77;
	check_roundtrip(&old, &nw, L, &st);
	assert_int_equal(st.literal_bytes, 77);

	/* a shorter last block matches at the end of the new file */
	dt_copy(&nw, &old);
	old.n -= 100;
	dt_copy(&nw, &old);
	dt_overwrite(&nw, 0, 8, &seed);
	check_roundtrip(&old, &nw, L, &st);
	assert_int_equal(st.literal_bytes, L);
	dt_free(&old);
	dt_free(&nw);
}

static void
test_empty_and_tiny(void **state)
{
	struct bytes e = { 0 }, small = { 0 }, small2 = { 0 }, big = { 0 };
	struct phsync_diff_stats st;
	uint64_t seed = 7;

	(void)state;
	dt_random(&small, 100, &seed);
	dt_copy(&small2, &small);
	dt_overwrite(&small2, 50, 1, &seed);
	dt_random(&big, 3000, &seed);

	check_roundtrip(&e, &e, 0, &st);         /* both empty */
	assert_int_equal(st.ops, 0);
	check_roundtrip(&e, &big, 0, &st);       /* empty old */
	assert_int_equal(st.literal_bytes, big.n);
	check_roundtrip(&big, &e, 0, &st);       /* empty new */
	assert_int_equal(st.ops, 0);
	check_roundtrip(&small, &small, 0, &st); /* shorter than a block */
	assert_int_equal(st.copy_bytes, 100);
	assert_int_equal(st.literal_bytes, 0);
	check_roundtrip(&small, &small2, 0, &st);
	assert_int_equal(st.literal_bytes, 100);
	check_roundtrip(&small, &big, 16, &st);  /* minimum block */
	check_roundtrip(&big, &small, 16, &st);
	dt_free(&small);
	dt_free(&small2);
	dt_free(&big);
}

static void
test_random_edits(void **state)
{
	uint64_t seed = 1234;

	(void)state;
	for (int iter = 0; iter < 40; iter++) {
		struct bytes old = { 0 }, nw = { 0 }, d = { 0 }, out = { 0 };
		size_t len = dt_rand(&seed) % 200000;
		uint32_t block = (uint32_t)(16 + dt_rand(&seed) % 3000);
		size_t chunk = 1 + dt_rand(&seed) % 70000;
		int edits = (int)(dt_rand(&seed) % 12);

		if (iter % 4 == 0)
			block = 0; /* the automatic size */
		if (iter % 5 == 0)
			dt_text(&old, len, &seed); /* low-entropy data */
		else
			dt_random(&old, len, &seed);
		dt_copy(&nw, &old);
		for (int e = 0; e < edits; e++)
			dt_random_edit(&nw, &seed);
		dt_delta_of(&old, &nw, block, chunk, &d, NULL);
		assert_int_equal(dt_patch(&old, &d, chunk, 1 + chunk / 3, &out), 0);
		dt_assert_same(&out, &nw);
		dt_free(&old);
		dt_free(&nw);
		dt_free(&d);
		dt_free(&out);
	}
}

/* Small edits must cost about a block each, not more (delta size). */
static void
test_delta_is_small(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, d = { 0 };
	struct phsync_diff_stats st;
	uint64_t seed = 99;
	const uint32_t L = 1024;

	(void)state;
	dt_random(&old, 1 << 20, &seed);
	dt_copy(&nw, &old);
	for (int i = 0; i < 10; i++)
		dt_overwrite(&nw, (size_t)i * 100000 + 5000, 64, &seed);
	dt_delta_of(&old, &nw, L, 65536, &d, &st);
	assert_true(st.literal_bytes <= 10 * 2 * L);
	assert_true(d.n < 10 * (2 * L + 64));
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
}

/* ---- chunking invariance -------------------------------------------- */

static void
test_chunking_invariance(void **state)
{
	static const size_t chunks[] = { 1, 3, 17, 4093, 65536, 1 << 22 };
	struct bytes old = { 0 }, nw = { 0 };
	struct bytes sig0 = { 0 }, d0 = { 0 }, out0 = { 0 };
	uint64_t seed = 5;

	(void)state;
	dt_random(&old, 300000, &seed);
	dt_copy(&nw, &old);
	for (int e = 0; e < 8; e++)
		dt_random_edit(&nw, &seed);
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		size_t c = chunks[i];
		struct bytes sig = { 0 }, d = { 0 }, out = { 0 };
		phsync_sig *s;

		dt_signature(&old, 700, c, c, &sig);
		s = dt_load_sig(&sig, c);
		dt_diff(s, &nw, c, c == 1 ? 5 : c, &d, NULL);
		assert_int_equal(dt_patch(&old, &d, c, c, &out), 0);
		dt_assert_same(&out, &nw);
		if (i == 0) {
			dt_copy(&sig0, &sig);
			dt_copy(&d0, &d);
			dt_copy(&out0, &out);
		} else {
			dt_assert_same(&sig, &sig0);
			dt_assert_same(&d, &d0);
		}
		phsync_sig_free(s);
		dt_free(&sig);
		dt_free(&d);
		dt_free(&out);
	}
	dt_free(&old);
	dt_free(&nw);
	dt_free(&sig0);
	dt_free(&d0);
	dt_free(&out0);
}

/* Input read straight into the diff's window (phsync_diff_space / commit,
 * as the helper does) gives the same delta as input passed in `in`, for
 * reads of any size up to the room offered. */
static void
test_zero_copy_input(void **state)
{
	static const size_t reads[] = { 1, 4093, 65536, 1 << 20 };
	struct bytes old = { 0 }, nw = { 0 }, sig = { 0 }, d0 = { 0 };
	uint64_t seed = 11;
	phsync_sig *s;

	(void)state;
	dt_random(&old, 700000, &seed);
	dt_copy(&nw, &old);
	for (int e = 0; e < 8; e++)
		dt_random_edit(&nw, &seed);
	dt_signature(&old, 1024, 4096, 4096, &sig);
	s = dt_load_sig(&sig, 4096);
	dt_diff(s, &nw, 4096, 4096, &d0, NULL);
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		struct bytes d = { 0 };
		phsync_diff *df;
		size_t fed = 0;
		int done = 0, eof = 0;

		assert_int_equal(phsync_diff_new(NULL, s, &df), 0);
		while (!done) {
			uint8_t obuf[1000];
			struct phsync_out o = { obuf, sizeof(obuf), 0 };
			struct phsync_in in = { NULL, 0, 0 };

			assert_int_equal(phsync_diff_stream(df, &o, &in, eof, &done), 0);
			dt_append(&d, obuf, o.pos);
			if (o.pos < o.size && !done) {
				void *room;
				size_t n = phsync_diff_space(df, &room);

				assert_true(n >= (256u << 10));
				if (n > reads[i])
					n = reads[i];
				if (n > nw.n - fed)
					n = nw.n - fed;
				memcpy(room, nw.p + fed, n);
				phsync_diff_commit(df, n);
				fed += n;
				eof = fed == nw.n;
			}
		}
		phsync_diff_free(df);
		dt_assert_same(&d, &d0);
		dt_free(&d);
	}
	phsync_sig_free(s);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&sig);
	dt_free(&d0);
}

/* One diff reset file after file (block lengths that grow and shrink, one
 * delta left half made) gives each file the delta a fresh diff gives, and
 * its counters start over. */
static void
test_diff_reset(void **state)
{
	static const uint32_t blocks[] = { 700, 4096, 1024, 16384, 512 };
	phsync_diff *df = NULL;
	uint64_t seed = 23;

	(void)state;
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		struct bytes old = { 0 }, nw = { 0 }, sig = { 0 }, d0 = { 0 }, d = { 0 };
		struct phsync_diff_stats st0, st;
		phsync_sig *s;

		dt_random(&old, 300000 + 50000 * i, &seed);
		dt_copy(&nw, &old);
		for (int e = 0; e < 6; e++)
			dt_random_edit(&nw, &seed);
		dt_signature(&old, blocks[i], 8192, 8192, &sig);
		s = dt_load_sig(&sig, 8192);
		dt_diff(s, &nw, 8192, 8192, &d0, &st0);
		if (df == NULL)
			assert_int_equal(phsync_diff_new(NULL, s, &df), 0);
		else
			assert_int_equal(phsync_diff_reset(df, s), 0);
		if (i == 2) {
			/* Abandoned half way: the reset below forgets it. */
			uint8_t ob[4096];
			struct phsync_out o = { ob, sizeof(ob), 0 };
			struct phsync_in in = { nw.p, nw.n / 2, 0 };
			int done = 0;

			assert_int_equal(phsync_diff_stream(df, &o, &in, 0, &done), 0);
			assert_int_equal(done, 0);
			assert_true(in.pos > 0);
			assert_int_equal(phsync_diff_reset(df, s), 0);
		}
		assert_int_equal(dt_pump(dt_step_diff, df, &nw, 8192, 8192, &d), 0);
		phsync_diff_get_stats(df, &st);
		dt_assert_same(&d, &d0);
		assert_int_equal(st.in_bytes, st0.in_bytes);
		assert_int_equal(st.copy_bytes, st0.copy_bytes);
		assert_int_equal(st.literal_bytes, st0.literal_bytes);
		assert_true(st.copy_bytes > 0);
		phsync_sig_free(s);   /* the diff only reads it until the next reset */
		dt_free(&old);
		dt_free(&nw);
		dt_free(&sig);
		dt_free(&d0);
		dt_free(&d);
	}
	phsync_diff_free(df);
}

/* A signature of unknown length (stdin) equals one of known length. */
static void
test_unknown_length_signature(void **state)
{
	struct bytes old = { 0 }, a = { 0 }, b = { 0 };
	uint64_t seed = 11;

	(void)state;
	dt_random(&old, 100000, &seed);
	dt_signature(&old, 4096, 999, 50, &a);
	dt_signature_unknown(&old, 4096, 333, 77, &b);
	dt_assert_same(&a, &b);
	dt_free(&old);
	dt_free(&a);
	dt_free(&b);
}

/* ---- the signature's block list and the op-by-op API ------------------ */

static void
test_sig_blocks_accessible(void **state)
{
	struct bytes old = { 0 }, sig = { 0 }, nw = { 0 }, d1 = { 0 }, d2 = { 0 };
	struct phsync_sig_info info;
	uint32_t *weak;
	uint64_t *strong;
	phsync_sig *s, *s2;
	uint64_t seed = 3;
	const uint32_t L = 256;

	(void)state;
	dt_random(&old, 10 * L + 10, &seed);
	dt_signature(&old, L, 4096, 4096, &sig);
	s = dt_load_sig(&sig, 4096);
	assert_int_equal(phsync_sig_get_info(s, &info), 0);
	assert_int_equal(info.block_len, L);
	assert_int_equal(info.strong_len, 8);
	assert_int_equal(info.basis_len, old.n);
	assert_int_equal(info.count, 11);
	weak = calloc(info.count, sizeof(*weak));
	strong = calloc(info.count, sizeof(*strong));
	for (uint64_t i = 0; i < info.count; i++) {
		size_t n = i < 10 ? L : 10;
		uint32_t a, b;

		assert_int_equal(phsync_sig_block(s, i, &weak[i], &strong[i]), 0);
		ph_rollsum_block(old.p + i * L, n, &a, &b);
		assert_int_equal(weak[i], ph_rollsum_weak(a, b));
		assert_int_equal(strong[i], XXH3_64bits(old.p + i * L, n));
	}
	assert_int_equal(phsync_sig_block(s, info.count, &weak[0], &strong[0]),
	                 PHSYNC_EINVAL);
	/* the same blocks, rebuilt as a state DB would, give the same delta */
	assert_int_equal(phsync_sig_from_blocks(NULL, &info, weak, strong, &s2), 0);
	dt_copy(&nw, &old);
	dt_overwrite(&nw, 700, 3, &seed);
	dt_diff(s, &nw, 100, 100, &d1, NULL);
	dt_diff(s2, &nw, 100, 100, &d2, NULL);
	dt_assert_same(&d1, &d2);
	phsync_sig_free(s2);
	info.count++; /* inconsistent with basis_len */
	assert_int_equal(phsync_sig_from_blocks(NULL, &info, weak, strong, &s2),
	                 PHSYNC_EINVAL);
	assert_null(s2);
	phsync_sig_free(s);
	phsync_sig_free(NULL);
	free(weak);
	free(strong);
	dt_free(&old);
	dt_free(&sig);
	dt_free(&nw);
	dt_free(&d1);
	dt_free(&d2);
}

/* Rebuild the new file from diff_next ops and check that reading the
 * serialized delta back yields the same ops. */
static void
test_op_by_op(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, sig = { 0 }, d = { 0 }, built = { 0 };
	struct phsync_delta_op op;
	struct phsync_delta_op ops[64];
	size_t nops = 0, k = 0;
	phsync_sig *s;
	phsync_diff *df;
	phsync_delta_reader *r;
	struct phsync_in in;
	uint64_t seed = 77, lit_off = 0;
	int ended = 0;

	(void)state;
	dt_random(&old, 50000, &seed);
	dt_copy(&nw, &old);
	dt_insert(&nw, 1000, 300, &seed);
	dt_delete(&nw, 20000, 2000);
	dt_insert(&nw, nw.n, 10, &seed);
	dt_signature(&old, 512, 4096, 4096, &sig);
	s = dt_load_sig(&sig, 4096);
	assert_int_equal(phsync_diff_new(NULL, s, &df), 0);
	in.ptr = nw.p;
	in.size = nw.n;
	in.pos = 0;
	while (!ended) {
		assert_int_equal(phsync_diff_next(df, &in, 1, &op), 0);
		assert_int_not_equal(op.type, PHSYNC_OP_NONE);
		assert_int_equal(op.out_off, built.n);
		if (op.type == PHSYNC_OP_COPY) {
			assert_true(op.off + op.len <= old.n);
			dt_append(&built, old.p + op.off, (size_t)op.len);
		} else if (op.type == PHSYNC_OP_LITERAL) {
			dt_append(&built, op.data, (size_t)op.len);
		} else {
			assert_int_equal(op.len, nw.n);
			ended = 1;
		}
		assert_true(nops < 64);
		ops[nops++] = op;
	}
	assert_int_equal(phsync_diff_next(df, &in, 1, &op), 0);
	assert_int_equal(op.type, PHSYNC_OP_NONE);
	dt_assert_same(&built, &nw);
	phsync_diff_free(df);

	dt_diff(s, &nw, 4096, 4096, &d, NULL);
	assert_int_equal(phsync_delta_reader_new(NULL, old.n, &r), 0);
	for (size_t pos = 0; pos < d.n;) {
		/* odd-sized input pieces: literal ops come back in pieces */
		in.ptr = d.p + pos;
		in.size = d.n - pos < 333 ? d.n - pos : 333;
		in.pos = 0;
		for (;;) {
			assert_int_equal(phsync_delta_read(r, &in, pos + in.size == d.n, &op), 0);
			if (op.type == PHSYNC_OP_NONE)
				break;
			assert_true(k < nops);
			assert_int_equal(op.type, ops[k].type);
			if (op.type == PHSYNC_OP_LITERAL) {
				/* pieces of ops[k], in order */
				assert_int_equal(op.out_off, ops[k].out_off + lit_off);
				assert_memory_equal(op.data, nw.p + op.out_off, op.len);
				lit_off += op.len;
				if (lit_off == ops[k].len) {
					lit_off = 0;
					k++;
				}
				continue;
			}
			assert_int_equal(op.out_off, ops[k].out_off);
			assert_int_equal(op.off, ops[k].off);
			assert_int_equal(op.len, ops[k].len);
			if (op.type == PHSYNC_OP_END)
				assert_memory_equal(op.hash, ops[k].hash, 16);
			k++;
		}
		pos += in.size;
	}
	assert_int_equal(k, nops);
	phsync_delta_reader_free(r);
	phsync_delta_reader_free(NULL);
	phsync_sig_free(s);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&sig);
	dt_free(&d);
	dt_free(&built);
}

/* ---- pathological inputs --------------------------------------------- */

/* A file of one repeated block: the index keeps one entry, so matching
 * stays linear, and copies merge into few ops. */
static void
test_repeated_block(void **state)
{
	struct bytes blk = { 0 }, old = { 0 }, nw = { 0 }, d = { 0 }, out = { 0 };
	struct phsync_diff_stats st;
	uint64_t seed = 8;
	const uint32_t L = 512;

	(void)state;
	dt_random(&blk, L, &seed);
	for (int i = 0; i < 8192; i++) /* 4 MiB */
		dt_append(&old, blk.p, blk.n);
	dt_copy(&nw, &old);
	dt_insert(&nw, 1000000, 1, &seed);
	dt_delete(&nw, 3000000, 3);
	dt_insert(&nw, nw.n, 2 * old.n, NULL); /* zeros */
	for (int i = 0; i < 4096; i++)
		dt_append(&nw, blk.p, blk.n);
	dt_delta_of(&old, &nw, L, 1 << 20, &d, &st);
	assert_int_equal(dt_patch(&old, &d, 1 << 20, 1 << 20, &out), 0);
	dt_assert_same(&out, &nw);
	assert_true(st.ops <= 64);
	assert_true(st.strong_calls <= nw.n / L + 16);
	assert_true(st.literal_bytes <= 2 * old.n + 4 * L); /* the zeros, the edits */
	assert_true(d.n <= st.literal_bytes + 17 * st.ops + 64);
	dt_free(&blk);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
	dt_free(&out);
}

/* Many distinct blocks with one weak sum, and a new file whose every
 * position hits that weak sum: chains are capped and a repeated miss is
 * not re-hashed at every byte. */
static void
test_weak_collisions(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, d = { 0 }, out = { 0 };
	struct phsync_diff_stats st;
	const uint32_t L = 4096;
	uint8_t *b = malloc(L);

	(void)state;
	/* Adding (+1, -2, +1) at i, i+1, i+2 keeps both sums, so all these
	 * blocks share the weak sum of a run of 0x80 but differ. */
	for (uint32_t i = 0; i < 2000; i++) {
		memset(b, 0x80, L);
		b[i] += 1;
		b[i + 1] -= 2;
		b[i + 2] += 1;
		dt_append(&old, b, L);
	}
	memset(b, 0x80, L);
	for (int i = 0; i < 256; i++) /* 1 MiB of 0x80 */
		dt_append(&nw, b, L);
	dt_delta_of(&old, &nw, L, 1 << 20, &d, &st);
	assert_int_equal(dt_patch(&old, &d, 1 << 20, 1 << 20, &out), 0);
	dt_assert_same(&out, &nw);
	assert_int_equal(st.copy_bytes, 0);
	assert_true(st.strong_calls <= nw.n / L + 2);
	free(b);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
	dt_free(&out);
}

static void
test_block_len_rule(void **state)
{
	(void)state;
	assert_int_equal(phsync_delta_block_len(0), 512);
	assert_int_equal(phsync_delta_block_len(1000), 512);
	assert_int_equal(phsync_delta_block_len(300000000), 17344);
	assert_int_equal(phsync_delta_block_len(1ull << 40), 128 * 1024);
	assert_int_equal(phsync_delta_block_len(PHSYNC_LEN_UNKNOWN), 4096);
	assert_int_equal(phsync_delta_block_len(1ull << 46), 1u << 20);
	assert_int_equal(phsync_delta_block_len((1ull << 62) + 1), 1u << 20);
	assert_int_equal(phsync_delta_block_len(300000000) % 64, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_structured_edits),
		cmocka_unit_test(test_empty_and_tiny),
		cmocka_unit_test(test_random_edits),
		cmocka_unit_test(test_delta_is_small),
		cmocka_unit_test(test_chunking_invariance),
		cmocka_unit_test(test_zero_copy_input),
		cmocka_unit_test(test_diff_reset),
		cmocka_unit_test(test_unknown_length_signature),
		cmocka_unit_test(test_sig_blocks_accessible),
		cmocka_unit_test(test_op_by_op),
		cmocka_unit_test(test_repeated_block),
		cmocka_unit_test(test_weak_collisions),
		cmocka_unit_test(test_block_len_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
