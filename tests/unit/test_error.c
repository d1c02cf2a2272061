/* SPDX-License-Identifier: ISC */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "ctx.h"

static void
test_strerror_known_and_unknown(void **state)
{
	(void)state;
	assert_string_equal(phsync_strerror(0), "success");
	assert_string_equal(phsync_strerror(PHSYNC_EHOSTKEY), "host key mismatch");
	assert_string_equal(phsync_strerror(-999), "unknown error");
	assert_string_equal(phsync_strerror(5), "unknown error");
}

static void
test_ctx_error_message(void **state)
{
	phsync_ctx *ctx = NULL;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_string_equal(phsync_ctx_error(ctx), "");
	assert_int_equal(ph_err(ctx, PHSYNC_ENOENT, "no %s here", "DCIM"), PHSYNC_ENOENT);
	assert_string_equal(phsync_ctx_error(ctx), "no DCIM here");
	assert_int_equal(ph_err_from_errno(ENOSPC), PHSYNC_ENOSPC);
	assert_int_equal(ph_err_from_errno(ELOOP), PHSYNC_EUNSAFE);
	phsync_ctx_free(ctx);
	phsync_ctx_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror_known_and_unknown),
		cmocka_unit_test(test_ctx_error_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
