/* SPDX-License-Identifier: ISC */
/* The cheap remote poll a kept connection runs (phsync_conn_poll): has
 * anything changed under the remote root since the last poll? Internal. */
#ifndef PH_RPOLL_H
#define PH_RPOLL_H

#include "phsync/phsync.h"
#include "sftp.h"

struct ph_rpoll;   /* the folders known and their listings' digests */

/* Polls the tree under rroot (as ph_remote_root gives it) over sftp;
 * *pp (NULL at first) keeps what is known between polls. full: every
 * folder is listed afresh. host names the phone in messages. Returns 1
 * when something changed (or at the first poll), 0 when nothing did, or
 * a PHSYNC_E* with the message in ctx. */
int ph_rpoll_run(struct ph_rpoll **pp, phsync_ctx *ctx, struct ph_sftp *sftp, const char *host,
                 const char *rroot, int full);
void ph_rpoll_free(struct ph_rpoll *p);

#endif
