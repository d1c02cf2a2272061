/* SPDX-License-Identifier: ISC */
/* phsync command line. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ph_config.h"
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif

#include "phsync/phsync.h"
#include "cli.h"
#include "output.h"
#include "watch.h"
#include "wstatus.h"

#define MAX_RULES 256

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

/* `phsync --help` is usage_head, sync_options and usage_tail; `phsync pull
 * --help` and `phsync push --help` print their own head and the same
 * sync_options (docs/phsync-pull.1 and the test comparing them). */
static const char usage_head[] =
"usage: phsync pull [OPTIONS] [USER@]HOST:DIR LOCALDIR\n"
"       phsync push [OPTIONS] LOCALDIR [USER@]HOST:DIR\n"
"       phsync pull|push --watch [--interval SEC] [OPTIONS] ...  (keep syncing)\n"
"       phsync daemon [-c FILE] [-v|-q]   (every pair of a config file)\n"
"       phsync status [--json] [--state-dir DIR]   (watched pairs, pairs synced so far)\n"
"       phsync status [OPTIONS] HOST:DIR LOCALDIR  (what a sync would do now)\n"
"       phsync delta signature|diff|patch ...   (see phsync delta --help)\n"
"       phsync pair [-F FILE] [--key FILE] [--authorized-keys PATH] NAME\n"
"                   [USER@]ADDRESS[:PORT]   (set up a phone; see pair --help)\n"
"       phsync doctor [-F FILE] [--json] HOST[:DIR]   (check a pair)\n"
"       phsync backup [OPTIONS] SRC ARCHIVE    (see phsync backup --help)\n"
"       phsync restore [OPTIONS] ARCHIVE... DIR\n"
"       phsync verify [OPTIONS] ARCHIVE...\n"
"       phsync serve ROOT   (the remote helper; phsync starts it over ssh)\n"
"\n"
"Keeps a phone's folders and a computer's in step over SSH (SFTP). The\n"
"destination receives the contents of the source: 'phsync pull phone:/DCIM\n"
"~/Pictures' gives ~/Pictures/Camera/... A file is copied when it is new or\n"
"its size or modification time differ. A destination file changed since\n"
"the last sync (or, on first contact, of other content) is never\n"
"overwritten: the incoming version lands beside it as\n"
"NAME.phsync-conflict-YYYYMMDD-HHMMSS.EXT (exit 5). Nothing is deleted\n"
"unless --delete says so. HOST is a Host in ~/.ssh/config (or -F FILE), as\n"
"with ssh and rsync.\n";

