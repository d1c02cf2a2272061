/* SPDX-License-Identifier: ISC */
/* `phsync pull` and `phsync push` (cli.h): the command line, the run with
 * its events told as they come, and the summary; or, with --watch, the
 * watcher. The parse and the run serve `phsync status` with a pair too
 * (sync_cmd.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "phsync/phsync.h"
#include "cli.h"
#include "help.h"
#include "opts.h"
#include "output.h"
#include "sync_cmd.h"
#include "tty.h"
#include "watch.h"

/* The last words of a run: the counts (--json: the summary event), the
 * error, the files a cut run never got to. */
static void
summary(struct cli_out *o, const struct phsync_stats *st, int code, const char *err)
{
	if (o->json)
		fprintf(o->out, "{\"event\":\"summary\",\"files_total\":%" PRIu64 ",\"files_done\":%" PRIu64
		        ",\"files_failed\":%" PRIu64 ",\"files_skipped\":%" PRIu64 ",\"dirs_created\":%" PRIu64
		        ",\"bytes_done\":%" PRIu64 ",\"bytes_committed\":%" PRIu64
		        ",\"bytes_todo\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64
		        ",\"conflicts\":%" PRIu64 ",\"files_deleted\":%" PRIu64
		        ",\"files_offloaded\":%" PRIu64 ",\"bytes_freed\":%" PRIu64
		        ",\"bytes_matched\":%" PRIu64 ",\"helper\":%u,\"files_todo\":%" PRIu64
		        ",\"files_not_reached\":%" PRIu64 ",\"listed_remote\":%" PRIu64
		        ",\"listed_local\":%" PRIu64 ",\"dry_run\":%s,\"exit\":%d",
		        st->files_total, st->files_done, st->files_failed, st->files_skipped,
		        st->dirs_created, st->bytes_done, st->bytes_committed, st->bytes_todo,
		        st->elapsed_ms, st->conflicts, st->files_deleted, st->files_offloaded,
		        st->bytes_freed, st->bytes_matched, st->helper, st->files_todo,
		        st->files_unreached, st->listed_remote, st->listed_local,
		        o->dry_run ? "true" : "false", code);
	cli_summary_error(o, err);
	if (o->json)
		return;
	/* Files a cut run never got to: always said, like failures. */
	if (st->files_unreached > 0) {
		if (st->files_unreached > o->unreached_shown)
			fprintf(o->err, "phsync: %" PRIu64 " of %" PRIu64 " files to copy not reached "
			        "(%" PRIu64 " more than named above; -v or --json names each)\n",
			        st->files_unreached, st->files_todo,
			        st->files_unreached - (uint64_t)o->unreached_shown);
		else
			fprintf(o->err, "phsync: %" PRIu64 " of %" PRIu64 " files to copy not "
			        "reached\n", st->files_unreached, st->files_todo);
	}
	if (o->quiet)
		return;
	/* A run that ended before it knew any file (no connection, no folder)
	 * has only its error to say. */
	if ((o->dry_run || o->verbose || o->progress) &&
	    !(err != NULL && err[0] && st->files_total == 0 && st->dirs_created == 0)) {
		char unreached[48] = "";

		if (st->files_unreached > 0)
			snprintf(unreached, sizeof(unreached), ", %" PRIu64 " not reached",
			         st->files_unreached);
		fprintf(o->err, "%s%" PRIu64 " of %" PRIu64 " file%s %s (%.1f MB), %" PRIu64
		        " folder%s %s, %" PRIu64 " skipped, %" PRIu64 " failed%s, %.1f s\n",
		        o->dry_run ? "dry run: " : "", st->files_done, st->files_total,
		        cli_plural(st->files_total), o->dry_run ? "would be copied" : "copied",
		        (o->dry_run ? st->bytes_todo : st->bytes_committed) / 1e6, st->dirs_created,
		        cli_plural(st->dirs_created), o->dry_run ? "would be made" : "made",
		        st->files_skipped, st->files_failed, unreached, st->elapsed_ms / 1000.0);
	}
	if (o->verbose && st->helper > 0)
		fprintf(o->err, "through the remote helper (phsync serve, protocol %u)\n", st->helper);
	if ((o->verbose || o->progress) && st->bytes_matched > 0)
		fprintf(o->err, "%.1f MB of it already on the other side (deltas): %.1f MB sent\n",
		        st->bytes_matched / 1e6, (st->bytes_committed - st->bytes_matched) / 1e6);
	if (st->files_offloaded > 0)
		fprintf(o->err, "%s%" PRIu64 " file(s) %s from the phone, %.1f MB freed\n",
		        o->dry_run ? "dry run: " : "", st->files_offloaded,
		        o->dry_run ? "would be removed" : "removed", st->bytes_freed / 1e6);
	if ((o->dry_run || o->verbose || o->progress) && (st->conflicts || st->files_deleted))
		fprintf(o->err, "%s%" PRIu64 " conflict(s) kept beside, %" PRIu64 " file(s) %s\n",
		        o->dry_run ? "dry run: " : "", st->conflicts, st->files_deleted,
		        o->dry_run ? "would be deleted" : "deleted");
}

static int
is_remote(const char *w)
{
	char *u, *h, *p;

	if (phsync_parse_remote(w, &u, &h, &p) != 0)
		return 0;
	free(u);
	free(h);
	free(p);
	return 1;
}

/* `phsync sync A B`: which side is the phone is said by the HOST: form,
 * in either order (a local path with a ':' in it is taken as local when it
 * exists). */
