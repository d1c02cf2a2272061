/* SPDX-License-Identifier: ISC */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
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

/* A message may take an old one as its argument (made apart, then put in
 * place: vsnprintf into the buffer it reads from is undefined). */
static void
test_message_built_from_the_last(void **state)
{
	phsync_ctx *ctx = NULL;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	ph_err(ctx, PHSYNC_EIO, "disk gone");
	ph_err(ctx, PHSYNC_EIO, "copy failed: %s (%d)", ctx->err, 5);
	assert_string_equal(phsync_ctx_error(ctx), "copy failed: disk gone (5)");
	phsync_ctx_free(ctx);
}

struct writer {
	phsync_ctx *ctx;
	char c;
	size_t len;
};

static void *
write_many(void *arg)
{
	struct writer *w = arg;
	char msg[1000];
	int i;

	memset(msg, w->c, w->len);
	msg[w->len] = '\0';
	for (i = 0; i < 20000; i++)
		ph_err(w->ctx, PHSYNC_EIO, "%s", msg);
	return NULL;
}

/* Two threads of one run failing at once (the records' half and the
 * listing): the message left is one of theirs, whole, never the start of
 * one over the end of the other. */
static void
test_threads_leave_one_whole_message(void **state)
{
	phsync_ctx *ctx = NULL;
	struct writer a, b;
	pthread_t ta, tb;
	size_t n, i;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	a = (struct writer){ ctx, 'a', 900 };
	b = (struct writer){ ctx, 'b', 300 };
	assert_int_equal(pthread_create(&ta, NULL, write_many, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, write_many, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	n = strlen(ctx->err);
	assert_true(n == 900 || n == 300);
	for (i = 0; i < n; i++)
		assert_int_equal(ctx->err[i], n == 900 ? 'a' : 'b');
	phsync_ctx_free(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror_known_and_unknown),
		cmocka_unit_test(test_ctx_error_message),
		cmocka_unit_test(test_message_built_from_the_last),
		cmocka_unit_test(test_threads_leave_one_whole_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
