/* SPDX-License-Identifier: ISC */
/* Delta engine: malformed signatures and deltas are rejected with
 * PHSYNC_ECORRUPT, and the whole-file hash catches what structure cannot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <xxhash.h>

#include "test_delta.h"
#include "delta_int.h"

/* ---- signatures ------------------------------------------------------ */

static void
make_sig(struct bytes *old, struct bytes *sig)
{
	uint64_t seed = 21;

	dt_random(old, 5000, &seed);
	dt_signature(old, 1024, 4096, 4096, sig);
	assert_int_equal(sig->n, PH_SIG_HDR_LEN + 5 * 12);
}

static int
load_mutated(const struct bytes *sig, size_t at, uint8_t val, size_t chunk)
{
	struct bytes m = { 0 };
	phsync_sig *s;
	int rc;

	dt_copy(&m, sig);
	m.p[at] = val;
	rc = dt_try_load_sig(&m, chunk, &s);
	phsync_sig_free(s);
	dt_free(&m);
	return rc;
}

static void
test_sig_truncated(void **state)
{
	struct bytes old = { 0 }, sig = { 0 }, t = { 0 };
	phsync_sig *s;

	(void)state;
	make_sig(&old, &sig);
	for (size_t n = 0; n < sig.n; n++) {
		t.n = 0;
		dt_append(&t, sig.p, n);
		assert_int_equal(dt_try_load_sig(&t, 7, &s), PHSYNC_ECORRUPT);
		assert_int_equal(dt_try_load_sig(&t, 1 << 20, &s), PHSYNC_ECORRUPT);
	}
	/* one byte too many */
	dt_copy(&t, &sig);
	dt_append(&t, "x", 1);
	assert_int_equal(dt_try_load_sig(&t, 1 << 20, &s), PHSYNC_ECORRUPT);
	assert_int_equal(dt_try_load_sig(&t, 1, &s), PHSYNC_ECORRUPT);
	assert_null(s);
	dt_free(&old);
	dt_free(&sig);
	dt_free(&t);
}

static void
test_sig_bad_header(void **state)
{
	struct bytes old = { 0 }, sig = { 0 }, t = { 0 };
	phsync_sig *s;

	(void)state;
	make_sig(&old, &sig);
	assert_int_equal(load_mutated(&sig, 0, 'X', 64), PHSYNC_ECORRUPT);  /* magic */
	assert_int_equal(load_mutated(&sig, 4, 2, 64), PHSYNC_ECORRUPT);    /* version */
	assert_int_equal(load_mutated(&sig, 4, 0, 64), PHSYNC_ECORRUPT);
	assert_int_equal(load_mutated(&sig, 5, 3, 64), PHSYNC_ECORRUPT);    /* strong len */
	assert_int_equal(load_mutated(&sig, 5, 9, 64), PHSYNC_ECORRUPT);
	assert_int_equal(load_mutated(&sig, 6, 1, 64), PHSYNC_ECORRUPT);    /* flags */
	assert_int_equal(load_mutated(&sig, 7, 1, 64), PHSYNC_ECORRUPT);
	assert_int_equal(load_mutated(&sig, 8, 0x80, 64), PHSYNC_ECORRUPT); /* block len 2^31+ */
	assert_int_equal(load_mutated(&sig, 9, 0x10, 64), PHSYNC_ECORRUPT); /* 1 MiB + 1 KiB */
	/* block length 0 and 15 */
	dt_copy(&t, &sig);
	ph_put_be32(t.p + 8, 0);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	ph_put_be32(t.p + 8, PHSYNC_SIG_MIN_BLOCK - 1);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	/* absurd block counts: a huge basis, or one block over the cap */
	ph_put_be32(t.p + 8, 1024);
	ph_put_be64(t.p + 12, UINT64_MAX);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	ph_put_be32(t.p + 8, 16);
	ph_put_be64(t.p + 12, (uint64_t)PHSYNC_SIG_MAX_BLOCKS * 16 + 1);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	/* a count that claims more records than there are: truncated */
	ph_put_be64(t.p + 12, (uint64_t)PHSYNC_SIG_MAX_BLOCKS * 16);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	/* fewer: trailing bytes */
	ph_put_be32(t.p + 8, 1024);
	ph_put_be64(t.p + 12, 4000);
	assert_int_equal(dt_try_load_sig(&t, 64, &s), PHSYNC_ECORRUPT);
	/* the untouched one loads; info is not available before completion */
	assert_int_equal(dt_try_load_sig(&sig, 64, &s), 0);
	phsync_sig_free(s);
	{
		struct phsync_sig_info info;
		phsync_diff *d;

		assert_int_equal(phsync_sig_new(NULL, &s), 0);
		assert_int_equal(phsync_sig_get_info(s, &info), PHSYNC_EINVAL);
		assert_int_equal(phsync_diff_new(NULL, s, &d), PHSYNC_EINVAL);
		phsync_sig_free(s);
	}
	dt_free(&old);
	dt_free(&sig);
	dt_free(&t);
}

