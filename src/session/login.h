/* SPDX-License-Identifier: ISC */
/* Logging in to a phone: the SSH session and SFTP on it (the helper where
 * it runs, else the server's subsystem). Internal. */
#ifndef PH_LOGIN_H
#define PH_LOGIN_H

#include "phsync/phsync.h"
#include "sftp.h"
#include "ssh.h"

struct ph_emit;   /* scan/emit.h */

/* Connects to host as user (NULL: from ssh_config) with opts' ssh
 * settings and starts SFTP: through the remote helper (`phsync serve
 * rroot`, opts->helper and helper_path) where it runs, else the server's
 * SFTP subsystem. rroot NULL: never the helper. Returns 0 with *ssh and
 * *sftp set, or a PHSYNC_E* with the message in ctx (whatever was made is
 * freed). why (NULL: not asked), when --helper auto ends on plain SFTP
 * after all: the reason ("" otherwise). */
int ph_login_open(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
                  const char *host, const char *rroot, struct ph_ssh **ssh,
                  struct ph_sftp **sftp, char *why, size_t whylen);

/* ph_login_open for a run: --helper auto ending on plain SFTP is said as
 * an INFO event to ev (the reason, which -v shows). */
int ph_login_run(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
                 const char *host, const char *rroot, struct ph_emit *ev, struct ph_ssh **ssh,
                 struct ph_sftp **sftp);

/* Ends *sftp and starts SFTP again on the same session for another
 * root (as ph_login_open would: the helper serving rroot, or the
 * server's subsystem): a single file's run serves its folder. Returns 0
 * or a PHSYNC_E* with the message in ctx (*sftp is then NULL). */
int ph_login_reroot(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
                    const char *rroot, struct ph_sftp **sftp);

/* A run's listing's more SFTP clients (struct ph_rscan's more and
 * end_more, their arg a struct ph_login_more): up to max more clients on
 * ssh beside the run's, each on its own channel (a listing of many
 * folders spreads over them: on the phone each is its own process). With
 * the helper, more of the same helper, started as the session's was (the
 * phone's phsync or --helper-path as a command, the brought copy by the
 * same checked start, never uploaded again), speaking its protocol
 * version; with plain SFTP, more sftp-servers. Only when the server is
 * OpenSSH. Returns how many it put in out, and says to ev (for -v) what
 * came of it. A refusal is not an error: the run goes on with its one
 * channel. ph_login_end_more frees them and ends their channels. */
struct ph_login_more {
	phsync_ctx *ctx;
	const struct phsync_options *opts;
	struct ph_ssh *ssh;        /* NULL: none */
	struct ph_sftp *sftp;      /* the run's */
	struct ph_emit *ev;
};
size_t ph_login_more(void *arg, struct ph_sftp **out, size_t max);
void ph_login_end_more(void *arg, struct ph_sftp **v, size_t n);

#endif
