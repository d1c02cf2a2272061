/* SPDX-License-Identifier: ISC */
/* libFuzzer: the names a sync state row holds (src/scan/staterow.c), as
 * whoever can write the state file would set them. Input: a kind byte,
 * then path, dpath, tmp and an archive name separated by NUL bytes (the
 * fields may hold any other byte). Whatever the bytes, a name the checks
 * accept never leaves its folder: a path is relative with no "", "." or
 * ".." component and no '\\' or control byte; a temp name is one such
 * component that parses as phsync's own temp name of that kind; an
 * archive is one component inside the series' folder. And an honest name
 * (ph_temp_name of the path's last component) is always accepted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "staterow.h"
#include "tempname.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits off the next NUL-terminated field (the rest when there is none)
 * as an exact-size heap copy, so ASan sees any read past it. */
static char *
field(const uint8_t **p, const uint8_t *end, size_t *len)
{
	const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
	size_t n = z ? (size_t)(z - *p) : (size_t)(end - *p);
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n + (z != NULL);
	*len = n;
	return s;
}

static void
check_path(const char *p, size_t n)
{
	size_t i, start = 0;

	if (n == 0 || p[0] == '/' || p[n - 1] == '/')
		abort();
	for (i = 0; i <= n; i++) {
		if (i < n && ((unsigned char)p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\'))
			abort();
		if (i == n || p[i] == '/') {
			size_t cl = i - start;

			if (cl == 0 || (cl == 1 && p[start] == '.') ||
			    (cl == 2 && p[start] == '.' && p[start + 1] == '.'))
				abort();
			start = i + 1;
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	size_t pl, dl, tl, al;
	char *path, *dpath, *tmp, *arch;
	int kind;
	struct ph_temp_info ti;

	if (size < 1)
		return 0;
	kind = (data[0] & 1) ? PH_TEMP_PARTIAL : PH_TEMP_NEW;
	p++;
	path = field(&p, end, &pl);
	dpath = field(&p, end, &dl);
	tmp = field(&p, end, &tl);
	arch = field(&p, end, &al);

	if (ph_staterow_path_ok(path, pl))
		check_path(path, pl);
	if (ph_staterow_partial_ok(path, dl ? dpath : NULL, tmp, kind)) {
		check_path(path, pl);
		if (dl)
			check_path(dpath, dl);
		check_path(tmp, tl);
		if (strchr(tmp, '/') != NULL || !ph_temp_parse(tmp, tl, &ti) || ti.kind != kind)
			abort();
	}
	if (ph_staterow_archive_ok(arch, "/backups/phone")) {
		if (strncmp(arch, "/backups/phone/", 15) != 0)
			abort();
		check_path(arch + 15, al - 15);
		if (strchr(arch + 15, '/') != NULL)
			abort();
	}
	/* An honest temp name of a safe path's last component is accepted. */
	if (ph_staterow_path_ok(path, pl)) {
		const char *base = strrchr(path, '/');
		struct ph_temp_owner o = { 0x1234, 42 };
		char name[512];

		base = base ? base + 1 : path;
		if (ph_temp_name(name, sizeof(name), base, kind, &o) == 0 &&
		    (!ph_temp_parse(name, strlen(name), &ti) ||
		     !ph_staterow_partial_ok(path, NULL, name, kind)))
			abort();
	}
	free(path);
	free(dpath);
	free(tmp);
	free(arch);
	return 0;
}
