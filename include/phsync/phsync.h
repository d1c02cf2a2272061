/* SPDX-License-Identifier: ISC */
/* libphsync public API: one-shot pull/push of a folder over SSH/SFTP.
 *
 * Everything returns 0 or a negative PHSYNC_E* code (phsync/error.h); the
 * message for the last failure is phsync_ctx_error(). Handles are opaque.
 * Progress and per-file results arrive through an event callback, so the
 * CLI, the watcher and scripts share one engine.
 */
#ifndef PHSYNC_PHSYNC_H
#define PHSYNC_PHSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PHSYNC_VERSION "0.1.0"

typedef struct phsync_ctx phsync_ctx;
/* A kept connection to one remote folder (phsync_conn_open). */
typedef struct phsync_conn phsync_conn;

enum phsync_direction {
	PHSYNC_PULL = 1, /* remote -> local */
	PHSYNC_PUSH = 2, /* local -> remote */
	PHSYNC_BOTH = 3  /* two-way (docs/TWOWAY.md): what changed on either
	                    side since the pair's last sync goes to the other */
};

/* Two-way sync: who wins a file changed on both sides (phsync_options'
 * prefer). NONE keeps both versions (the other as a conflict copy on both
 * sides); the others keep one, no copy. */
enum { PHSYNC_PREFER_NONE = 0, PHSYNC_PREFER_LOCAL, PHSYNC_PREFER_REMOTE,
       PHSYNC_PREFER_NEWER };

enum phsync_event_type {
	PHSYNC_EV_FILE_DONE = 1,  /* a file was copied (or would be, dry run) */
	PHSYNC_EV_FILE_FAILED,    /* a file could not be copied; others go on */
	PHSYNC_EV_SKIPPED,        /* an entry was left alone (symlink, special, unsafe name) */
	PHSYNC_EV_MKDIR,          /* a folder was created */
	PHSYNC_EV_PROGRESS,       /* periodic progress: stats, and path, the file
	                             whose bytes moved last (or NULL) */
	PHSYNC_EV_WARNING,        /* something worth telling that is not a failure */
	PHSYNC_EV_SUMMARY,        /* last event of a run; only stats is set */
	PHSYNC_EV_CONFLICT,       /* the destination file changed since the last
	                             sync: the incoming version was put beside it
	                             (message names it), or would be (dry run) */
	PHSYNC_EV_DELETED,        /* a destination file was deleted (or moved to
	                             the trash) because the source's is gone;
	                             action "offload": a source file removed
	                             after its copy was verified */
	PHSYNC_EV_NOT_REACHED,    /* the run ended (--timeout, a lost link, a
	                             signal, a fatal error) before this file of
	                             the plan was copied or failed; action "new"
	                             or "update"; sent before the summary */
	PHSYNC_EV_INFO            /* a note for -v (message): e.g. why a run
	                             with --helper auto uses plain SFTP */
};

struct phsync_stats {
	uint64_t files_total;     /* regular files seen in the source */
	uint64_t files_todo;      /* files the plan copies */
	uint64_t files_done;      /* files copied so far */
	uint64_t files_failed;
	uint64_t files_skipped;   /* symlinks, specials, unsafe names, excluded */
	uint64_t dirs_created;
	uint64_t bytes_todo;      /* bytes the plan copies */
	uint64_t bytes_done;      /* payload bytes moved so far (progress) */
	uint64_t elapsed_ms;
	uint64_t bytes_committed; /* bytes of the files counted in files_done:
	                             what is now in place (the summary's figure) */
	uint64_t conflicts;       /* incoming versions put beside changed files */
	uint64_t files_deleted;   /* destination files deleted (--delete) */
	uint64_t files_offloaded; /* source files removed (--remove-source-files) */
	uint64_t bytes_freed;     /* their bytes: what the phone got back */
	uint64_t bytes_matched;   /* bytes of the files done that did not travel:
	                             the destination's old version held them
	                             (deltas) */
	unsigned helper;          /* the remote helper's protocol version in use
	                             (0: plain SFTP) */
	uint64_t files_unreached; /* files of the plan a cut run never got to
	                             (PHSYNC_EV_NOT_REACHED): with files_done
	                             and the plan's failures they make
	                             files_todo */
	uint64_t listed_remote;   /* entries (files and folders) the phone's
	                             listing has given so far, then in all */
	uint64_t listed_local;    /* the same of this machine's walk */
	int listing;              /* 1 while the two sides are listed: the
	                             plan's counts (files_todo...) are not
	                             known yet; PROGRESS events come meanwhile */
};

struct phsync_event {
	enum phsync_event_type type;
	const char *path;       /* relative to the roots, '/'-separated; raw bytes */
	const char *action;     /* "new", "update", "mkdir", "symlink", ... */
	uint64_t size;
	int err;                /* PHSYNC_E* for FILE_FAILED/SKIPPED/WARNING */
	const char *message;    /* human text for FILE_FAILED/SKIPPED/WARNING;
	                           FILE_DONE of a move or copy ("moved",
	                           "copied"): the path it was made from */
	const struct phsync_stats *stats;
	enum phsync_direction dir; /* a two-way run's file event: the way the
	                              file went (PULL or PUSH); 0 otherwise */
};

