/* SPDX-License-Identifier: ISC */
/* `phsync backup`, `phsync restore`, `phsync verify`: the command line
 * over include/phsync/backup.h. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/phsync.h"
#include "phsync/backup.h"
#include "cli.h"
#include "output.h"

#define MAX_RULES 256

static const char backup_usage[] =
"usage: phsync backup [OPTIONS] SRC ARCHIVE\n"
"\n"
"Writes the files of SRC ([USER@]HOST:DIR, or a local folder) into a tar\n"
"archive, straight from the server (no copy on disk first). ARCHIVE ends in\n"
".tar, .tar.zst, .tar.gz or .tar.xz; %Y %m %d %H %M in its name are the date\n"
"and time (phone-%Y%m%d.tar.zst). Photos and videos are stored as they are,\n"
"the rest compressed. The archive appears under its name only complete and\n"
"fsync'ed; its last entry, .phsync-manifest, lists every file with its\n"
"XXH3-128. Source and name template make a series, remembered in the state.\n"
"phsync restore and phsync verify read archives back (their --help).\n"
"\n"
"Options:\n"
"      --incremental  only what changed since the series' last archive, and\n"
"                     what was deleted since (full when there is none)\n"
"      --full         every file (the default; with --incremental in a\n"
"                     crontab, a weekly --full starts a new chain)\n"
"      --keep N       after a backup, remove the oldest chains (a full\n"
"                     archive and its incrementals) beyond N\n"
"  -F FILE            ssh config file\n"
"  -v, --verbose      one line per file\n"
"  -q, --quiet        only errors\n"
"      --json         JSON lines on stdout\n"
"      --progress     progress line even when not on a terminal\n"
"      --no-progress  never a progress line\n"
"      --exclude GLOB, --include GLOB, --no-default-excludes   as for pull\n"
"      --no-fsync     do not fsync the archive\n"
"      --timeout SEC  give up on a server silent this long (default 60)\n"
"      --state-dir DIR  where the series is remembered\n"
"  -h, --help         this text\n"
"\n"
"Exit codes: 0 done; 1 error (nothing is left under the archive's name by a\n"
"failed backup); 2 usage; 3 cannot connect; 4 host key; 5 some files could\n"
"not be read (the others are in the archive); 6 interrupted.\n";

static const char restore_usage[] =
"usage: phsync restore [OPTIONS] ARCHIVE... DIR\n"
"\n"
"Applies a chain of archives (a full one and its incrementals, in any order:\n"
"their manifests order them, and the whole chain is checked before anything\n"
"is written) into DIR: no file outside DIR, no symlink followed or made,\n"
"refused entries named. A phsync archive's files are renamed into place only\n"
"once they match its manifest. A deletion an incremental records removes only\n"
"what this restore put in place itself; a full archive carrying deletions is\n"
"refused.\n"
"\n"
"Options:\n"
"  -v, --verbose      one line per file\n"
"  -q, --quiet        only errors\n"
"      --json         JSON lines on stdout\n"
"      --progress     progress line even when not on a terminal\n"
"      --no-progress  never a progress line\n"
"      --no-fsync     do not fsync the restored files\n"
"  -h, --help         this text\n"
"\n"
"Exit codes: 0 done; 1 error (an archive damaged or cut, or a full one\n"
"carrying deletions); 2 usage, or archives that are not one chain; 5 some\n"
"entries were refused; 6 interrupted.\n";

static const char verify_usage[] =
"usage: phsync verify [OPTIONS] ARCHIVE...\n"
"\n"
"Reads archives back and checks every file against the manifest; lists the\n"
"deletions a restore would apply and the entries it would refuse.\n"
"\n"
"Options:\n"
"  -v, --verbose      one line per file\n"
"  -q, --quiet        only errors\n"
"      --json         JSON lines on stdout\n"
"      --progress     progress line even when not on a terminal\n"
"      --no-progress  never a progress line\n"
"  -h, --help         this text\n"
"\n"
"Exit codes: 0 every file matches; 1 an archive damaged, cut, not matching\n"
"its manifest, holding entries a restore would refuse, or a full archive\n"
"carrying deletions; 2 usage; 6 interrupted.\n";

/* verify's events: a deletion an archive would apply is always listed
 * (it is what a reader must review before a restore), with its archive;
 * the rest as every command prints them. */
