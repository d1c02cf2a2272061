/* SPDX-License-Identifier: ISC */
/* The command line's one option parser (opts.c): the options commands
 * share are written once, in a table, and each command names the groups of
 * it that it takes and adds its own options. */
#ifndef PH_CLI_OPTS_H
#define PH_CLI_OPTS_H

#include <getopt.h>

#include "phsync/phsync.h"
#include "output.h"

/* --include and --exclude rules a command line may give, together. */
#define CLI_MAX_RULES 256

/* What a parser and a command's own option handler return to go on; any
 * other value is the exit code to leave with (0 after --help). */
#define CLI_GO_ON (-1)

/* The groups of shared options (opts.c's table says which option is in
 * which); --help is in every command. */
enum {
	CLI_SSH_CONFIG = 1u << 0,  /* -F FILE */
	CLI_TIMEOUT = 1u << 1,     /* --timeout SEC */
	CLI_VERBOSE = 1u << 2,     /* -v, --verbose (counted) */
	CLI_QUIET = 1u << 3,       /* -q, --quiet */
	CLI_JSON = 1u << 4,        /* --json */
	CLI_PROGRESS = 1u << 5,    /* --progress, --no-progress */
	CLI_RULES = 1u << 6,       /* --exclude, --include, --no-default-excludes */
	CLI_NO_FSYNC = 1u << 7,    /* --no-fsync */
	CLI_STATE_DIR = 1u << 8,   /* --state-dir DIR */
	CLI_SYNC = 1u << 9,        /* pull's and push's: -n, --delete, --watch,
	                              --helper, -V and the rest of phsync --help */
	CLI_HELP = 1u << 10,       /* -h, --help (every command) */
	CLI_TWOWAY = 1u << 11,     /* sync's: --prefer, --max-delete-percent */
	CLI_PULL_PUSH = (1u << 11) - 1  /* all of them: pull, push, status of a pair */
};

/* The keys of shared long options without a letter; a command's own long
 * options use keys from CLI_O_OWN on. */
enum {
	CLI_O_JSON = 256, CLI_O_PROGRESS, CLI_O_NO_PROGRESS, CLI_O_EXCLUDE, CLI_O_INCLUDE,
	CLI_O_NO_DEFAULT_EXCLUDES, CLI_O_NO_FSYNC, CLI_O_TIMEOUT, CLI_O_STATE_DIR,
	CLI_O_MIN_AGE, CLI_O_RESET_STATE, CLI_O_MODIFY_WINDOW, CLI_O_OVERWRITE, CLI_O_DELETE,
	CLI_O_MAX_DELETE, CLI_O_TRASH, CLI_O_REMOVE_SOURCE, CLI_O_WATCH, CLI_O_INTERVAL,
	CLI_O_HELPER, CLI_O_HELPER_PATH, CLI_O_PREFER, CLI_O_MAX_DELETE_PERCENT,
	CLI_O_OWN = 512
};

/* What the shared options set. */
struct cli_args {
	struct phsync_options opts;  /* -F, -n, --timeout, the rules, --state-dir,
	                                --no-fsync, --delete, --helper, ... */
	struct cli_out out;          /* -v (a count), -q, --json; dry_run is -n */
	int progress;                /* --progress 1, --no-progress 0 (last wins;
	                                rsync's -P is 1), neither -1 */
	int watch;                   /* --watch */
	unsigned interval_s;         /* --interval; 0: not given */
	const char *excludes[CLI_MAX_RULES], *includes[CLI_MAX_RULES];
};

/* A command's command line. */
struct cli_cmd {
	const char *name;            /* "Try 'phsync NAME --help'." (pull and
	                                push: "", for 'phsync --help') */
	unsigned takes;              /* the CLI_* groups of shared options */
	const char *own_short;       /* its own letters, getopt style ("c:") */
	const struct option *own;    /* its own long options (keys from
	                                CLI_O_OWN), NULL-ended; or NULL */
	const char *const *help;     /* --help prints these texts, NULL-ended */
	int rsync_habits;            /* take rsync's flags first (rsyncopt.c) */
	/* Called with each of its own options and after each shared one is
	 * set (key: the letter or CLI_O_*; arg: its argument or NULL);
	 * returns CLI_GO_ON or an exit code after a message. NULL: none. */
	int (*on_opt)(int key, const char *arg, void *cmd_arg);
	void *cmd_arg;
};

/* Sets a to no option given: phsync_options_init's defaults, the rule
 * arrays wired in, output to stdout and stderr, progress -1. */
void cli_args_init(struct cli_args *a);

/* Parses argv (argv[0]: the command's name) as GNU getopt_long does:
 * options before or after the paths, "--" ends them, long names may be
 * shortened while unambiguous. With rsync_habits, rsync's flags are taken
 * out first (*argc may shrink). Returns CLI_GO_ON with optind at the first
 * path (argv permuted), or the exit code: 0 after --help or --version, 2
 * after naming the option that is wrong. */
int cli_parse(const struct cli_cmd *cmd, int *argc, char **argv, struct cli_args *a);

/* Whether word is one of the shared options of the groups takes that
 * takes its value in the next word ("-F", "--state-dir"). */
int cli_takes_value(unsigned takes, const char *word);

/* Sets a->out.progress: never with --json, else as --progress or
 * --no-progress said, else when stderr is a terminal. */
void cli_progress_line(struct cli_args *a);

/* "phsync: MESSAGE" and "Try 'phsync CMD --help'." on stderr (cmd "":
 * 'phsync --help'); returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rsync's habits (rsyncopt.c): takes the rsync flags that mean what phsync
 * always does out of argv (-a -r -t -z -P, -h unless alone, --archive,
 * --partial...; -P sets *progress), leaving phsync's own options and the
 * paths in order; refuses the others naming phsync's way. takes_arg: the
 * short options that take an argument. Returns 0 with *argc updated, or
 * CLI_EXIT_USAGE after a message. longopts: phsync's own, whose arguments
 * (--exclude -abc) are passed over untouched. */
int cli_rsync_flags(int *argc, char **argv, const char *takes_arg,
                    const struct option *longopts, int *progress);

/* Writes the texts of a NULL-ended list to stdout (the --help texts). */
void cli_print_help(const char *const *texts);

#endif
