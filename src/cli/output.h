/* SPDX-License-Identifier: ISC */
/* What the CLI prints: human lines, --json events, the progress line. */
#ifndef PH_CLI_OUTPUT_H
#define PH_CLI_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "phsync/phsync.h"

struct cli_out {
	int verbose;       /* -v count */
	int quiet;
	int json;
	int progress;      /* draw the progress line on stderr */
	int dry_run;
	int line_shown;    /* a progress line is on screen */
	unsigned long unreached_shown; /* not-reached files named on stderr */
	FILE *out, *err;
};

/* The phsync_event_fn for the CLI (arg is a struct cli_out). */
void cli_on_event(const struct phsync_event *ev, void *arg);
/* Writes s as a JSON string (quotes included). */
void cli_json_string(FILE *f, const char *s);
/* Not-reached files named one by one on stderr without -v; the summary
 * says how many more there were. */
#define CLI_UNREACHED_SHOWN 10
/* Clears the progress line, if drawn. */
void cli_clear_line(struct cli_out *o);
/* "s" unless n is one: "1 folder", "2 folders". */
const char *cli_plural(uint64_t n);
/* A run's error, said the one way every command's summary says it: with
 * --json as the summary event's "error" member (when err is one) and the
 * event's close (the caller has written the rest of it); else the progress
 * line cleared and "phsync: ERR" on stderr, escaped (server text can reach
 * it). err may be NULL or "" for a run without one. */
void cli_summary_error(struct cli_out *o, const char *err);

#endif
