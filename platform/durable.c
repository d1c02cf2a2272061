/* SPDX-License-Identifier: ISC */
/* Durability helpers: fsync/syncfs batching and early write-back. */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

/* Below this many files one fsync each is as cheap as a syncfs. */
#define SYNCFS_MIN_FILES 8
/* File systems one batch may span before per-file fsync is simpler. */
#define MAX_DEVS 8

static int
sync_each(const int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
#ifdef F_FULLFSYNC
		if (fcntl(fds[i], F_FULLFSYNC) == 0)
			continue;
#endif
		if (fsync(fds[i]) != 0)
			return -errno;
	}
	return 0;
}

int
ph_durable_sync(const int *fds, size_t n)
{
#ifdef HAVE_SYNCFS
	dev_t devs[MAX_DEVS];
	size_t ndev = 0, i, k;
	struct stat st;

	if (n < SYNCFS_MIN_FILES)
		return sync_each(fds, n);
	/* syncfs covers one file system: the files of a batch may sit on
	 * several (a mount point below the destination), so one syncfs per
	 * file system, each through a file of that file system. */
	for (i = 0; i < n; i++) {
		if (fstat(fds[i], &st) != 0)
			return -errno;
		for (k = 0; k < ndev && devs[k] != st.st_dev; k++)
			;
		if (k < ndev)
			continue;
		if (ndev == MAX_DEVS)
			return sync_each(fds, n);
		devs[ndev++] = st.st_dev;
		/* syncfs reports write-back errors of the file system since the
		 * fd was opened (Linux >= 5.8); on any failure fall back to
		 * per-file fsync so an error is attributed, not lost. */
		if (syncfs(fds[i]) != 0)
			return sync_each(fds, n);
	}
	return 0;
#else
	return sync_each(fds, n);
#endif
}

void
ph_writeback_hint(int fd, uint64_t off, uint64_t len)
{
#ifdef HAVE_SYNC_FILE_RANGE
	(void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
	(void)fd;
	(void)off;
	(void)len;
#endif
}

uint64_t
ph_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 256;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t want = rl.rlim_max;

		if (want == RLIM_INFINITY || want > 65536)
			want = 65536;
		if (want > rl.rlim_cur) {
			rlim_t old = rl.rlim_cur;

			rl.rlim_cur = want;
			if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
				rl.rlim_cur = old;
		}
	}
	return rl.rlim_cur == RLIM_INFINITY ? 65536 : (uint64_t)rl.rlim_cur;
}
