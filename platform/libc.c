/* SPDX-License-Identifier: ISC */
/* platform.h's C library pieces, POSIX side: localtime_r, gethostname,
 * kill(pid, 0), sysconf, fstatvfs, realpath. The Windows side is
 * platform/win32/libc.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"

int
ph_localtime(time_t t, struct tm *tm)
{
	return localtime_r(&t, tm) != NULL ? 0 : -EINVAL;
}

void
ph_hostname(char *buf, size_t n)
{
	if (n == 0)
		return;
	if (gethostname(buf, n) != 0)
		buf[0] = '\0';
	buf[n - 1] = '\0';
}

int
ph_pid_alive(uint32_t pid)
{
	/* EPERM: alive, someone else's. */
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? 0 : 1;
}

int
ph_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (n > 4096 ? 4096 : (int)n) : 1;
}

int
ph_free_space(int fd, uint64_t *bytes)
{
	struct statvfs vs;

	if (fstatvfs(fd, &vs) != 0)
		return -errno;
	*bytes = (uint64_t)vs.f_bavail * vs.f_frsize;
	return 0;
}

int
ph_realpath(const char *path, char *out, size_t n)
{
	char *r = realpath(path, NULL);
	size_t len;

	if (r == NULL)
		return -errno;
	len = strlen(r);
	if (len >= n) {
		free(r);
		return -ENAMETOOLONG;
	}
	memcpy(out, r, len + 1);
	free(r);
	return 0;
}
