/* SPDX-License-Identifier: ISC */
/* platform/: each call does what platform.h promises with the feature it
 * was built with, and says -ENOSYS, not success, where its feature is
 * missing (the PHSYNC_PORTABLE build runs these with every fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ph_config.h"
#include "platform.h"

static char dir[] = "/tmp/phsync-platform-XXXXXX";
static int dfd = -1;

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	return dfd < 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int
make_file(const char *name, size_t size)
{
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static void
test_open_ref_holds_the_inode(void **state)
{
	struct stat a, b;
	int fd, ref;

	(void)state;
	fd = make_file("held", 4096);
	assert_int_equal(fstat(fd, &a), 0);
	close(fd);
	ref = ph_open_ref(dfd, "held");
	assert_true(ref >= 0);
	assert_int_equal(unlinkat(dfd, "held", 0), 0);
	/* Unlinked, still there through the reference. */
	assert_int_equal(fstat(ref, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	assert_int_equal((int)b.st_nlink, 0);
	close(ref);
	assert_int_equal(ph_open_ref(dfd, "missing"), -1);
}

static void
test_open_ref_never_blocks_on_a_fifo(void **state)
{
	int ref;

	(void)state;
	assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
	/* Returns at once: O_PATH opens it without reading, the fallback
	 * lets go of anything but a regular file. */
	ref = ph_open_ref(dfd, "fifo");
#ifdef HAVE_O_PATH
	assert_true(ref >= 0);
	close(ref);
#else
	assert_int_equal(ref, -1);
#endif
	unlinkat(dfd, "fifo", 0);
}

static void
test_open_beneath_dir(void **state)
{
	int fd;

	(void)state;
	assert_int_equal(mkdirat(dfd, "a", 0755), 0);
	assert_int_equal(mkdirat(dfd, "a/b", 0755), 0);
	assert_int_equal(symlinkat("a", dfd, "link"), 0);
	fd = ph_open_beneath_dir(dfd, "a/b");
#ifdef HAVE_OPENAT2
	assert_true(fd >= 0 || fd == -ENOSYS); /* -ENOSYS: an old kernel, a filter */
	if (fd >= 0) {
		close(fd);
		assert_true(ph_open_beneath_dir(dfd, "link/b") == -ELOOP ||
		            ph_open_beneath_dir(dfd, "link/b") == -EXDEV);
		fd = ph_open_beneath_dir(dfd, "a/../..");
		assert_true(fd == -EXDEV || fd == -ELOOP);
		assert_int_equal(ph_open_beneath_dir(dfd, "a/none"), -ENOENT);
	}
#else
	/* The caller's walk by hand is the only way here. */
	assert_int_equal(fd, -ENOSYS);
#endif
}

static void
test_exe_path_names_this_program(void **state)
{
	char buf[PATH_MAX], real[PATH_MAX];
	struct stat a, b;

	(void)state;
	assert_int_equal(ph_exe_path(buf, sizeof(buf)), 0);
	assert_true(buf[0] == '/');
	assert_non_null(strstr(buf, "test_platform"));
	assert_non_null(realpath(buf, real));
	assert_int_equal(stat(real, &a), 0);
	assert_int_equal(stat("/proc/self/exe", &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	assert_int_equal(ph_exe_path(buf, 4), -ENAMETOOLONG);
}

static void
test_hints_say_when_they_cannot(void **state)
{
	int fd, p[2];

	(void)state;
	fd = make_file("hint", 1 << 16);
#ifdef HAVE_SYNC_FILE_RANGE
	assert_int_equal(ph_writeback_hint(fd, 0, 1 << 16), 0);
#else
	assert_int_equal(ph_writeback_hint(fd, 0, 1 << 16), -ENOSYS);
#endif
#if defined(HAVE_POSIX_FADVISE)
	assert_int_equal(ph_drop_cache(fd), 0);
#else
	assert_int_equal(ph_drop_cache(fd), -ENOSYS);
#endif
	close(fd);
	assert_int_equal(pipe(p), 0);
#ifdef HAVE_F_SETPIPE_SZ
	assert_int_equal(ph_pipe_grow(p[0], 1 << 17), 0);
	assert_true(fcntl(p[0], F_GETPIPE_SZ) >= 1 << 17);
#else
	assert_int_equal(ph_pipe_grow(p[0], 1 << 17), -ENOSYS);
#endif
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_ref_holds_the_inode),
		cmocka_unit_test(test_open_ref_never_blocks_on_a_fifo),
		cmocka_unit_test(test_open_beneath_dir),
		cmocka_unit_test(test_exe_path_names_this_program),
		cmocka_unit_test(test_hints_say_when_they_cannot),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
