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
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
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

/* A stat's times to the nanosecond (st_mtim, or macOS's st_mtimespec),
 * before 1970 too: the seconds go down, the nanoseconds count up. */
static void
test_stat_times_to_the_nanosecond(void **state)
{
	struct timespec ts[2] = { { 1234567890, 123456789 }, { 1234567890, 123456789 } };
	struct stat st;
	int64_t c;
	int fd;

	(void)state;
	fd = make_file("times", 1);
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(fstat(fd, &st), 0);
#if defined(HAVE_STRUCT_STAT_ST_MTIM) || defined(HAVE_STRUCT_STAT_ST_MTIMESPEC)
	assert_true(ph_st_mtime_ns(&st) == INT64_C(1234567890123456789));
	assert_int_equal(ph_st_mtime_nsec(&st), 123456789);
	ts[0].tv_sec = ts[1].tv_sec = -2;
	ts[0].tv_nsec = ts[1].tv_nsec = 500000000;
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(ph_st_mtime_ns(&st) == INT64_C(-1500000000));
	assert_int_equal(ph_st_mtime_nsec(&st), 500000000);
#else
	assert_true(ph_st_mtime_ns(&st) == INT64_C(1234567890000000000));
	assert_int_equal(ph_st_mtime_nsec(&st), 0);
#endif
	/* The change time (not settable): its seconds are st_ctime's. */
	c = ph_st_ctime_ns(&st) - (int64_t)st.st_ctime * 1000000000;
	assert_true(c >= 0 && c < 1000000000);
	close(fd);
}

/* ph_socket's descriptors are close-on-exec, and non-blocking when asked. */
static void
test_socket_flags(void **state)
{
	int fd;

	(void)state;
	fd = ph_socket(AF_UNIX, SOCK_STREAM, 0, 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
	fd = ph_socket(AF_UNIX, SOCK_STREAM, 0, PH_SOCK_NONBLOCK);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
	assert_true(ph_socket(-1, SOCK_STREAM, 0, 0) < 0);
}

/* A send to a peer gone says EPIPE and raises no SIGPIPE (its default
 * action would end this test), and none is left pending. */
static void
test_send_raises_no_sigpipe(void **state)
{
	struct sockaddr_un sa;
	sigset_t pending;
	void (*was)(int);
	int srv, cli, acc, i;
	ssize_t n = 0;

	(void)state;
	was = signal(SIGPIPE, SIG_DFL);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	assert_true((srv = ph_socket(AF_UNIX, SOCK_STREAM, 0, 0)) >= 0);
	assert_int_equal(bind(srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(srv, 1), 0);
	assert_true((cli = ph_socket(AF_UNIX, SOCK_STREAM, 0, 0)) >= 0);
	assert_int_equal(connect(cli, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true((acc = accept(srv, NULL, NULL)) >= 0);
	assert_int_equal(ph_send_nosigpipe(cli, "ok", 2), 2);
	close(acc);
	for (i = 0; i < 4 && n >= 0; i++)
		n = ph_send_nosigpipe(cli, "x", 1);
	assert_int_equal(n, -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(sigpending(&pending), 0);
	assert_int_equal(sigismember(&pending, SIGPIPE), 0);
	close(cli);
	close(srv);
	unlinkat(dfd, "sock", 0);
	signal(SIGPIPE, was);
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
		cmocka_unit_test(test_stat_times_to_the_nanosecond),
		cmocka_unit_test(test_socket_flags),
		cmocka_unit_test(test_send_raises_no_sigpipe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
