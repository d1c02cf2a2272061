/* SPDX-License-Identifier: ISC */
/* phsync-helper: the remote helper alone (`phsync-helper serve ROOT`), a
 * static program that phsync uploads to a phone without phsync and runs
 * there over ssh (docs/PROTOCOL.md, "Bootstrap"). Needs only libc. */
#include <stdio.h>
#include <string.h>

#include "phsync/phsync.h"

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("phsync-helper %s\n", PHSYNC_VERSION);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "serve") != 0 || argv[2][0] == '-') {
		fputs("usage: phsync-helper serve ROOT\n", stderr);
		return 2;
	}
	return phsync_serve(argv[2], 0, 1) == 0 ? 0 : 1;
}
