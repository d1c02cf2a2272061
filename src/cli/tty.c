/* SPDX-License-Identifier: ISC */
/* The terminal and the stop signals (tty.h): the prompt for passwords and
 * host keys, and SIGINT/SIGTERM/SIGHUP asking the running operation to
 * stop. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "phsync/phsync.h"
#include "cli.h"
#include "output.h"
#include "tty.h"

/* The signal handler's state, the only mutable globals: the running sync,
 * how many stop signals came, and the terminal mode a prompt changed (to
 * put back if a second signal ends the process during it). */
static phsync_ctx *volatile running_ctx;
static volatile sig_atomic_t stop_signals;
static volatile sig_atomic_t tty_changed;
static int tty_fd = -1;
static struct termios tty_saved;

/* Called through a volatile pointer, so a secret's wipe is never optimised
 * away (explicit_bzero is not everywhere: macOS has memset_s instead). */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

static void
wipe(void *p, size_t n)
{
	wipe_memset(p, 0, n);
}

/* First SIGINT/SIGTERM/SIGHUP: ask the sync to stop at a safe point (temps
 * removed, committed files kept). Second: leave at once; files are only
 * ever renamed into place whole, so nothing partial is left under a final
 * name, and the next run removes the temps. */
static void
on_signal(int sig)
{
	static const char msg[] = "\nphsync: stopped at once (second signal); run again to finish\n";

	(void)sig;
	if (stop_signals++ > 0) {
		if (tty_changed)
			tcsetattr(tty_fd, TCSANOW, &tty_saved);
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(CLI_EXIT_INTERRUPTED);
	}
	if (running_ctx != NULL)
		phsync_ctx_interrupt(running_ctx);
}

/* Reads an answer from the terminal (never from stdin, which may be data).
 * A stop signal while it waits ends the prompt with no answer. */
int
cli_tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg)
{
	struct termios raw;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
	size_t n = 0;
	int rc = -1, asked;

	if (fd < 0)
		return -1;
	cli_clear_line(arg);
	/* Echo off before the question shows, as OpenSSH's readpassphrase:
	 * flushing what was typed ahead after it showed threw away an answer
	 * typed at once (and echoed it). */
	if (!echo && tcgetattr(fd, &tty_saved) == 0) {
		raw = tty_saved;
		raw.c_lflag &= ~(tcflag_t)ECHO;
		tty_fd = fd;
		tty_changed = 1;
		tcsetattr(fd, TCSAFLUSH, &raw);
	}
	asked = write(fd, question, strlen(question)) >= 0;
	while (asked && n + 1 < len && stop_signals == 0) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		ssize_t r;
		char c;

		/* Wait in slices: a signal that lands just before read() would
		 * otherwise leave the prompt waiting for a key. */
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = '\0';
	if (tty_changed) {
		tcsetattr(fd, TCSAFLUSH, &tty_saved);
		tty_changed = 0;
		(void)!write(fd, "\n", 1);
	}
	if (asked && stop_signals == 0)
		rc = 0;
	else
		wipe(buf, len);
	close(fd);
	return rc;
}

int
cli_has_tty(void)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

void
cli_catch_signals(phsync_ctx *ctx)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	running_ctx = ctx;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
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
