/* SPDX-License-Identifier: ISC */
/* The SFTP wire's attribute codec (src/wire/sftpwire.c), the one both the
 * client (transport/sftp.c) and the helper (helper/serve*.c) use: the bytes
 * it writes, that what it writes reads back the same, that every cut of an
 * ATTRS structure is refused, and that extended pairs are read past. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "sftpwire.h"

static void
test_put_bytes(void **state)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x0f,                          /* flags (EXTENDED cleared) */
		0, 0, 0, 0, 0, 0, 0x12, 0x34,                    /* size */
		0, 0, 0x03, 0xe8, 0, 0, 0x03, 0xe9,              /* uid, gid */
		0, 0, 0x81, 0xa4,                                /* 0100644 */
		0x5f, 0x5e, 0x10, 0x00, 0x60, 0x00, 0x00, 0x01,  /* atime, mtime */
	};
	struct ph_sftp_attrs a = {
		.flags = PH_ATTR_SIZE | PH_ATTR_UIDGID | PH_ATTR_PERMISSIONS | PH_ATTR_ACMODTIME |
		         PH_ATTR_EXTENDED,
		.size = 0x1234, .uid = 1000, .gid = 1001, .perm = 0100644,
		.atime = 0x5f5e1000, .mtime = 0x60000001,
	};
	struct ph_sftp_attrs only_perm = { .flags = PH_ATTR_PERMISSIONS, .perm = 0755, .size = 9 };
	struct ph_buf b = { .max = 1 << 20 };

	(void)state;
	assert_int_equal(ph_wire_put_attrs(&b, &a), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	/* Only the fields the flags name; NULL is no attributes at all. */
	b.len = 0;
	assert_int_equal(ph_wire_put_attrs(&b, &only_perm), 0);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.data, "\0\0\0\x04\0\0\x01\xed", 8);
	b.len = 0;
	assert_int_equal(ph_wire_put_attrs(&b, NULL), 0);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, "\0\0\0\0", 4);
	ph_buf_free(&b);
	/* A buffer at its cap is PHSYNC_ENOMEM, never a short write taken for whole. */
	b.max = 8;
	assert_int_equal(ph_wire_put_attrs(&b, &a), PHSYNC_ENOMEM);
	ph_buf_free(&b);
}

static void
test_roundtrip_and_every_cut(void **state)
{
	struct ph_sftp_attrs a = {
		.flags = PH_ATTR_SIZE | PH_ATTR_UIDGID | PH_ATTR_PERMISSIONS | PH_ATTR_ACMODTIME,
		.size = UINT64_MAX - 1, .uid = 7, .gid = 8, .perm = 040700,
		.atime = 1, .mtime = UINT32_MAX,
	}, got;
	struct ph_buf b = { .max = 1 << 20 };
	struct ph_rd r;
	size_t cut;

	(void)state;
	assert_int_equal(ph_wire_put_attrs(&b, &a), 0);
	assert_int_equal(ph_buf_put_u8(&b, 0xee), 0);   /* the next field of a packet */
	r = (struct ph_rd){ b.data, b.len };
	assert_int_equal(ph_wire_get_attrs(&r, &got), 0);
	assert_int_equal(got.flags, a.flags);
	assert_true(got.size == a.size);
	assert_int_equal(got.uid, a.uid);
	assert_int_equal(got.gid, a.gid);
	assert_int_equal(got.perm, a.perm);
	assert_int_equal(got.atime, a.atime);
	assert_int_equal(got.mtime, a.mtime);
	assert_int_equal(r.left, 1);
	assert_int_equal(*r.p, 0xee);
	for (cut = 0; cut < b.len - 1; cut++) {
		r = (struct ph_rd){ b.data, cut };
		assert_int_equal(ph_wire_get_attrs(&r, &got), PHSYNC_EPROTO);
	}
	ph_buf_free(&b);
}

static void
test_extended_pairs(void **state)
{
	/* flags EXTENDED|PERMISSIONS, perm, two pairs, then a trailing byte. */
	static const uint8_t two[] = {
		0x80, 0, 0, 0x04, 0, 0, 0x01, 0xa4, 0, 0, 0, 2,
		0, 0, 0, 1, 'a', 0, 0, 0, 0,
		0, 0, 0, 2, 'b', 'c', 0, 0, 0, 1, 'd',
		0x42,
	};
	/* A count of 2^32-1 pairs with none there: refused at once. */
	static const uint8_t huge[] = { 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	/* A pair whose value's length runs past the end. */
	static const uint8_t long_str[] = { 0x80, 0, 0, 0, 0, 0, 0, 1,
	                                    0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 'x' };
	struct ph_sftp_attrs got;
	struct ph_rd r = { two, sizeof(two) };
	size_t cut;

	(void)state;
	assert_int_equal(ph_wire_get_attrs(&r, &got), 0);
	assert_int_equal(got.flags, PH_ATTR_EXTENDED | PH_ATTR_PERMISSIONS);
	assert_int_equal(got.perm, 0644);
	assert_int_equal(got.size, 0);
	assert_int_equal(r.left, 1);
	assert_int_equal(*r.p, 0x42);
	for (cut = 0; cut < sizeof(two) - 1; cut++) {
		r = (struct ph_rd){ two, cut };
		assert_int_equal(ph_wire_get_attrs(&r, &got), PHSYNC_EPROTO);
	}
	r = (struct ph_rd){ huge, sizeof(huge) };
	assert_int_equal(ph_wire_get_attrs(&r, &got), PHSYNC_EPROTO);
	r = (struct ph_rd){ long_str, sizeof(long_str) };
	assert_int_equal(ph_wire_get_attrs(&r, &got), PHSYNC_EPROTO);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_bytes),
		cmocka_unit_test(test_roundtrip_and_every_cut),
		cmocka_unit_test(test_extended_pairs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