static int
sync_sides(const char *a, const char *b, struct cli_sync *s)
{
	struct stat st;
	int ra = is_remote(a), rb = is_remote(b);

	if (ra && rb) {
		ra = stat(a, &st) != 0;
		rb = !ra;
	}
	if (ra == rb)
		return cli_usage_error("", "sync needs one [USER@]HOST:DIR and one LOCALDIR "
		                       "(either order)");
	s->remote = ra ? a : b;
	s->local = ra ? b : a;
	return CLI_GO_ON;
}

int
cli_sync_parse(int argc, char **argv, enum phsync_direction dir, int status,
               struct cli_sync *s)
{
	struct cli_cmd cmd = { "", CLI_PULL_PUSH, "", NULL, NULL, 1, NULL, NULL };
	char *u, *h, *p;
	int rc;

	cmd.help = status ? cli_help_status : dir == PHSYNC_PULL ? cli_help_pull :
	           dir == PHSYNC_PUSH ? cli_help_push : cli_help_sync;
	if (dir == PHSYNC_BOTH)
		cmd.takes |= CLI_TWOWAY;
	cli_args_init(&s->a);
	s->dir = dir;
	s->status = status;
	s->status_json = 0;
	if ((rc = cli_parse(&cmd, &argc, argv, &s->a)) != CLI_GO_ON)
		return rc;
	if (argc - optind != 2)
		return cli_usage_error("", "%s needs a source and a destination (%d given)",
		                       dir == PHSYNC_PULL ? "pull" : dir == PHSYNC_PUSH ? "push" :
		                       "sync", argc - optind);
	if (dir == PHSYNC_BOTH) {
		if ((rc = sync_sides(argv[optind], argv[optind + 1], s)) != CLI_GO_ON)
			return rc;
	} else {
		s->remote = dir == PHSYNC_PULL ? argv[optind] : argv[optind + 1];
		s->local = dir == PHSYNC_PULL ? argv[optind + 1] : argv[optind];
		if (phsync_parse_remote(s->remote, &u, &h, &p) != 0)
			return cli_usage_error("", "'%s' is not HOST:DIR (the %s side must be remote)",
			                       s->remote, dir == PHSYNC_PULL ? "first" : "second");
		free(u);
		free(h);
		free(p);
	}
	if ((s->a.watch && (status || s->a.opts.dry_run || s->a.out.json)) ||
	    (s->a.interval_s && !s->a.watch))
		return cli_usage_error("", "%s", !s->a.watch ? "--interval works with --watch" :
		                       "--watch keeps syncing: not with --dry-run, --json or status");
	return CLI_GO_ON;
}

int
cli_sync_run(struct cli_sync *s, cli_sync_told tell)
{
	struct cli_args *a = &s->a;
	struct phsync_stats st;
	phsync_ctx *ctx = NULL;
	int rc, code;

	memset(&st, 0, sizeof(st));
	cli_progress_line(a);
	a->opts.on_event = cli_on_event;
	a->opts.event_arg = &a->out;
	a->opts.progress_ms = a->out.progress || a->out.json ? 250 : 0;
	if (a->out.json && a->progress != 1)
		a->opts.progress_ms = 1000;
	a->opts.ssh_verbosity = a->out.verbose >= 2 ? 3 : 0;
	if (phsync_ctx_new(&ctx) != 0) {
		fputs("phsync: out of memory\n", stderr);
		return CLI_EXIT_ERROR;
	}
	cli_guard(ctx, &a->opts, &a->out);
	rc = phsync_sync(ctx, s->dir, s->remote, s->local, &a->opts, &st);
	code = cli_exit_code(rc);
	tell(s, &st, code, rc != 0 ? phsync_ctx_error(ctx) : NULL);
	cli_catch_signals(NULL);
	phsync_ctx_free(ctx);
	return code;
}

/* --watch: the watcher keeps the pair in step until SIGTERM or Ctrl-C. */
static int
watch_main(struct cli_sync *s)
{
	struct ph_watch_pair wp;
	struct stat lst;

	/* The watcher watches a folder: a file's push is a plain run. */
	if (s->dir != PHSYNC_PULL && stat(s->local, &lst) == 0 && !S_ISDIR(lst.st_mode))
		return cli_usage_error("", "--watch watches a folder: %s is a file (a plain push "
		                       "sends one file)", s->local);
	memset(&wp, 0, sizeof(wp));
	wp.name = s->remote;
	wp.dir = s->dir;
	wp.remote = s->remote;
	wp.local = s->local;
	wp.opts = s->a.opts;
	wp.opts.ssh_verbosity = s->a.out.verbose >= 2 ? 3 : 0;
	wp.interval_s = s->a.interval_s;
	wp.full_every = 10;
	wp.settle_ms = 300;
	return ph_watch_pair_main(&wp, s->a.out.quiet ? -1 : s->a.out.verbose > 0);
}

static void
tell_summary(struct cli_sync *s, const struct phsync_stats *st, int code, const char *err)
{
	summary(&s->a.out, st, code, err);
}

static int
sync_main(int argc, char **argv, enum phsync_direction dir)
{
	struct cli_sync s;
	int rc;

	if ((rc = cli_sync_parse(argc, argv, dir, 0, &s)) != CLI_GO_ON)
		return rc;
	if (s.a.watch)
		return watch_main(&s);
	return cli_sync_run(&s, tell_summary);
}

int
cli_pull_main(int argc, char **argv)
{
	return sync_main(argc, argv, PHSYNC_PULL);
}

int
cli_push_main(int argc, char **argv)
{
	return sync_main(argc, argv, PHSYNC_PUSH);
}

int
cli_sync_main(int argc, char **argv)
{
	return sync_main(argc, argv, PHSYNC_BOTH);
}
