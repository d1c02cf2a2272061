/* SPDX-License-Identifier: ISC */
/* Names a Windows folder cannot hold (docs/WINDOWS.md, section 9). A pure
 * function, the same on every OS, so the rule is tested on Linux too: on
 * Windows a pull reports such a phone name and skips it, never writing it
 * under another name; a push keeps the phone's names as they are. */
#ifndef PH_WINNAME_H
#define PH_WINNAME_H

#include <stddef.h>

enum ph_winname {
	PH_WINNAME_OK = 0,
	PH_WINNAME_EMPTY,     /* "", ".", ".." */
	PH_WINNAME_RESERVED,  /* CON, PRN, AUX, NUL, COM1-9, LPT1-9 (also ¹²³),
	                       * CONIN$, CONOUT$; any case, any extension */
	PH_WINNAME_TRAILING,  /* ends with a dot or a space */
	PH_WINNAME_CHAR,      /* < > : " | ? * \ or a control character */
};

/* Whether name (one path component, UTF-8) can be a file or folder name on
 * Windows: PH_WINNAME_OK or why not. */
enum ph_winname ph_winname_check(const char *name);
/* The same for the n bytes at name (a path's component, no copy). */
enum ph_winname ph_winname_check_n(const char *name, size_t n);

/* The reason as a phrase for the report ("a name reserved for a device"). */
const char *ph_winname_why(enum ph_winname why);

#endif
