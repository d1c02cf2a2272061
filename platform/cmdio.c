/* SPDX-License-Identifier: ISC */
/* cmdio.h's POSIX side: argv is already the bytes the user gave, and a
 * descriptor carries bytes as they are. */
#include "cmdio.h"

int
ph_args_utf8(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int
ph_fd_binary(int fd)
{
	(void)fd;
	return 0;
}
