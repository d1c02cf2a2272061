/* SPDX-License-Identifier: ISC */
/* The options commands share, written once: a table of each option's
 * names, argument, group and the field it sets; see opts.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"

/* How an option sets its field. */
enum kind {
	K_SET,      /* int field = lo */
	K_COUNT,    /* int field += 1 */
	K_STR,      /* const char * field = the argument */
	K_SECS,     /* unsigned field = the argument, seconds from lo to hi */
	K_FN,       /* fn does it */
	K_HELP,     /* prints the command's --help */
	K_VERSION   /* prints the version */
};

struct shared_opt {
	const char *name;        /* long name; NULL: a letter only */
	int key;                 /* its letter, or CLI_O_* */
	int has_arg;
	unsigned group;          /* the CLI_* that takes it */
	enum kind kind;
	size_t off;              /* the field in struct cli_args */
	unsigned long lo, hi;
	int (*fn)(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);
};

#define FIELD(field) offsetof(struct cli_args, field)

static int add_rule(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);
static int set_max_delete(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);
static int set_trash(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);
static int set_helper(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);
static int set_max_delete_percent(const struct cli_cmd *c, struct cli_args *a, int key,
                                  const char *arg);
static int set_prefer(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg);

/* Every shared option once. The ranges and messages are those phsync(1)
 * and each command's --help promise. */
static const struct shared_opt shared[] = {
	{ NULL, 'F', required_argument, CLI_SSH_CONFIG, K_STR, FIELD(opts.ssh_config), 0, 0, NULL },
	{ "timeout", CLI_O_TIMEOUT, required_argument, CLI_TIMEOUT, K_SECS, FIELD(opts.timeout_s),
	  1, 86400, NULL },
	{ "verbose", 'v', no_argument, CLI_VERBOSE, K_COUNT, FIELD(out.verbose), 0, 0, NULL },
	{ "quiet", 'q', no_argument, CLI_QUIET, K_SET, FIELD(out.quiet), 1, 0, NULL },
	{ "json", CLI_O_JSON, no_argument, CLI_JSON, K_SET, FIELD(out.json), 1, 0, NULL },
	{ "progress", CLI_O_PROGRESS, no_argument, CLI_PROGRESS, K_SET, FIELD(progress), 1, 0, NULL },
	{ "no-progress", CLI_O_NO_PROGRESS, no_argument, CLI_PROGRESS, K_SET, FIELD(progress), 0, 0,
	  NULL },
	{ "exclude", CLI_O_EXCLUDE, required_argument, CLI_RULES, K_FN, 0, 0, 0, add_rule },
	{ "include", CLI_O_INCLUDE, required_argument, CLI_RULES, K_FN, 0, 0, 0, add_rule },
	{ "no-default-excludes", CLI_O_NO_DEFAULT_EXCLUDES, no_argument, CLI_RULES, K_SET,
	  FIELD(opts.no_default_excludes), 1, 0, NULL },
	{ "no-fsync", CLI_O_NO_FSYNC, no_argument, CLI_NO_FSYNC, K_SET, FIELD(opts.fsync), 0, 0, NULL },
	{ "state-dir", CLI_O_STATE_DIR, required_argument, CLI_STATE_DIR, K_STR, FIELD(opts.state_dir),
	  0, 0, NULL },
	{ "dry-run", 'n', no_argument, CLI_SYNC, K_SET, FIELD(opts.dry_run), 1, 0, NULL },
	{ "min-age", CLI_O_MIN_AGE, required_argument, CLI_SYNC, K_SECS, FIELD(opts.min_age_s),
	  0, 2592000, NULL },
	{ "reset-state", CLI_O_RESET_STATE, no_argument, CLI_SYNC, K_SET, FIELD(opts.reset_state), 1,
	  0, NULL },
	{ "modify-window", CLI_O_MODIFY_WINDOW, required_argument, CLI_SYNC, K_SECS,
	  FIELD(opts.modify_window_s), 0, 86400, NULL },
	{ "overwrite", CLI_O_OVERWRITE, no_argument, CLI_SYNC, K_SET, FIELD(opts.overwrite), 1, 0,
	  NULL },
	{ "delete", CLI_O_DELETE, no_argument, CLI_SYNC, K_SET, FIELD(opts.delete_missing), 1, 0,
	  NULL },
	{ "max-delete", CLI_O_MAX_DELETE, required_argument, CLI_SYNC, K_FN, 0, 0, 0,
	  set_max_delete },
	{ "trash", CLI_O_TRASH, required_argument, CLI_SYNC, K_FN, 0, 0, 0, set_trash },
	{ "remove-source-files", CLI_O_REMOVE_SOURCE, no_argument, CLI_SYNC, K_SET,
	  FIELD(opts.remove_source), 1, 0, NULL },
	{ "watch", CLI_O_WATCH, no_argument, CLI_SYNC, K_SET, FIELD(watch), 1, 0, NULL },
	{ "interval", CLI_O_INTERVAL, required_argument, CLI_SYNC, K_SECS, FIELD(interval_s),
	  1, 86400, NULL },
	{ "helper", CLI_O_HELPER, required_argument, CLI_SYNC, K_FN, 0, 0, 0, set_helper },
	{ "helper-path", CLI_O_HELPER_PATH, required_argument, CLI_SYNC, K_STR,
	  FIELD(opts.helper_path), 0, 0, NULL },
	{ "prefer", CLI_O_PREFER, required_argument, CLI_TWOWAY, K_FN, 0, 0, 0, set_prefer },
	{ "max-delete-percent", CLI_O_MAX_DELETE_PERCENT, required_argument, CLI_TWOWAY, K_FN, 0,
	  0, 0, set_max_delete_percent },
	{ "help", 'h', no_argument, CLI_HELP, K_HELP, 0, 0, 0, NULL },
	{ "version", 'V', no_argument, CLI_SYNC, K_VERSION, 0, 0, 0, NULL },
};

