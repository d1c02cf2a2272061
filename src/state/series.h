/* SPDX-License-Identifier: ISC */
/* A backup series in a pair's store (series.c, schema 4). Included by
 * state.h, which opens and closes the store. */
#ifndef PH_SERIES_H
#define PH_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct ph_state;

/* A backup series (src/backup/): the state of a pair whose local side is
 * an archive name template. One archive of the series. */
struct ph_backup_rec {
	int64_t seq;             /* 1, 2, ... in the order they were made */
	char *name;              /* the archive's path as published */
	int full;                /* 1: full, 0: incremental on base */
	int64_t base;            /* the archive it builds on (0: none) */
	int64_t created;         /* unix seconds */
	uint64_t files, bytes, deleted;
	int pruned;              /* removed by --keep */
};

/* One path the series holds as of its last archive. */
struct ph_backup_file {
	int type;                /* 1 file, 2 folder (enum ph_type) */
	uint64_t size;
	int64_t mtime;
	uint32_t nsec, mode;
	const uint8_t *hash;     /* 16 bytes or NULL */
	int64_t seq;             /* the archive holding its current bytes */
};

/* The series' random id (32 hex digits), made on first use. */
int ph_state_series_id(struct ph_state *st, char id[33]);
/* Every archive of the series, oldest first (free with
 * ph_state_backup_recs_free). */
int ph_state_backup_list(struct ph_state *st, struct ph_backup_rec **out, size_t *n);
void ph_state_backup_recs_free(struct ph_backup_rec *v, size_t n);
/* Calls fn for every path the series holds, in the trees' order; stops
 * at fn's nonzero return, which is returned. */
typedef int ph_state_bfile_fn(void *arg, const char *path, const struct ph_backup_file *f);
int ph_state_backup_each(struct ph_state *st, ph_state_bfile_fn *fn, void *arg);
/* Advances the series by one archive, all or nothing: begin (full: the
 * series forgets what it held), put and forget paths, then end, which
 * adds rec and commits. abort rolls back. */
int ph_state_backup_begin(struct ph_state *st, int full);
int ph_state_backup_put(struct ph_state *st, const char *path, const struct ph_backup_file *f);
int ph_state_backup_forget(struct ph_state *st, const char *path);
int ph_state_backup_end(struct ph_state *st, const struct ph_backup_rec *rec);
void ph_state_backup_abort(struct ph_state *st);
/* Marks archive seq as removed by --keep. */
int ph_state_backup_pruned(struct ph_state *st, int64_t seq);

#endif