typedef void (*phsync_event_fn)(const struct phsync_event *ev, void *arg);

/* Asks the user for a secret or a yes/no; returns 0 and fills buf, or < 0
 * when no answer can be had (then the operation fails cleanly). echo is
 * nonzero for questions whose answer may be shown. */
typedef int (*phsync_prompt_fn)(const char *question, int echo, char *buf,
                                size_t len, void *arg);

struct phsync_options {
	const char *ssh_config;        /* -F: config file, NULL for ~/.ssh/config */
	int dry_run;                   /* plan and report, change nothing */
	int fsync;                     /* 1: durable commits (default), 0: as rsync */
	const char *const *excludes;   /* glob patterns on relative paths */
	size_t n_excludes;
	const char *const *includes;   /* re-include what an exclude would drop */
	size_t n_includes;
	phsync_event_fn on_event;
	void *event_arg;
	phsync_prompt_fn prompt;       /* NULL: never ask (daemons, no terminal) */
	void *prompt_arg;
	unsigned progress_ms;          /* interval of PROGRESS events, 0 = none */
	int ssh_verbosity;             /* libssh log level, 0 = quiet */
	unsigned timeout_s;            /* a silent server is given up after this
	                                  many seconds (connect and transfer);
	                                  0 = 60 */
	int no_default_excludes;       /* also sync what galleries leave behind
	                                  (phsync_default_excludes) */
	unsigned min_age_s;            /* leave source files changed less than
	                                  this many seconds ago (still being
	                                  written) for a later run; 0 = off */
	unsigned modify_window_s;      /* modification times this close count as
	                                  equal (FAT storage keeps 2 s steps) */
	const char *state_dir;         /* where the sync state lives; NULL:
	                                  $XDG_STATE_HOME/phsync */
	int reset_state;               /* drop this pair's state first */
	int overwrite;                 /* the source wins: a destination file
	                                  changed since the last sync (or met on
	                                  first contact) is replaced, not kept
	                                  with the incoming version beside it */
	int delete_missing;            /* delete destination files whose source
	                                  is gone since the last sync (only files
	                                  the state says came from this source
	                                  and are unchanged since) */
	int64_t max_delete;            /* refuse all of a run's deletes when more
	                                  would go; < 0: PHSYNC_MAX_DELETE_DEFAULT */
	const char *trash_dir;         /* move deleted files under this folder
	                                  (on the destination's side) instead */
	unsigned max_delete_percent;   /* refuse a side's deletes when more than
	                                  this percent of its files would go;
	                                  0: off, but 50 for two-way runs */
	int prefer;                    /* two-way: PHSYNC_PREFER_* */
	int remove_source;             /* pull only: offload, i.e. remove each
	                                  file from the phone once its copy here
	                                  is durable, reads back with the hash
	                                  of what was read, and is recorded;
	                                  needs fsync on */
	phsync_conn *conn;             /* a connection phsync_conn_open made
	                                  to the same remote, used instead of
	                                  connecting (and kept open) when alive;
	                                  NULL: connect, and close at the end */
	const char *const *hold_paths; /* push: source paths (relative,
	                                  '/'-separated) the caller knows are
	                                  still being written: left for a later
	                                  run as --min-age leaves young files */
	size_t n_hold;
	int helper;                    /* PHSYNC_HELPER_AUTO (0): use `phsync
	                                  serve` on the remote where it runs,
	                                  else plain SFTP; _NEVER; _ALWAYS: fail
	                                  when it cannot run */
	const char *helper_path;       /* the remote phsync program; NULL:
	                                  "phsync" from the remote PATH */
};

enum { PHSYNC_HELPER_AUTO = 0, PHSYNC_HELPER_NEVER = 1, PHSYNC_HELPER_ALWAYS = 2 };

/* --max-delete's default: a gallery emptied by accident is a few thousand
 * files; a day's deliberate clean-up is rarely more than this. */
#define PHSYNC_MAX_DELETE_DEFAULT 1000

/* A sync pair the state knows (phsync_pairs). */
struct phsync_pair_info {
	const char *remote;      /* user@host:port:path, as last connected */
	const char *local;       /* absolute local folder */
	int64_t last_start;      /* unix seconds of the last run's start (0: none) */
	int64_t last_end;        /* and of its end (0: it did not end: killed) */
	int last_result;         /* PHSYNC_E* it ended with (0: ok) */
	uint64_t last_files_done, last_files_failed, last_bytes;
	uint64_t files_known;    /* files the state holds for the pair */
	int running;             /* a run holds the pair now */
	const char *host_key;    /* the phone the pair is: its SSH host key,
	                            "TYPE SHA256:...", or NULL (a state an older
	                            phsync wrote, not yet run again) */
};
typedef void (*phsync_pair_fn)(const struct phsync_pair_info *pi, void *arg);

/* Calls fn for every pair with a state in state_dir (NULL: the default).
 * Returns 0 or a negative PHSYNC_E* with the message in ctx. */
int phsync_pairs(phsync_ctx *ctx, const char *state_dir, phsync_pair_fn fn, void *arg);

