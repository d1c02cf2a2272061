/* SPDX-License-Identifier: ISC */
/* Delta engine: the diff's scan loop. The CPU-specific loop (where there is
 * one) and the portable one must give byte-identical deltas; a block must
 * be found at every offset inside and after the loop's groups of
 * positions, and at the literal-length limit; chunk sizes around the block
 * length must not change anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_delta.h"
#include "delta_int.h"
#include "rollsum.h"

/* The delta of nw against s, new-file bytes given in ichunk pieces, with
 * the portable scan loop when portable is set. */
static void
diff_with(const phsync_sig *s, const struct bytes *nw, size_t ichunk, int portable,
          struct bytes *delta, struct phsync_diff_stats *st)
{
	phsync_diff *d = NULL;

	delta->n = 0;
	assert_int_equal(phsync_diff_new(NULL, s, &d), 0);
	if (portable)
		ph_diff_force_portable(d);
	assert_int_equal(dt_pump(dt_step_diff, d, nw, ichunk, ichunk < 64 ? 64 : ichunk, delta),
	                 0);
	if (st != NULL)
		phsync_diff_get_stats(d, st);
	phsync_diff_free(d);
}

/* Checks that both loops and every chunk size in chunks give one delta,
 * that it rebuilds nw, and returns its stats. */
static void
check_all(const struct bytes *old, const struct bytes *nw, uint32_t block,
          const size_t *chunks, size_t nchunks, struct phsync_diff_stats *st0)
{
	struct bytes sig = { 0 }, d0 = { 0 }, out = { 0 };
	phsync_sig *s;

	dt_signature(old, block, 1u << 20, 1u << 20, &sig);
	s = dt_load_sig(&sig, 1u << 20);
	diff_with(s, nw, nw->n + 1, 0, &d0, st0);
	assert_int_equal(dt_patch(old, &d0, 1u << 20, 1u << 20, &out), 0);
	dt_assert_same(&out, nw);
	for (size_t i = 0; i < nchunks; i++) {
		for (int portable = 0; portable < 2; portable++) {
			struct bytes d = { 0 };
			struct phsync_diff_stats st;

			diff_with(s, nw, chunks[i], portable, &d, &st);
			dt_assert_same(&d, &d0);
			assert_int_equal(st.filter_hits, st0->filter_hits);
			assert_int_equal(st.strong_calls, st0->strong_calls);
			dt_free(&d);
		}
	}
	phsync_sig_free(s);
	dt_free(&sig);
	dt_free(&d0);
	dt_free(&out);
}

/* Random, text-like and edited inputs, block lengths from the minimum up,
 * chunks of 1 byte, block length - 1, block length, block length + 1. */
static void
test_loops_agree(void **state)
{
	static const uint32_t blocks[] = { 16, 17, 64, 700, 4096 };
	uint64_t seed = 11;

	(void)state;
	for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
		uint32_t L = blocks[bi];
		size_t chunks[] = { 1, L - 1, L, L + 1, 3 * L + 5, 65536 };
		size_t nchunks = sizeof(chunks) / sizeof(chunks[0]);
		size_t len = L < 100 ? 20000 : 200000;

		for (int kind = 0; kind < 3; kind++) {
			struct bytes old = { 0 }, nw = { 0 };
			struct phsync_diff_stats st;

			if (kind == 1)
				dt_text(&old, len, &seed);
			else
				dt_random(&old, len, &seed);
			if (kind == 2) {
				dt_random(&nw, len, &seed); /* unrelated */
			} else {
				dt_copy(&nw, &old);
				for (int e = 0; e < 6; e++)
					dt_random_edit(&nw, &seed);
			}
			check_all(&old, &nw, L, chunks, L == 16 ? nchunks : nchunks - 1, &st);
			if (kind == 0)
				assert_true(st.copy_bytes > 0);
			dt_free(&old);
			dt_free(&nw);
		}
	}
}

/* A block preceded by j unrelated bytes is found for every j: at each
 * position inside a group of the main loop, in the loop's tail, and around
 * the 256 KiB literal limit where the scan stops and resumes. */
static void
test_match_at_every_offset(void **state)
{
	const uint32_t L = 64;
	static const size_t far[] = { PHSYNC_DELTA_MAX_LITERAL - 9, PHSYNC_DELTA_MAX_LITERAL - 1,
		                      PHSYNC_DELTA_MAX_LITERAL, PHSYNC_DELTA_MAX_LITERAL + 1,
		                      PHSYNC_DELTA_MAX_LITERAL + 7 };
	const size_t chunks[] = { 1, L - 1, L, L + 1, 4096 };
	struct bytes old = { 0 }, junk = { 0 };
	uint64_t seed = 3;

	(void)state;
	dt_random(&old, 50 * L, &seed);
	dt_random(&junk, PHSYNC_DELTA_MAX_LITERAL + 64, &seed);
	for (size_t j = 0; j < 40 + sizeof(far) / sizeof(far[0]); j++) {
		size_t pre = j < 40 ? j : far[j - 40];
		struct bytes nw = { 0 };
		struct phsync_diff_stats st;

		dt_append(&nw, junk.p, pre);
		dt_append(&nw, old.p + 7 * L, L);     /* block 7 */
		dt_append(&nw, old.p + 8 * L, L);     /* block 8: fast path */
		dt_append(&nw, junk.p + 5, j % 13);   /* a short tail */
		check_all(&old, &nw, L, chunks, j < 40 ? 5 : 2, &st);
		assert_int_equal(st.copy_bytes, 2 * L);
		assert_int_equal(st.fast_hits, 1);
		dt_free(&nw);
	}
	dt_free(&old);
	dt_free(&junk);
}

/* The AVX2 block sum equals the portable one for every length around the
 * 32-byte steps, any alignment, and bytes at their maximum (no saturation
 * in the 16-bit products). */
static void
test_block_sum(void **state)
{
	struct bytes buf = { 0 };
	uint64_t seed = 9;
	int avx2 = ph_rollsum_have_avx2();

	(void)state;
	dt_random(&buf, 300000, &seed);
	memset(buf.p + 200000, 0xFF, 100000);
	for (size_t n = 0; n <= 200; n++) {
		for (size_t off = 0; off < 4; off++) {
			uint32_t a0, b0, a1, b1;

			ph_rollsum_block(buf.p + off, n, &a0, &b0);
			ph_rollsum_block_fast(buf.p + off, n, &a1, &b1, avx2);
			assert_int_equal(a0, a1);
			assert_int_equal(b0, b1);
		}
	}
	for (size_t i = 0; i < 3; i++) {
		static const size_t lens[] = { 17344, 65537, 99999 };
		size_t from[] = { 0, 1, 200000 };
		uint32_t a0, b0, a1, b1;

		ph_rollsum_block(buf.p + from[i], lens[i], &a0, &b0);
		ph_rollsum_block_fast(buf.p + from[i], lens[i], &a1, &b1, avx2);
		assert_int_equal(a0, a1);
		assert_int_equal(b0, b1);
	}
	dt_free(&buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loops_agree),
		cmocka_unit_test(test_match_at_every_offset),
		cmocka_unit_test(test_block_sum),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
