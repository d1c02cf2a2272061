/* SPDX-License-Identifier: ISC */
/* Which state file is a pair's: its name from the pair's identity (the
 * phone's host key, the login user, the two folders), and the adoption of
 * a state an older phsync named by the address the phone was reached at.
 * Internal to src/state/ (state.c opens the file this module names). */
#ifndef PH_PAIRID_H
#define PH_PAIRID_H

#include <sqlite3.h>

#include "ctx.h"
#include "state.h"

#define PH_PAIRID_APP_ID 0x70687379     /* "phsy": the state files' application_id */

/* The pair's file id (16 hex digits) and the id an older phsync gave it
 * (keyed by user@host:port). Without a host key both are the latter.
 * Returns 0, or PHSYNC_ENOMEM. */
int ph_pairid_make(const struct ph_state_key *key, char id[17], char legacy[17]);

/* The address part of the state's "addr" record for key: user@host:port. */
void ph_pairid_addr(const struct ph_state_key *key, char *out, size_t len);

/* Does the open state h belong to the phone hostkey? 1 when its meta
 * records this host key or none (a state an older phsync wrote), 0 when
 * it records another, -1 when it cannot be read. */
int ph_pairid_hostkey_ok(sqlite3 *h, const char *hostkey);

/* The pair's own records in the open state h (path: for messages): the
 * phone's host key (a state recording another is refused: PHSYNC_ECORRUPT)
 * and the address it was reached at. A phone met at another address fills
 * moved (mlen bytes) with the one recorded ("user@host:port"), else "".
 * Unless readonly, what is new (the host key, the address, "remote") is
 * written in one transaction. Returns 0 or a negative PHSYNC_E*. */
int ph_pairid_meta(phsync_ctx *ctx, sqlite3 *h, const char *path,
                   const struct ph_state_key *key, const char *remote, int readonly,
                   char *moved, size_t mlen);

/* With the new name's lock held and no file under it (db): a state under
 * the legacy id in sdir that belongs to hostkey (ph_pairid_hostkey_ok) is
 * taken under its own lock, checkpointed and renamed to db; *adopted says
 * whether it was. A file of another host key, or not ours, is left alone.
 * Returns 0, or PHSYNC_ELOCKED (an older phsync runs on it), or
 * PHSYNC_EIO with the message in ctx. */
int ph_pairid_adopt(phsync_ctx *ctx, const char *sdir, const char *legacy,
                    const char *hostkey, const char *db, int *adopted);

#endif
