/* SPDX-License-Identifier: ISC */
/* `phsync serve ROOT` (cli.h): the remote helper, started by phsync over
 * ssh. Its command line is exact (ROOT alone, or --help): it is written by
 * the other end, not by hand, so nothing is permuted or shortened. */
#include <stdio.h>
#include <string.h>

#include "phsync/phsync.h"
#include "cli.h"

int
cli_serve_main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs("usage: phsync serve ROOT\n"
		      "The remote helper: pull and push start it on the other end over ssh\n"
		      "and speak SFTP v3 with phsync's delta extensions on its standard\n"
		      "input and output (docs/PROTOCOL.md). Every path must be ROOT or lie\n"
		      "beneath it; below ROOT no symlink is followed. Not meant to be run\n"
		      "by hand.\n"
		      "\n"
		      "Options:\n"
		      "  -h, --help         this text\n", stdout);
		return CLI_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs("usage: phsync serve ROOT\nTry 'phsync serve --help'.\n", stderr);
		return CLI_EXIT_USAGE;
	}
	return phsync_serve(argv[1], 0, 1) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}
