/* SPDX-License-Identifier: ISC */
/* src/rdelta/dbound.c: the bounds a pull puts on a helper's delta and a push
 * on a helper's signature (issue 22, item 7). The signature length the
 * client expects must be exactly what the helper's own code (ph_sig_fd, as
 * serve_delta.c calls it: block_len 0, strong 8) makes, for every size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "phsync/delta.h"
#include "phsync/error.h"
#include "dbound.h"
#include "sigfd.h"

static void
test_ops_past_the_listed_size(void **state)
{
	struct phsync_delta_op op;
	char msg[200];

	(void)state;
	memset(&op, 0, sizeof(op));
	op.type = PHSYNC_OP_COPY;
	op.out_off = 99;
	op.len = 1;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), 0);  /* the last byte */
	op.out_off = 100;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), PHSYNC_EREMOTE);
	assert_non_null(strstr(msg, "past the 100 bytes listed"));
	op.type = PHSYNC_OP_LITERAL;
	op.out_off = 0;
	op.len = 101;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), PHSYNC_EREMOTE);
	op.out_off = UINT64_MAX;  /* no wrap-around lets it through */
	op.len = 2;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), PHSYNC_EREMOTE);
	op.type = PHSYNC_OP_END;
	op.len = 100;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), 0);
	op.len = 99;
	assert_int_equal(ph_dbound_op(&op, 100, msg, sizeof(msg)), PHSYNC_EREMOTE);
}

static void
test_sig_len_is_the_helpers(void **state)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 32768, 600000, 600007, 5000000,
	                                  123456789, 1ull << 32 };
	size_t i, bufsize = 1u << 20;
	void *buf = malloc(bufsize);
	int fd = memfd_create("dbound", 0);

	(void)state;
	assert_non_null(buf);
	assert_true(fd >= 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ph_buf out = { NULL, 0, 0, 4u << 20 };

		/* A sparse file: its signature costs no disk. */
		assert_int_equal(ftruncate(fd, (off_t)sizes[i]), 0);
		if (sizes[i] > (64u << 20)) {
			/* Reading 4 GiB of zeros is slow under ASan: the length
			 * alone is checked against the helper's formula and cap. */
			assert_true(ph_dbound_sig_len(sizes[i]) > 0);
			assert_true(ph_dbound_sig_len(sizes[i]) <= (3u << 20));
			continue;
		}
		assert_int_equal(ph_sig_fd(fd, sizes[i], 0, 8, buf, bufsize, &out), 0);
		assert_int_equal(ph_dbound_sig_len(sizes[i]), out.len);
		ph_buf_free(&out);
	}
	close(fd);
	free(buf);
}

/* A little generator of bytes from seed (a test fixture, not a hash). */
static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* The delta phsync_diff makes of nf against the signature of basis (as the
 * helper makes it: block 0); *len its bytes, *copies its COPY ops. */
static void
honest_delta(const uint8_t *basis, size_t bn, const uint8_t *nf, size_t nn, uint64_t *len,
             uint64_t *copies)
{
	size_t cap = 4 * nn + (1u << 20);
	uint8_t *sig = malloc(cap), *delta = malloc(cap);
	struct phsync_in in = { basis, bn, 0 };
	struct phsync_out out = { sig, cap, 0 };
	phsync_sig_gen *g;
	phsync_sig *s;
	phsync_diff *d;
	phsync_delta_reader *r;
	struct phsync_delta_op op;
	int done = 0;

	assert_non_null(sig);
	assert_non_null(delta);
	assert_int_equal(phsync_sig_gen_new(NULL, bn, 0, 8, &g), 0);
	assert_int_equal(phsync_sig_gen_stream(g, &out, &in, 1, &done), 0);
	assert_true(done);
	phsync_sig_gen_free(g);
	assert_int_equal(phsync_sig_new(NULL, &s), 0);
	in = (struct phsync_in){ sig, out.pos, 0 };
	assert_int_equal(phsync_sig_load(s, &in, 1), 0);
	assert_int_equal(phsync_diff_new(NULL, s, &d), 0);
	in = (struct phsync_in){ nf, nn, 0 };
	out = (struct phsync_out){ delta, cap, 0 };
	done = 0;
	assert_int_equal(phsync_diff_stream(d, &out, &in, 1, &done), 0);
	assert_true(done);
	*len = out.pos;
	*copies = 0;
	assert_int_equal(phsync_delta_reader_new(NULL, bn, &r), 0);
	in = (struct phsync_in){ delta, out.pos, 0 };
	do {
		assert_int_equal(phsync_delta_read(r, &in, 1, &op), 0);
		*copies += op.type == PHSYNC_OP_COPY;
	} while (op.type != PHSYNC_OP_END);
	phsync_delta_reader_free(r);
	phsync_diff_free(d);
	phsync_sig_free(s);
	free(sig);
	free(delta);
}