static void
test_sig_gen_checks(void **state)
{
	phsync_sig_gen *g;
	uint8_t buf[64], ob[256];
	struct phsync_in in = { buf, sizeof(buf), 0 };
	struct phsync_out out = { ob, sizeof(ob), 0 };
	int done;

	(void)state;
	memset(buf, 1, sizeof(buf));
	assert_int_equal(phsync_sig_gen_new(NULL, 10, 15, 0, &g), PHSYNC_EINVAL);
	assert_null(g);
	assert_int_equal(phsync_sig_gen_new(NULL, 10, PHSYNC_SIG_MAX_BLOCK + 1, 0, &g),
	                 PHSYNC_EINVAL);
	assert_int_equal(phsync_sig_gen_new(NULL, 10, 0, 3, &g), PHSYNC_EINVAL);
	assert_int_equal(phsync_sig_gen_new(NULL, UINT64_MAX - 1, 16, 0, &g), PHSYNC_EINVAL);
	/* more input than declared, and less */
	assert_int_equal(phsync_sig_gen_new(NULL, 10, 16, 0, &g), 0);
	assert_int_equal(phsync_sig_gen_stream(g, &out, &in, 1, &done), PHSYNC_EINVAL);
	assert_int_equal(phsync_sig_gen_stream(g, &out, &in, 1, &done), PHSYNC_EINVAL);
	phsync_sig_gen_free(g);
	assert_int_equal(phsync_sig_gen_new(NULL, 100, 16, 0, &g), 0);
	in.pos = 0;
	assert_int_equal(phsync_sig_gen_stream(g, &out, &in, 1, &done), PHSYNC_EINVAL);
	phsync_sig_gen_free(g);
	phsync_sig_gen_free(NULL);
}

/* ---- deltas ---------------------------------------------------------- */

static void
put_hdr(struct bytes *d)
{
	static const uint8_t h[PH_DELTA_HDR_LEN] = { 'P', 'H', 'S', 'D', PHSYNC_DELTA_VERSION };

	d->n = 0;
	dt_append(d, h, sizeof(h));
}

static void
put_copy(struct bytes *d, uint64_t off, uint64_t len)
{
	uint8_t op[PH_OP_COPY_LEN] = { PH_OP_COPY };

	ph_put_be64(op + 1, off);
	ph_put_be64(op + 9, len);
	dt_append(d, op, sizeof(op));
}

static void
put_lit(struct bytes *d, uint32_t declared, const void *p, size_t n)
{
	uint8_t op[PH_OP_LITERAL_LEN] = { PH_OP_LITERAL };

	ph_put_be32(op + 1, declared);
	dt_append(d, op, sizeof(op));
	dt_append(d, p, n);
}

static void
put_end(struct bytes *d, uint64_t len, const struct bytes *content)
{
	uint8_t op[PH_OP_END_LEN] = { PH_OP_END };
	XXH128_canonical_t c;

	ph_put_be64(op + 1, len);
	XXH128_canonicalFromHash(&c, XXH3_128bits(content->p ? content->p : (const uint8_t *)"",
	                                          content->n));
	memcpy(op + 9, c.digest, 16);
	dt_append(d, op, sizeof(op));
}

/* Patches old with d in two chunkings; both must give the same rc. */
static int
patch_rc(const struct bytes *old, const struct bytes *d)
{
	struct bytes out = { 0 };
	int rc1 = dt_patch(old, d, 1 << 20, 1 << 20, &out);
	int rc2 = dt_patch(old, d, 3, 5, &out);

	assert_int_equal(rc1, rc2);
	dt_free(&out);
	return rc1;
}

