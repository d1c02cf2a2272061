/* SPDX-License-Identifier: ISC */
/* Names Windows cannot hold (winname.h): the rules Windows applies when it
 * parses a path, kept here as one table so every OS reports the same. */
#include <stddef.h>
#include <string.h>

#include "winname.h"

static int
upper(int c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* 1 when the n bytes at s spell word, ignoring ASCII case. */
static int
same(const char *s, size_t n, const char *word)
{
	size_t i;

	if (strlen(word) != n)
		return 0;
	for (i = 0; i < n; i++)
		if (upper((unsigned char)s[i]) != word[i])
			return 0;
	return 1;
}

/* 1 when the name's base (before its first dot, trailing spaces dropped:
 * "nul .txt" is NUL too) is a device Windows reserves in every folder. */
static int
reserved(const char *name, size_t len)
{
	static const char *const devices[] = { "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$" };
	/* COM and LPT with a digit 1-9, or the superscripts ¹ ² ³ (UTF-8). */
	static const char *const sups[] = { "\xc2\xb9", "\xc2\xb2", "\xc2\xb3" };
	const char *dot = memchr(name, '.', len);
	size_t n = dot ? (size_t)(dot - name) : len, i;

	while (n > 0 && name[n - 1] == ' ')
		n--;
	/* Every device name is 3 (CON) to 7 (CONOUT$) bytes and begins with
	 * one of these letters: a pull asks this of every listed name, and
	 * most are answered here. */
	if (n < 3 || n > 7 || strchr("CPANL", upper((unsigned char)name[0])) == NULL)
		return 0;
	for (i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
		if (same(name, n, devices[i]))
			return 1;
	if (n < 4 || !(same(name, 3, "COM") || same(name, 3, "LPT")))
		return 0;
	if (n == 4 && name[3] >= '1' && name[3] <= '9')
		return 1;
	for (i = 0; i < sizeof(sups) / sizeof(sups[0]); i++)
		if (n == 5 && memcmp(name + 3, sups[i], 2) == 0)
			return 1;
	return 0;
}

enum ph_winname
ph_winname_check_n(const char *name, size_t n)
{
	/* The characters Windows forbids below 0x80 besides the controls (a
	 * table: a pull asks this of every name of a phone's listing). */
	static const unsigned char bad[128] = {
		['<'] = 1, ['>'] = 1, [':'] = 1, ['"'] = 1, ['|'] = 1, ['?'] = 1, ['*'] = 1,
		['\\'] = 1, ['/'] = 1,
	};
	size_t i;

	if (n == 0 || (n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
		return PH_WINNAME_EMPTY;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || (c < 0x80 && bad[c]))
			return PH_WINNAME_CHAR;
	}
	if (name[n - 1] == '.' || name[n - 1] == ' ')
		return PH_WINNAME_TRAILING;
	if (reserved(name, n))
		return PH_WINNAME_RESERVED;
	return PH_WINNAME_OK;
}

enum ph_winname
ph_winname_check(const char *name)
{
	return ph_winname_check_n(name, strlen(name));
}

const char *
ph_winname_why(enum ph_winname why)
{
	switch (why) {
	case PH_WINNAME_OK: return "a name Windows can hold";
	case PH_WINNAME_EMPTY: return "an empty name, \".\" or \"..\"";
	case PH_WINNAME_RESERVED: return "a name Windows reserves for a device (CON, NUL, COM1...)";
	case PH_WINNAME_TRAILING: return "a name ending with a dot or a space";
	case PH_WINNAME_CHAR: return "a character Windows forbids in names (<>:\"|?*\\ or a control character)";
	}
	return "a name Windows cannot hold";
}
