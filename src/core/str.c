/* SPDX-License-Identifier: ISC */
/* str.h: string pieces in plain C. */
#include <stdlib.h>
#include <string.h>

#include "str.h"

char *
ph_strndup(const char *s, size_t n)
{
	const char *e = memchr(s, '\0', n);
	size_t len = e != NULL ? (size_t)(e - s) : n;
	char *d = malloc(len + 1);

	if (d == NULL)
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}
