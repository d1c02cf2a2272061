/* SPDX-License-Identifier: ISC */
/* The terminal and the stop signals (tty.h): the prompt for passwords and
 * host keys, and SIGINT/SIGTERM/SIGHUP asking the running operation to
 * stop. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "phsync/console.h"
#include "phsync/phsync.h"
#include "cli.h"
#include "output.h"
#include "tty.h"

/* The stop handler's state, the only mutable globals: the running sync and
 * how many stop requests came. The terminal's own mode, to put back if a
 * second request ends the process during a prompt, is kept beside the
 * prompt (phsync/console.h). */
static phsync_ctx *volatile running_ctx;
static volatile sig_atomic_t stop_signals;

/* First SIGINT/SIGTERM/SIGHUP (Windows: Ctrl-C, Ctrl-Break, close): ask
 * the sync to stop at a safe point (temps removed, committed files kept).
 * Second: leave at once; files are only ever renamed into place whole, so
 * nothing partial is left under a final name, and the next run removes the
 * temps. */
static void
on_stop(int n)
{
	static const char msg[] = "\nphsync: stopped at once (second signal); run again to finish\n";

	stop_signals = n;
	if (n > 1) {
		phsync_tty_restore();
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(CLI_EXIT_INTERRUPTED);
	}
	if (running_ctx != NULL)
		phsync_ctx_interrupt(running_ctx);
}

static int
stopped(void *arg)
{
	(void)arg;
	return stop_signals != 0;
}

/* Reads an answer from the terminal (never from stdin, which may be data).
 * A stop signal while it waits ends the prompt with no answer. */
int
cli_tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg)
{
	if (!phsync_tty_exists())
		return -1;
	cli_clear_line(arg);
	if (stop_signals != 0 || phsync_tty_ask(question, echo, buf, len, stopped, NULL) != 0 ||
	    stop_signals != 0) {
		memset(buf, 0, len);
		return -1;
	}
	return 0;
}

int
cli_has_tty(void)
{
	return phsync_tty_exists();
}

void
cli_catch_signals(phsync_ctx *ctx)
{
	running_ctx = ctx;
	(void)phsync_on_stop(on_stop);
}

void
cli_guard(phsync_ctx *ctx, struct phsync_options *opts, struct cli_out *out)
{
	if (cli_has_tty()) {
		opts->prompt = cli_tty_prompt;
		opts->prompt_arg = out;
	}
	cli_catch_signals(ctx);
}
