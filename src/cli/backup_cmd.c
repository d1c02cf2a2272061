/* SPDX-License-Identifier: ISC */
/* `phsync backup`, `phsync restore`, `phsync verify`: the command line
 * over include/phsync/backup.h. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/phsync.h"
#include "phsync/backup.h"
#include "cli.h"
#include "opts.h"
#include "output.h"
#include "tty.h"

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
	}
	cli_summary_error(o, err);
	if (o->json || o->quiet)
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

/* backup's own options, and what the command line asks beyond the shared
 * ones. */
enum { O_INCREMENTAL = CLI_O_OWN, O_FULL, O_KEEP };

struct backup_args {
	const char *cmd;                 /* "backup", "restore" or "verify" */
	struct phsync_backup_options bo;
	const char *backup_only;         /* the last option given that restore
	                                    and verify would ignore */
};

static int
backup_opt(int key, const char *arg, void *p)
{
	struct backup_args *b = p;
	char *end;
	unsigned long v;

	switch (key) {
	case 'F':
		b->backup_only = "-F";
		break;
	case CLI_O_EXCLUDE:
	case CLI_O_INCLUDE:
		b->backup_only = "--exclude and --include";
		break;
	case CLI_O_NO_DEFAULT_EXCLUDES:
		b->backup_only = "--no-default-excludes";
		break;
	case CLI_O_NO_FSYNC:
		if (strcmp(b->cmd, "verify") == 0)
			b->backup_only = "--no-fsync";
		break;
	case CLI_O_TIMEOUT:
		b->backup_only = "--timeout";
		break;
	case CLI_O_STATE_DIR:
		b->backup_only = "--state-dir";
		break;
	case O_INCREMENTAL:
		b->bo.mode = PHSYNC_BACKUP_INCREMENTAL;
		break;
	case O_FULL:
		b->bo.mode = PHSYNC_BACKUP_FULL;
		break;
	case O_KEEP:
		v = strtoul(arg, &end, 10);
		if (*arg < '1' || *arg > '9' || *end != '\0' || v > 100000)
			return cli_usage_error(b->cmd, "--keep takes a number of chains, 1 or more");
		b->bo.keep = (unsigned)v;
		break;
	}
	return CLI_GO_ON;
}

/* The paths each command needs, and the options only backup takes refused
 * (rather than ignored: --help lists only what applies). */
static int
backup_check(const struct backup_args *b, int npos)
{
	int is_backup = strcmp(b->cmd, "backup") == 0;

	if (is_backup && npos != 2)
		return cli_usage_error(b->cmd, "backup needs a source and an archive name");
	if (strcmp(b->cmd, "restore") == 0 && npos < 2)
		return cli_usage_error(b->cmd, "restore needs one or more archives and a folder");
	if (strcmp(b->cmd, "verify") == 0 && npos < 1)
		return cli_usage_error(b->cmd, "verify needs one or more archives");
	if (!is_backup && (b->bo.keep || b->bo.mode))
		return cli_usage_error(b->cmd, "--incremental, --full and --keep are for backup");
	if (!is_backup && b->backup_only != NULL)
		return cli_usage_error(b->cmd, "%s %s not for %s", b->backup_only,
		                       strchr(b->backup_only, ' ') ? "are" : "is", b->cmd);
	return CLI_GO_ON;
}

/* Runs the command over the paths (argv, npos of them). */
static int
backup_run(struct backup_args *b, struct cli_args *a, char **argv, int npos)
{
	char published[PATH_MAX * 2] = "";
	struct phsync_stats st;
	phsync_ctx *ctx = NULL;
	int rc, code;

	memset(&st, 0, sizeof(st));
	cli_progress_line(a);
	a->opts.on_event = strcmp(b->cmd, "verify") == 0 ? verify_event : cli_on_event;
	a->opts.event_arg = &a->out;
	a->opts.progress_ms = a->out.progress ? 250 : a->out.json && a->progress == 1 ? 1000 : 0;
	b->bo.sync = &a->opts;
	if (phsync_ctx_new(&ctx) != 0) {
		fputs("phsync: out of memory\n", stderr);
		return CLI_EXIT_ERROR;
	}
	cli_guard(ctx, &a->opts, &a->out);
	if (strcmp(b->cmd, "backup") == 0)
		rc = phsync_backup(ctx, argv[0], argv[1], &b->bo, &st, published, sizeof(published));
	else if (strcmp(b->cmd, "restore") == 0)
		rc = phsync_restore(ctx, (const char *const *)argv, (size_t)npos - 1, argv[npos - 1],
		                    &a->opts, &st);
	else
		rc = phsync_verify(ctx, (const char *const *)argv, (size_t)npos, &a->opts, &st);
	code = cli_exit_code(rc);
	summary(&a->out, b->cmd, &st, code, rc != 0 ? phsync_ctx_error(ctx) : NULL, published);
	cli_guard(NULL, &a->opts, &a->out);
	phsync_ctx_free(ctx);
	return code;
}

int
cli_backup_main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "incremental", no_argument, NULL, O_INCREMENTAL },
		{ "full", no_argument, NULL, O_FULL },
		{ "keep", required_argument, NULL, O_KEEP },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const backup_help[] = { backup_usage, NULL };
	static const char *const restore_help[] = { restore_usage, NULL };
	static const char *const verify_help[] = { verify_usage, NULL };
	struct backup_args b;
	struct cli_cmd cmd = { argv[0], CLI_SSH_CONFIG | CLI_VERBOSE | CLI_QUIET | CLI_JSON |
	                       CLI_PROGRESS | CLI_RULES | CLI_NO_FSYNC | CLI_TIMEOUT |
	                       CLI_STATE_DIR, "", own, backup_help, 0, backup_opt, &b };
	struct cli_args a;
	int rc;

	memset(&b, 0, sizeof(b));
	b.cmd = argv[0];
	phsync_backup_options_init(&b.bo);
	if (strcmp(b.cmd, "restore") == 0)
		cmd.help = restore_help;
	else if (strcmp(b.cmd, "verify") == 0)
		cmd.help = verify_help;
	cli_args_init(&a);
	if ((rc = cli_parse(&cmd, &argc, argv, &a)) != CLI_GO_ON)
		return rc;
	if ((rc = backup_check(&b, argc - optind)) != CLI_GO_ON)
		return rc;
	return backup_run(&b, &a, argv + optind, argc - optind);
}
