/* Placeholder until the delta engine lands (issue 3); replaced by its owner. */
#include <stdio.h>

#include "cli.h"

int
cli_delta_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "phsync delta: not built yet\n");
	return CLI_EXIT_ERROR;
}
