/* SPDX-License-Identifier: ISC */
/* The helper protocol's names and versions (docs/PROTOCOL.md), shared by
 * the helper (serve.c) and the client (transport/sftp.c, sync/conn.c), so
 * the two ends spell them once. Internal. */
#ifndef PH_PROTO_H
#define PH_PROTO_H

/* The versions this build speaks: the value of the "phsync@phsync.org"
 * extension in INIT (the client's highest) and VERSION (the one agreed). */
#define PH_HELPER_PROTO_MIN 1
#define PH_HELPER_PROTO_MAX 1
#define PH_HELPER_EXT "phsync@phsync.org"
#define PH_HELPER_SIG "phsync-sig@phsync.org"
#define PH_HELPER_DSTART "phsync-delta-start@phsync.org"
#define PH_HELPER_DREAD "phsync-delta-read@phsync.org"

#endif
