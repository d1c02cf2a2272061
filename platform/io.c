/* SPDX-License-Identifier: ISC */
/* Hints and references on open files whose calls differ by OS: early
 * write-back, pipe size, moving file pages through pipes (splice),
 * dropping cached pages, a reference that keeps an inode alive. Each has a
 * feature test (ph_config.h) and a POSIX fallback beside it; the static
 * helper links this file too. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

int
ph_writeback_hint(int fd, uint64_t off, uint64_t len)
{
#ifdef HAVE_SYNC_FILE_RANGE
	if (sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0)
		return -errno;
	return 0;
#else
	/* No way to start write-back of a range alone: the fsync that makes
	 * the file durable writes it all. Nothing depends on the hint. */
	(void)fd;
	(void)off;
	(void)len;
	return -ENOSYS;
#endif
}

int
ph_pipe_grow(int fd, size_t size)
{
#ifdef HAVE_F_SETPIPE_SZ
	if (size > INT32_MAX)
		size = INT32_MAX;
	if (fcntl(fd, F_SETPIPE_SZ, (int)size) < 0)
		return -errno;
	return 0;
#else
	/* The BSDs and macOS size pipe buffers themselves (up to 64 KiB,
	 * more under load); a program cannot ask. */
	(void)fd;
	(void)size;
	return -ENOSYS;
#endif
}

int64_t
ph_pipe_size(int fd)
{
#ifdef HAVE_F_SETPIPE_SZ
	int n = fcntl(fd, F_GETPIPE_SZ);

	return n < 0 ? -errno : (int64_t)n;
#else
	(void)fd;
	return -ENOSYS;
#endif
}

#ifdef HAVE_SPLICE
/* splice(2) again after a signal: bytes moved, or -errno. */
static int64_t
splice_again(int in, loff_t *off, int out, size_t len, unsigned flags)
{
	ssize_t n;

	do
		n = splice(in, off, out, NULL, len, flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int64_t)n;
}
#endif

int64_t
ph_splice_in(int fd, uint64_t off, int pw, size_t len)
{
#ifdef HAVE_SPLICE
	loff_t o = (loff_t)off;

	return splice_again(fd, &o, pw, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
#else
	/* The BSDs and macOS move file pages into a pipe with no call:
	 * callers read and write instead. */
	(void)fd;
	(void)off;
	(void)pw;
	(void)len;
	return -ENOSYS;
#endif
}

int64_t
ph_splice_out(int pr, int out, size_t len)
{
#ifdef HAVE_SPLICE
	return splice_again(pr, NULL, out, len, SPLICE_F_MOVE);
#else
	(void)pr;
	(void)out;
	(void)len;
	return -ENOSYS;
#endif
}

int
ph_drop_cache(int fd)
{
#if defined(HAVE_POSIX_FADVISE) && defined(POSIX_FADV_DONTNEED)
	/* posix_fadvise returns the error, not -1 with errno. */
	int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);

	return e == 0 ? 0 : -e;
#else
	/* macOS's F_NOCACHE keeps what is cached already: no portable call
	 * drops a file's pages. The read that follows may come from memory,
	 * after the fsync reported the data written. */
	(void)fd;
	return -ENOSYS;
#endif
}

int
ph_open_ref(int dirfd, const char *name)
{
	int fd;
#ifdef HAVE_O_PATH
	/* Neither reads nor needs read permission. */
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
	/* A read-only open holds the inode as well; O_NONBLOCK so a FIFO
	 * put there since the caller looked cannot block, and the check
	 * below lets go of anything but a regular file. */
	struct stat st;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
#endif
	return fd < 0 ? -1 : fd;
}