static void
test_delta_handmade(void **state)
{
	struct bytes old = { 0 }, d = { 0 }, want = { 0 }, out = { 0 };
	uint64_t seed = 4;
	uint8_t lit[PHSYNC_DELTA_MAX_LITERAL + 1];

	(void)state;
	memset(lit, 'q', sizeof(lit));
	dt_random(&old, 1000, &seed);

	/* a valid one first: COPY, LITERAL, END */
	dt_append(&want, old.p + 100, 200);
	dt_append(&want, "hello", 5);
	put_hdr(&d);
	put_copy(&d, 100, 200);
	put_lit(&d, 5, "hello", 5);
	put_end(&d, 205, &want);
	assert_int_equal(dt_patch(&old, &d, 1, 1, &out), 0);
	dt_assert_same(&out, &want);

	/* bytes after END */
	dt_append(&d, "", 1);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);

	/* END length differs from the ops */
	put_hdr(&d);
	put_copy(&d, 100, 200);
	put_lit(&d, 5, "hello", 5);
	put_end(&d, 206, &want);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);

	/* COPY past the end of the basis, at its end, far beyond, overflowing */
	put_hdr(&d);
	put_copy(&d, 990, 11);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_copy(&d, 1000, 1);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_copy(&d, 1001, 0);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_copy(&d, UINT64_MAX, 2);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_copy(&d, 2, UINT64_MAX);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d); /* empty COPY */
	put_copy(&d, 0, 0);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);

	/* LITERAL lengths: 0, over the cap, more bytes than declared, fewer */
	put_hdr(&d);
	put_lit(&d, 0, NULL, 0);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_lit(&d, PHSYNC_DELTA_MAX_LITERAL + 1, lit, sizeof(lit));
	want.n = 0;
	dt_append(&want, lit, sizeof(lit));
	put_end(&d, sizeof(lit), &want);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	put_lit(&d, 0xFFFFFFFFu, lit, 10);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d); /* 10 declared, 20 present: the extra bytes are no op */
	put_lit(&d, 10, lit, 20);
	want.n = 20;
	put_end(&d, 20, &want);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d); /* 20 declared, 10 present, then END */
	put_lit(&d, 20, lit, 10);
	want.n = 10;
	put_end(&d, 10, &want);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);

	/* unknown op, bad magic, version, flags, empty input */
	put_hdr(&d);
	dt_append(&d, "Z", 1);
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	d.p[0] = 'X';
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	d.p[4] = 2;
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	put_hdr(&d);
	d.p[7] = 1;
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);
	d.n = 0;
	assert_int_equal(patch_rc(&old, &d), PHSYNC_ECORRUPT);

	/* a basis shorter than declared is an I/O error, not a short file */
	put_hdr(&d);
	put_copy(&d, 0, 1000);
	want.n = 0;
	dt_append(&want, old.p, 1000);
	put_end(&d, 1000, &want);
	old.n = 500;
	{
		phsync_patch *p;

		assert_int_equal(phsync_patch_new(NULL, 1000, dt_read_mem, &old, &p), 0);
		assert_int_equal(dt_pump(dt_step_patch, p, &d, 100, 100, &out), PHSYNC_EIO);
		phsync_patch_free(p);
	}
	dt_free(&old);
	dt_free(&d);
	dt_free(&want);
	dt_free(&out);
}

/* Running totals past 2^64 are caught even when every COPY fits the
 * basis (a reader told the basis is huge, as for op-by-op use). */
static void
test_delta_length_overflow(void **state)
{
	struct bytes d = { 0 };
	struct phsync_delta_op op;
	phsync_delta_reader *r;
	struct phsync_in in;

	(void)state;
	put_hdr(&d);
	put_copy(&d, 0, 1ull << 63);
	put_copy(&d, 0, 1ull << 63);
	assert_int_equal(phsync_delta_reader_new(NULL, UINT64_MAX, &r), 0);
	in.ptr = d.p;
	in.size = d.n;
	in.pos = 0;
	assert_int_equal(phsync_delta_read(r, &in, 1, &op), 0);
	assert_int_equal(op.type, PHSYNC_OP_COPY);
	assert_int_equal(op.len, 1ull << 63);
	assert_int_equal(phsync_delta_read(r, &in, 1, &op), PHSYNC_ECORRUPT);
	assert_int_equal(op.type, PHSYNC_OP_NONE);
	/* sticky */
	assert_int_equal(phsync_delta_read(r, &in, 1, &op), PHSYNC_ECORRUPT);
	phsync_delta_reader_free(r);
	dt_free(&d);
}

static void
real_delta(struct bytes *old, struct bytes *nw, struct bytes *d)
{
	uint64_t seed = 1;

	dt_random(old, 30000, &seed);
	dt_copy(nw, old);
	dt_overwrite(nw, 5000, 64, &seed);
	dt_insert(nw, 20000, 300, &seed);
	dt_delta_of(old, nw, 512, 1 << 20, d, NULL);
}

