/* SPDX-License-Identifier: ISC */
/* A small ssh_config reader for the few keywords libssh 0.10 does not
 * expose or misreads (StrictHostKeyChecking accept-new, whether Ciphers is
 * set). libssh itself applies everything else. */
#ifndef PH_SSHCONF_H
#define PH_SSHCONF_H

#include <stddef.h>

/* Looks up keyword for host as ssh does (first obtained value wins) in
 * file, or in ~/.ssh/config then /etc/ssh/ssh_config when file is NULL.
 * Host lines (white-space separated patterns, '!' negation), Include
 * (globs, relative to ~/.ssh) and Match (all, host against the HostName in
 * force, originalhost, user, localuser, final, with '!'; exec, canonical,
 * localnetwork and tagged never match: phsync runs no commands from the
 * config) are honoured, checked against `ssh -G` by the tests. Returns 1
 * and the value in val, 0 when not set, or a negative PHSYNC_E* when an
 * explicit file cannot be read. */
int ph_sshconf_get(const char *file, const char *host, const char *keyword,
                   char *val, size_t vlen);

/* Does host (case-sensitive, as ssh) match a Host line's patterns, like
 * "*.lan !bad.lan phone"? Returns 1 or 0. */
int ph_sshconf_host_match(const char *patterns, const char *host);

#endif
