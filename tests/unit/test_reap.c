/* SPDX-License-Identifier: ISC */
/* The helper's reaper (src/helper/reap.c): what it holds across an unlink,
 * and that every reference handed to it is closed by the end, queue full
 * or not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "reap.h"

static char dir[] = "/tmp/phsync-reap-XXXXXX";
static int dfd = -1;

static void
make_file(const char *name, size_t size)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(pwrite(fd, "x", 1, 0), 1);
	close(fd);
}

static int
is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	char cmd[64];

	(void)state;
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Only a big regular file with one link is worth holding. */
static void
test_hold_what(void **state)
{
	int fd;

	(void)state;
	make_file("small", 1000);
	make_file("big", 1 << 20);
	make_file("linked", 1 << 20);
	assert_int_equal(linkat(dfd, "linked", dfd, "linked2", 0), 0);
	assert_int_equal(symlinkat("big", dfd, "sym"), 0);
	assert_int_equal(mkdirat(dfd, "sub", 0700), 0);
	assert_int_equal(ph_reap_hold(dfd, "small"), -1);
	assert_int_equal(ph_reap_hold(dfd, "linked"), -1);  /* unlinking frees nothing */
	assert_int_equal(ph_reap_hold(dfd, "sym"), -1);     /* never followed */
	assert_int_equal(ph_reap_hold(dfd, "sub"), -1);
	assert_int_equal(ph_reap_hold(dfd, "missing"), -1);
	fd = ph_reap_hold(dfd, "big");
#ifdef O_PATH
	struct ph_reap *none = NULL;

	assert_true(fd >= 0);
	ph_reap_release(&none, -1);   /* nothing to let go of: no thread made */
	assert_null(none);
	close(fd);
#else
	assert_int_equal(fd, -1);     /* no O_PATH: nothing is ever held */
#endif
}

/* Held across the unlink, the file lives on (its size still there) until
 * the reaper closes it; ph_reap_end returns once every one is closed,
 * including those past its queue's length (closed by the caller). */
#ifdef O_PATH
static void
test_release_closes_all(void **state)
{
	struct ph_reap *r = NULL;
	int fds[100];
	char name[32];
	struct stat st;

	(void)state;
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		make_file(name, 512 << 10);
		fds[i] = ph_reap_hold(dfd, name);
		assert_true(fds[i] >= 0);
		assert_int_equal(unlinkat(dfd, name, 0), 0);
		assert_int_equal(fstat(fds[i], &st), 0);
		assert_int_equal(st.st_nlink, 0);
		assert_int_equal(st.st_size, 512 << 10);
	}
	for (int i = 0; i < 100; i++)
		ph_reap_release(&r, fds[i]);
	assert_non_null(r);
	ph_reap_end(&r);
	assert_null(r);
	for (int i = 0; i < 100; i++)
		assert_false(is_open(fds[i]));
	ph_reap_end(&r);   /* twice: a no-op */
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_what),
#ifdef O_PATH
		cmocka_unit_test(test_release_closes_all),
#endif
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