static void
test_delta_truncated(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, d = { 0 }, t = { 0 };

	(void)state;
	real_delta(&old, &nw, &d);
	for (size_t n = 0; n < d.n; n += (n < 64 || d.n - n < 64) ? 1 : 97) {
		t.n = 0;
		dt_append(&t, d.p, n);
		assert_int_equal(patch_rc(&old, &t), PHSYNC_ECORRUPT);
	}
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
	dt_free(&t);
}

/* Each of these deltas is well formed and only the whole-file XXH3-128
 * tells that the result is wrong: the test fails if that check goes. */
static void
test_whole_file_hash_is_checked(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, d = { 0 }, m = { 0 }, out = { 0 };
	size_t lit_at = 0;

	(void)state;
	real_delta(&old, &nw, &d);
	assert_int_equal(dt_patch(&old, &d, 1 << 20, 1 << 20, &out), 0);
	dt_assert_same(&out, &nw);

	/* flip a bit of the END hash */
	dt_copy(&m, &d);
	m.p[m.n - 1] ^= 1;
	assert_int_equal(patch_rc(&old, &m), PHSYNC_ECORRUPT);

	/* change one byte inside a literal's data */
	for (size_t i = PH_DELTA_HDR_LEN; i < d.n;) {
		if (d.p[i] == PH_OP_LITERAL) {
			lit_at = i + PH_OP_LITERAL_LEN + 10;
			break;
		}
		i += d.p[i] == PH_OP_COPY ? PH_OP_COPY_LEN : PH_OP_END_LEN;
	}
	assert_true(lit_at > 0);
	dt_copy(&m, &d);
	m.p[lit_at] ^= 0x20;
	assert_int_equal(patch_rc(&old, &m), PHSYNC_ECORRUPT);

	/* the right delta on a basis of the right length but other bytes */
	dt_copy(&m, &old);
	m.p[7777] ^= 1;
	assert_int_equal(patch_rc(&m, &d), PHSYNC_ECORRUPT);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
	dt_free(&m);
	dt_free(&out);
}

/* Random damage to a signature or a delta: patch either fails with an
 * error or produces exactly the new file, never anything else. */
static void
test_random_damage(void **state)
{
	struct bytes old = { 0 }, nw = { 0 }, d = { 0 }, sig = { 0 }, m = { 0 }, out = { 0 };
	uint64_t seed = 2024;
	int ok = 0, bad = 0;

	(void)state;
	real_delta(&old, &nw, &d);
	dt_signature(&old, 512, 1 << 20, 1 << 20, &sig);
	for (int i = 0; i < 300; i++) {
		phsync_sig *s;
		int rc;

		dt_copy(&m, i % 2 ? &d : &sig);
		for (int k = 0; k < 1 + (int)(dt_rand(&seed) % 3); k++) {
			size_t at = (size_t)(dt_rand(&seed) % (i % 4 < 2 ? 40 : m.n));

			m.p[at] = (uint8_t)dt_rand(&seed);
		}
		if (i % 2) {
			rc = dt_patch(&old, &m, 1 << 20, 1 << 20, &out);
		} else {
			rc = dt_try_load_sig(&m, 1 << 20, &s);
			if (rc == 0) {
				struct bytes d2 = { 0 };

				dt_diff(s, &nw, 1 << 20, 1 << 20, &d2, NULL);
				phsync_sig_free(s);
				rc = dt_patch(&old, &d2, 1 << 20, 1 << 20, &out);
				dt_free(&d2);
			}
		}
		if (rc == 0) {
			dt_assert_same(&out, &nw);
			ok++;
		} else {
			assert_true(rc == PHSYNC_ECORRUPT);
			bad++;
		}
	}
	assert_true(bad > 50);
	dt_free(&old);
	dt_free(&nw);
	dt_free(&d);
	dt_free(&sig);
	dt_free(&m);
	dt_free(&out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sig_truncated),
		cmocka_unit_test(test_sig_bad_header),
		cmocka_unit_test(test_sig_gen_checks),
		cmocka_unit_test(test_delta_handmade),
		cmocka_unit_test(test_delta_length_overflow),
		cmocka_unit_test(test_delta_truncated),
		cmocka_unit_test(test_whole_file_hash_is_checked),
		cmocka_unit_test(test_random_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
