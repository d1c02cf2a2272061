/* SPDX-License-Identifier: ISC */
/* phsync's command line: main() hands argv to the command it names. Each
 * command is a file of its own (*_cmd.c) standing on the helpers (opts.c,
 * the shared options; tty.c, the terminal and signals; output.c, what is
 * printed; exit.c, the exit codes); docs/ARCHITECTURE.md draws it. */
#include <stdio.h>
#include <string.h>

#include "ph_config.h"
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif

#include "phsync/phsync.h"
#include "phsync/sys.h"
#include "cli.h"
#include "help.h"
#include "opts.h"

/* The commands, each with argv from its own name on. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "pull", cli_pull_main },
	{ "push", cli_push_main },
	{ "sync", cli_sync_main },
	{ "delta", cli_delta_main },
	{ "status", cli_status_main },
	{ "pair", cli_pair_main },
	{ "doctor", cli_doctor_main },
	{ "backup", cli_backup_main },
	{ "restore", cli_backup_main },
	{ "verify", cli_backup_main },
	{ "daemon", cli_daemon_main },
	{ "serve", cli_serve_main },
};

int
main(int argc, char **argv)
{
	const char *cmd;
	size_t i;

#ifdef HAVE_MALLOPT
	/* Each file's diff window and read buffers (half a MiB and more) stay
	 * in the heap for the next file: by default glibc mapped them afresh
	 * or trimmed them away per file, and a push faulted in 10 MB of fresh
	 * pages for 60 photos (perf record -e page-faults). The helper does
	 * the same in ph_serve_run. */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	/* Names as UTF-8 on every OS (Windows hands main the ANSI code page);
	 * on failure the arguments as given. */
	(void)phsync_args_utf8(&argc, &argv);
	cmd = argc >= 2 ? argv[1] : "";
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("phsync %s\n", PHSYNC_VERSION);
		return CLI_EXIT_OK;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		cli_print_help(cli_help_main);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "phsync: %s%s%s\nTry 'phsync --help'.\n",
	        cmd[0] ? "unknown command '" : "no command given", cmd, cmd[0] ? "'" : "");
	return CLI_EXIT_USAGE;
}
