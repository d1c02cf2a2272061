/* SPDX-License-Identifier: ISC */
/* Small string pieces the C libraries lack somewhere (Windows' has no
 * strndup). Core: plain C. */
#ifndef PH_STR_H
#define PH_STR_H

#include <stddef.h>

/* The first n bytes of s (fewer at its end) as a new string, or NULL when
 * out of memory: strndup. */
char *ph_strndup(const char *s, size_t n);

#endif
