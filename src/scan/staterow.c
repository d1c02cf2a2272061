/* SPDX-License-Identifier: ISC */
/* Checks of the names the sync state holds; see staterow.h. */
#include <stdint.h>
#include <string.h>

#include "psys.h"
#include "staterow.h"
#include "tempname.h"
#include "tree.h"

int
ph_staterow_path_ok(const char *path, size_t len)
{
	size_t i = 0, j;

	if (path == NULL || len == 0 || len > PH_STATEROW_PATH_MAX)
		return 0;
	/* Each component, the last included; a leading, trailing or double
	 * '/' makes an empty one, which ph_name_safe refuses. */
	for (;;) {
		for (j = i; j < len && path[j] != '/'; j++)
			;
		if (!ph_name_safe((const uint8_t *)path + i, j - i))
			return 0;
		if (j == len)
			return 1;
		i = j + 1;
	}
}

int
ph_staterow_temp_of(const char *tmp, size_t tlen, const char *final, size_t flen, int kind)
{
	struct ph_temp_info ti;
	size_t keep;

	if (tmp == NULL || final == NULL || !ph_name_safe((const uint8_t *)tmp, tlen) ||
	    !ph_name_safe((const uint8_t *)final, flen) || !ph_temp_parse(tmp, tlen, &ti) ||
	    ti.kind != kind)
		return 0;
	/* The cut ph_temp_name makes, and said as made. */
	keep = ph_temp_keep(final, flen);
	if ((keep < flen) != (ti.truncated != 0))
		return 0;
	return ti.final_len == keep && memcmp(tmp + ti.final_off, final, keep) == 0;
}

int
ph_staterow_partial_ok(const char *path, const char *dpath, const char *tmp, int kind)
{
	const char *base;
	size_t dl;

	if (path == NULL || tmp == NULL || !ph_staterow_path_ok(path, strlen(path)))
		return 0;
	if (dpath == NULL)
		dpath = path;
	dl = strlen(dpath);
	if (!ph_staterow_path_ok(dpath, dl))
		return 0;
	base = strrchr(dpath, '/');
	base = base ? base + 1 : dpath;
	return ph_staterow_temp_of(tmp, strlen(tmp), base, dl - (size_t)(base - dpath), kind);
}

int
ph_staterow_archive_ok(const char *name, const char *dir)
{
	size_t dl, nl;

	/* dir is the folder's real path: from '/' on POSIX, Z:\dir on Windows
	 * (ph_path_absolute); backup.c joins the name to it with '/'. */
	if (name == NULL || dir == NULL || !ph_path_absolute(dir))
		return 0;
	dl = strlen(dir);
	while (dl > 0 && dir[dl - 1] == '/')
		dl--;          /* "/" is the folder of "/name" */
	nl = strlen(name);
	return nl > dl + 1 && memcmp(name, dir, dl) == 0 && name[dl] == '/' &&
	       ph_name_safe((const uint8_t *)name + dl + 1, nl - dl - 1);
}
