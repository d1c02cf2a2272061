/* SPDX-License-Identifier: ISC */
/* The terminal and the stop signals (tty.c). */
#ifndef PH_CLI_TTY_H
#define PH_CLI_TTY_H

#include <stddef.h>

#include "phsync/phsync.h"

struct cli_out;

/* A phsync_prompt_fn (arg: the struct cli_out whose progress line it
 * clears): asks on /dev/tty, never stdin; echo off for secrets. Returns 0
 * with the answer in buf, or -1 (no terminal, or a stop signal came). */
int cli_tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg);
/* Whether there is a terminal to ask on. */
int cli_has_tty(void);
/* The first SIGINT/SIGTERM/SIGHUP interrupts ctx (NULL: nothing to
 * interrupt); a second exits at once with CLI_EXIT_INTERRUPTED, the
 * terminal's mode put back. SIGPIPE is ignored. */
void cli_catch_signals(phsync_ctx *ctx);
/* Tty prompts into opts (when there is a terminal), and the stop signals
 * asking ctx to stop, as for pull, push and backup. */
void cli_guard(phsync_ctx *ctx, struct phsync_options *opts, struct cli_out *out);

#endif
