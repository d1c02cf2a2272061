/* SPDX-License-Identifier: ISC */
/* `phsync status` (cli.h): without paths, the watched pairs (the
 * watchers' records, wstatus.h) and the pairs the state knows; with a
 * pair, what a sync would do now (a dry run, sync_cmd.h) and how its last
 * run ended. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phsync/sys.h"
#include "phsync/phsync.h"
#include "cli.h"
#include "help.h"
#include "opts.h"
#include "output.h"
#include "sync_cmd.h"
#include "wstatus.h"
struct status_out {
	int json;
	int n;
	const char *local;       /* only this pair (realpath), or NULL: all */
	const char *rpath;
};

static void
status_pair(const struct phsync_pair_info *pi, void *arg)
{
	struct status_out *so = arg;
	char when[64] = "never", shown[8192];
	const char *res;

	if (so->local != NULL) {
		size_t rl = strlen(pi->remote), pl = strlen(so->rpath);

		if (strcmp(pi->local, so->local) != 0 || rl <= pl ||
		    strcmp(pi->remote + rl - pl, so->rpath) != 0 || pi->remote[rl - pl - 1] != ':')
			return;
	}
	so->n++;
	if (so->json) {
		fputs("{\"event\":\"pair\",\"remote\":", stdout);
		cli_json_string(stdout, pi->remote);
		fputs(",\"local\":", stdout);
		cli_json_string(stdout, pi->local);
		fputs(",\"host_key\":", stdout);
		if (pi->host_key != NULL)
			cli_json_string(stdout, pi->host_key);
		else
			fputs("null", stdout);
		printf(",\"last_start\":%lld,\"last_end\":%lld,\"last_result\":", (long long)pi->last_start,
		       (long long)pi->last_end);
		cli_json_string(stdout, pi->last_end ? phsync_strerror(pi->last_result) : "did not end");
		printf(",\"last_exit\":%d,\"files_done\":%" PRIu64 ",\"files_failed\":%" PRIu64
		       ",\"bytes\":%" PRIu64 ",\"files_known\":%" PRIu64 ",\"running\":%s}\n",
		       pi->last_end ? cli_exit_code(pi->last_result) : -1, pi->last_files_done,
		       pi->last_files_failed, pi->last_bytes, pi->files_known,
		       pi->running ? "true" : "false");
		return;
	}
	if (pi->last_start) {
		time_t t = (time_t)pi->last_start;
		struct tm tm;

		if (phsync_localtime(t, &tm) == 0)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	}
	res = pi->running ? "running now" : !pi->last_start ? "" :
	      !pi->last_end ? "did not end (killed?)" :
	      pi->last_result == 0 ? "ok" : phsync_strerror(pi->last_result);
	phsync_escape(shown, sizeof(shown), pi->remote);
	printf("%s\n", shown);
	phsync_escape(shown, sizeof(shown), pi->local);
	printf("  <-> %s\n", shown);
	if (pi->host_key != NULL) {
		phsync_escape(shown, sizeof(shown), pi->host_key);
		printf("  phone's host key %s\n", shown);
	}
	printf("  last run %s: %s, %" PRIu64 " copied, %" PRIu64 " failed; %" PRIu64
	       " file%s known\n", when, res, pi->last_files_done, pi->last_files_failed,
	       pi->files_known, cli_plural(pi->files_known));
}

/* Watched pairs (the watcher's records, wstatus.h). */
struct watch_out {
	int json;
	int n;
	const char *local;       /* only this pair (realpath), or NULL: all */
	const char *rpath;
};

static void
when_str(char *buf, size_t len, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || phsync_localtime(tt, &tm) != 0 ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, len, "never");
}

static void
json_kv_str(const char *key, const char *v)
{
	printf(",\"%s\":", key);
	cli_json_string(stdout, v);
}