static void
verify_event(const struct phsync_event *ev, void *arg)
{
	struct cli_out *o = arg;
	char shown[4096 * 4], from[4096 * 4];

	if (ev->type != PHSYNC_EV_DELETED) {
		cli_on_event(ev, arg);
		return;
	}
	if (o->json) {
		fputs("{\"event\":\"delete\",\"action\":", o->out);
		cli_json_string(o->out, ev->action);
		fputs(",\"path\":", o->out);
		cli_json_string(o->out, ev->path);
		fputs(",\"archive\":", o->out);
		cli_json_string(o->out, ev->message);
		fputs("}\n", o->out);
	} else if (!o->quiet) {
		cli_clear_line(o);
		phsync_escape(shown, sizeof(shown), ev->path);
		phsync_escape(from, sizeof(from), ev->message ? ev->message : "?");
		fprintf(o->out, "%s: %s %s\n", from, ev->action, shown);
	}
	fflush(o->out);
}

static int
usage_error(const char *cmd, const char *msg)
{
	fprintf(stderr, "phsync: %s\nTry 'phsync %s --help'.\n", msg, cmd);
	return CLI_EXIT_USAGE;
}

static void
summary(struct cli_out *o, const char *cmd, const struct phsync_stats *st, int code,
        const char *err, const char *archive)
{
	char shown[4200];

	if (o->json) {
		fprintf(o->out, "{\"event\":\"summary\",\"command\":\"%s\",\"files_total\":%" PRIu64
		        ",\"files_done\":%" PRIu64 ",\"files_failed\":%" PRIu64 ",\"files_skipped\":%"
		        PRIu64 ",\"files_deleted\":%" PRIu64 ",\"bytes_done\":%" PRIu64
		        ",\"bytes_committed\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64 ",\"exit\":%d", cmd,
		        st->files_total, st->files_done, st->files_failed, st->files_skipped,
		        st->files_deleted, st->bytes_done, st->bytes_committed, st->elapsed_ms, code);
		if (archive != NULL && archive[0]) {
			fputs(",\"archive\":", o->out);
			cli_json_string(o->out, archive);
		}
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
	if (o->quiet)
		return;
	if (strcmp(cmd, "backup") == 0 && archive != NULL && archive[0]) {
		phsync_escape(shown, sizeof(shown), archive);
		fprintf(o->err, "%s: %" PRIu64 " files (%.1f MB), %" PRIu64 " deletion(s) recorded, "
		        "%.1f s\n", shown, st->files_done, st->bytes_committed / 1e6,
		        st->files_deleted, st->elapsed_ms / 1000.0);
	} else if (strcmp(cmd, "restore") == 0 && (o->verbose || o->progress)) {
		fprintf(o->err, "%" PRIu64 " files restored (%.1f MB), %" PRIu64 " deleted, %.1f s\n",
		        st->files_done, st->bytes_committed / 1e6, st->files_deleted,
		        st->elapsed_ms / 1000.0);
	} else if (strcmp(cmd, "verify") == 0 && code == 0) {
		fprintf(o->err, "%" PRIu64 " files match their manifests (%.1f MB)", st->files_done,
		        st->bytes_committed / 1e6);
		if (st->files_deleted > 0)
			fprintf(o->err, "; a restore would apply %" PRIu64 " deletion(s) (listed "
			        "above)", st->files_deleted);
		fputc('\n', o->err);
	}
}

int
cli_backup_main(int argc, char **argv)
{
	enum { O_JSON = 256, O_PROGRESS, O_NO_PROGRESS, O_EXCLUDE, O_INCLUDE, O_NO_FSYNC,
	       O_TIMEOUT, O_NO_DEFAULT_EXCLUDES, O_STATE_DIR, O_INCREMENTAL, O_FULL, O_KEEP };
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, O_JSON },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
		{ "exclude", required_argument, NULL, O_EXCLUDE },
		{ "include", required_argument, NULL, O_INCLUDE },
		{ "no-default-excludes", no_argument, NULL, O_NO_DEFAULT_EXCLUDES },
		{ "no-fsync", no_argument, NULL, O_NO_FSYNC },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "state-dir", required_argument, NULL, O_STATE_DIR },
		{ "incremental", no_argument, NULL, O_INCREMENTAL },
		{ "full", no_argument, NULL, O_FULL },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0], *excludes[MAX_RULES], *includes[MAX_RULES];
	struct phsync_options opts;
	struct phsync_backup_options bo;
	struct phsync_stats st;
	struct cli_out out;
	phsync_ctx *ctx = NULL;
	char published[PATH_MAX * 2] = "";
	int c, rc, code, progress = -1, is_backup = strcmp(cmd, "backup") == 0;
	int npos;
	char *end;
	const char *backup_only = NULL; /* an option restore/verify would ignore */

	phsync_options_init(&opts);
	phsync_backup_options_init(&bo);
	memset(&out, 0, sizeof(out));
	memset(&st, 0, sizeof(st));
	out.out = stdout;
	out.err = stderr;
	opts.excludes = excludes;
	opts.includes = includes;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "F:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			backup_only = "-F";
			opts.ssh_config = optarg;
			break;
		case 'v':
			out.verbose++;
			break;
		case 'q':
			out.quiet = 1;
			break;
		case O_JSON:
			out.json = 1;
			break;
		case O_PROGRESS:
			progress = 1;
			break;
		case O_NO_PROGRESS:
			progress = 0;
			break;
		case O_EXCLUDE:
		case O_INCLUDE:
			backup_only = "--exclude and --include";
			if (opts.n_excludes + opts.n_includes >= MAX_RULES)
				return usage_error(cmd, "too many --include/--exclude rules");
			if (c == O_EXCLUDE)
				excludes[opts.n_excludes++] = optarg;
			else
				includes[opts.n_includes++] = optarg;
			break;
		case O_NO_DEFAULT_EXCLUDES:
			backup_only = "--no-default-excludes";
			opts.no_default_excludes = 1;
			break;
		case O_NO_FSYNC:
			if (strcmp(cmd, "verify") == 0)
				backup_only = "--no-fsync";
			opts.fsync = 0;
			break;
		case O_TIMEOUT: {
			backup_only = "--timeout";
			unsigned long v = strtoul(optarg, &end, 10);

			if (*optarg == '\0' || *end != '\0' || v < 1 || v > 86400)
				return usage_error(cmd, "--timeout takes 1 to 86400 seconds");
			opts.timeout_s = (unsigned)v;
			break;
		}
		case O_STATE_DIR:
			backup_only = "--state-dir";
			opts.state_dir = optarg;
			break;
		case O_INCREMENTAL:
			bo.mode = PHSYNC_BACKUP_INCREMENTAL;
			break;
		case O_FULL:
			bo.mode = PHSYNC_BACKUP_FULL;
			break;
		case O_KEEP: {
			unsigned long v = strtoul(optarg, &end, 10);

			if (*optarg < '1' || *optarg > '9' || *end != '\0' || v > 100000)
				return usage_error(cmd, "--keep takes a number of chains, 1 or more");
			bo.keep = (unsigned)v;
			break;
		}
		case 'h':
			fputs(is_backup ? backup_usage : strcmp(cmd, "restore") == 0 ? restore_usage :
			      verify_usage, stdout);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "phsync: unknown option or missing argument: '%s'\n"
			        "Try 'phsync %s --help'.\n", argv[optind - 1], cmd);
			return CLI_EXIT_USAGE;
		}
	}
	npos = argc - optind;
	if (is_backup && npos != 2)
		return usage_error(cmd, "backup needs a source and an archive name");
	if (strcmp(cmd, "restore") == 0 && npos < 2)
		return usage_error(cmd, "restore needs one or more archives and a folder");
	if (strcmp(cmd, "verify") == 0 && npos < 1)
		return usage_error(cmd, "verify needs one or more archives");
	if (!is_backup && (bo.keep || bo.mode))
		return usage_error(cmd, "--incremental, --full and --keep are for backup");
	if (!is_backup && backup_only != NULL) {
		char msg[128];

		/* Refused rather than ignored: --help lists only what applies. */
		snprintf(msg, sizeof(msg), "%s %s not for %s", backup_only,
		         strchr(backup_only, ' ') ? "are" : "is", cmd);
		return usage_error(cmd, msg);
	}
	if (out.json)
		out.progress = 0;
	else
		out.progress = progress >= 0 ? progress : isatty(STDERR_FILENO);
	opts.on_event = strcmp(cmd, "verify") == 0 ? verify_event : cli_on_event;
	opts.event_arg = &out;
	opts.progress_ms = out.progress ? 250 : out.json && progress == 1 ? 1000 : 0;
	bo.sync = &opts;
	if (phsync_ctx_new(&ctx) != 0) {
		fputs("phsync: out of memory\n", stderr);
		return CLI_EXIT_ERROR;
	}
	cli_guard(ctx, &opts, &out);
	if (is_backup)
		rc = phsync_backup(ctx, argv[optind], argv[optind + 1], &bo, &st, published,
		                   sizeof(published));
	else if (strcmp(cmd, "restore") == 0)
		rc = phsync_restore(ctx, (const char *const *)argv + optind, (size_t)npos - 1,
		                    argv[argc - 1], &opts, &st);
	else
		rc = phsync_verify(ctx, (const char *const *)argv + optind, (size_t)npos, &opts, &st);
	code = cli_exit_code(rc);
	summary(&out, cmd, &st, code, rc != 0 ? phsync_ctx_error(ctx) : NULL, published);
	cli_guard(NULL, &opts, &out);
	phsync_ctx_free(ctx);
	return code;
}
