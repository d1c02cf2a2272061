/* SPDX-License-Identifier: ISC */
/* known_hosts under a HostKeyAlias, which libssh 0.10 does not know
 * (knownhost.c says why it matters for a phone). */
#ifndef PH_KNOWNHOST_H
#define PH_KNOWNHOST_H

#include <stddef.h>

#include <libssh/libssh.h>

/* Can name be written as a known_hosts entry's host (no blank, comma,
 * wildcard, control byte, nor a first byte that marks a comment, a
 * marker, a hash or a negation)? 1 or 0. */
int ph_knownhost_name_ok(const char *name);

/* The connected server's key against the known_hosts files of sess (the
 * user's, then the global one) under name, as ssh looks up a HostKeyAlias:
 * SSH_KNOWN_HOSTS_OK (an entry holds this key), _CHANGED (one holds
 * another key of its type), _OTHER (only keys of other types), _NOT_FOUND,
 * or _ERROR (no server key, or a file that exists could not be read and
 * nothing else decided it). */
enum ssh_known_hosts_e ph_knownhost_check(ssh_session sess, const char *name);

/* Does a line "@revoked PATTERNS TYPE KEY" of the known_hosts files of
 * sess, whose patterns match name, hold the connected server's key? 1, 0,
 * or -1 (no server key, or a file that exists could not be read). */
int ph_knownhost_revoked(ssh_session sess, const char *name);

/* Appends "name type key" for the connected server to the user's
 * known_hosts file. 0, or -1 with why (a sentence) filled in. */
int ph_knownhost_add(ssh_session sess, const char *name, char *why, size_t whylen);

#endif
