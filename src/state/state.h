/* SPDX-License-Identifier: ISC */
/* The sync state: one SQLite database per sync pair, under
 * $XDG_STATE_HOME/phsync (default ~/.local/state/phsync), remembering what
 * each run left in place and how each run ended. A pair is the phone (its
 * SSH host key, as known_hosts checked it), the login user, the remote
 * folder and the local folder; not the address it was reached at, which a
 * phone on Wi-Fi changes (docs/ARCHITECTURE.md, "Which phone it is"). An
 * open store holds the pair's lock, so two runs on one pair never
 * interleave. Rows are written in bounded transactions as files land; the
 * caller adds a file only once it is durably in place, so a kill at any
 * point leaves a state that claims nothing that is not there. Every name a
 * row holds is input like a peer's: the callers check it before use
 * (src/scan/staterow.h). This header is the stores' common part: the
 * pair's key, open, commit and close (state.c). */
#ifndef PH_STATE_H
#define PH_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"

#define PH_STATE_SCHEMA 5   /* user_version of the databases this code writes
                               (1 had no sig column, 2 kept paths as keys,
                               3 had no backup tables, 4 no hread and local
                               identity columns: upgraded on open) */

struct ph_state;

struct ph_state_key {
	const char *hostkey;     /* the phone: "TYPE SHA256:..." as ph_ssh_host_key
	                            gives it, or NULL (a local backup source):
	                            the pair is then keyed by the address */
	const char *user, *host; /* who we reached, after ssh_config: kept in */
	unsigned port;           /* the state for messages and for finding a
	                            state an older phsync keyed by the address */
	const char *rpath;       /* the remote folder as given */
	const char *lpath;       /* the local folder, absolute */
	const char *single;      /* a single-file pair: the file's name in both
	                            folders (its own pair, apart from the
	                            folders' one), or NULL */
};

enum {
	PH_STATE_RESET = 1,     /* drop what the store held */
	PH_STATE_READONLY = 2   /* a dry run: read what is there, if anything
	                           (*out stays NULL when nothing is); no lock,
	                           nothing written */
};

/* Opens (creating it) the store of the pair key in dir (NULL: the XDG
 * state folder) and takes the pair's lock. flags: PH_STATE_*. A state an
 * older phsync keyed by the address (user@host:port) is adopted and
 * renamed to the host key's name when it records no host key or this one;
 * one of another host key is never used. Returns 0, or:
 *   PHSYNC_ELOCKED   another run holds the pair (message names its pid)
 *   PHSYNC_ECORRUPT  the file is damaged or not ours (message: --reset-state)
 *   PHSYNC_EUNSUPPORTED  written by a newer phsync (schema version)
 *   PHSYNC_EIO       the folder or file cannot be made or read */
int ph_state_open(phsync_ctx *ctx, const char *dir, const struct ph_state_key *key,
                  int flags, struct ph_state **out);

/* Where the pair's phone was reached before, when this run reached it at
 * another address or port ("user@host:port"; the state now records the new
 * one, so it is said once), else NULL. Valid until ph_state_close. */
const char *ph_state_moved_from(const struct ph_state *st);

/* Commits the rows added so far. */
int ph_state_flush(struct ph_state *st);

/* Ends the run: records its end, counts and result (a PHSYNC_E* or 0),
 * commits, checkpoints, releases the lock and frees. NULL is a no-op. */
void ph_state_close(struct ph_state *st, int result, const struct phsync_stats *stats);

/* Each store has its own header; a caller includes this one for all:
 *   records.h  the sync records (files in place, partial transfers)
 *   series.h   a backup series (its archives and the paths it holds)
 *   memo.h     the hosts known to run no helper (a plain file, no SQLite)
 * phsync_pairs (public, include/phsync/) lists the pairs' stores. */
#include "records.h"
#include "series.h"
#include "memo.h"

#endif
