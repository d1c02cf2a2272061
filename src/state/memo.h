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

/* Hosts that run the helper phsync brings (bootstrap.c) and none of their
 * own: a memo of the same kind (brought-HASH, the same day) holds the
 * phone's helper architecture, so auto starts the brought helper at once,
 * without first trying `phsync serve` on the phone's PATH and asking
 * `uname -m` (since issue 24 both ride in the start's one exec channel, so
 * the memo spares those two steps there). A start that fails drops it and
 * goes the whole way again. */
/* 1 with arch (e.g. "aarch64") when a fresh memo says so, else 0. */
int ph_state_brought_get(const char *dir, const char *user, const char *hostkey, char *arch,
                         size_t len);
/* The memo's second line (written after a full byte check of the cached
 * copy, bootstrap.h): the identity of that copy as the phone's stat showed
 * it, for the helper build build (its hash); while the open file shows the
 * same, its bytes are not sent back. 1 with ident set, or 0 (none, or one
 * of another build). */
int ph_state_brought_ident(const char *dir, const char *user, const char *hostkey,
                           const char *build, char *ident, size_t len);
/* Writes the memo: arch, and (build and ident non-NULL, not empty) the
 * identity line. */
void ph_state_brought_put(const char *dir, const char *user, const char *hostkey,
                          const char *arch, const char *build, const char *ident);
void ph_state_brought_drop(const char *dir, const char *user, const char *hostkey);

#endif
