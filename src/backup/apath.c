/* SPDX-License-Identifier: ISC */
/* Paths from an archive, checked (apath.h). */
#include <stdint.h>
#include <string.h>

#include "apath.h"
#include "tree.h"

const char *
ph_apath_check(const char *name, char *out, size_t cap)
{
	const char *p = name;
	size_t o = 0;

	if (cap == 0)
		return "path too long";
	if (name[0] == '/')
		return "absolute path";
	while (*p) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.')) {
			p += n + (s != NULL);
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "a path that climbs out (..)";
		if (!ph_name_safe((const uint8_t *)p, n))
			return "unsafe name (control characters or a backslash)";
		if (o + n + 2 > cap)
			return "path too long";
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n + (s != NULL);
	}
	out[o] = '\0';
	return NULL;
}
