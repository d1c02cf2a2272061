/* SPDX-License-Identifier: ISC */
/* The no-helper memo (memo.c): a plain file per phone and login in the
 * state folder, apart from the pairs' SQLite stores. Included by state.h. */
#ifndef PH_MEMO_H
#define PH_MEMO_H

/* Hosts without a helper:
 * --helper auto on a server that runs no helper (and takes none by
 * bootstrap) costs each run one or two extra sessions, half a second or
 * more against OpenSSH. A memo per phone and login (user and host key, as
 * a pair's key: a phone at a new address is the same phone) in the state
 * folder dir (NULL: the default) says so for PH_NOHELPER_TTL_S seconds and
 * for this phsync version; then auto goes straight to plain SFTP. */
#define PH_NOHELPER_TTL_S (24 * 3600)
/* 1 when a fresh memo says the host runs no helper, else 0. */
int ph_state_nohelper_get(const char *dir, const char *user, const char *hostkey);
/* Writes the memo (why: for whoever reads the file); failures are
 * ignored (the next run tries the helper again). */
void ph_state_nohelper_put(const char *dir, const char *user, const char *hostkey,
                           const char *why);

#endif
