/* SPDX-License-Identifier: ISC */
/* Trees built by hand for the planner's and the reconciler's tests
 * (test_plan.c, test_recon.c; tests/CMakeLists.txt links ut_tree.c into
 * both). */
#ifndef UT_TREE_H
#define UT_TREE_H

#include <stdint.h>

#include "tree.h"

/* Adds an entry to t: path, type (PH_T_*), size and mtime, mode 0644; a
 * failure fails the test. */
void ut_add(struct ph_tree *t, const char *path, uint8_t type, uint64_t size, int64_t mtime);

#endif
