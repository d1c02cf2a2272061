/* SPDX-License-Identifier: ISC */
/* Names of the files phsync makes beside a destination file: the temp file
 * a new version is written to, and (on servers whose RENAME cannot replace)
 * the aside copy the old version is moved to while the new one takes its
 * place. A name carries its owner (host and process) and a check value over
 * the whole name, so a later run removes only what phsync made and no live
 * run still owns, never a user's file that merely looks alike:
 *
 *     .NAME.phsync-K.HHHHHHHHPPPPPPPP.RRRRRRRR.CCCCCCCC
 *
 * K is 't' (temp), 'o' (aside copy of the old file) or 'p' (a cut download
 * kept for the next run to resume), upper case when NAME
 * had to be shortened to fit NAME_MAX; H the owner's host id, P its pid, R
 * the minute it was made (24 bits) and a random byte, C the XXH32 of
 * everything before it. The age comes from the name, never from the file's
 * mtime: phsync sets that to the source's before the rename. */
#ifndef PH_TEMPNAME_H
#define PH_TEMPNAME_H

#include <stddef.h>
#include <stdint.h>

enum { PH_TEMP_NEW = 't', PH_TEMP_OLD = 'o',
       PH_TEMP_PARTIAL = 'p' /* a cut download kept to be resumed (the state
                                says how much of it is good) */ };

/* The longest final name kept whole in a temp name. */
#define PH_TEMP_NAME_ROOM 210
/* How many bytes of a final name (flen long) its temp names keep: all
 * that fit in PH_TEMP_NAME_ROOM, cut at a UTF-8 boundary. */
size_t ph_temp_keep(const char *final, size_t flen);

struct ph_temp_owner {
	uint32_t host; /* hash of the host name */
	uint32_t pid;
};

/* This process as an owner. */
void ph_temp_owner_self(struct ph_temp_owner *o);

/* Writes a fresh name of kind k (PH_TEMP_NEW or PH_TEMP_OLD) for final into
 * buf (len >= 256). Returns 0, or -1 when final is empty. */
int ph_temp_name(char *buf, size_t len, const char *final, int k,
                 const struct ph_temp_owner *o);

struct ph_temp_info {
	int kind;                  /* PH_TEMP_NEW or PH_TEMP_OLD */
	int truncated;             /* the final name was shortened */
	size_t final_off, final_len; /* the final name's bytes within the name */
	struct ph_temp_owner owner;
	uint32_t minute;           /* when it was made: minutes since 1970, mod 2^24 */
};

/* Is name (len bytes) a temp or aside name phsync made (check value
 * included)? Returns 1 and fills *info, else 0. */
int ph_temp_parse(const char *name, size_t len, struct ph_temp_info *info);

/* May the leftover ti describes be removed by self at time now (unix
 * seconds)? Yes when its owner is this host and that process is gone; for
 * another host's, when its name says it was made more than a day ago. A
 * partial download is kept a week by its name (the run that resumes it
 * removes it sooner when the source changed). */
int ph_temp_stale(const struct ph_temp_info *ti, const struct ph_temp_owner *self, int64_t now);

/* The name an incoming version gets beside a destination file that changed
 * since the last sync (Syncthing's habit, which users know):
 * NAME.phsync-conflict-YYYYMMDD-HHMMSS.EXT, the time being when (local
 * time), EXT the last extension of final (none for ".hidden" or "README").
 * n > 1 adds "-n" after the time (two conflicts in the same second). The
 * stem is shortened to keep the name within 255 bytes, on a UTF-8
 * boundary. Returns 0, or -1 when final is empty or len < 256. */
int ph_conflict_name(char *buf, size_t len, const char *final, int64_t when, unsigned n);

/* Is name one that ph_conflict_name makes? */
int ph_is_conflict_name(const char *name);

#endif
