/* SPDX-License-Identifier: ISC */
/* Names read from the sync state, checked before any use. The state is a
 * file in the user's state folder: anything that can write it (another
 * program, a restored backup, a damaged disk) must not reach outside the
 * pair's folders through it, so its names are input like a peer's, checked
 * by the same rule the scanners apply (ph_name_safe). Pure functions, no
 * I/O (fuzz/fuzz_state.c drives them). */
#ifndef PH_STATEROW_H
#define PH_STATEROW_H

#include <stddef.h>

/* The longest path a row may hold. */
#define PH_STATEROW_PATH_MAX 4096

/* Is path (len bytes) a relative path of '/'-separated components each
 * safe to create (ph_name_safe: not "", ".", "..", no '\\', NUL or control
 * character), at most PH_STATEROW_PATH_MAX bytes? 1 when it is. */
int ph_staterow_path_ok(const char *path, size_t len);

/* Is tmp (tlen bytes) a temp name of kind (PH_TEMP_PARTIAL, PH_TEMP_NEW)
 * that phsync made for the final name final (flen bytes, one component):
 * one safe component, its check value right (ph_temp_parse), and the final
 * name it carries that one, whole or cut as ph_temp_name cuts it? 1 when
 * it is. */
int ph_staterow_temp_of(const char *tmp, size_t tlen, const char *final, size_t flen,
                        int kind);

/* A partial row (a cut transfer kept to resume): path is a safe relative
 * path and tmp a temp name of kind for the last component of dpath (where
 * the file lands this run; NULL: path). 1 when both hold. */
int ph_staterow_partial_ok(const char *path, const char *dpath, const char *tmp, int kind);

/* An archive of a backup series as the state lists it: dir (absolute, the
 * series' folder) followed by '/' and one safe component. 1 when it is. */
int ph_staterow_archive_ok(const char *name, const char *dir);

#endif
