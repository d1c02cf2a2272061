/* SPDX-License-Identifier: ISC */
/* phsync.conf's own INI reader (src/watch/inird.c, the Windows build's,
 * where libinih cannot be had) against libinih itself: both read the same
 * files, and every call (section, name, value, in order) and the result
 * (0, or the first line in error) must be the same. A table of the cases
 * phsync.conf and its mistakes give, then 6,000 generated files built
 * from the characters the rules turn on. On Linux only: the Windows build
 * has no libinih to compare with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <ini.h>

#include "inird.h"

#define LOG_MAX 65536

/* What a reader was called with, one "section\x1fname\x1fvalue\n" a call. */
struct log {
	char text[LOG_MAX];
	size_t len;
	int calls;
};

static int
record(void *user, const char *section, const char *name, const char *value)
{
	struct log *l = user;
	int n = snprintf(l->text + l->len, LOG_MAX - l->len, "%s\x1f%s\x1f%s\n", section, name,
	                 value);

	if (n > 0 && l->len + (size_t)n < LOG_MAX)
		l->len += (size_t)n;
	l->calls++;
	/* As conf.c's on_line refuses an unknown key: "bad" is an error. */
	return strcmp(name, "bad") != 0;
}

static char path[64];

/* s (len bytes) on stderr, with every byte that is not plain ASCII as \xHH. */
static void
show(const char *what, const char *s, size_t len)
{
	size_t i;

	fprintf(stderr, "%s: ", what);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			fputs("\\n\n  ", stderr);
		else if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(stderr, "\\x%02x", c);
		else
			fputc(c, stderr);
	}
	fputc('\n', stderr);
}

static void
compare(const char *text, size_t len, int want)
{
	struct log a, b;
	FILE *f = fopen(path, "wb");
	int ra, rb;

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ra = ini_parse(path, record, &a);
	rb = ph_ini_parse(path, record, &b);
	if (ra != rb || a.calls != b.calls || strcmp(a.text, b.text) != 0) {
		show("input", text, len);
		fprintf(stderr, "libinih %d, own %d\n", ra, rb);
		show("libinih", a.text, a.len);
		show("own", b.text, b.len);
		fail();
	}
	if (want != -2 && rb != want) {
		show("input", text, len);
		fprintf(stderr, "both %d, not %d\n", rb, want);
		fail();
	}
}

static void
same(const char *text, int want)
{
	compare(text, strlen(text), want);
}

static void
test_table(void **state)
{
	(void)state;
	/* A whole phsync.conf, with both kinds of comment and [defaults]. */
	same("; phsync.conf\n# another comment\ninterval = 60\n\n[defaults]\nexclude = *.tmp\n"
	     "[photos]\ndirection = pull\nremote = phone:/sdcard/DCIM\nlocal = ~/Pictures\n"
	     "exclude = .thumbnails/\n", 0);
	/* White space, tabs, CRLF, inline comments (only after white space). */
	same("[a]\r\n  \tkey\t=\tvalue with  spaces \t\r\nk2 = v ; comment\nk3 = v;not\n"
	     "k4 =; x\nk5 = ;x\nk6=\nk7 = a ;b ;c\n", 0);
	/* ':' as the separator, '=' in a value, the first separator wins. */
	same("[a]\nk: v\nk = a=b\nk: a=b\nk = a:b\n", 0);
	/* A section: inline comment, ']' inside, unclosed, empty, long. */
	same("[a] ; c\nk = 1\n[b ;c]\nk = 2\n[c\nk = 3\n[]\nk = 4\n[d]e\nk = 5\n", 3);
	same("[0123456789012345678901234567890123456789012345678901234567890123]\nk = v\n", 0);
	/* A name longer than 49 bytes, kept whole for its own line, cut for
	 * the continuation. */
	same("[a]\nn01234567890123456789012345678901234567890123456789012345 = v\n  more\n", 0);
	/* Continuation lines, and where they are not (after a section, before
	 * any setting). */
	same("  lead = x\n[a]\n  k = v\nk = v\n  cont ; c\n\tcont2\n[b]\n  k = w\n", 0);
	/* Errors: no separator, the handler refusing, the first line counted. */
	same("[a]\nno separator\nk = v\nbad = 1\n", 2);
	same("[a]\nbad = 1\nno separator\n", 2);
	same("[a]\nk = v\n  bad\n", 0);
	/* A byte order mark skipped on the first line only (later, part of a name). */
	same("\xef\xbb\xbf[a]\nk = v\n\xef\xbb\xbfk = w\n", 0);
	same("\xef\xbb\xbf  k = v\n", 0);
	/* No newline at the end; an empty file; only comments. */
	same("[a]\nk = v", 0);
	same("", 0);
	same(";\n#\n;;\n", 0);
	/* Lines longer than the 200-byte buffer: the rest is the next line. */
	{
		char buf[1200];
		int n;

		n = snprintf(buf, sizeof(buf), "[a]\nlocal = %0240d\nk = v\n", 7);
		compare(buf, (size_t)n, -2);
		n = snprintf(buf, sizeof(buf), "[a]\nk = %0191d  = x\n", 7);
		compare(buf, (size_t)n, -2);
		n = snprintf(buf, sizeof(buf), "[a]\nk = %0190d   ; tail\nj = 1\n", 7);
		compare(buf, (size_t)n, -2);
		memset(buf, 'x', 1000);
		memcpy(buf, "k = ", 4);
		compare(buf, 1000, -2);
	}
	/* A NUL byte inside a line. */
	compare("[a]\nk = v\0w\nj = 1\n", 17, 0);
}

/* Files made of the characters the rules turn on, lines of every length. */
static void
test_generated(void **state)
{
	static const char *const bits[] = {
		"[", "]", "=", ":", ";", "#", " ", "\t", "\r", "\n", "\n", "\n", "\n",
		"k", "v", "bad", "a", "\xef\xbb\xbf", "[s]", "k = v", " ; c", "\0",
	};
	char buf[1024];
	uint32_t x = 12345;
	int i;

	(void)state;
	for (i = 0; i < 6000; i++) {
		size_t len = 0, want;

		x = x * 1103515245u + 12345u;
		want = (x >> 8) % (i % 10 == 0 ? 900 : 120);
		while (len < want) {
			const char *b;
			size_t n;

			x = x * 1103515245u + 12345u;
			b = bits[(x >> 16) % (sizeof(bits) / sizeof(bits[0]))];
			n = b[0] ? strlen(b) : 1;
			if ((x >> 4) % 16 == 0) { /* a long run of one letter */
				n = (x >> 20) % 300;
				if (len + n > sizeof(buf))
					break;
				memset(buf + len, 'y', n);
			} else {
				if (len + n > sizeof(buf))
					break;
				memcpy(buf + len, b, n);
			}
			len += n;
		}
		compare(buf, len, -2);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_generated),
	};
	const char *tmp = getenv("TMPDIR");
	int fd, rc;

	snprintf(path, sizeof(path), "%s/inirdXXXXXX", tmp != NULL && strlen(tmp) < 40 ? tmp : "/tmp");
	if ((fd = mkstemp(path)) < 0)
		return 1;
	close(fd);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}
