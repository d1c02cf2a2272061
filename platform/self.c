/* SPDX-License-Identifier: ISC */
/* Where the running program is (to find the static helpers beside it). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

#if defined(HAVE_NSGETEXECUTABLEPATH)
#include <mach-o/dyld.h>
#elif defined(HAVE_KERN_PROC_PATHNAME)
#include <sys/types.h>
#include <sys/sysctl.h>
#endif

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* The symlink some procfs keeps to the program: Linux, NetBSD, FreeBSD
 * and DragonFly with procfs mounted. Elsewhere none exists (ENOENT). */
static int
from_procfs(char *buf, size_t n)
{
	static const char *const links[] = { "/proc/self/exe", "/proc/curproc/exe",
	                                     "/proc/curproc/file" };
	size_t i;
	ssize_t k;

	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if ((k = readlink(links[i], buf, n - 1)) < 0)
			continue;
		if ((size_t)k >= n - 1)
			return -ENAMETOOLONG;
		buf[k] = '\0';
		return buf[0] == '/' ? 0 : -ENOENT;
	}
	return -ENOSYS;
}

int
ph_exe_path(char *buf, size_t n)
{
	if (n < 2)
		return -ENAMETOOLONG;
#if defined(HAVE_NSGETEXECUTABLEPATH)
	{
		char raw[PATH_MAX], real[PATH_MAX];
		uint32_t size = sizeof(raw);

		/* The path it was started by (maybe through symlinks). */
		if (_NSGetExecutablePath(raw, &size) == 0 && realpath(raw, real) != NULL) {
			if (strlen(real) >= n)
				return -ENAMETOOLONG;
			memcpy(buf, real, strlen(real) + 1);
			return 0;
		}
	}
#elif defined(HAVE_KERN_PROC_PATHNAME)
	{
		int mib[4] = { CTL_KERN, KERN_PROC, KERN_PROC_PATHNAME, -1 };
		size_t len = n;

		if (sysctl(mib, 4, buf, &len, NULL, 0) == 0 && len > 0 && buf[0] == '/')
			return 0;
	}
#endif
	return from_procfs(buf, n);
}
