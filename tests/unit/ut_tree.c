/* SPDX-License-Identifier: ISC */
/* Trees built by hand for unit tests (ut_tree.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "ut_tree.h"

void
ut_add(struct ph_tree *t, const char *path, uint8_t type, uint64_t size, int64_t mtime)
{
	struct ph_entry e = { 0 };

	e.type = type;
	e.size = size;
	e.mtime = mtime;
	e.mode = 0644;
	assert_int_equal(ph_tree_add(t, path, strlen(path), &e), 0);
}
