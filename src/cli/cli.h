/* SPDX-License-Identifier: ISC */
/* Internal to the phsync executable: subcommand entry points. */
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

/* `phsync delta ...`: rdiff-style plumbing over the delta engine. */
int cli_delta_main(int argc, char **argv);

/* `phsync pair ...` and `phsync doctor ...` (pair_cmd.c). */
int cli_pair_main(int argc, char **argv);
int cli_doctor_main(int argc, char **argv);

/* Shared with main.c: the terminal prompt (arg: a struct cli_out), whether
 * there is a terminal, the exit code of a PHSYNC_E*, and the stop signals
 * (SIGINT/SIGTERM/SIGHUP interrupt ctx; NULL: nothing to interrupt). */
#include <stddef.h>
struct phsync_ctx;
int cli_tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg);
int cli_has_tty(void);
int cli_exit_code(int rc);
void cli_catch_signals(struct phsync_ctx *ctx);

/* `phsync backup|restore|verify ...` (argv[0] names which). */
int cli_backup_main(int argc, char **argv);

/* rsync's habits (rsyncopt.c): takes the rsync flags that mean what phsync
 * always does out of argv (-a -r -t -z -P, -h unless alone, --archive,
 * --partial...; -P sets *progress), leaving phsync's own options and the
 * paths in order; refuses the others naming phsync's way. takes_arg: the
 * short options that take an argument. Returns 0 with *argc updated, or
 * CLI_EXIT_USAGE after a message. longopts: phsync's own, whose arguments
 * (--exclude -abc) are passed over untouched. */
struct option;
int cli_rsync_flags(int *argc, char **argv, const char *takes_arg,
                    const struct option *longopts, int *progress);

struct phsync_options;
struct cli_out;
/* Tty prompts into opts, and Ctrl-C/SIGTERM/SIGHUP asking ctx to stop (a
 * second one exits at once), as for pull and push (main.c). */
void cli_guard(struct phsync_ctx *ctx, struct phsync_options *opts, struct cli_out *out);

#endif
