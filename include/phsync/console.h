/* SPDX-License-Identifier: ISC */
/* The terminal and the stop requests, for programs built on libphsync (the
 * phsync command): the same calls on POSIX and Windows (platform/psys.h
 * does the work: termios and sigaction there, the console's modes and
 * SetConsoleCtrlHandler on Windows). */
#ifndef PHSYNC_CONSOLE_H
#define PHSYNC_CONSOLE_H

#include <stddef.h>

/* Calls fn(n) for each stop request, n counting from 1: SIGINT, SIGTERM,
 * SIGHUP (and SIGPIPE ignored) on POSIX; Ctrl-C, Ctrl-Break, the console
 * closed, log-off and shutdown on Windows (on a thread Windows starts).
 * fn must be async-signal-safe (set flags, phsync_ctx_interrupt, write(2),
 * _exit, phsync_tty_restore). Returns 0 or PHSYNC_EIO. */
int phsync_on_stop(void (*fn)(int n));

/* Calls fn once when the user's session ends (log-off, shutdown, restart)
 * for a long-running program: on Windows through a hidden window (a
 * console program that loads user32 gets no console event for these),
 * on a thread of its own, and the process is held open a while (up to
 * 30 s) for fn's stop to finish; fn must be thread-safe (uv_async_send).
 * Returns 0, or PHSYNC_EUNSUPPORTED where the session's end is a signal
 * anyway (POSIX: SIGHUP, SIGTERM) or no window can be made. */
int phsync_on_session_end(void (*fn)(void));

/* 1 where SIGHUP means the console window was closed and the program is to
 * stop within seconds (Windows, through libuv), 0 where it asks for a
 * reload (POSIX). */
int phsync_hangup_stops(void);

/* Whether there is a terminal to ask on (never standard input). */
int phsync_tty_exists(void);

/* Asks question on the terminal and reads one line of answer into buf
 * (len bytes, terminated), with the typed characters hidden when echo is
 * 0 (turned off before the question shows). Between waits of at most
 * 200 ms it asks stop(arg) (NULL: never stops). Returns 0; PHSYNC_ENOENT
 * when there is no terminal; PHSYNC_EINTR when stop said 1 (buf wiped);
 * PHSYNC_EIO. */
int phsync_tty_ask(const char *question, int echo, char *buf, size_t len,
                   int (*stop)(void *arg), void *arg);

/* Puts back the mode of a terminal a phsync_tty_ask in progress changed:
 * for a stop handler about to _exit (async-signal-safe). */
void phsync_tty_restore(void);

#endif
