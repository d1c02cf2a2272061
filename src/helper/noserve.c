/* SPDX-License-Identifier: ISC */
/* `phsync serve` where the helper is not built (the Windows build: the
 * helper serves a phone's folders, Linux or Android, and confines itself
 * with POSIX calls; a Windows laptop is never the phone). Listed only by
 * cmake/windows.cmake; CMakeLists.txt leaves it out of the POSIX build,
 * where serve.c defines phsync_serve. */
#include <stdio.h>

#include "phsync/error.h"
#include "phsync/phsync.h"

int
phsync_serve(const char *root, int in_fd, int out_fd)
{
	(void)root;
	(void)in_fd;
	(void)out_fd;
	fputs("phsync serve: the helper runs on the phone (Linux, Android), not on this "
	      "computer: phsync pull, push and sync start it there themselves\n", stderr);
	return PHSYNC_EUNSUPPORTED;
}