#define N_SHARED (sizeof(shared) / sizeof(shared[0]))
/* Room for the shared options and a command's own. */
#define MAX_OPTS (N_SHARED + 16)

void
cli_args_init(struct cli_args *a)
{
	memset(a, 0, sizeof(*a));
	phsync_options_init(&a->opts);
	a->opts.excludes = a->excludes;
	a->opts.includes = a->includes;
	a->out.out = stdout;
	a->out.err = stderr;
	a->progress = -1;
}

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("phsync: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'phsync %s%s--help'.\n", cmd, cmd[0] ? " " : "");
	return CLI_EXIT_USAGE;
}

void
cli_print_help(const char *const *texts)
{
	for (; *texts != NULL; texts++)
		fputs(*texts, stdout);
}

void
cli_progress_line(struct cli_args *a)
{
	if (a->out.json)
		a->out.progress = 0;
	else if (a->progress >= 0)
		a->out.progress = a->progress;
	else
		a->out.progress = isatty(STDERR_FILENO);
}

int
cli_takes_value(unsigned takes, const char *word)
{
	size_t i;

	for (i = 0; i < N_SHARED; i++) {
		const struct shared_opt *o = &shared[i];

		if (!(o->group & takes) || o->has_arg != required_argument)
			continue;
		if (o->name == NULL ? word[0] == '-' && word[1] == o->key && word[2] == '\0' :
		    strncmp(word, "--", 2) == 0 && strcmp(word + 2, o->name) == 0)
			return 1;
	}
	return 0;
}

static int
add_rule(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	(void)c;
	if (a->opts.n_excludes + a->opts.n_includes >= CLI_MAX_RULES) {
		fprintf(stderr, "phsync: at most %d --include/--exclude rules\n", CLI_MAX_RULES);
		return CLI_EXIT_USAGE;
	}
	if (key == CLI_O_EXCLUDE)
		a->excludes[a->opts.n_excludes++] = arg;
	else
		a->includes[a->opts.n_includes++] = arg;
	return CLI_GO_ON;
}

static int
set_max_delete(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);

	(void)key;
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || v > INT64_MAX)
		return cli_usage_error(c->name, "--max-delete takes a number of files (0: none)");
	a->opts.max_delete = (int64_t)v;
	return CLI_GO_ON;
}

static int
set_trash(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	(void)key;
	if (arg[0] == '\0')
		return cli_usage_error(c->name, "--trash needs a folder");
	a->opts.trash_dir = arg;
	return CLI_GO_ON;
}

static int
set_helper(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	(void)key;
	if (phsync_parse_helper(arg, &a->opts.helper) != 0)
		return cli_usage_error(c->name, "--helper takes auto, never or always");
	return CLI_GO_ON;
}

static int
set_max_delete_percent(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)key;
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || v < 1 || v > 100)
		return cli_usage_error(c->name, "--max-delete-percent takes 1 to 100 (100: no "
		                       "limit but --max-delete)");
	a->opts.max_delete_percent = (unsigned)v;
	return CLI_GO_ON;
}

static int
set_prefer(const struct cli_cmd *c, struct cli_args *a, int key, const char *arg)
{
	(void)key;
	if (strcmp(arg, "local") == 0)
		a->opts.prefer = PHSYNC_PREFER_LOCAL;
	else if (strcmp(arg, "remote") == 0)
		a->opts.prefer = PHSYNC_PREFER_REMOTE;
	else if (strcmp(arg, "newer") == 0)
		a->opts.prefer = PHSYNC_PREFER_NEWER;
	else
		return cli_usage_error(c->name, "--prefer takes local, remote or newer");
	return CLI_GO_ON;
}

