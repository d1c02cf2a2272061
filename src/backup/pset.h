/* SPDX-License-Identifier: ISC */
/* What a restore put in place during this run: each path (a file renamed
 * into place, a folder it made) with the device and inode it put there, so
 * that a deletion removes only that, never a file that was there before.
 * A hash table keyed by path. Internal to src/backup/. */
#ifndef PH_PSET_H
#define PH_PSET_H

#include <stddef.h>
#include <stdint.h>

struct ph_pset_e {
	char *path;            /* NULL: an empty slot */
	uint64_t dev, ino;
	int dir;
	int live;              /* 0: removed again (by a deletion or a failed archive) */
	unsigned gen;          /* the archive (its place in the chain) that put it */
};

struct ph_pset {
	struct ph_pset_e *v;
	size_t n, cap;         /* slots used (live or not), slots (a power of 2) */
};

/* Records path (copied) as put in place by archive gen, replacing what
 * was recorded for it. Returns 0 or PHSYNC_ENOMEM. */
int ph_pset_put(struct ph_pset *s, const char *path, uint64_t dev, uint64_t ino, int dir,
                unsigned gen);
/* The live record of path, or NULL. */
struct ph_pset_e *ph_pset_get(const struct ph_pset *s, const char *path);
void ph_pset_free(struct ph_pset *s);

#endif