static void
watch_pair(const struct ph_wst_rec *r, int live, void *arg)
{
	struct watch_out *wo = arg;
	char since[32], last[32], retry[32], shown[8192], shown2[8192];
	const char *res;

	if (wo->local != NULL) {
		const char *colon = strrchr(r->remote, ':');

		if (strcmp(r->local, wo->local) != 0 || colon == NULL ||
		    strcmp(colon + 1, wo->rpath) != 0)
			return;
	}
	res = !r->last_end ? "" : r->last_result == 0 ? "ok" : phsync_strerror(r->last_result);
	if (wo->json) {
		fputs("{\"event\":\"watch\"", stdout);
		json_kv_str("name", r->name);
		json_kv_str("direction", r->direction);
		json_kv_str("remote", r->remote);
		json_kv_str("local", r->local);
		json_kv_str("config", r->config);
		printf(",\"pid\":%ld,\"live\":%s", r->pid, live ? "true" : "false");
		/* A record no live process holds is a dead watcher's: not
		 * "watching", whatever it last said. */
		json_kv_str("state", live ? r->state : "gone");
		json_kv_str("recorded_state", r->state);
		printf(",\"since\":%lld,\"connected\":%s,\"keepalives\":%" PRIu64
		       ",\"retry_at\":%lld,\"last_start\":%lld,\"last_end\":%lld",
		       (long long)r->since, live && r->connected ? "true" : "false", r->keepalives,
		       (long long)r->retry_at, (long long)r->last_start, (long long)r->last_end);
		/* As the "pair" events say it. */
		json_kv_str("last_result", r->last_end ? phsync_strerror(r->last_result) : "");
		printf(",\"last_exit\":%d,\"files_done\":%" PRIu64 ",\"files_failed\":%" PRIu64
		       ",\"bytes\":%" PRIu64, r->last_end ? cli_exit_code(r->last_result) : -1,
		       r->last_files, r->last_failed, r->last_bytes);
		json_kv_str("error", r->error);
		json_kv_str("note", r->note);
		printf(",\"updated\":%lld}\n", (long long)r->updated);
		wo->n++;
		return;
	}
	if (wo->n == 0)
		printf(wo->local == NULL ? "watched pairs:\n" : "watcher:\n");
	wo->n++;
	when_str(since, sizeof(since), r->since);
	when_str(last, sizeof(last), r->last_end);
	when_str(retry, sizeof(retry), r->retry_at);
	if (wo->local == NULL) {
		phsync_escape(shown, sizeof(shown), r->remote);
		phsync_escape(shown2, sizeof(shown2), r->local);
		printf("%s: %s %s -> %s\n", r->name, r->direction,
		       strcmp(r->direction, "pull") == 0 ? shown : shown2,
		       strcmp(r->direction, "pull") == 0 ? shown2 : shown);
	}
	phsync_escape(shown, sizeof(shown), r->error);
	if (!live) {
		printf("  not watched: its watcher (pid %ld) ended without a word (killed?); "
		       "it was %s at %s\n", r->pid, r->state, since);
	} else if (strcmp(r->state, "waiting") == 0) {
		printf("  waiting for the host since %s (pid %ld; backing off, next try %s)\n"
		       "  why: %s\n", since, r->pid, retry, shown);
	} else if (strcmp(r->state, "stopped") == 0) {
		printf("  stopped since %s (pid %ld; not retried: restart it or send the daemon "
		       "SIGHUP)\n  why: %s\n", since, r->pid, shown);
	} else {
		printf("  %s since %s (pid %ld%s)\n", r->state, since, r->pid,
		       r->connected ? ", connected" : "");
	}
	if (r->last_end)
		printf("  last sync %s: %s, %" PRIu64 " copied, %" PRIu64 " failed\n", last, res,
		       r->last_files, r->last_failed);
	else
		printf("  no sync ended yet\n");
	if (r->note[0]) {
		phsync_escape(shown, sizeof(shown), r->note);
		printf("  warning: %s\n", shown);
	}
}

/* The status of one pair: what a sync would do now (the dry run's
 * counts) and how its last run ended. */
static void
pair_status(const char *state_dir, const char *remote, const char *local, int json,
            const struct phsync_stats *st, int code, const char *err)
{
	struct status_out so = { json, 0, NULL, NULL };
	char lpath[PATH_MAX], *u = NULL, *h = NULL, *p = NULL, shown[4200];
	phsync_ctx *ctx = NULL;
	size_t n;

	if (json) {
		printf("{\"event\":\"status\",\"files_to_copy\":%" PRIu64 ",\"bytes_to_copy\":%"
		       PRIu64 ",\"conflicts\":%" PRIu64 ",\"files_to_delete\":%" PRIu64
		       ",\"files_total\":%" PRIu64 ",\"exit\":%d", st->files_done,
		       st->bytes_committed, st->conflicts, st->files_deleted, st->files_total, code);
		if (err != NULL && err[0]) {
			fputs(",\"error\":", stdout);
			cli_json_string(stdout, err);
		}
		fputs("}\n", stdout);
	} else if (err != NULL && err[0] && code != CLI_EXIT_PARTIAL) {
		phsync_escape(shown, sizeof(shown), err);
		printf("now: cannot tell: %s\n", shown);
	} else {
		printf("now: %" PRIu64 " of %" PRIu64 " files to copy (%.1f MB), %" PRIu64
		       " conflict(s), %" PRIu64 " to delete\n", st->files_done, st->files_total,
		       st->bytes_committed / 1e6, st->conflicts, st->files_deleted);
	}
	if (phsync_path_real(local, lpath, sizeof(lpath)) != 0 || phsync_parse_remote(remote, &u, &h, &p) != 0 ||
	    phsync_ctx_new(&ctx) != 0)
		goto out;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	so.local = lpath;
	so.rpath = p;
	if (phsync_pairs(ctx, state_dir, status_pair, &so) == 0 && so.n == 0 && !json)
		printf("never synced\n");
	{
		/* A watcher of this pair, if one keeps a record. */
		struct watch_out wo = { json, 0, lpath, p };

		(void)ph_wst_list(state_dir, watch_pair, &wo);
	}
out:
	phsync_ctx_free(ctx);
	free(u);
	free(h);
	free(p);
}

