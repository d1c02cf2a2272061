/* SPDX-License-Identifier: ISC */
/* Escaping of text that came from a peer (names, messages) before it is
 * shown: control bytes, backslashes and invalid UTF-8 become \\xNN, so a
 * hostile name cannot drive a terminal. (Windows: a backslash, its path
 * separator, stays as it is.) Core: every part may use it. */
#ifndef PH_ESCAPE_H
#define PH_ESCAPE_H

#include <stddef.h>

/* Writes s into buf (always terminated, cut to fit len). */
void ph_escape(char *buf, size_t len, const char *s);

#endif
