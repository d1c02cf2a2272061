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
};

/* Connects, verifies the host key against known_hosts and authenticates.
 * Returns 0, PHSYNC_ECONNECT, PHSYNC_EHOSTKEY, PHSYNC_EHOSTUNKNOWN or
 * PHSYNC_EAUTH with the message in ctx. */
int ph_ssh_connect(phsync_ctx *ctx, const struct ph_ssh_params *p, struct ph_ssh **out);

/* Opens the "sftp" subsystem and fills chan with its byte pipe. */
int ph_ssh_open_sftp(struct ph_ssh *ssh, struct ph_chan *chan);

/* Who we are connected to, after ssh_config: user, host name, port. */
void ph_ssh_identity(const struct ph_ssh *ssh, char *user, size_t ulen, char *host,
                     size_t hlen, unsigned *port);

/* The host as the user named it, for messages. */
const char *ph_ssh_host(const struct ph_ssh *ssh);

/* Closes the channel and the session; NULL is a no-op. */
void ph_ssh_free(struct ph_ssh *ssh);

#endif
