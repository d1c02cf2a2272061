/* SPDX-License-Identifier: ISC */
/* pattern.h: fnmatch's rules in the C locale, written for phsync so that a
 * filter matches the same names on every OS. The quirks of ill-formed
 * bracket expressions are kept too (test_pattern.c checks them against
 * glibc), so no filter a user wrote changes meaning. */
#include <stddef.h>
#include <string.h>

#include "pattern.h"

/* A bracket expression's answer for one byte. */
enum { BR_NO, BR_YES, BR_FAIL, BR_LITERAL };
/* The longest class name looked at ("[:name:]"). */
#define CLASS_MAX 256

/* Whether the byte ch is in the C locale's class name[len]: 1, 0, or -1
 * for a name that is no class. */
static int
class_has(const char *name, size_t len, unsigned char ch)
{
	int upper = ch >= 'A' && ch <= 'Z', lower = ch >= 'a' && ch <= 'z';
	int digit = ch >= '0' && ch <= '9', graph = ch > ' ' && ch < 127;
	static const char *const names[] = { "alnum", "alpha", "blank", "cntrl", "digit", "graph",
	                                     "lower", "print", "punct", "space", "upper", "xdigit" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			break;
	}
	switch (i) {
	case 0: return upper || lower || digit;
	case 1: return upper || lower;
	case 2: return ch == ' ' || ch == '\t';
	case 3: return ch < ' ' || ch == 127;
	case 4: return digit;
	case 5: return graph;
	case 6: return lower;
	case 7: return graph || ch == ' ';
	case 8: return graph && !upper && !lower && !digit;
	case 9: return ch == ' ' || (ch >= '\t' && ch <= '\r');
	case 10: return upper;
	case 11: return digit || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
	default: return -1;
	}
}

/* A "[.c.]" at p ('.' after the '['): its one byte in *ch and p past it;
 * NULL when it is unfinished or names more than one byte. */
static const char *
collating(const char *p, unsigned char *ch)
{
	const char *s = p;
	size_t n = 0;

	for (;;) {
		char c = *++p;

		if (c == '.' && p[1] == ']')
			break;
		if (c == '\0')
			return NULL;
		n++;
	}
	if (n != 1)
		return NULL;
	*ch = (unsigned char)s[1];
	return p + 2;
}

/* After a matching element: the rest of the expression up to its ']',
 * checked as fnmatch checks it. Returns BR_YES with *pp past the ']',
 * BR_LITERAL when there is no ']' (fnmatch then takes the '[' as a plain
 * byte), or BR_FAIL when the expression is ill-formed. */
static int
skip_rest(const char **pp)
{
	const char *p = *pp;
	char c;

	do {
		c = *p++;
		if (c == '\0')
			return BR_LITERAL;
		if (c == '\\') {
			if (*p == '\0')
				return BR_FAIL;
			p++;
		} else if (c == '[' && *p == ':') {
			const char *s = p;
			size_t n = 0;

			for (;;) {
				char k = *++p;

				if (++n == CLASS_MAX)
					return BR_FAIL;
				if (k == ':' && p[1] == ']') {
					p += 2;
					break;
				}
				if (k < 'a' || k >= 'z') {
					p = s;   /* not a class: the '[' was a plain byte */
					break;
				}
			}
		} else if (c == '[' && *p == '=') {
			if (p[1] == '\0' || p[2] != '=' || p[3] != ']')
				return BR_FAIL;
			p += 4;
		} else if (c == '[' && *p == '.') {
			for (;;) {
				char k = *++p;

				if (k == '\0')
					return BR_FAIL;
				if (k == '.' && p[1] == ']')
					break;
			}
			p += 2;
		}
	} while (c != ']');
	*pp = p;
	return BR_YES;
}

/* "[:name:]" at p (the ':'): 1 or 0 for fn with p past it, -1 (BR_FAIL)
 * for an unknown or overlong name, or 2 when it is no class at all (the
 * '[' is then a plain byte, p unchanged). */
static int
class_at(const char **pp, unsigned char fn)
{
	const char *p = *pp, *s = p + 1;
	size_t n = 0;
	int r;

	for (;;) {
		char k;

		if (n == CLASS_MAX)
			return -1;
		k = *++p;
		if (k == ':' && p[1] == ']')
			break;
		if (k < 'a' || k >= 'z')
			return 2;
		n++;
	}
	if ((r = class_has(s, n, fn)) < 0)
		return -1;
	*pp = p + 2;
	return r;
}

/* One element that is not a class or an equivalence class, with the
 * range it may start: c is its first byte (already read), collsym says
 * that it is a "[.c.]" (*pp at its '.'), else *pp is the pattern after c.
 * Returns 1 when fn is in it (*pp then just past it, where fnmatch goes on
 * checking the rest), 0 when not (*cp the byte after it, *pp past that
 * byte), -1 ill-formed. */
