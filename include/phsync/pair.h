/* SPDX-License-Identifier: ISC */
/* libphsync: setting up a phone (pair) and checking a pair (doctor).
 *
 * phsync_pair() does what a person would otherwise do by hand with
 * ssh-keygen, ssh-copy-id and an editor: accept the phone's host key, make
 * a key, put it in the phone's authorized_keys, check that it logs in, and
 * add a Host block to the ssh config. phsync_doctor() says, one check at a
 * time, what works on a pair and what a sync will have to do without.
 * Both return 0 or a negative PHSYNC_E* with the message in the context.
 */
#ifndef PHSYNC_PAIR_H
#define PHSYNC_PAIR_H

#include <stddef.h>

#include "phsync/phsync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ports tried, in this order, when no port is given: Termux's sshd
 * (8022), SimpleSSHD and other Dropbear-based apps (2222), plain ssh (22).
 * 0-terminated. */
extern const unsigned phsync_pair_ports[];

/* A line of news for the person pairing ("key installed in ..."). */
typedef void (*phsync_note_fn)(const char *msg, void *arg);

struct phsync_pair_options {
	const char *name;            /* the Host alias to add, e.g. "phone" */
	const char *address;         /* host name or address (IPv6 without [ ]) */
	unsigned port;               /* 0: the first of phsync_pair_ports that
	                                answers as an SSH server */
	const char *user;            /* NULL: the login name (then no User line) */
	const char *ssh_config;      /* the file the Host block goes to (and is
	                                read with); NULL: ~/.ssh/config */
	const char *key_file;        /* private key to install; made (ed25519)
	                                when missing. NULL: ~/.ssh/id_ed25519,
	                                id_ecdsa or id_rsa, the first that exists
	                                with its .pub; else, when none of them
	                                exists and an ssh-agent ($SSH_AUTH_SOCK)
	                                holds a key, that key (ed25519 first;
	                                nothing is made); else ~/.ssh/id_ed25519 */
	const char *authorized_keys; /* where the key goes on the phone; NULL:
	                                .ssh/authorized_keys in the login folder */
	phsync_prompt_fn prompt;     /* host key question, password, passphrase;
	                                required */
	void *prompt_arg;
	phsync_note_fn on_note;      /* may be NULL */
	void *note_arg;
	unsigned timeout_s;          /* 0: 60 */
	int ssh_verbosity;
};

/* What the server offered for logging in (phsync_pair_result.auth). */
enum { PHSYNC_AUTH_PASSWORD = 1, PHSYNC_AUTH_KEY = 2 };

struct phsync_pair_result {
	unsigned port;               /* the port paired */
	char server[128];            /* the server's version string */
	char host_key[160];          /* "ssh-ed25519 SHA256:..." */
	char key_file[1200];         /* the private key used ("" for the agent's) */
	int auth;                    /* PHSYNC_AUTH_* bits the server offered */
	int host_key_added;          /* known_hosts got the key this run */
	int key_created;             /* key_file was made this run */
	int key_installed;           /* authorized_keys got the key this run */
	int config_added;            /* the Host block was written this run */
	char agent_key[2048];        /* the agent's public key used, "TYPE BASE64
	                                COMMENT"; "" when key_file was */
};

/* Pairs: connects to address:port, asks the user to accept an unknown host
 * key (its SHA256 fingerprint shown), logs in (a key that already works,
 * else the password, asked through prompt), makes the key if needed,
 * installs its public half in the phone's authorized_keys over SFTP (the
 * folder made 0700, the file written 0600 through a temp file and a rename,
 * existing lines kept, never a duplicate), logs in again with the key
 * alone, records the host key in known_hosts, and adds "Host NAME" to the
 * ssh config (appended; put before the first Host/Match block instead when
 * an earlier block would override its HostName, Port or User). Safe to run
 * again: what is already in place is left byte for byte as it is.
 * Nothing is written locally before the login succeeded. Returns 0,
 * PHSYNC_ECONNECT (nothing answers), PHSYNC_EAUTH (password refused, or
 * the installed key is not accepted), PHSYNC_EHOSTUNKNOWN (key not
 * accepted), PHSYNC_EHOSTKEY (key changed), PHSYNC_EREFUSED (the config
 * has a Host NAME that goes elsewhere), PHSYNC_EINVAL, or an I/O error.
 * res (may be NULL) says what was done, also on failure. */
int phsync_pair(phsync_ctx *ctx, const struct phsync_pair_options *o,
                struct phsync_pair_result *res);

enum phsync_check_status {
	PHSYNC_CHECK_OK = 0,
	PHSYNC_CHECK_WARN = 1,       /* works, with a limit a sync copes with */
	PHSYNC_CHECK_FAIL = 2,       /* a sync cannot run */
	PHSYNC_CHECK_SKIP = 3        /* not checked: an earlier check failed */
};

/* One line of a doctor's report. */
struct phsync_check {
	const char *name;            /* reachable, host_key, key_login, sftp,
	                                window, exec, helper, extensions,
	                                folder, times, case, free_space,
	                                pull_deltas, push_deltas (in this
	                                order) */
	enum phsync_check_status status;
	const char *detail;          /* one line for people (raw server text
	                                escaped) */
	const char *value;           /* the finding in machine form, or "":
	                                reachable the host as named, host_key the
	                                fingerprint, key_login the user,
	                                window the channel window in bytes,
	                                exec the remote phsync's path or "",
	                                helper "remote"/"brought"/"none",
	                                extensions "posix-rename,fsync,...",
	                                times "exact"/"2s"/"refused"/"ignored",
	                                case "sensitive"/"insensitive",
	                                free_space bytes available,
	                                pull_deltas "helper"/"check-file"/
	                                "whole", push_deltas "helper"/"saved"/
	                                "whole" */
};
typedef void (*phsync_check_fn)(const struct phsync_check *c, void *arg);

struct phsync_doctor_options {
	const char *ssh_config;      /* -F file, NULL for ~/.ssh/config */
	unsigned timeout_s;          /* 0: 60 */
	int ssh_verbosity;
	phsync_check_fn on_check;    /* called once per check, in order */
	void *check_arg;
};

/* Checks the pair "[USER@]HOST" or "[USER@]HOST:DIR" (DIR: the folder whose
 * times, case and free space are checked; default the login folder) as a
 * sync would use it, without asking anything (a sync from cron cannot):
 * an unknown host key or a key that needs a password fail. Writes only a
 * temp file in DIR, removed before it returns, and the static helper a
 * sync would bring when the remote runs none. Returns 0 when a sync can
 * run (warnings included), else the error of the first failed check. */
int phsync_doctor(phsync_ctx *ctx, const char *remote, const struct phsync_doctor_options *o);

#ifdef __cplusplus
}
#endif
#endif
