/* SPDX-License-Identifier: ISC */
/* The manifest of a phsync archive: what it holds (path, size, time,
 * XXH3-128 of each file; its folders), what was deleted since its base,
 * and which series and predecessor it belongs to. Written twice: a head
 * (no entries) as the archive's first entry, so a reader knows at once
 * that a manifest must end it, and the whole one as its last entry, so a
 * cut archive is told from a complete one. A line-oriented text; paths
 * escape bytes below 0x21, 0x7f and '%' as %XX. Internal to src/backup/. */
#ifndef PH_MANIFEST_H
#define PH_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define PH_MANIFEST_NAME ".phsync-manifest"
#define PH_MANIFEST_MAX (1u << 30)  /* the largest manifest read back */

struct ph_mf_file {
	char *path;
	int dir;
	uint64_t size;
	int64_t mtime;
	uint32_t nsec, mode;
	uint8_t hash[16];
};

struct ph_manifest {
	int head;                  /* parsed: only the head */
	char series[33];
	int64_t seq, base, created;
	int full;
	char *source;
	struct ph_mf_file *v;
	size_t n, cap;
	char **del;                /* deleted since base */
	size_t ndel, capdel;
};

/* Adds a file or folder (path copied); returns 0 or PHSYNC_ENOMEM. */
int ph_mf_add(struct ph_manifest *m, const struct ph_mf_file *f);
/* Adds a deletion (path copied). */
int ph_mf_add_del(struct ph_manifest *m, const char *path);
/* Formats m (head: the head only) into a malloc'ed buffer. */
int ph_mf_format(const struct ph_manifest *m, int head, char **out, size_t *len);
/* Parses buf into m (zeroed first). Returns 0 or PHSYNC_ECORRUPT. */
int ph_mf_parse(const char *buf, size_t len, struct ph_manifest *m);
/* Checks what a parsed manifest promises beyond its syntax: a full
 * archive is on no base and lists no deletions; an incremental one is on
 * an earlier archive; every path it names (file, folder, deletion) passes
 * ph_apath_check and is written in its normal form. Returns 0, or
 * PHSYNC_ECORRUPT with the reason in why (len bytes). */
int ph_mf_check(const struct ph_manifest *m, char *why, size_t len);
void ph_mf_free(struct ph_manifest *m);

#endif