static void
tell_status(struct cli_sync *s, const struct phsync_stats *st, int code, const char *err)
{
	pair_status(s->a.opts.state_dir, s->remote, s->local, s->status_json, st, code, err);
}

/* `phsync status HOST:DIR LOCALDIR` (the remote one first: a pull;
 * second: a push), with any option of pull and push: a dry run whose
 * result is told as the pair's state. */
static int
status_of_pair(int argc, char **argv, enum phsync_direction dir)
{
	struct cli_sync s;
	int rc;

	if ((rc = cli_sync_parse(argc, argv, dir, 1, &s)) != CLI_GO_ON)
		return rc;
	/* Only failures are told as they come; the rest is the status. */
	s.status_json = s.a.out.json;
	s.a.out.json = 0;
	s.a.out.quiet = 1;
	s.a.out.verbose = 0;
	s.a.opts.dry_run = s.a.out.dry_run = 1;
	s.a.progress = 0;
	return cli_sync_run(&s, tell_status);
}

/* The paths of status's command line: how many, and the first two. The
 * options are pull's and push's (status with a pair takes them all). */
static int
count_paths(int argc, char **argv, const char *pos[2], int *first)
{
	int i, npos = 0, dashdash = 0;

	for (i = 1; i < argc; i++) {
		if (!dashdash && strcmp(argv[i], "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (!dashdash && argv[i][0] == '-' && argv[i][1] != '\0') {
			if (cli_takes_value(CLI_PULL_PUSH | CLI_TWOWAY, argv[i]))
				i++;
			continue;
		}
		if (npos == 0)
			*first = i;
		if (npos < 2)
			pos[npos] = argv[i];
		npos++;
	}
	return npos;
}

/* Every watched pair, then every pair the state knows, and how its last
 * run ended. */
static int
list_pairs(const char *dir, int json)
{
	struct status_out so = { json, 0, NULL, NULL };
	struct watch_out wo = { json, 0, NULL, NULL };
	phsync_ctx *ctx = NULL;
	int rc, wrc;

	if (phsync_ctx_new(&ctx) != 0)
		return CLI_EXIT_ERROR;
	/* The watched pairs first (what runs now), then the state's pairs. */
	wrc = ph_wst_list(dir, watch_pair, &wo);
	if (wrc != 0)
		fprintf(stderr, "phsync: cannot read the watchers' status: %s\n", strerror(-wrc));
	if (wo.n > 0 && !json)
		printf("\n");
	rc = phsync_pairs(ctx, dir, status_pair, &so);
	if (rc != 0)
		fprintf(stderr, "phsync: %s\n", phsync_ctx_error(ctx));
	else if (so.n == 0 && !json)
		printf("no sync pairs yet\n");
	phsync_ctx_free(ctx);
	return cli_exit_code(rc);
}

int
cli_status_main(int argc, char **argv)
{
	const struct cli_cmd cmd = { "status", CLI_JSON | CLI_STATE_DIR, "", NULL, cli_help_status,
	                             0, NULL, NULL };
	const char *pos[2] = { NULL, NULL };
	struct cli_args a;
	int rc, first = 0, npos = count_paths(argc, argv, pos, &first);

	/* `phsync status sync A B`: what a two-way sync would do (the word
	 * taken out, the rest as sync's command line). */
	if (npos == 3 && strcmp(pos[0], "sync") == 0) {
		memmove(&argv[first], &argv[first + 1], (size_t)(argc - first) * sizeof(*argv));
		return status_of_pair(argc - 1, argv, PHSYNC_BOTH);
	}
	if (npos == 2) {
		char *u, *h, *p;
		int pull = phsync_parse_remote(pos[0], &u, &h, &p) == 0;

		if (pull) {
			free(u);
			free(h);
			free(p);
		}
		return status_of_pair(argc, argv, pull ? PHSYNC_PULL : PHSYNC_PUSH);
	}
	cli_args_init(&a);
	if ((rc = cli_parse(&cmd, &argc, argv, &a)) != CLI_GO_ON)
		return rc;
	if (optind != argc)
		return cli_usage_error("status", "status takes no path, two (HOST:DIR LOCALDIR) or "
		                       "sync and two");
	return list_pairs(a.opts.state_dir, a.out.json);
}