/* The bounds hold for the honest deltas that come nearest them: every
 * block of the old copy followed by one new byte (a COPY and a one-byte
 * LITERAL per block, none merged), all new bytes (literals only), and the
 * same file (one COPY). */
static void
test_honest_deltas_within_the_bounds(void **state)
{
	const size_t bn = 600000;
	uint32_t block = phsync_delta_block_len(bn);
	size_t nblocks = (bn + block - 1) / block, i, nn = 0;
	uint8_t *basis = malloc(bn), *nf = malloc(bn + nblocks), *lit = malloc(bn);
	uint64_t len, copies;
	char msg[300];

	(void)state;
	assert_non_null(basis);
	assert_non_null(nf);
	assert_non_null(lit);
	fill(basis, bn, 1);
	fill(lit, bn, 2);
	for (i = 0; i < nblocks; i++) {
		/* Blocks in reverse order: no two copies merge. */
		size_t k = nblocks - 1 - i, off = k * block;
		size_t n = bn - off < block ? bn - off : block;

		memcpy(nf + nn, basis + off, n);
		nn += n;
		nf[nn++] = (uint8_t)i;
	}
	honest_delta(basis, bn, nf, nn, &len, &copies);
	assert_true(copies >= nblocks - 1);
	assert_true(copies <= ph_dbound_delta_copies(nn, block));
	assert_true(len <= ph_dbound_delta_len(nn, block));
	assert_int_equal(ph_dbound_work(nn, block, len, copies, msg, sizeof(msg)), 0);
	honest_delta(basis, bn, lit, bn, &len, &copies);
	assert_int_equal(copies, 0);
	assert_true(len > bn);
	assert_true(len <= ph_dbound_delta_len(bn, block));
	honest_delta(basis, bn, basis, bn, &len, &copies);
	assert_int_equal(copies, 1);
	assert_true(len <= ph_dbound_delta_len(bn, block));
	free(basis);
	free(nf);
	free(lit);
}

/* A delta past either bound fails with why; the bounds saturate rather
 * than wrap for absurd sizes. */
static void
test_work_past_the_bounds(void **state)
{
	const uint64_t listed = 600000;
	uint32_t block = phsync_delta_block_len(listed);
	uint64_t copies = ph_dbound_delta_copies(listed, block);
	uint64_t len = ph_dbound_delta_len(listed, block);
	char msg[300];

	(void)state;
	assert_int_equal(copies, listed / block + 1);
	/* One-byte literals everywhere would be six wire bytes per byte. */
	assert_true(len < listed + listed / 16);
	assert_int_equal(ph_dbound_work(listed, block, len, copies, msg, sizeof(msg)), 0);
	assert_int_equal(ph_dbound_work(listed, block, len, copies + 1, msg, sizeof(msg)),
	                 PHSYNC_EREMOTE);
	assert_non_null(strstr(msg, "block copies"));
	assert_int_equal(ph_dbound_work(listed, block, len + 1, copies, msg, sizeof(msg)),
	                 PHSYNC_EREMOTE);
	assert_non_null(strstr(msg, "longer than"));
	assert_int_equal(ph_dbound_delta_len(UINT64_MAX, PHSYNC_SIG_MIN_BLOCK), UINT64_MAX);
	assert_int_equal(ph_dbound_delta_len(UINT64_MAX / 2, PHSYNC_SIG_MIN_BLOCK), UINT64_MAX);
	assert_true(ph_dbound_delta_len(1ull << 40, block) > (1ull << 40));
	assert_int_equal(ph_dbound_delta_copies(5, 0), UINT64_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_past_the_listed_size),
		cmocka_unit_test(test_sig_len_is_the_helpers),
		cmocka_unit_test(test_honest_deltas_within_the_bounds),
		cmocka_unit_test(test_work_past_the_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
