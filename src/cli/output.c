/* SPDX-License-Identifier: ISC */
/* CLI output; see output.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "output.h"

void
cli_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if (*p >= 0x80) {
			/* Pass valid UTF-8 through; a stray byte becomes U+FFFD. */
			int n = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
			int k;

			for (k = 1; n > 0 && k <= n; k++)
				if ((p[k] & 0xc0) != 0x80)
					break;
			if (n > 0 && k > n && *p >= 0xc2 && *p <= 0xf4) {
				fwrite(p, 1, (size_t)n + 1, f);
				p += n;
			} else {
				fputs("\\ufffd", f);
			}
		} else
			fputc(*p, f);
	}
	fputc('"', f);
}

void
cli_clear_line(struct cli_out *o)
{
	if (o->line_shown) {
		fputs("\r\033[K", o->err);
		o->line_shown = 0;
	}
}

const char *
cli_plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

void
cli_summary_error(struct cli_out *o, const char *err)
{
	char shown[4200];

	if (o->json) {
		if (err != NULL && err[0]) {
			fputs(",\"error\":", o->out);
			cli_json_string(o->out, err);
		}
		fputs("}\n", o->out);
		fflush(o->out);
		return;
	}
	cli_clear_line(o);
	if (err != NULL && err[0]) {
		phsync_escape(shown, sizeof(shown), err);
		fprintf(o->err, "phsync: %s\n", shown);
	}
}

