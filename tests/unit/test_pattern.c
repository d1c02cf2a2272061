/* SPDX-License-Identifier: ISC */
/* core/pattern.h, the filters' shell patterns: a table of patterns and names
 * with the answers glibc's fnmatch gives in the C locale (checked against
 * fnmatch itself where the C library has it, and as written everywhere, so
 * the Windows build under Wine checks the same answers), then, where
 * fnmatch exists, 400,000 generated patterns and names compared with it
 * (ill-formed brackets included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#if defined(__has_include)
#if __has_include(<fnmatch.h>)
#include <fnmatch.h>
#define HAVE_FNMATCH 1
#endif
#endif

#include "pattern.h"

struct row {
	const char *pat, *name;
	int flags, match;
};

#define P PH_PATTERN_PATHNAME
static const struct row table[] = {
	{ "*.jpg", "a.jpg", 0, 1 },
	{ "*.jpg", "a.jpeg", 0, 0 },
	{ "*.jpg", ".jpg", 0, 1 },          /* no FNM_PERIOD: a dot is a byte */
	{ "*", "", 0, 1 },
	{ "?", "", 0, 0 },
	{ "?", "\xc3\xa9", 0, 0 },         /* '?' is one byte, not one character */
	{ "??", "\xc3\xa9", 0, 1 },
	{ "a*b", "a/x/b", 0, 1 },
	{ "a*b", "a/x/b", P, 0 },
	{ "a/*/b", "a/x/b", P, 1 },
	{ "a/*", "a/x/b", P, 0 },
	{ "a/*", "a/x/b", 0, 1 },
	{ "DCIM/**/x", "DCIM/1/2/x", 0, 1 },
	{ "a?b", "a/b", P, 0 },
	{ "a?b", "a/b", 0, 1 },
	{ "a[/]b", "a/b", P, 0 },
	{ "a[/]b", "a/b", 0, 1 },
	{ "a\\/b", "a/b", P, 1 },
	{ "*\\/b", "a/b", P, 0 },           /* glibc: a '*' looks for an escaped '/' before the '/' */
	{ "*/b", "a/b", P, 1 },
	{ "\\*", "*", 0, 1 },
	{ "\\*", "a", 0, 0 },
	{ "a\\", "a\\", 0, 0 },             /* a trailing '\\' matches nothing */
	{ "[abc]", "b", 0, 1 },
	{ "[!abc]", "b", 0, 0 },
	{ "[^abc]", "d", 0, 1 },
	{ "[a-c]x", "bx", 0, 1 },
	{ "[c-a]", "b", 0, 0 },
	{ "[]a]", "]", 0, 1 },
	{ "[!]a]", "]", 0, 0 },
	{ "[a-]", "-", 0, 1 },
	{ "[a-", "[a-", 0, 0 },             /* an unfinished range: ill-formed */
	{ "[", "[", 0, 1 },                 /* no ']': a plain '[' */
	{ "[ab", "[ab", 0, 1 },
	{ "x[", "x", 0, 0 },
	{ "[]", "[]", 0, 1 },
	{ "[[:alpha:]]", "Q", 0, 1 },
	{ "[[:alpha:]]", "\xc3", 0, 0 },   /* classes are ASCII in the C locale */
	{ "[[:digit:][:upper:]]", "7", 0, 1 },
	{ "[[:punct:]]", "_", 0, 1 },
	{ "[[:space:]]", "\v", 0, 1 },
	{ "[[:xdigit:]]", "g", 0, 0 },
	{ "[![:alpha:]]", "1", 0, 1 },
	{ "[[:nope:]]", "n", 0, 0 },        /* an unknown class: ill-formed */
	{ "[![:nope:]]", "1", 0, 0 },
	{ "[[:alpha]", "a", 0, 1 },         /* no ":]": plain bytes */
	{ "[[=a=]]", "a", 0, 1 },
	{ "[[=a=]b]", "b", 0, 1 },
	{ "[a[=b]", "b", 0, 1 },            /* glibc: "[=b]" is no class, so plain bytes... */
	{ "[a[=b]", "a", 0, 0 },            /* ...but ill-formed once 'a' matched */
	{ "[[.a.]]", "a", 0, 1 },
	{ "[[.a.]-c]", "b", 0, 1 },
	{ "[[.ab.]]", "a", 0, 0 },          /* a multi-byte collating name: ill-formed */
	{ "[a-[.c.]]", "b", 0, 1 },
	{ "[\\]]", "]", 0, 1 },
	{ "[a\\-c]", "b", 0, 0 },
	{ "[a\\-c]", "-", 0, 1 },
	{ "[\\", "[\\", 0, 0 },
	{ "[[:", "[[:", 0, 1 },             /* no ']' after a matching '[': plain bytes */
	{ "[a[:b", "[a[:b", 0, 1 },
	{ "[[[=b", "[[[=b", 0, 0 },         /* ...but an unfinished "[=b" is ill-formed */
	{ "[[[:nope:]]", "[", 0, 1 },       /* a class after the match is not looked up */
	{ "\xc3\xa9*", "\xc3\xa9t\xc3\xa9", 0, 1 },
	{ "[\x80-\xff]", "\xc3", 0, 1 },
	{ "*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaa", 0, 0 },
	{ "*[ab]", "xxb", P, 1 },
	{ "*?", "", 0, 0 },
	{ "*?x", "ax", 0, 1 },
	{ "**", "a/b", P, 0 },
	{ "**", "a/b", 0, 1 },
};
#undef P

