/* SPDX-License-Identifier: ISC */
/* ph_durable_sync: every file system of a batch is made durable, not only
 * the first file's. syncfs and fsync are wrapped at link time
 * (-Wl,--wrap, tests/CMakeLists.txt) to record which files they reached. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ph_config.h"
#include "platform.h"

#define MAX_CALLS 256

static dev_t synced_dev[MAX_CALLS];
static int nsynced;

int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __real_syncfs(int fd);
int __wrap_syncfs(int fd);

static void
record(int fd)
{
	struct stat st;

	if (nsynced < MAX_CALLS && fstat(fd, &st) == 0)
		synced_dev[nsynced++] = st.st_dev;
}

int
__wrap_fsync(int fd)
{
	record(fd);
	return __real_fsync(fd);
}

int
__wrap_syncfs(int fd)
{
	record(fd);
	return __real_syncfs(fd);
}

static int
was_synced(dev_t d)
{
	int i;

	for (i = 0; i < nsynced; i++)
		if (synced_dev[i] == d)
			return 1;
	return 0;
}

static int
open_temp(const char *dir, struct stat *st)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/phsync-durable-XXXXXX", dir);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(fstat(fd, st), 0);
	return fd;
}

static void
test_every_file_system_synced(void **state)
{
	const char *dirs[2] = { getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", "/dev/shm" };
	struct stat a, b;
	int fds[20], i;

	(void)state;
	for (i = 0; i < 20; i++)
		fds[i] = open_temp(dirs[i % 2], i % 2 ? &b : &a);
	if (a.st_dev == b.st_dev) {
		for (i = 0; i < 20; i++)
			close(fds[i]);
		skip(); /* needs two file systems */
	}
	nsynced = 0;
	assert_int_equal(ph_durable_sync(fds, 20), 0);
	assert_true(was_synced(a.st_dev));
	assert_true(was_synced(b.st_dev));
#ifdef HAVE_SYNCFS
	/* One call per file system, not one per file. */
	assert_int_equal(nsynced, 2);
#else
	/* No syncfs: every file's own fsync. */
	assert_int_equal(nsynced, 20);
#endif
	for (i = 0; i < 20; i++)
		close(fds[i]);
}

static void
test_small_batch_fsyncs_each(void **state)
{
	struct stat st;
	int fds[3], i;

	(void)state;
	for (i = 0; i < 3; i++)
		fds[i] = open_temp("/dev/shm", &st);
	nsynced = 0;
	assert_int_equal(ph_durable_sync(fds, 3), 0);
	assert_int_equal(nsynced, 3);
	for (i = 0; i < 3; i++)
		close(fds[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_file_system_synced),
		cmocka_unit_test(test_small_batch_fsyncs_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