/* Sets o's field from arg; CLI_GO_ON or an exit code. */
static int
set_shared(const struct cli_cmd *c, const struct shared_opt *o, struct cli_args *a,
           const char *arg)
{
	char *field = (char *)a + o->off, *end;
	unsigned long v;

	switch (o->kind) {
	case K_SET:
		*(int *)(void *)field = (int)o->lo;
		break;
	case K_COUNT:
		(*(int *)(void *)field)++;
		break;
	case K_STR:
		*(const char **)(void *)field = arg;
		break;
	case K_SECS:
		v = strtoul(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || v < o->lo || v > o->hi)
			return cli_usage_error(c->name, "--%s takes %lu to %lu seconds", o->name,
			                       o->lo, o->hi);
		*(unsigned *)(void *)field = (unsigned)v;
		break;
	case K_FN:
		return o->fn(c, a, o->key, arg);
	case K_HELP:
		cli_print_help(c->help);
		return CLI_EXIT_OK;
	case K_VERSION:
		printf("phsync %s\n", PHSYNC_VERSION);
		return CLI_EXIT_OK;
	}
	return CLI_GO_ON;
}

/* getopt's complaint, naming the option itself: a letter inside a bundle
 * (-xvz) leaves optind on the word, or past it after the bundle's last. */
static int
unknown_option(const struct cli_cmd *c, int argc, char **argv)
{
	if (optopt != 0 && optopt < 256)
		fprintf(stderr, "phsync: unknown option or missing argument: '-%c'\n", optopt);
	else
		fprintf(stderr, "phsync: unknown option or missing argument: '%s'\n",
		        argv[optind - 1 < argc ? optind - 1 : argc - 1]);
	fprintf(stderr, "Try 'phsync %s%s--help'.\n", c->name, c->name[0] ? " " : "");
	return CLI_EXIT_USAGE;
}

/* getopt_long's tables for c: the shared options it takes, then its own.
 * takes_arg: its letters that take an argument (for rsyncopt.c). */
static void
build(const struct cli_cmd *c, struct option *lo, char *so, char *takes_arg)
{
	size_t i, n = 0, ns = 0, nt = 0;
	const struct option *own;
	const char *p;

	for (i = 0; i < N_SHARED; i++) {
		const struct shared_opt *o = &shared[i];

		if (!(o->group & (c->takes | CLI_HELP)))
			continue;
		if (o->name != NULL) {
			lo[n].name = o->name;
			lo[n].has_arg = o->has_arg;
			lo[n].flag = NULL;
			lo[n++].val = o->key;
		}
		if (o->key < 256) {
			so[ns++] = (char)o->key;
			if (o->has_arg == required_argument) {
				so[ns++] = ':';
				takes_arg[nt++] = (char)o->key;
			}
		}
	}
	for (own = c->own; own != NULL && own->name != NULL && n < MAX_OPTS; own++)
		lo[n++] = *own;
	for (p = c->own_short != NULL ? c->own_short : ""; *p != '\0' && ns < 2 * MAX_OPTS; p++) {
		so[ns++] = *p;
		if (p[1] == ':')
			takes_arg[nt++] = *p;
	}
	memset(&lo[n], 0, sizeof(lo[n]));
	so[ns] = '\0';
	takes_arg[nt] = '\0';
}

static const struct shared_opt *
find_shared(const struct cli_cmd *c, int key)
{
	size_t i;

	for (i = 0; i < N_SHARED; i++)
		if (shared[i].key == key && (shared[i].group & (c->takes | CLI_HELP)))
			return &shared[i];
	return NULL;
}

int
cli_parse(const struct cli_cmd *c, int *argc, char **argv, struct cli_args *a)
{
	struct option lo[MAX_OPTS + 1];
	char so[2 * MAX_OPTS + 1], takes_arg[MAX_OPTS + 1];
	int key, rc;

	build(c, lo, so, takes_arg);
	if (c->rsync_habits && (rc = cli_rsync_flags(argc, argv, takes_arg, lo, &a->progress)) != 0)
		return rc;
	optind = 1;
	opterr = 0; /* our own two-line message */
	while ((key = getopt_long(*argc, argv, so, lo, NULL)) != -1) {
		const struct shared_opt *o = key == '?' ? NULL : find_shared(c, key);

		if (key == '?')
			return unknown_option(c, *argc, argv);
		rc = o != NULL ? set_shared(c, o, a, optarg) : CLI_GO_ON;
		if (rc == CLI_GO_ON && c->on_opt != NULL)
			rc = c->on_opt(key, optarg, c->cmd_arg);
		if (rc != CLI_GO_ON)
			return rc;
	}
	a->out.dry_run = a->opts.dry_run;
	return CLI_GO_ON;
}
