/* SPDX-License-Identifier: ISC */
/* A remote spec, [user@]host:path, as every run names the phone and its
 * folder (phsync_parse_remote is its public half). Internal. */
#ifndef PH_SPEC_H
#define PH_SPEC_H

#include "phsync/phsync.h"

/* The remote root of a HOST:PATH's path: trailing slashes trimmed; "" is
 * the server's "/" (only when the user wrote "/"), an empty path the
 * login folder ("."). NULL when out of memory. */
char *ph_remote_root(const char *path);

/* Parses spec into *user, *host and *path (phsync_parse_remote) and
 * *rroot (ph_remote_root of path), each malloc'ed for the caller (NULL
 * when absent; all NULL on failure). Returns 0, or PHSYNC_EINVAL ("is not
 * HOST:PATH") or PHSYNC_ENOMEM with the message in ctx. */
int ph_spec_remote(phsync_ctx *ctx, const char *spec, char **user, char **host, char **path,
                   char **rroot);

#endif
