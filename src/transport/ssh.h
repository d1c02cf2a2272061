/* SPDX-License-Identifier: ISC */
/* The SSH session: config, host key check, authentication, and channels.
 * The only module besides the CLI's nothing that talks to libssh. */
#ifndef PH_SSH_H
#define PH_SSH_H

#include "phsync/phsync.h"
#include "sftp.h"

struct ph_ssh;

struct ph_ssh_params {
	const char *user;        /* NULL: from config or the login name */
	const char *host;        /* alias or host name */
	const char *config;      /* -F file, NULL for the defaults */
	phsync_prompt_fn prompt; /* NULL: never ask */
	void *prompt_arg;
	int verbosity;           /* libssh log level */
	unsigned timeout_s;      /* connect timeout */
	/* For pair and doctor (all 0 for a sync): */
	unsigned port;           /* nonzero: this port, whatever the config says */
	const char *identity;    /* a private key file tried before the others */
	int key_only;            /* authenticate with identity alone (no agent,
	                            no other key, no password) */
	int ask_host_key;        /* an unknown host key is asked about (with a
	                            prompt) whatever StrictHostKeyChecking says */
	int defer_host_key;      /* an accepted unknown key is not written to
	                            known_hosts (ph_ssh_record_host_key does) */
	const char *accept_fp;   /* an unknown key with this SHA256 fingerprint
	                            was accepted earlier in this run */
	int password_tries;      /* password prompts before giving up (0: 1) */
	struct ph_ssh_info *info;/* filled as far as the connection got */
};

/* What a connection learnt, also when it failed part way. */
struct ph_ssh_info {
	char banner[128];        /* the server's version string */
	char key_type[32];       /* host key type, e.g. "ssh-ed25519" */
	char fp[128];            /* host key SHA256 fingerprint */
	int host_key_new;        /* the key was not in known_hosts */
	char key_alias[256];     /* the HostKeyAlias known_hosts names it by
	                            ("": by its address) */
	int methods;             /* SSH_AUTH_METHOD_* bits the server offered */
	int auth_method;         /* the bit that logged in (0: none / not yet) */
};

/* Connects, verifies the host key against known_hosts and authenticates.
 * Returns 0, PHSYNC_ECONNECT, PHSYNC_EHOSTKEY, PHSYNC_EHOSTUNKNOWN or
 * PHSYNC_EAUTH with the message in ctx. */
int ph_ssh_connect(phsync_ctx *ctx, const struct ph_ssh_params *p, struct ph_ssh **out);

/* Opens the "sftp" subsystem and fills chan with its byte pipe. */
int ph_ssh_open_sftp(struct ph_ssh *ssh, struct ph_chan *chan);

/* The caller's note on the session (what started the helper on its
 * channel: session/login.c), freed with free_fn by the next note or by
 * ph_ssh_free; NULL when none. */
void ph_ssh_set_note(struct ph_ssh *ssh, void *note, void (*free_fn)(void *));
void *ph_ssh_note(const struct ph_ssh *ssh);

/* Is the server OpenSSH (by its version string)? */
int ph_ssh_server_openssh(const struct ph_ssh *ssh);

/* Opens another "sftp" subsystem beside the session's channel (which stays
 * open) and fills chan with its pipe: a listing spreads its requests over
 * several, each its own sftp-server on the phone. Sets no message: 0,
 * PHSYNC_EUNSUPPORTED when the server refused it (the session is as it
 * was), PHSYNC_ECONNECT when the connection is gone, PHSYNC_ENOMEM (also
 * with no session channel, or MAX_MORE open). Only for a server that takes
 * several channels at once (OpenSSH: MaxSessions, 10 by default); Dropbear
 * asserts with several half-closed ones (issue 22). */
int ph_ssh_open_sftp_more(struct ph_ssh *ssh, struct ph_chan *chan);
/* The same for a command (an exec channel) beside the session's channel:
 * another helper serving the same folder. As ph_ssh_open_sftp_more. */
int ph_ssh_open_exec_more(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan);
/* Ends every channel ph_ssh_open_sftp_more or ph_ssh_open_exec_more opened
 * (as ph_ssh_close_channel ends one), their clients freed first. */
void ph_ssh_close_more(struct ph_ssh *ssh);

/* Runs cmd on the server (an exec channel) and fills chan with its standard
 * input and output, as the session's channel (it replaces one open).
 * PHSYNC_EUNSUPPORTED when the server refuses commands; PHSYNC_ECONNECT
 * when the channel cannot be opened or the server ends it first. */
int ph_ssh_open_exec(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan);

/* The bytes the server lets us send on the session's channel now, without
 * waiting for it to open its window (0: no channel). Right after the channel
 * opens: the window the server grants (OpenSSH 2 MiB, Dropbear 24 KiB). */
uint32_t ph_ssh_window(const struct ph_ssh *ssh);

/* Up to outlen-1 bytes the channel's command wrote on its standard error
 * so far (terminated), without waiting. Returns the count. */
size_t ph_ssh_channel_stderr(struct ph_ssh *ssh, char *out, size_t outlen);

/* Ends the session's channel (the session stays): EOF, the server's close
 * awaited (bounded), then ours, so the next channel never meets this one
 * in the server. Returns the exit status of the channel's command, or -1
 * when none came (a channel with no command, or a close not seen). */
int ph_ssh_close_channel(struct ph_ssh *ssh);

/* Who we are connected to, after ssh_config: user, host name, port. */
void ph_ssh_identity(const struct ph_ssh *ssh, char *user, size_t ulen, char *host,
                     size_t hlen, unsigned *port);

/* The server's host key as this connection verified it against
 * known_hosts: "TYPE SHA256:BASE64" (e.g. "ssh-ed25519 SHA256:..."), the
 * phone's identity for its sync pairs (state.h). Returns 0, or -1 when it
 * could not be read (out is then unusable). */
#define PH_SSH_HOST_KEY_MAX 192
int ph_ssh_host_key(const struct ph_ssh *ssh, char *out, size_t len);

/* The host as the user named it, for messages. */
const char *ph_ssh_host(const struct ph_ssh *ssh);

/* Writes the server's host key to known_hosts (after defer_host_key).
 * Returns 0 or PHSYNC_EIO with the message in ctx. */
int ph_ssh_record_host_key(struct ph_ssh *ssh);

/* Makes known_hosts name the server's key under name, the HostKeyAlias a
 * Host block is about to get (with add 0, only checks that it can): 0
 * when an entry there already holds it or one was added (or, add 0, none
 * is there); PHSYNC_EHOSTKEY when one under name holds another key, or
 * marks this one @revoked (nothing added); PHSYNC_EIO when it cannot be read or written. The
 * message is in ctx. */
int ph_ssh_record_host_key_as(struct ph_ssh *ssh, const char *name, int add);

/* Runs cmd on the server (an exec channel) and collects up to outlen-1
 * bytes of its standard output (terminated; the rest is read and dropped).
 * *status is its exit status (-1 when the server sends none). Returns 0,
 * or PHSYNC_EUNSUPPORTED when the server refuses to run commands, or
 * PHSYNC_ECONNECT. */
int ph_ssh_exec(struct ph_ssh *ssh, const char *cmd, char *out, size_t outlen, int *status);

/* Closes the channel and the session; NULL is a no-op. */
void ph_ssh_free(struct ph_ssh *ssh);

#endif
