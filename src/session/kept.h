/* SPDX-License-Identifier: ISC */
/* Kept connections (phsync_conn_*): what phsync_sync shares with them.
 * Internal. */
#ifndef PH_KEPT_H
#define PH_KEPT_H

#include "phsync/phsync.h"
#include "sftp.h"
#include "ssh.h"

/* c's session and SFTP client, for a run of phsync_sync on remote host
 * (as the user wrote it) and remote root rroot. Returns 0, PHSYNC_EINVAL
 * when c reaches another host (or its helper serves another folder), or
 * PHSYNC_ECONNECT when its link is gone. */
int ph_kept_use(phsync_conn *c, const char *user, const char *host, const char *rroot,
                struct ph_ssh **ssh, struct ph_sftp **sftp);

/* Ends c's link (a run left requests in flight or the link failed): the
 * client is freed without running callbacks; c is then dead. */
void ph_kept_drop(phsync_conn *c);

#endif