static void
human_bytes(char *buf, size_t len, double b)
{
	const char *u[] = { "B", "kB", "MB", "GB", "TB" };
	int i = 0;

	while (b >= 1000 && i < 4) {
		b /= 1000;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* The progress line: counts, bytes, rate, time left and the file whose
 * bytes moved last, cut from the left to fit an 80-column line. */
static void
progress(struct cli_out *o, const struct phsync_stats *st, const char *file)
{
	char done[32], todo[32], rate[32], eta[32] = "", line[160], name[4096 * 4];
	size_t n, room;
	double secs = st->elapsed_ms / 1000.0;
	double r = secs > 0 ? st->bytes_done / secs : 0;

	if (st->listing) {
		/* Before the plan: what each side has listed so far (a phone
		 * with many files takes a while to list). */
		fprintf(o->err, "\r\033[Klisting: %" PRIu64 " on the phone, %" PRIu64 " here  %.0f s",
		        st->listed_remote, st->listed_local, secs);
		fflush(o->err);
		o->line_shown = 1;
		return;
	}
	human_bytes(done, sizeof(done), (double)st->bytes_done);
	human_bytes(todo, sizeof(todo), (double)st->bytes_todo);
	human_bytes(rate, sizeof(rate), r);
	if (r > 0 && st->bytes_todo > st->bytes_done) {
		uint64_t s = (uint64_t)((st->bytes_todo - st->bytes_done) / r);

		snprintf(eta, sizeof(eta), " ETA %" PRIu64 ":%02" PRIu64, s / 60, s % 60);
	}
	snprintf(line, sizeof(line), "%" PRIu64 "/%" PRIu64 " files  %s/%s  %s/s%s",
	         st->files_done, st->files_todo, done, todo, rate, eta);
	n = strlen(line);
	room = n + 2 < 79 ? 79 - n - 2 : 0;
	if (file != NULL && room >= 8) {
		const char *shown = name;
		size_t len;

		phsync_escape(name, sizeof(name), file);
		len = strlen(name);
		if (len > room) {
			/* "...end of the path": the name matters more than its
			 * folders; do not cut inside a UTF-8 sequence. */
			shown = name + len - (room - 3);
			while ((*shown & 0xC0) == 0x80)
				shown++;
			fprintf(o->err, "\r\033[K%s  ...%s", line, shown);
		} else {
			fprintf(o->err, "\r\033[K%s  %s", line, shown);
		}
	} else {
		fprintf(o->err, "\r\033[K%s", line);
	}
	fflush(o->err);
	o->line_shown = 1;
}

/* A two-way run's file event: the way it went, as a word. */
static const char *
way(const struct phsync_event *ev)
{
	return ev->dir == PHSYNC_PULL ? "pull" : ev->dir == PHSYNC_PUSH ? "push" : NULL;
}

/* Opens an event's JSON object: its name and, in a two-way run, "dir". */
static void
obj(FILE *f, const struct phsync_event *ev, const char *name)
{
	fprintf(f, "{\"event\":\"%s\"", name);
	if (way(ev) != NULL)
		fprintf(f, ",\"dir\":\"%s\"", way(ev));
}

static void
json_event(struct cli_out *o, const struct phsync_event *ev)
{
	const struct phsync_stats *st = ev->stats;
	FILE *f = o->out;

	switch (ev->type) {
	case PHSYNC_EV_FILE_DONE:
		obj(f, ev, "file");
		fputs(",\"action\":", f);
		cli_json_string(f, ev->action);
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		if (ev->message != NULL) { /* a move or copy: the file it was made from */
			fputs(",\"from\":", f);
			cli_json_string(f, ev->message);
		}
		fprintf(f, ",\"size\":%" PRIu64 ",\"status\":\"ok\"%s}\n", ev->size,
		        o->dry_run ? ",\"dry_run\":true" : "");
		break;
	case PHSYNC_EV_FILE_FAILED:
		obj(f, ev, "file");
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fputs(",\"status\":\"failed\",\"error\":", f);
		cli_json_string(f, ev->message ? ev->message : phsync_strerror(ev->err));
		fputs("}\n", f);
		break;
	case PHSYNC_EV_SKIPPED:
		obj(f, ev, "skip");
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fputs(",\"reason\":", f);
		cli_json_string(f, ev->action);
		fputs("}\n", f);
		break;
	case PHSYNC_EV_MKDIR:
		obj(f, ev, "mkdir");
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fputs("}\n", f);
		break;
	case PHSYNC_EV_WARNING:
		obj(f, ev, "warning");
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fputs(",\"message\":", f);
		cli_json_string(f, ev->message);
		fputs("}\n", f);
		break;
	case PHSYNC_EV_INFO:
		obj(f, ev, "info");
		fputs(",\"message\":", f);
		cli_json_string(f, ev->message);
		fputs("}\n", f);
		break;
	case PHSYNC_EV_PROGRESS:
		fprintf(f, "{\"event\":\"progress\",\"files_done\":%" PRIu64 ",\"files_todo\":%" PRIu64
		        ",\"bytes_done\":%" PRIu64 ",\"bytes_todo\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64
		        ",\"listing\":%s,\"listed_remote\":%" PRIu64 ",\"listed_local\":%" PRIu64,
		        st->files_done, st->files_todo, st->bytes_done, st->bytes_todo, st->elapsed_ms,
		        st->listing ? "true" : "false", st->listed_remote, st->listed_local);
		if (ev->path != NULL) {
			fputs(",\"file\":", f);
			cli_json_string(f, ev->path);
		}
		fputs("}\n", f);
		break;
	case PHSYNC_EV_CONFLICT:
		obj(f, ev, "conflict");
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fprintf(f, ",\"size\":%" PRIu64 ",\"message\":", ev->size);
		cli_json_string(f, ev->message);
		fprintf(f, "%s}\n", o->dry_run ? ",\"dry_run\":true" : "");
		break;
	case PHSYNC_EV_DELETED:
		obj(f, ev, "delete");
		fputs(",\"action\":", f);
		cli_json_string(f, ev->action);
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fprintf(f, ",\"size\":%" PRIu64 "%s}\n", ev->size,
		        o->dry_run ? ",\"dry_run\":true" : "");
		break;
	case PHSYNC_EV_NOT_REACHED:
		obj(f, ev, "not-reached");
		fputs(",\"action\":", f);
		cli_json_string(f, ev->action);
		fputs(",\"path\":", f);
		cli_json_string(f, ev->path);
		fprintf(f, ",\"size\":%" PRIu64 "}\n", ev->size);
		break;
	case PHSYNC_EV_SUMMARY:
		/* printed by main, which knows the exit code */
		break;
	}
	fflush(f);
}

void
cli_on_event(const struct phsync_event *ev, void *arg)
{
	struct cli_out *o = arg;
	char shown[4096 * 4], msg[1024 * 4];

	if (o->json) {
		json_event(o, ev);
		return;
	}
	if (ev->path != NULL)
		phsync_escape(shown, sizeof(shown), ev->path);
	/* Messages can carry the server's own text: inert too. */
	phsync_escape(msg, sizeof(msg), ev->message ? ev->message :
	              ev->type == PHSYNC_EV_SKIPPED ? "refused" : phsync_strerror(ev->err));
	switch (ev->type) {
	case PHSYNC_EV_FILE_FAILED:
		cli_clear_line(o);
		fprintf(o->err, "phsync: %s: %s\n", ev->path ? shown : "?", msg);
		break;
	case PHSYNC_EV_WARNING:
		if (o->quiet)
			break;
		cli_clear_line(o);
		fprintf(o->err, "phsync: warning: %s: %s\n", ev->path ? shown : "?", msg);
		break;
	case PHSYNC_EV_INFO:
		if (o->quiet || !o->verbose)
			break;
		cli_clear_line(o);
		fprintf(o->err, "phsync: %s\n", msg);
		break;
	case PHSYNC_EV_CONFLICT:
		cli_clear_line(o);
		fprintf(o->err, "phsync: conflict: %s: %s\n", shown, msg);
		break;
	case PHSYNC_EV_FILE_DONE:
	case PHSYNC_EV_MKDIR:
	case PHSYNC_EV_DELETED:
		if (o->quiet || (!o->verbose && !o->dry_run))
			break;
		cli_clear_line(o);
		/* A two-way run says which way each line goes. */
		if (way(ev) != NULL)
			fprintf(o->out, "%s ", way(ev));
		if (ev->type == PHSYNC_EV_FILE_DONE && ev->message != NULL)
			fprintf(o->out, "%s %s (from %s)\n", ev->action, shown, msg);
		else
			fprintf(o->out, "%s %s\n", ev->action, shown);
		break;
	case PHSYNC_EV_SKIPPED:
		if (ev->err != 0) { /* refused, not merely skipped: always said */
			cli_clear_line(o);
			fprintf(o->err, "phsync: %s: %s\n", shown, msg);
			break;
		}
		if (o->quiet || (!o->verbose && !o->dry_run))
			break;
		cli_clear_line(o);
		fprintf(o->out, "%s%sskip %s (%s)\n", way(ev) ? way(ev) : "", way(ev) ? " " : "",
		        shown, ev->action);
		break;
	case PHSYNC_EV_PROGRESS:
		if (o->progress && !o->quiet)
			progress(o, ev->stats, ev->path);
		break;
	case PHSYNC_EV_NOT_REACHED:
		/* Told like failures (the file is not there), the first few
		 * only unless -v: the summary counts the rest. */
		if (!o->verbose && o->unreached_shown >= CLI_UNREACHED_SHOWN)
			break;
		o->unreached_shown++;
		cli_clear_line(o);
		fprintf(o->err, "phsync: %s: not reached (the run ended first)\n", shown);
		break;
	case PHSYNC_EV_SUMMARY:
		break;
	}
	fflush(o->out);
}