static const char sync_options[] =
"\n"
"Options (before or after the paths; '--' ends them):\n"
"  -F FILE            read this ssh config instead of ~/.ssh/config\n"
"  -n, --dry-run      show what would be done; change nothing\n"
"  -v, --verbose      one line per file and folder (-vv: also libssh debug)\n"
"  -q, --quiet        print only errors\n"
"      --json         one JSON object per line on stdout (events, summary)\n"
"      --progress     show the progress line even when not on a terminal\n"
"      --no-progress  never show it\n"
"      --exclude GLOB skip paths matching GLOB (repeatable)\n"
"      --include GLOB keep paths matching GLOB even if excluded (repeatable)\n"
"      --no-default-excludes\n"
"                     also copy what galleries leave behind, skipped by\n"
"                     default: .thumbnails/ .thumbdata* .trashed-* .pending-*\n"
"      --no-fsync     do not fsync before renaming (faster; a power cut may\n"
"                     then leave empty files, a crash of phsync cannot)\n"
"      --timeout SEC  give up on a server silent for SEC seconds (default 60)\n"
"      --modify-window SEC  count times SEC seconds apart as equal (2 for\n"
"                     FAT/exFAT storage that keeps 2-second times)\n"
"      --min-age SEC  leave files changed less than SEC seconds ago (maybe\n"
"                     still being written) for a later run\n"
"      --overwrite    the source wins: replace destination files changed since\n"
"                     the last sync instead of putting a conflict copy beside\n"
"      --delete       delete destination files whose source was deleted since\n"
"                     the last sync (only files this pair synced, unchanged\n"
"                     since; nothing when the source lists empty or a listing\n"
"                     failed)\n"
"      --max-delete N refuse every delete of a run that would delete more\n"
"                     than N files (default 1000; 0: none)\n"
"      --trash DIR    with --delete, move files into DIR (on the destination's\n"
"                     side; relative to the destination folder) instead\n"
"      --remove-source-files  pull only: free the phone; each file is removed\n"
"                     from it once its copy here is fsync'ed, reads back with\n"
"                     the hash of what was read, and is recorded (also files\n"
"                     synced by earlier runs and unchanged since)\n"
"      --state-dir DIR  keep the sync state there (default\n"
"                     $XDG_STATE_HOME/phsync or ~/.local/state/phsync)\n"
"      --reset-state  forget what this pair's state remembers (a damaged\n"
"                     state file is replaced)\n"
"      --watch        keep going: sync again whenever the source changes (a\n"
"                     local file once closed and settled; a remote folder by\n"
"                     polling) until SIGTERM or Ctrl-C (then exit 0)\n"
"      --interval SEC with --watch: poll the phone every SEC seconds\n"
"                     (default 30)\n"
"      --helper auto|never|always  use `phsync serve` on the remote (changed\n"
"                     files travel as deltas both ways): auto (default) where\n"
"                     the remote runs it, else plain SFTP; always: fail if not\n"
"      --helper-path PATH  the phsync program on the remote (default: phsync\n"
"                     from its PATH)\n"
"  -h, --help         this text\n"
"  -V, --version      print the version\n"
"rsync habits such as -avzP (archive, recursive, times, compress, partial,\n"
"human-readable) are taken as what phsync always does (P: the progress\n"
"line); rsync's other flags are refused naming phsync's way.\n"
"HOST:~/DIR is DIR in the login's home folder.\n"
;

static const char usage_tail[] =
"\n"
"Backup options (phsync backup --help says more):\n"
"      --incremental  only what changed since the series' last archive, and\n"
"                     the deletions since (full when there is none)\n"
"      --full         every file (the default)\n"
"      --keep N       remove the oldest chains (full + incrementals) beyond N\n"
"phsync daemon runs every pair of a config file (-c FILE, --config FILE;\n"
"default $XDG_CONFIG_HOME/phsync/phsync.conf, see phsync.conf(5)); SIGHUP\n"
"re-reads it; one daemon per config file.\n"
"\n"
"GLOB without '/' matches a name at any depth ('*.tmp', '.thumbnails');\n"
"with '/' it matches the path from the top ('DCIM/.thumbnails', 'a/**');\n"
"a trailing '/' matches folders only.\n"
"\n"
"Exit codes:\n"
"  0  success\n"
"  1  error: remote folder missing, local folder unusable, disk full, protocol,\n"
"     another run on the same pair in progress, a damaged state file,\n"
"     deletes refused (over --max-delete, empty or failed source listing)\n"
"  2  usage error\n"
"  3  cannot connect or authenticate\n"
"  4  host key changed, or unknown and not accepted\n"
"  5  partial: some files failed (listed on stderr), the rest synced; or\n"
"     conflicts: changed files kept, incoming versions put beside them\n"
"  6  interrupted; run again to finish\n";

static const char pull_head[] =
"usage: phsync pull [OPTIONS] [USER@]HOST:DIR LOCALDIR\n"
"       phsync pull --watch [--interval SEC] [OPTIONS] [USER@]HOST:DIR LOCALDIR\n"
"\n"
"Copies what is new or changed in the phone's folder DIR into LOCALDIR (made\n"
"when missing); a DIR that names one file puts that file into LOCALDIR, as\n"
"scp does. A local file changed since the last sync is never\n"
"overwritten: the phone's version lands beside it as a conflict copy\n"
"(exit 5). Nothing is deleted unless --delete says so. HOST is a Host in\n"
"~/.ssh/config (or -F FILE), as with ssh and rsync. More: man phsync-pull.\n";

