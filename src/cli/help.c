/* SPDX-License-Identifier: ISC */
/* The --help texts more than one command prints (help.h): `phsync --help`
 * is the overview, the sync options and the rest; `phsync pull --help` and
 * `phsync push --help` their own head and the same sync options
 * (docs/phsync-pull.1 and the test comparing them); `phsync status --help`
 * is printed by status with or without a pair. */
#include <stddef.h>

#include "help.h"

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

const char *const cli_help_main[] = { usage_head, sync_options, usage_tail, NULL };
const char *const cli_help_pull[] = { pull_head, sync_options, sync_tail, NULL };
const char *const cli_help_push[] = { push_head, sync_options, sync_tail, NULL };
const char *const cli_help_status[] = { status_usage, NULL };
