/* SPDX-License-Identifier: ISC */
/* Internal to the phsync executable: the exit codes and the commands'
 * entry points, which main.c dispatches to. Each takes argv from the
 * command's own name on (argv[0]: "pull", "backup", ...) and returns the
 * exit code. */
#ifndef PH_CLI_H
#define PH_CLI_H

/* Exit codes, documented in README.md, docs/phsync.1 and --help. */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1,       /* fatal: missing folder, local I/O, protocol */
	CLI_EXIT_USAGE = 2,       /* bad command line */
	CLI_EXIT_CONNECT = 3,     /* cannot connect or authenticate */
	CLI_EXIT_HOSTKEY = 4,     /* host key changed, or unknown and refused */
	CLI_EXIT_PARTIAL = 5,     /* some files failed, the rest synced */
	CLI_EXIT_INTERRUPTED = 6  /* stopped by a signal; re-run to finish */
};

/* The exit code of a PHSYNC_E* (exit.c). */
int cli_exit_code(int rc);

/* `phsync pull ...`, `phsync push ...` (sync_cmd.c). */
int cli_pull_main(int argc, char **argv);
int cli_push_main(int argc, char **argv);
int cli_sync_main(int argc, char **argv);
/* `phsync status ...` (status_cmd.c). */
int cli_status_main(int argc, char **argv);
/* `phsync delta ...`: rdiff-style plumbing over the delta engine. */
int cli_delta_main(int argc, char **argv);
/* `phsync pair ...` and `phsync doctor ...` (pair_cmd.c). */
int cli_pair_main(int argc, char **argv);
int cli_doctor_main(int argc, char **argv);
/* `phsync backup|restore|verify ...` (argv[0] names which). */
int cli_backup_main(int argc, char **argv);
/* `phsync daemon ...` (daemon_cmd.c), `phsync serve ROOT` (serve_cmd.c). */
int cli_daemon_main(int argc, char **argv);
int cli_serve_main(int argc, char **argv);

#endif
