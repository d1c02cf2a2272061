/* SPDX-License-Identifier: ISC */
/* `phsync daemon [-c FILE]` (cli.h): every pair of a config file, until
 * SIGTERM (the watcher, src/watch/). */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "opts.h"
#include "watch.h"

static const char daemon_usage[] =
"usage: phsync daemon [-c FILE] [-v|-q]\n"
"Keeps every sync pair of the config file in step until SIGTERM: local\n"
"changes are sent once files are closed and settled, phones are polled.\n"
"FILE defaults to $XDG_CONFIG_HOME/phsync/phsync.conf (Windows:\n"
"%APPDATA%\\phsync\\phsync.conf; format: phsync.conf(5)). SIGHUP re-reads\n"
"it (Windows: restart the daemon). One daemon per config file.\n"
"\n"
"Options:\n"
"  -c, --config FILE  the config file\n"
"  -v, --verbose      also the changes seen and every retry\n"
"  -q, --quiet        no summary of each run, only problems\n"
"  -h, --help         this text\n";

/* --config has a key of its own (not 'c'), so that without its FILE the
 * complaint names "--config", as typed. */
enum { O_CONFIG = CLI_O_OWN };

struct daemon_args {
	const char *conf;
	int verbose;          /* -v 1, -q -1: the last one given wins */
};

static int
daemon_opt(int key, const char *arg, void *p)
{
	struct daemon_args *d = p;

	if (key == 'c' || key == O_CONFIG)
		d->conf = arg;
	else if (key == 'v')
		d->verbose = 1;
	else if (key == 'q')
		d->verbose = -1;
	return CLI_GO_ON;
}

int
cli_daemon_main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "config", required_argument, NULL, O_CONFIG },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const help[] = { daemon_usage, NULL };
	struct daemon_args d = { NULL, 0 };
	const struct cli_cmd cmd = { "daemon", CLI_VERBOSE | CLI_QUIET, "c:", own, help, 0,
	                             daemon_opt, &d };
	struct cli_args a;
	int rc;

	cli_args_init(&a);
	if ((rc = cli_parse(&cmd, &argc, argv, &a)) != CLI_GO_ON)
		return rc;
	if (optind != argc)
		return cli_usage_error("daemon", "daemon takes no path (the pairs are in the "
		                       "config file)");
	return ph_watch_daemon_main(d.conf, d.verbose);
}
