/* A small ssh_config reader for the few keywords libssh 0.10 does not
 * expose or misreads (StrictHostKeyChecking accept-new, whether Ciphers is
 * set). libssh itself applies everything else. */
#ifndef PH_SSHCONF_H
#define PH_SSHCONF_H

#include <stddef.h>

/* Looks up keyword for host as ssh does (first match wins) in file, or in
 * ~/.ssh/config then /etc/ssh/ssh_config when file is NULL. Host blocks
 * with patterns and negation and Include are honoured; Match blocks other
 * than "Match all" are skipped. Returns 1 and the value in val, 0 when not
 * set, or a negative PHSYNC_E* when an explicit file cannot be read. */
int ph_sshconf_get(const char *file, const char *host, const char *keyword,
                   char *val, size_t vlen);

/* Does host (lowercase compare) match an ssh pattern list like
 * "*.lan,!bad.lan phone"? Returns 1 or 0. */
int ph_sshconf_host_match(const char *patterns, const char *host);

#endif
