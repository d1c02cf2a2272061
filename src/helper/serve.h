/* SPDX-License-Identifier: ISC */
/* The remote helper (`phsync serve ROOT`): an SFTP v3 server confined to
 * ROOT, with phsync's extensions (block signatures and deltas computed next
 * to the files). The protocol is in docs/PROTOCOL.md. Needs only libc, the
 * delta engine and xxHash, so it also builds as a small static program for
 * the phone (phsync-helper). Internal. */
#ifndef PH_SERVE_H
#define PH_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PH_SERVE_MAX_PACKET ((4u << 20) + 1024) /* largest request taken */
#define PH_SERVE_MAX_IO (256u << 10)            /* READ / delta bytes per reply */
#define PH_SERVE_MAX_SIG (3u << 20)             /* largest signature reply */

struct ph_serve;

/* A server for the folder root (as the client names it: no trailing '/',
 * "" for "/"). Returns 0 or PHSYNC_ENOMEM. */
int ph_serve_new(const char *root, struct ph_serve **out);
/* Handles one packet (type, id, body: the length prefix removed) and
 * appends the reply to out. Returns 0, or -1 when the stream cannot go on
 * (a packet before INIT, one without an id): the caller closes the link. */
int ph_serve_packet(struct ph_serve *s, const uint8_t *p, size_t len, struct ph_buf *out);
/* Lets replies go to out_fd directly from now on: a READ writes out's
 * replies and then its own, its bytes moved from the file to out_fd without
 * a copy through this process where the OS can (splice). Without a sink,
 * every reply is appended to out. */
void ph_serve_sink(struct ph_serve *s, int out_fd);
/* Closes every handle and frees; NULL is a no-op. */
void ph_serve_free(struct ph_serve *s);

/* Serves requests from in_fd to out_fd until the client closes its side.
 * Returns 0 at a clean end, 1 on a protocol or I/O failure (said on
 * stderr). */
int ph_serve_run(const char *root, int in_fd, int out_fd);

#endif
