/* SPDX-License-Identifier: ISC */
/* The open-file limit as it stands (platform.h); the Windows side is
 * platform/win32/nofile.c. */
#include <stdint.h>
#include <sys/resource.h>

#include "platform.h"

uint64_t
ph_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}
