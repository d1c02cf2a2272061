/* SPDX-License-Identifier: ISC */
/* ut_fs.h: scratch folders through platform/pfs.h, the same on every OS. */
#include <stdio.h>
#include <stdlib.h>

#include "pfs.h"
#include "platform.h"
#include "ut_fs.h"

int
ut_scratch(char *out, size_t len, const char *prefix)
{
	const char *base = getenv("TMPDIR");
	unsigned char r[6];
	int i;

	if (base == NULL || base[0] == '\0')
		base = getenv("TEMP");
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	for (i = 0; i < 100; i++) {
		if (ph_random(r, sizeof(r)) != 0)
			return -1;
		if ((size_t)snprintf(out, len, "%s/%s-%02x%02x%02x%02x%02x%02x", base, prefix, r[0],
		                     r[1], r[2], r[3], r[4], r[5]) >= len)
			return -1;
		if (ph_mkdirat(PH_AT_CWD, out, 0700) == 0)
			return 0;
	}
	return -1;
}

/* Removes name in dirfd, a folder with all it holds. */
static void
rm_at(int dirfd, const char *name)
{
	struct ph_dirent e;
	struct ph_dir *d;
	struct ph_stat st;
	int fd;

	if (ph_fstatat(dirfd, name, &st) != 0)
		return;
	if (st.type != PH_FT_DIR) {
		ph_unlinkat(dirfd, name, 0);
		return;
	}
	fd = ph_openat(dirfd, name, PH_O_DIR | PH_O_NOFOLLOW, 0);
	if (fd < 0)
		return;
	if (ph_dir_list(fd, &d) == 0) {
		while (ph_dir_read(d, &e) > 0)
			rm_at(fd, e.name);
		ph_dir_end(d);
	}
	ph_close(fd);
	ph_unlinkat(dirfd, name, PH_AT_REMOVEDIR);
}

void
ut_rmtree(const char *path)
{
	rm_at(PH_AT_CWD, path);
}

void
ut_clear(const char *path)
{
	struct ph_dirent e;
	struct ph_dir *d;
	struct ph_stat st;
	int fd = ph_dir_open_path(path);

	if (fd < 0)
		return;
	if (ph_dir_list(fd, &d) == 0) {
		while (ph_dir_read(d, &e) > 0) {
			if (ph_fstatat(fd, e.name, &st) == 0 && st.type != PH_FT_DIR)
				ph_unlinkat(fd, e.name, 0);
		}
		ph_dir_end(d);
	}
	ph_close(fd);
}