static void
test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct row *r = &table[i];
		int got = ph_pattern_match(r->pat, r->name, r->flags);

		if (got != r->match)
			print_error("row %u: \"%s\" against \"%s\" (flags %d): %d, want %d\n", (unsigned)i,
			            r->pat, r->name, r->flags, got, r->match);
		assert_int_equal(got, r->match);
#ifdef HAVE_FNMATCH
		assert_int_equal(fnmatch(r->pat, r->name, r->flags ? FNM_PATHNAME : 0) == 0,
		                 r->match);
#endif
	}
}

#ifdef HAVE_FNMATCH
static uint64_t seed = 0x9e3779b97f4a7c15u;

static unsigned
draw(unsigned n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (unsigned)(seed % n);
}

/* Pieces patterns are made of, well and ill formed. */
static const char *const pat_bits[] = {
	"a", "b", "A", "0", ".", "/", "-", "]", "[", "!", "^", "\\", "*", "?", ":", "=", "z",
	"\xc3", "\xa9", "[a-c]", "[!a]", "[]", "[[:alpha:]]", "[[:digit:]", "[:", ":]", "[=a=]",
	"[=", "[.a.]", "[.", ".]", "[[:nope:]]", "**", "\\*", "\\[", "\\/", "-]", "a-", "[a-",
	"[\\", "[!]", "[^]", "[]-a]", "[a-z]", "[!a-z]", "[[.-.]-z]", "[a-[.z.]]", "[[.a.]-]",
	"[[=]=]]", "[a\\-z]", "/*", "*/", "[/]", "?/", "[![:combining:]]",
};
/* Bytes names are made of. */
static const char name_bits[] = "abzA0./-][!^\\*?:=\xc3\xa9 ";

/* A pattern of 1 to 7 pieces into pat, and into name either random bytes
 * or the pattern itself with some bytes dropped or changed (so that about
 * one pair in twenty matches). */
static void
make_pair(char *pat, char *name)
{
	unsigned k, n = 1 + draw(7), j = 0;
	size_t len;

	pat[0] = '\0';
	for (k = 0; k < n; k++)
		strcat(pat, pat_bits[draw(sizeof(pat_bits) / sizeof(pat_bits[0]))]);
	if (draw(2)) {
		len = strlen(pat) > 36 ? 36 : strlen(pat);
		for (k = 0; k < len; k++) {
			unsigned d = draw(6);

			if (d == 1)
				name[j++] = name_bits[draw(sizeof(name_bits) - 1)];
			else if (d > 1)
				name[j++] = pat[k];
		}
	} else {
		for (n = draw(8); j < n; j++)
			name[j] = name_bits[draw(sizeof(name_bits) - 1)];
	}
	name[j] = '\0';
}

static void
test_against_fnmatch(void **state)
{
	char pat[128], name[48];
	unsigned i, k, bad = 0, matched = 0;

	(void)state;
	for (i = 0; i < 200000; i++) {
		make_pair(pat, name);
		for (k = 0; k < 2; k++) {
			int want = fnmatch(pat, name, k ? FNM_PATHNAME : 0) == 0;
			int got = ph_pattern_match(pat, name, k ? PH_PATTERN_PATHNAME : 0);

			matched += want;
			if (got != want && bad++ < 20)
				print_error("\"%s\" against \"%s\" (%s): %d, fnmatch %d\n", pat, name,
				            k ? "FNM_PATHNAME" : "0", got, want);
		}
	}
	assert_int_equal(bad, 0);
	/* The pairs are not all misses: the check has teeth. */
	print_message("%u of %u pairs match\n", matched, 2 * i);
	assert_true(matched > 10000);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
#ifdef HAVE_FNMATCH
		cmocka_unit_test(test_against_fnmatch),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