static int
element(unsigned char c, int collsym, const char **pp, unsigned char fn, unsigned char *cp)
{
	const char *p = *pp;
	unsigned char lo = c, hi;
	int in_range;

	if (collsym) {
		if ((p = collating(p, &lo)) == NULL)
			return -1;
		in_range = *p == '-' && p[1] != '\0';
	} else {
		in_range = *p == '-' && p[1] != '\0' && p[1] != ']';
	}
	if (!in_range && lo == fn) {
		*pp = p;
		return 1;
	}
	c = (unsigned char)*p++;
	if (c == '-' && *p != ']') {
		hi = (unsigned char)*p++;
		if (hi == '[' && *p == '.') {
			if ((p = collating(p, &hi)) == NULL)
				return -1;
		} else {
			if (hi == '\\')
				hi = (unsigned char)*p++;
			if (hi == '\0')
				return -1;
		}
		if (lo <= fn && fn <= hi) {
			*pp = p;
			return 1;
		}
		c = (unsigned char)*p++;
	}
	*pp = p;
	*cp = c;
	return 0;
}

/* The bracket expression after a '[' (*pp) against the byte fn: BR_YES or
 * BR_NO with *pp past its ']', BR_FAIL when ill-formed, BR_LITERAL when it
 * has no ']' (the '[' is then a plain byte). */
static int
bracket(const char **pp, unsigned char fn)
{
	const char *p = *pp;
	unsigned char c;
	int neg = 0, r;

	if (*p == '!' || *p == '^') {
		neg = 1;
		p++;
	}
	c = (unsigned char)*p++;
	for (;;) {
		if (c == '\0')
			return BR_LITERAL;
		if (c == '\\') {
			if (*p == '\0')
				return BR_FAIL;
			c = (unsigned char)*p++;
			r = element(c, 0, &p, fn, &c);
		} else if (c == '[' && *p == ':' && (r = class_at(&p, fn)) != 2) {
			if (r == 0)
				c = (unsigned char)*p++;
		} else if (c == '[' && *p == '=' && p[1] != '\0' && p[2] == '=' && p[3] == ']') {
			r = (unsigned char)p[1] == fn;
			p += 4;
			if (r == 0)
				c = (unsigned char)*p++;
		} else {
			r = element(c, c == '[' && *p == '.', &p, fn, &c);
		}
		if (r < 0)
			return BR_FAIL;
		if (r == 1) {
			if ((r = skip_rest(&p)) != BR_YES)
				return r;
			*pp = p;
			return neg ? BR_NO : BR_YES;
		}
		if (c == ']')
			break;
	}
	*pp = p;
	return neg ? BR_YES : BR_NO;
}

static int match(const char *p, const char *n, int path);

/* A '*' (p after it) against n: the run of '*' and '?' it starts, then
 * every place the rest of the pattern may begin (before the next '/' with
 * PH_PATTERN_PATHNAME). */
static int
star(const char *p, const char *n, int path)
{
	const char *end;
	unsigned char c, lit;

	for (c = (unsigned char)*p++; c == '?' || c == '*'; c = (unsigned char)*p++) {
		if (c == '?') {
			if (*n == '\0' || (path && *n == '/'))
				return 0;
			n++;
		}
	}
	if (c == '\0')
		return !path || strchr(n, '/') == NULL;
	end = path ? strchr(n, '/') : NULL;
	if (end == NULL)
		end = n + strlen(n);
	if (c == '/' && path)
		return *end == '/' && match(p, end + 1, path);
	/* Only where the next byte can match: a bracket anywhere, a plain
	 * byte where it is. */
	lit = c == '\\' ? (unsigned char)*p : c;
	for (; n < end; n++) {
		if ((c == '[' || (unsigned char)*n == lit) && match(p - 1, n, path))
			return 1;
	}
	return 0;
}

static int
match(const char *p, const char *n, int path)
{
	unsigned char c;
	const char *q;
	int r;

	for (;; n++) {
		c = (unsigned char)*p++;
		switch (c) {
		case '\0':
			return *n == '\0';
		case '?':
			if (*n == '\0' || (path && *n == '/'))
				return 0;
			break;
		case '*':
			return star(p, n, path);
		case '[':
			if (*n == '\0' || (path && *n == '/'))
				return 0;
			q = p;
			r = bracket(&q, (unsigned char)*n);
			if (r == BR_LITERAL) {
				if (*n != '[')
					return 0;
			} else if (r != BR_YES) {
				return 0;
			} else {
				p = q;
			}
			break;
		case '\\':
			c = (unsigned char)*p++;
			if (c == '\0')
				return 0;
			/* fall through */
		default:
			if ((unsigned char)*n != c)
				return 0;
			break;
		}
	}
}

int
ph_pattern_match(const char *pat, const char *name, int flags)
{
	return match(pat, name, (flags & PH_PATTERN_PATHNAME) != 0);
}
