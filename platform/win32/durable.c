/* SPDX-License-Identifier: ISC */
/* Windows durability and descriptor limits (platform.h). */
#include <errno.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>
#include <windows.h>

#include "platform.h"
#include "win32.h"

/* msvcrt's ceiling for stdio streams (and its table of C runtime fds). */
#define CRT_MAX_FILES 2048

int
ph_durable_sync(const int *fds, size_t n)
{
	size_t i;

	/* Windows has no syncfs: FlushFileBuffers per file. */
	for (i = 0; i < n; i++) {
		intptr_t oh = _get_osfhandle(fds[i]);

		if (oh == -1 || oh == -2)
			return -EBADF;
		if (!FlushFileBuffers((HANDLE)oh))
			return ph_win_errno(GetLastError());
	}
	return 0;
}

int
ph_writeback_hint(int fd, uint64_t off, uint64_t len)
{
	/* Windows has no call to start write-back of a range early. */
	(void)fd;
	(void)off;
	(void)len;
	return -ENOSYS;
}

int
ph_pipe_grow(int fd, size_t size)
{
	/* A pipe's buffer is sized when CreatePipe makes it. */
	(void)fd;
	(void)size;
	return -ENOSYS;
}

int
ph_drop_cache(int fd)
{
	/* Only a handle opened FILE_FLAG_NO_BUFFERING bypasses the cache. */
	(void)fd;
	return -ENOSYS;
}

uint64_t
ph_raise_nofile(void)
{
	/* Kernel HANDLEs have no per-process soft limit; the C runtime's
	 * table of streams starts at 512 and can be raised to its ceiling. */
	if (_getmaxstdio() < CRT_MAX_FILES)
		(void)_setmaxstdio(CRT_MAX_FILES);
	return (uint64_t)_getmaxstdio();
}