static const char push_head[] =
"usage: phsync push [OPTIONS] LOCALDIR [USER@]HOST:DIR\n"
"       phsync push --watch [--interval SEC] [OPTIONS] LOCALDIR [USER@]HOST:DIR\n"
"\n"
"Copies what is new or changed in LOCALDIR into the phone's folder DIR (made\n"
"when missing); a LOCALDIR that names one file puts that file into DIR, as\n"
"scp does. A phone file changed since the last sync is never\n"
"overwritten: the laptop's version lands beside it as a conflict copy\n"
"(exit 5). Nothing is deleted unless --delete says so. HOST is a Host in\n"
"~/.ssh/config (or -F FILE), as with ssh and rsync. More: man phsync-push.\n";

static const char sync_tail[] =
"\n"
"GLOB without '/' matches a name at any depth ('*.tmp', '.thumbnails');\n"
"with '/' it matches the path from the top ('DCIM/.thumbnails', 'a/**');\n"
"a trailing '/' matches folders only.\n"
"\n"
"Exit codes: 0 success; 1 error; 2 usage; 3 cannot connect or log in;\n"
"4 host key changed or not accepted; 5 some files failed, or conflicts;\n"
"6 interrupted (see phsync --help).\n";

static const char status_usage[] =
"usage: phsync status [--json] [--state-dir DIR]\n"
"       phsync status [OPTIONS] [USER@]HOST:DIR LOCALDIR   (a pull)\n"
"       phsync status [OPTIONS] LOCALDIR [USER@]HOST:DIR   (a push)\n"
"Without paths, lists the pairs a watching pull or push and phsync daemon\n"
"keep in step (watching, syncing, waiting for the host, stopped; the last\n"
"sync), then the sync pairs phsync has state for, and how each one's last run\n"
"ended. With a pair, says what a sync would do now (a dry run: nothing\n"
"changes) and how the pair's last run ended; OPTIONS are pull's and push's\n"
"(phsync pull --help).\n"
"\n"
"Options:\n"
"      --json         one JSON object per pair (per line) on stdout\n"
"      --state-dir DIR  the sync state's folder (default\n"
"                     $XDG_STATE_HOME/phsync or ~/.local/state/phsync)\n"
"  -h, --help         this text\n";

/* `phsync --help`: every command, and pull's and push's options. */
static void
print_usage(void)
{
	fputs(usage_head, stdout);
	fputs(sync_options, stdout);
	fputs(usage_tail, stdout);
}

/* `phsync pull --help`, `phsync push --help`. */
static void
print_sync_usage(enum phsync_direction dir)
{
	fputs(dir == PHSYNC_PULL ? pull_head : push_head, stdout);
	fputs(sync_options, stdout);
	fputs(sync_tail, stdout);
}

static int
exit_code(int rc)
{
	switch (rc) {
	case 0:
		return CLI_EXIT_OK;
	case PHSYNC_EINVAL:
		return CLI_EXIT_USAGE;
	case PHSYNC_ECONNECT:
	case PHSYNC_EAUTH:
		return CLI_EXIT_CONNECT;
	case PHSYNC_EHOSTKEY:
	case PHSYNC_EHOSTUNKNOWN:
		return CLI_EXIT_HOSTKEY;
	case PHSYNC_EPARTIAL:
	case PHSYNC_ECONFLICT:
		return CLI_EXIT_PARTIAL;
	case PHSYNC_EINTR:
		return CLI_EXIT_INTERRUPTED;
	default:
		return CLI_EXIT_ERROR;
	}
}

/* Reads an answer from the terminal (never from stdin, which may be data).
 * A stop signal while it waits ends the prompt with no answer. */
static int
tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg)
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

