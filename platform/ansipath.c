/* SPDX-License-Identifier: ISC */
/* ph_ansi_path (psys.h), the POSIX side: the C library takes the bytes as
 * they are. The Windows side is platform/win32/ansipath.c. */
#include <errno.h>
#include <string.h>

#include "psys.h"

int
ph_ansi_path(const char *path, char *out, size_t n)
{
	size_t len = strlen(path);

	if (len >= n)
		return -ENAMETOOLONG;
	memcpy(out, path, len + 1);
	return 0;
}
