/* SPDX-License-Identifier: ISC */
/* Durability: fsync/syncfs batching (HAVE_SYNCFS), else fsync per file
 * and one F_FULLFSYNC per file system where there is one (macOS). */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

/* Below this many files one fsync each is as cheap as a syncfs. */
#define SYNCFS_MIN_FILES 8
/* File systems one batch may span before per-file work is simpler. */
#define MAX_DEVS 8

static int
sync_each(const int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fsync(fds[i]) != 0)
			return -errno;
	return 0;
}

/* Calls fn once per file system of fds, through the first file of each.
 * Returns 0, fn's error, or -E2BIG when the files span more than MAX_DEVS
 * file systems (nothing is then called past the MAX_DEVS-th). */
static int
each_fs(const int *fds, size_t n, int (*fn)(int))
{
	dev_t devs[MAX_DEVS];
	size_t ndev = 0, i, k;
	struct stat st;
	int rc;

	for (i = 0; i < n; i++) {
		if (fstat(fds[i], &st) != 0)
			return -errno;
		for (k = 0; k < ndev && devs[k] != st.st_dev; k++)
			;
		if (k < ndev)
			continue;
		if (ndev == MAX_DEVS)
			return -E2BIG;
		devs[ndev++] = st.st_dev;
		if ((rc = fn(fds[i])) != 0)
			return rc;
	}
	return 0;
}

#ifdef HAVE_SYNCFS
static int
fs_sync(int fd)
{
	return syncfs(fd) == 0 ? 0 : -errno;
}

int
ph_durable_sync(const int *fds, size_t n)
{
	if (n < SYNCFS_MIN_FILES)
		return sync_each(fds, n);
	/* syncfs covers one file system: the files of a batch may sit on
	 * several (a mount point below the destination), so one syncfs per
	 * file system, each through a file of that file system. syncfs
	 * reports write-back errors of the file system since the fd was
	 * opened (Linux >= 5.8); on any failure fall back to per-file fsync
	 * so an error is attributed, not lost. */
	if (each_fs(fds, n, fs_sync) == 0)
		return 0;
	return sync_each(fds, n);
}

#else /* no syncfs: fsync each file (macOS, the BSDs, PHSYNC_PORTABLE) */

/* After the fsyncs, the drive's own write cache: fsync on macOS hands the
 * data to the drive, which may still hold it in volatile memory;
 * F_FULLFSYNC does the same and then flushes the drive's cache, which is
 * the whole drive's, so one per file system after every file's fsync
 * covers the batch (as one F_FULLFSYNC per file would, at a fraction of
 * the cost: each flush waits for the drive). A file system that cannot
 * (ENOTSUP, EINVAL: SMB, FAT on some versions) has had its fsync. */
static int
fs_flush(int fd)
{
#ifdef HAVE_F_FULLFSYNC
	if (fcntl(fd, F_FULLFSYNC) != 0 && errno != ENOTSUP && errno != EINVAL &&
	    errno != ENOTTY)
		return -errno;
#else
	(void)fd;
#endif
	return 0;
}

int
ph_durable_sync(const int *fds, size_t n)
{
	size_t i;
	int rc;

	if ((rc = sync_each(fds, n)) != 0)
		return rc;
	if ((rc = each_fs(fds, n, fs_flush)) != -E2BIG)
		return rc;
	for (i = 0; i < n; i++)
		if ((rc = fs_flush(fds[i])) != 0)
			return rc;
	return 0;
}
#endif

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
