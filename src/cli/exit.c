/* SPDX-License-Identifier: ISC */
/* The exit code of a PHSYNC_E* (cli.h): one table for every command. */
#include "phsync/phsync.h"
#include "cli.h"

int
cli_exit_code(int rc)
{
	switch (rc) {
	case 0:
		return CLI_EXIT_OK;
	case PHSYNC_EINVAL:
		return CLI_EXIT_USAGE;
	case PHSYNC_ECONNECT:
	case PHSYNC_EAUTH:
		return CLI_EXIT_CONNECT;
	case PHSYNC_EHOSTKEY:
	case PHSYNC_EHOSTUNKNOWN:
		return CLI_EXIT_HOSTKEY;
	case PHSYNC_EPARTIAL:
	case PHSYNC_ECONFLICT:
		return CLI_EXIT_PARTIAL;
	case PHSYNC_EINTR:
		return CLI_EXIT_INTERRUPTED;
	default:
		return CLI_EXIT_ERROR;
	}
}