static int
has_tty(void)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* "s" unless n is one: "1 folder", "2 folders". */
static const char *
plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static void
summary(struct cli_out *o, const struct phsync_stats *st, int code, const char *err)
{
	char shown[4200];

	if (o->json) {
		fprintf(o->out, "{\"event\":\"summary\",\"files_total\":%" PRIu64 ",\"files_done\":%" PRIu64
		        ",\"files_failed\":%" PRIu64 ",\"files_skipped\":%" PRIu64 ",\"dirs_created\":%" PRIu64
		        ",\"bytes_done\":%" PRIu64 ",\"bytes_committed\":%" PRIu64
		        ",\"bytes_todo\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64
		        ",\"conflicts\":%" PRIu64 ",\"files_deleted\":%" PRIu64
		        ",\"files_offloaded\":%" PRIu64 ",\"bytes_freed\":%" PRIu64
		        ",\"bytes_matched\":%" PRIu64 ",\"helper\":%u,\"files_todo\":%" PRIu64
		        ",\"files_not_reached\":%" PRIu64 ",\"dry_run\":%s,\"exit\":%d",
		        st->files_total, st->files_done, st->files_failed, st->files_skipped,
		        st->dirs_created, st->bytes_done, st->bytes_committed, st->bytes_todo,
		        st->elapsed_ms, st->conflicts, st->files_deleted, st->files_offloaded,
		        st->bytes_freed, st->bytes_matched, st->helper, st->files_todo,
		        st->files_unreached, o->dry_run ? "true" : "false", code);
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
		/* Server text can reach this message: keep it inert. */
		phsync_escape(shown, sizeof(shown), err);
		fprintf(o->err, "phsync: %s\n", shown);
	}
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
		        plural(st->files_total), o->dry_run ? "would be copied" : "copied",
		        (o->dry_run ? st->bytes_todo : st->bytes_committed) / 1e6, st->dirs_created,
		        plural(st->dirs_created), o->dry_run ? "would be made" : "made",
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

/* Parses a number of seconds for --NAME, lo to hi; says so and returns -1
 * when it is not one. */
static int
parse_secs(const char *arg, const char *name, unsigned long lo, unsigned long hi,
           unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "phsync: --%s takes %lu to %lu seconds\nTry 'phsync --help'.\n",
		        name, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* getopt's complaint, naming the option itself: a letter inside a bundle
 * (-xvz) leaves optind on the word, or past it after the bundle's last. */
static void
unknown_option(int argc, char **argv)
{
	if (optopt != 0 && optopt < 256)
		fprintf(stderr, "phsync: unknown option or missing argument: '-%c'\n", optopt);
	else
		fprintf(stderr, "phsync: unknown option or missing argument: '%s'\n",
		        argv[optind - 1 < argc ? optind - 1 : argc - 1]);
	fputs("Try 'phsync --help'.\n", stderr);
}

static void pair_status(const char *state_dir, const char *remote, const char *local,
                        int json, const struct phsync_stats *st, int code, const char *err);

/* pull and push; with status set, `phsync status HOST:DIR LOCALDIR` (or
 * LOCALDIR HOST:DIR): a dry run whose result is told as the pair's state. */
static int
sync_main(int argc, char **argv, enum phsync_direction dir, int status)
{
	enum { O_JSON = 256, O_PROGRESS, O_NO_PROGRESS, O_EXCLUDE, O_INCLUDE, O_NO_FSYNC,
	       O_TIMEOUT, O_NO_DEFAULT_EXCLUDES, O_MIN_AGE, O_RESET_STATE, O_STATE_DIR,
	       O_MODIFY_WINDOW, O_OVERWRITE, O_DELETE, O_MAX_DELETE, O_TRASH, O_REMOVE_SOURCE,
	       O_WATCH, O_INTERVAL, O_HELPER, O_HELPER_PATH };
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, O_JSON },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
		{ "exclude", required_argument, NULL, O_EXCLUDE },
		{ "include", required_argument, NULL, O_INCLUDE },
		{ "no-fsync", no_argument, NULL, O_NO_FSYNC },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "no-default-excludes", no_argument, NULL, O_NO_DEFAULT_EXCLUDES },
		{ "min-age", required_argument, NULL, O_MIN_AGE },
		{ "reset-state", no_argument, NULL, O_RESET_STATE },
		{ "state-dir", required_argument, NULL, O_STATE_DIR },
		{ "modify-window", required_argument, NULL, O_MODIFY_WINDOW },
		{ "overwrite", no_argument, NULL, O_OVERWRITE },
		{ "delete", no_argument, NULL, O_DELETE },
		{ "max-delete", required_argument, NULL, O_MAX_DELETE },
		{ "trash", required_argument, NULL, O_TRASH },
		{ "remove-source-files", no_argument, NULL, O_REMOVE_SOURCE },
		{ "watch", no_argument, NULL, O_WATCH },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "helper", required_argument, NULL, O_HELPER },
		{ "helper-path", required_argument, NULL, O_HELPER_PATH },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *excludes[MAX_RULES], *includes[MAX_RULES];
	struct phsync_options opts;
	struct phsync_stats st;
	struct cli_out out;
	struct sigaction sa;
	phsync_ctx *ctx = NULL;
	const char *remote, *local;
	int c, rc, code, progress = -1, status_json = 0, watch = 0;
	unsigned interval = 0;

	phsync_options_init(&opts);
	memset(&out, 0, sizeof(out));
	memset(&st, 0, sizeof(st));
	out.out = stdout;
	out.err = stderr;
	opts.excludes = excludes;
	opts.includes = includes;
	if ((rc = cli_rsync_flags(&argc, argv, "F", longopts, &progress)) != 0)
		return rc;
	optind = 1;
	opterr = 0; /* our own two-line message */
	/* Options may come before or after the paths, as with rsync and scp
	 * (GNU getopt permutes); "--" ends them. */
	while ((c = getopt_long(argc, argv, "F:nvqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			opts.ssh_config = optarg;
			break;
		case 'n':
			opts.dry_run = out.dry_run = 1;
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
			if (opts.n_excludes + opts.n_includes >= MAX_RULES) {
				fprintf(stderr, "phsync: at most %d --include/--exclude rules\n", MAX_RULES);
				return CLI_EXIT_USAGE;
			}
			if (c == O_EXCLUDE)
				excludes[opts.n_excludes++] = optarg;
			else
				includes[opts.n_includes++] = optarg;
			break;
		case O_NO_FSYNC:
			opts.fsync = 0;
			break;
		case O_NO_DEFAULT_EXCLUDES:
			opts.no_default_excludes = 1;
			break;
		case O_RESET_STATE:
			opts.reset_state = 1;
			break;
		case O_STATE_DIR:
			opts.state_dir = optarg;
			break;
		case O_MODIFY_WINDOW:
			if (parse_secs(optarg, "modify-window", 0, 86400, &opts.modify_window_s) != 0)
				return CLI_EXIT_USAGE;
			break;
		case O_REMOVE_SOURCE:
			opts.remove_source = 1;
			break;
		case O_OVERWRITE:
			opts.overwrite = 1;
			break;
		case O_DELETE:
			opts.delete_missing = 1;
			break;
		case O_MAX_DELETE: {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);

			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || v > INT64_MAX) {
				fprintf(stderr, "phsync: --max-delete takes a number of files (0: none)\n"
				        "Try 'phsync --help'.\n");
				return CLI_EXIT_USAGE;
			}
			opts.max_delete = (int64_t)v;
			break;
		}
		case O_TRASH:
			if (optarg[0] == '\0') {
				fprintf(stderr, "phsync: --trash needs a folder\nTry 'phsync --help'.\n");
				return CLI_EXIT_USAGE;
			}
			opts.trash_dir = optarg;
			break;
		case O_MIN_AGE:
			if (parse_secs(optarg, "min-age", 0, 2592000, &opts.min_age_s) != 0)
				return CLI_EXIT_USAGE;
			break;
		case O_TIMEOUT:
			if (parse_secs(optarg, "timeout", 1, 86400, &opts.timeout_s) != 0)
				return CLI_EXIT_USAGE;
			break;
		case O_WATCH:
			watch = 1;
			break;
		case O_HELPER:
			if (phsync_parse_helper(optarg, &opts.helper) != 0) {
				fprintf(stderr, "phsync: --helper takes auto, never or always\n"
				        "Try 'phsync --help'.\n");
				return CLI_EXIT_USAGE;
			}
			break;
		case O_HELPER_PATH:
			opts.helper_path = optarg;
			break;
		case O_INTERVAL:
			if (parse_secs(optarg, "interval", 1, 86400, &interval) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			if (status)
				fputs(status_usage, stdout);
			else
				print_sync_usage(dir);
			return CLI_EXIT_OK;
		case 'V':
			printf("phsync %s\n", PHSYNC_VERSION);
			return CLI_EXIT_OK;
		default:
			unknown_option(argc, argv);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "phsync: %s needs a source and a destination (%d given)\n"
		        "Try 'phsync --help'.\n", dir == PHSYNC_PULL ? "pull" : "push", argc - optind);
		return CLI_EXIT_USAGE;
	}
	remote = dir == PHSYNC_PULL ? argv[optind] : argv[optind + 1];
	local = dir == PHSYNC_PULL ? argv[optind + 1] : argv[optind];
	{
		char *u, *h, *p;

		if (phsync_parse_remote(remote, &u, &h, &p) != 0) {
			fprintf(stderr, "phsync: '%s' is not HOST:DIR (the %s side must be remote)\n"
			        "Try 'phsync --help'.\n", remote, dir == PHSYNC_PULL ? "first" : "second");
			return CLI_EXIT_USAGE;
		}
		free(u);
		free(h);
		free(p);
	}
	if ((watch && (status || opts.dry_run || out.json)) || (interval && !watch)) {
		fprintf(stderr, "phsync: %s\nTry 'phsync --help'.\n", !watch ?
		        "--interval works with --watch" :
		        "--watch keeps syncing: not with --dry-run, --json or status");
		return CLI_EXIT_USAGE;
	}
	if (watch) {
		struct ph_watch_pair wp;
		struct stat lst;

		/* The watcher watches a folder: a file's push is a plain run. */
		if (dir == PHSYNC_PUSH && stat(local, &lst) == 0 && !S_ISDIR(lst.st_mode)) {
			fprintf(stderr, "phsync: --watch watches a folder: %s is a file (a plain "
			        "push sends one file)\nTry 'phsync --help'.\n", local);
			return CLI_EXIT_USAGE;
		}
		memset(&wp, 0, sizeof(wp));
		wp.name = remote;
		wp.dir = dir;
		wp.remote = remote;
		wp.local = local;
		wp.opts = opts;
		wp.opts.ssh_verbosity = out.verbose >= 2 ? 3 : 0;
		wp.interval_s = interval;
		wp.full_every = 10;
		wp.settle_ms = 300;
		return ph_watch_pair_main(&wp, out.quiet ? -1 : out.verbose > 0);
	}
	if (status) {
		/* Only failures are told as they come; the rest is the status. */
		status_json = out.json;
		out.json = 0;
		out.quiet = 1;
		out.verbose = 0;
		opts.dry_run = out.dry_run = 1;
		progress = 0;
	}
	if (out.json)
		out.progress = 0;
	else if (progress >= 0)
		out.progress = progress;
	else
		out.progress = isatty(STDERR_FILENO);
	opts.on_event = cli_on_event;
	opts.event_arg = &out;
	opts.progress_ms = out.progress || out.json ? 250 : 0;
	if (out.json && progress != 1)
		opts.progress_ms = 1000;
	if (has_tty()) {
		opts.prompt = tty_prompt;
		opts.prompt_arg = &out;
	}
	opts.ssh_verbosity = out.verbose >= 2 ? 3 : 0;

	if (phsync_ctx_new(&ctx) != 0) {
		fputs("phsync: out of memory\n", stderr);
		return CLI_EXIT_ERROR;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	running_ctx = ctx;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = phsync_sync(ctx, dir, remote, local, &opts, &st);
	code = exit_code(rc);
	if (status)
		pair_status(opts.state_dir, remote, local, status_json, &st, code,
		            rc != 0 ? phsync_ctx_error(ctx) : NULL);
	else
		summary(&out, &st, code, rc != 0 ? phsync_ctx_error(ctx) : NULL);
	running_ctx = NULL;
	phsync_ctx_free(ctx);
	return code;
}

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
		       pi->last_end ? exit_code(pi->last_result) : -1, pi->last_files_done,
		       pi->last_files_failed, pi->last_bytes, pi->files_known,
		       pi->running ? "true" : "false");
		return;
	}
	if (pi->last_start) {
		time_t t = (time_t)pi->last_start;
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
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
	       pi->files_known, plural(pi->files_known));
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

	if (t <= 0 || strftime(buf, len, "%Y-%m-%d %H:%M:%S", localtime_r(&tt, &tm)) == 0)
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
		       ",\"bytes\":%" PRIu64, r->last_end ? exit_code(r->last_result) : -1,
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
	if (realpath(local, lpath) == NULL || phsync_parse_remote(remote, &u, &h, &p) != 0 ||
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

/* `phsync status`: every pair the state knows, and how its last run ended. */
static int
status_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const with_value[] = { "-F", "--state-dir", "--timeout", "--exclude",
		"--include", "--min-age", "--modify-window", "--max-delete", "--trash", "--helper",
		"--helper-path", NULL };
	struct status_out so = { 0, 0, NULL, NULL };
	const char *dir = NULL, *pos[2] = { NULL, NULL };
	phsync_ctx *ctx = NULL;
	int c, rc, i, k, npos = 0, dashdash = 0;

	/* With two paths, the status of that pair: what a sync would do now
	 * (the remote one first: a pull; second: a push), with any option of
	 * pull and push. */
	for (i = 1; i < argc; i++) {
		if (!dashdash && strcmp(argv[i], "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (!dashdash && argv[i][0] == '-' && argv[i][1] != '\0') {
			for (k = 0; with_value[k] != NULL; k++)
				if (strcmp(argv[i], with_value[k]) == 0)
					i++;
			continue;
		}
		if (npos < 2)
			pos[npos] = argv[i];
		npos++;
	}
	if (npos == 2) {
		char *u, *h, *p;
		int pull = phsync_parse_remote(pos[0], &u, &h, &p) == 0;

		if (pull) {
			free(u);
			free(h);
			free(p);
		}
		return sync_main(argc, argv, pull ? PHSYNC_PULL : PHSYNC_PUSH, 1);
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			so.json = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'h':
			fputs(status_usage, stdout);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "phsync: unknown option or missing argument: '%s'\n"
			        "Try 'phsync status --help'.\n", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "phsync: status takes no path or two (HOST:DIR LOCALDIR)\n"
		        "Try 'phsync status --help'.\n");
		return CLI_EXIT_USAGE;
	}
	if (phsync_ctx_new(&ctx) != 0)
		return CLI_EXIT_ERROR;
	/* The watched pairs first (what runs now), then the state's pairs. */
	{
		struct watch_out wo = { so.json, 0, NULL, NULL };
		int wrc = ph_wst_list(dir, watch_pair, &wo);

		if (wrc != 0)
			fprintf(stderr, "phsync: cannot read the watchers' status: %s\n", strerror(-wrc));
		if (wo.n > 0 && !so.json)
			printf("\n");
	}
	rc = phsync_pairs(ctx, dir, status_pair, &so);
	if (rc != 0)
		fprintf(stderr, "phsync: %s\n", phsync_ctx_error(ctx));
	else if (so.n == 0 && !so.json)
		printf("no sync pairs yet\n");
	phsync_ctx_free(ctx);
	return exit_code(rc);
}

