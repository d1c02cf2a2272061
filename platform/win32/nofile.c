/* SPDX-License-Identifier: ISC */
/* The open-file limit as it stands (platform.h). Kernel HANDLEs have no
 * per-process soft limit; msvcrt's table of C runtime fds, which every
 * pfs.h descriptor takes a slot of, holds 2048 (its stream table starts at
 * 512 and ph_raise_nofile raises it to the same 2048). */
#include <stdint.h>

#include "platform.h"

#define CRT_MAX_FDS 2048

uint64_t
ph_nofile_limit(void)
{
	return CRT_MAX_FDS;
}
