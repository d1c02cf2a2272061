/* SPDX-License-Identifier: ISC */
/* pull's and push's command line as a parse and a run (sync_cmd.c), which
 * `phsync status HOST:DIR LOCALDIR` (status_cmd.c) uses too. */
#ifndef PH_CLI_SYNC_CMD_H
#define PH_CLI_SYNC_CMD_H

#include "phsync/phsync.h"
#include "opts.h"

/* A pull or push as its command line asks. */
struct cli_sync {
	struct cli_args a;
	enum phsync_direction dir;
	const char *remote, *local;   /* HOST:DIR and LOCALDIR, argv's words */
	int status;                   /* for `phsync status` with a pair */
	int status_json;              /* its --json (the run itself tells only
	                                 failures, in words) */
};

/* What a run ends with: told by the caller (the summary, or the status). */
typedef void (*cli_sync_told)(struct cli_sync *s, const struct phsync_stats *st, int code,
                              const char *err);

/* Parses pull's or push's command line (argv[0]: the command), status set
 * for `phsync status` with a pair (its --help; no --watch). Returns
 * CLI_GO_ON with s filled, or the exit code after --help or a message. */
int cli_sync_parse(int argc, char **argv, enum phsync_direction dir, int status,
                   struct cli_sync *s);
/* Runs the parsed sync (Ctrl-C asks it to stop, prompts on the terminal),
 * then tell(s, stats, exit code, the error message or NULL). Returns the
 * exit code. */
int cli_sync_run(struct cli_sync *s, cli_sync_told tell);

#endif
