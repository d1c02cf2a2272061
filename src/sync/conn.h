/* SPDX-License-Identifier: ISC */
/* Kept connections (phsync_conn_*): what phsync_sync shares with them. */
#ifndef PH_CONN_H
#define PH_CONN_H

#include "phsync/phsync.h"
#include "sftp.h"
#include "ssh.h"

/* Connects to host as user (NULL: from ssh_config) with opts' ssh
 * settings and starts SFTP: through the remote helper (`phsync serve
 * rroot`, opts->helper and helper_path) where it runs, else the server's
 * SFTP subsystem. rroot NULL: never the helper. Returns 0 with *ssh and
 * *sftp set, or a PHSYNC_E* with the message in ctx (whatever was made is
 * freed). why (NULL: not asked), when --helper auto ends on plain SFTP
 * after all: the reason ("" otherwise). */
int ph_conn_connect(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
                    const char *host, const char *rroot, struct ph_ssh **ssh,
                    struct ph_sftp **sftp, char *why, size_t whylen);

/* Ends *sftp and starts SFTP again on the same session for another
 * root (as ph_conn_connect would: the helper serving rroot, or the
 * server's subsystem): a single file's run serves its folder. Returns 0
 * or a PHSYNC_E* with the message in ctx (*sftp is then NULL). */
int ph_conn_reroot(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
                   const char *rroot, struct ph_sftp **sftp);

/* A helper phsync brings to a phone without phsync (docs/PROTOCOL.md,
 * "Bootstrap"). */
struct ph_boot {
	char path[128];     /* its cache path: .cache/phsync/phsync-helper-VERSION-ARCH,
	                       relative to the login folder */
	uint8_t *data;      /* the local static helper's bytes */
	size_t len;
	unsigned timeout_s; /* SFTP silence for the upload */
	int silence_ms;     /* the start-up script's silence */
};

/* Picks this phsync's static helper for the remote's architecture (uname
 * -m) and reads it into b (ph_helper_boot_free frees it). Nothing is
 * written on the remote. Returns 0, or PHSYNC_EUNSUPPORTED (no helpers here,
 * no commands or no helper for that machine there) or another error, with
 * the message in ctx. */
int ph_helper_bootstrap(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                        struct ph_boot *b);

/* Starts b's helper serving rroot over an exec channel, filling chan: a
 * script opens the cached copy once, phsync checks its folders (the login
 * user's, no symlink, not group/other-writable), that open file (owner,
 * mode, size) and its bytes (equal to b's), and the script executes that
 * same open file. A missing or different copy is uploaded (temp file,
 * rename) and checked again first. Returns 0, PHSYNC_EUNSAFE (a folder
 * refused: nothing written, nothing run) or another error, with the message
 * in ctx. */
int ph_helper_boot_exec(phsync_ctx *ctx, struct ph_ssh *ssh, const struct ph_boot *b,
                        const char *rroot, struct ph_chan *chan);

void ph_helper_boot_free(struct ph_boot *b);

/* The remote root of a HOST:PATH's path: trailing slashes trimmed; "" is
 * the server's "/" (only when the user wrote "/"), an empty path the
 * login folder ("."). NULL when out of memory. */
char *ph_remote_root(const char *path);

/* c's session and SFTP client, for a run of phsync_sync on remote host
 * (as the user wrote it) and remote root rroot. Returns 0, PHSYNC_EINVAL
 * when c reaches another host (or its helper serves another folder), or
 * PHSYNC_ECONNECT when its link is gone. */
int ph_conn_use(phsync_conn *c, const char *user, const char *host, const char *rroot,
                struct ph_ssh **ssh, struct ph_sftp **sftp);

/* Ends c's link (a run left requests in flight or the link failed): the
 * client is freed without running callbacks; c is then dead. */
void ph_conn_drop(phsync_conn *c);

#endif
