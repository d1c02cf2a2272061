/* SPDX-License-Identifier: ISC */
/* platform/winname.c: which phone names a Windows folder cannot hold (a pull
 * on Windows reports and skips them). A pure function: run on Linux and as
 * test_winname.exe under Wine, the same checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "winname.h"

static void
expect(const char *const *names, size_t n, enum ph_winname why)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (ph_winname_check(names[i]) != why)
			fail_msg("\"%s\": %d, expected %d", names[i], (int)ph_winname_check(names[i]),
			         (int)why);
	}
}

#define EXPECT(list, why) expect(list, sizeof(list) / sizeof(list[0]), why)

static void
test_ordinary_names(void **state)
{
	static const char *const ok[] = {
		"IMG_0001.JPG", "a", ".hidden", "..double", "a.b.c", "name with spaces.txt",
		"caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80", "#[]{};',=+~`!@$%^&()",
		/* near the reserved names, but not them */
		"CONSOLE", "CON1", "NULL", "nul_", "COM", "COM0", "COM10", "LPT", "LPT0", "AUXX",
		"xCON", "CON-1.txt", "COM\xc2\xb4", "\x7f", "a. b", " leading", "dot.in.middle",
	};

	(void)state;
	EXPECT(ok, PH_WINNAME_OK);
}

static void
test_reserved_devices(void **state)
{
	static const char *const bad[] = {
		"CON", "con", "Con", "PRN", "AUX", "NUL", "nul.txt", "NUL.tar.gz", "COM1", "com9",
		"LPT1", "lpt9.log", "COM\xc2\xb9", "LPT\xc2\xb2", "com\xc2\xb3.txt", "CONIN$",
		"conout$", "NUL .txt", "aux  .c",
	};

	(void)state;
	EXPECT(bad, PH_WINNAME_RESERVED);
}

static void
test_trailing_dot_or_space(void **state)
{
	static const char *const bad[] = { "name.", "name ", "a. ", "a .", "...", "   ", "con." };

	(void)state;
	EXPECT(bad, PH_WINNAME_TRAILING);
}

static void
test_forbidden_characters(void **state)
{
	static const char *const bad[] = {
		"a<b", "a>b", "a:b", "C:", "a\"b", "a|b", "what?", "*", "a\\b", "a/b", "tab\there",
		"nl\n", "\x01", "\x1f", "stream.txt:$DATA", "NUL:",
	};

	(void)state;
	EXPECT(bad, PH_WINNAME_CHAR);
}

static void
test_empty_and_dots(void **state)
{
	static const char *const bad[] = { "", ".", ".." };
	enum ph_winname w;

	(void)state;
	EXPECT(bad, PH_WINNAME_EMPTY);
	/* Every reason reads as a phrase. */
	for (w = PH_WINNAME_OK; w <= PH_WINNAME_CHAR; w++)
		assert_true(strlen(ph_winname_why(w)) > 10);
}

/* A path's component, checked where it lies (no NUL after it): only its
 * own n bytes count. */
static void
test_component_of_a_path(void **state)
{
	(void)state;
	assert_int_equal(ph_winname_check_n("CON/x.jpg", 3), PH_WINNAME_RESERVED);
	assert_int_equal(ph_winname_check_n("CONx/y", 4), PH_WINNAME_OK);
	assert_int_equal(ph_winname_check_n("nul .txt/z", 8), PH_WINNAME_RESERVED);
	assert_int_equal(ph_winname_check_n("ab:c", 2), PH_WINNAME_OK);
	assert_int_equal(ph_winname_check_n("ab:c", 3), PH_WINNAME_CHAR);
	assert_int_equal(ph_winname_check_n("dir./f", 4), PH_WINNAME_TRAILING);
	assert_int_equal(ph_winname_check_n("../x", 2), PH_WINNAME_EMPTY);
	assert_int_equal(ph_winname_check_n("COM1.txt", 4), PH_WINNAME_RESERVED);
	assert_int_equal(ph_winname_check_n("COM12", 5), PH_WINNAME_OK);
	assert_int_equal(ph_winname_check_n("LPT\xc2\xb9.log", 8), PH_WINNAME_RESERVED);
	assert_int_equal(ph_winname_check_n("a\x01b", 3), PH_WINNAME_CHAR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordinary_names),
		cmocka_unit_test(test_reserved_devices),
		cmocka_unit_test(test_trailing_dot_or_space),
		cmocka_unit_test(test_forbidden_characters),
		cmocka_unit_test(test_empty_and_dots),
		cmocka_unit_test(test_component_of_a_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
