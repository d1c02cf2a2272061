/* phsync command line: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "phsync/phsync.h"
#include "cli.h"

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "delta") == 0)
		return cli_delta_main(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("phsync %s\n", PHSYNC_VERSION);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "usage: phsync pull|push|delta ...\n");
	return CLI_EXIT_USAGE;
}
