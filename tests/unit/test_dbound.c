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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_past_the_listed_size),
		cmocka_unit_test(test_sig_len_is_the_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
