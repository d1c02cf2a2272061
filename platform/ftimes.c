/* SPDX-License-Identifier: ISC */
/* pfs.h's ph_set_atime_mtime, POSIX side (Windows: platform/win32/ftimes.c). */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "pfs.h"

int
ph_set_atime_mtime(int fd, int64_t atime, int64_t mtime)
{
	struct timespec ts[2];

	ts[0].tv_sec = (time_t)atime;
	ts[0].tv_nsec = 0;
	ts[1].tv_sec = (time_t)mtime;
	ts[1].tv_nsec = 0;
	return futimens(fd, ts) == 0 ? 0 : -errno;
}