/* For pair_cmd.c (cli.h). */
int
cli_tty_prompt(const char *question, int echo, char *buf, size_t len, void *arg)
{
	return tty_prompt(question, echo, buf, len, arg);
}

int
cli_has_tty(void)
{
	return has_tty();
}

int
cli_exit_code(int rc)
{
	return exit_code(rc);
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

/* For backup_cmd.c (cli.h). */
void
cli_guard(phsync_ctx *ctx, struct phsync_options *opts, struct cli_out *out)
{
	if (has_tty()) {
		opts->prompt = tty_prompt;
		opts->prompt_arg = out;
	}
	cli_catch_signals(ctx);
}

/* `phsync daemon [-c FILE]`: every pair of a config file, until SIGTERM. */
static int
daemon_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = NULL;
	int c, verbose = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'q':
			verbose = -1;
			break;
		case 'h':
			fputs("usage: phsync daemon [-c FILE] [-v|-q]\n"
			      "Keeps every sync pair of the config file in step until SIGTERM: local\n"
			      "changes are sent once files are closed and settled, phones are polled.\n"
			      "FILE defaults to $XDG_CONFIG_HOME/phsync/phsync.conf (format:\n"
			      "phsync.conf(5)). SIGHUP re-reads it. One daemon per config file.\n"
			      "\n"
			      "Options:\n"
			      "  -c, --config FILE  the config file\n"
			      "  -v, --verbose      also the changes seen and every retry\n"
			      "  -q, --quiet        no summary of each run, only problems\n"
			      "  -h, --help         this text\n", stdout);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "phsync: unknown option or missing argument: '%s'\n"
			        "Try 'phsync daemon --help'.\n", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "phsync: daemon takes no path (the pairs are in the config file)\n"
		        "Try 'phsync daemon --help'.\n");
		return CLI_EXIT_USAGE;
	}
	return ph_watch_daemon_main(conf, verbose);
}

