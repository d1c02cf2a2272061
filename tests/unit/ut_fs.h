/* SPDX-License-Identifier: ISC */
/* Scratch folders for the unit tests that run on Linux and, as the same
 * source, under Wine (tests/unit/win32/): made and removed through
 * platform/pfs.h, so no test needs mkdtemp, rm -rf or a shell. */
#ifndef UT_FS_H
#define UT_FS_H

#include <stddef.h>

/* A new empty folder PREFIX-XXXXXXXXXXXX (random hex) in the temporary
 * folder ($TMPDIR, else $TEMP as Windows sets it, else /tmp), its path into
 * out. Returns 0 or -1. */
int ut_scratch(char *out, size_t len, const char *prefix);

/* Removes path and everything under it (nothing followed). */
void ut_rmtree(const char *path);

/* Removes every file right in the folder path (rm -f path/<star>). */
void ut_clear(const char *path);

#endif
