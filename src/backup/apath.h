/* SPDX-License-Identifier: ISC */
/* The one check of a path read from an archive: a tar member's name, or a
 * path its manifest names (a file, a folder, a deletion). Internal to
 * src/backup/. */
#ifndef PH_APATH_H
#define PH_APATH_H

#include <stddef.h>

#define PH_APATH_MAX 4200    /* the longest normal form kept, with its NUL */

/* Checks name and writes its normal form into out (cap bytes): "./"
 * prefixes, empty and "." parts and a trailing '/' dropped ("" for the
 * archive's top folder itself). Refuses an absolute name, a ".." part, a
 * part ph_name_safe refuses (control characters, a backslash, over 255
 * bytes) and a form longer than cap - 1. Returns NULL, or the reason (a
 * constant string) with out unspecified. */
const char *ph_apath_check(const char *name, char *out, size_t cap);

#endif