/* `phsync serve ROOT`: the remote helper, started by phsync over ssh. */
static int
serve_main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs("usage: phsync serve ROOT\n"
		      "The remote helper: pull and push start it on the other end over ssh\n"
		      "and speak SFTP v3 with phsync's delta extensions on its standard\n"
		      "input and output (docs/PROTOCOL.md). Every path must be ROOT or lie\n"
		      "beneath it; below ROOT no symlink is followed. Not meant to be run\n"
		      "by hand.\n"
		      "\n"
		      "Options:\n"
		      "  -h, --help         this text\n", stdout);
		return CLI_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs("usage: phsync serve ROOT\nTry 'phsync serve --help'.\n", stderr);
		return CLI_EXIT_USAGE;
	}
	return phsync_serve(argv[1], 0, 1) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

int
main(int argc, char **argv)
{
	const char *cmd = argc >= 2 ? argv[1] : "";

#ifdef HAVE_MALLOPT
	/* Each file's diff window and read buffers (half a MiB and more) stay
	 * in the heap for the next file: by default glibc mapped them afresh
	 * or trimmed them away per file, and a push faulted in 10 MB of fresh
	 * pages for 60 photos (perf record -e page-faults). The helper does
	 * the same in ph_serve_run. */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	if (strcmp(cmd, "pull") == 0)
		return sync_main(argc - 1, argv + 1, PHSYNC_PULL, 0);
	if (strcmp(cmd, "push") == 0)
		return sync_main(argc - 1, argv + 1, PHSYNC_PUSH, 0);
	if (strcmp(cmd, "delta") == 0)
		return cli_delta_main(argc - 1, argv + 1);
	if (strcmp(cmd, "status") == 0)
		return status_main(argc - 1, argv + 1);
	if (strcmp(cmd, "pair") == 0)
		return cli_pair_main(argc - 1, argv + 1);
	if (strcmp(cmd, "doctor") == 0)
		return cli_doctor_main(argc - 1, argv + 1);
	if (strcmp(cmd, "backup") == 0 || strcmp(cmd, "restore") == 0 || strcmp(cmd, "verify") == 0)
		return cli_backup_main(argc - 1, argv + 1);
	if (strcmp(cmd, "daemon") == 0)
		return daemon_main(argc - 1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return serve_main(argc - 1, argv + 1);
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("phsync %s\n", PHSYNC_VERSION);
		return CLI_EXIT_OK;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		print_usage();
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "phsync: %s%s%s\nTry 'phsync --help'.\n",
	        cmd[0] ? "unknown command '" : "no command given", cmd, cmd[0] ? "'" : "");
	return CLI_EXIT_USAGE;
}