/* What Android galleries and cameras leave beside photos and a sync should
 * not copy (thumbnail caches, trashed and half-written files), as
 * --exclude patterns, NULL-terminated. Applied after the caller's rules,
 * so an --include re-admits them. */
extern const char *const phsync_default_excludes[];

/* Creates a context; returns 0 or PHSYNC_ENOMEM. */
int phsync_ctx_new(phsync_ctx **out);
/* Frees a context; NULL is a no-op. */
void phsync_ctx_free(phsync_ctx *ctx);
/* The message of the last failure in this context ("" if none). */
const char *phsync_ctx_error(const phsync_ctx *ctx);

/* Fills opts with the defaults (fsync on, everything else off). */
void phsync_options_init(struct phsync_options *opts);

/* Parses "[user@]host:path" into its parts (host may be "[v6addr]"; a path
 * "~" or "~/x" becomes "" or "x": the login's home folder, as for scp).
 * Returns 0, or PHSYNC_EINVAL when spec is no remote spec. */
int phsync_parse_remote(const char *spec, char **user, char **host,
                        char **path);
/* Parses "auto", "never" or "always" into PHSYNC_HELPER_* (--helper, and
 * the daemon config's helper key). Returns 0, or PHSYNC_EINVAL. */
int phsync_parse_helper(const char *s, int *mode);

/* Makes local_dir hold the contents of the remote folder (PULL), the
 * remote folder hold the contents of local_dir (PUSH), or both hold what
 * changed on either since their last sync (BOTH, docs/TWOWAY.md: deletes
 * go both ways, guarded; PHSYNC_ECONFLICT when a file changed on both
 * sides and both versions were kept). remote is
 * "[user@]host:path", host being an ssh_config alias or a host name.
 * Returns 0, PHSYNC_EPARTIAL when some files failed and the rest synced,
 * or another error when the run stopped. stats (may be NULL) is filled. */
int phsync_sync(phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
                const char *local_dir, const struct phsync_options *opts,
                struct phsync_stats *stats);

/* Writes s into buf (always terminated) with control characters,
 * backslashes and invalid UTF-8 shown as \xNN, so a name or message from a
 * hostile server cannot drive a terminal. */
void phsync_escape(char *buf, size_t len, const char *s);

/* Asks a running phsync_sync (from a signal handler or another thread) to
 * stop at the next safe point; it then returns PHSYNC_EINTR. */
void phsync_ctx_interrupt(phsync_ctx *ctx);

/* Is name (one path component) a temp, aside or partial file phsync
 * makes beside a destination file while it writes (.NAME.phsync-...)?
 * Returns 1 or 0. A watcher ignores these: they are the sync's own. */
int phsync_is_temp_name(const char *name);

/* The remote helper (`phsync serve ROOT`): serves SFTP v3 with phsync's
 * delta extensions (docs/PROTOCOL.md) on in_fd/out_fd, confined to root,
 * until the client closes its side. Returns 0 at a clean end, 1 after a
 * protocol or I/O failure (said on stderr). */
int phsync_serve(const char *root, int in_fd, int out_fd);

/* Connects to remote ("[user@]host:path") as phsync_sync would (ssh_config,
 * host key check, authentication from opts) and keeps the session and its
 * SFTP channel open, for phsync_conn_poll and for phsync_sync through
 * opts->conn. Use it with this ctx only, from one thread at a time.
 * Returns 0 or a negative PHSYNC_E* (PHSYNC_EHOSTKEY: a changed host key)
 * with the message in ctx. */
int phsync_conn_open(phsync_ctx *ctx, const char *remote,
                     const struct phsync_options *opts, phsync_conn **out);
/* Closes the connection; NULL is a no-op. */
void phsync_conn_free(phsync_conn *c);
/* 1 while the link is usable, 0 once it failed (then free and reopen). */
int phsync_conn_alive(const phsync_conn *c);
/* Proves a kept connection alive with one SFTP round trip (a STAT of the
 * remote folder; any answer will do), which also keeps the phone's SSH
 * server and NATs on the way from dropping an idle link: libssh has no
 * keepalive timer of its own, so a caller holding a link sends this on its
 * own timer. Waits for the answer up to the connection's timeout. Returns 0
 * (answered), PHSYNC_ECONNECT (the link is dead: free and reopen) or
 * PHSYNC_EINTR. */
int phsync_conn_keepalive(phsync_conn *c);
/* Has the remote folder's tree changed since the last call? Cheap for the
 * server: stats the folders it knows (a folder's mtime moves when entries
 * come and go) and lists only those whose mtime moved (and, once more, at
 * the next call, those that moved at the last one: times are whole
 * seconds); with full set, lists every folder (which also sees files
 * rewritten in place). The first call lists the whole tree. Names
 * phsync_is_temp_name knows are not looked at. Returns 1 (changed, or
 * first call), 0 (unchanged) or a negative PHSYNC_E* (PHSYNC_ENOENT: the
 * folder is gone; a lost link leaves the connection dead). */
int phsync_conn_poll(phsync_conn *c, int full);

#ifdef __cplusplus
}
#endif
#endif
