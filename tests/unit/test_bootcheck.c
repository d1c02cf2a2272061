/* SPDX-License-Identifier: ISC */
/* The bootstrap's start-up script and the judging of its report
 * (src/session/bootcheck.c): `ls -lnd` lines of GNU ls, busybox and toybox,
 * the folder rules (owner, symlink, group/other write, ACL mask), the
 * cached file's rules, the command's quoting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bootcheck.h"

static void
test_ls_lines(void **state)
{
	struct ph_boot_ent e;

	(void)state;
	/* GNU ls (a SELinux dot), busybox (padded), toybox (ISO dates). */
	assert_int_equal(ph_boot_parse_ls("drwx------. 2 10123 10123 4096 Nov 25 14:22 .cache", &e), 0);
	assert_true(e.present);
	assert_int_equal(e.type, 'd');
	assert_string_equal(e.mode, "drwx------");
	assert_int_equal(e.uid, 10123);
	assert_int_equal(ph_boot_parse_ls("-rwx------    1 0        0           812345 Nov 25 14:22 "
	                                  ".cache/phsync/phsync-helper-0.1.0-aarch64", &e), 0);
	assert_int_equal(e.type, '-');
	assert_int_equal(e.size, 812345);
	assert_int_equal(ph_boot_parse_ls("lrwxrwxrwx 1 0 0 9 2026-11-25 14:22 .cache/phsync -> /tmp/evil",
	                                  &e), 0);
	assert_int_equal(e.type, 'l');
	assert_int_equal(ph_boot_parse_ls("drwxrwx---+ 2 0 0 4096 Nov 25 14:22 .", &e), 0);
	assert_string_equal(e.mode, "drwxrwx---");
	assert_int_equal(ph_boot_parse_ls("-", &e), 0);
	assert_false(e.present);
	/* Not ls: refused, never half read. */
	assert_int_equal(ph_boot_parse_ls("", &e), -1);
	assert_int_equal(ph_boot_parse_ls("ls: .cache: No such file or directory", &e), -1);
	assert_int_equal(ph_boot_parse_ls("drwx------ 2 root root 4096 Nov 25 .", &e), -1);
	assert_int_equal(ph_boot_parse_ls("drwx------ 2 0 0", &e), -1);
	assert_int_equal(ph_boot_parse_ls("drwx--?--- 2 0 0 4096 Nov 25 .", &e), -1);
	assert_int_equal(ph_boot_parse_ls("drwx------ 2 99999999999999999999 0 4096 Nov 25 .", &e), -1);
	assert_int_equal(ph_boot_parse_ls("drwx------ 2 -1 0 4096 Nov 25 .", &e), -1);
}

static void
test_hello(void **state)
{
	unsigned long long uid = 7;

	(void)state;
	assert_int_equal(ph_boot_parse_hello("phsync-boot 10123", &uid), 0);
	assert_int_equal(uid, 10123);
	assert_int_equal(ph_boot_parse_hello("phsync-boot ", &uid), -1);
	assert_int_equal(ph_boot_parse_hello("phsync-boot 1 2", &uid), -1);
	assert_int_equal(ph_boot_parse_hello("Welcome to Termux!", &uid), -1);
}

static int
dir_rc(phsync_ctx *ctx, const char *line, unsigned long long uid)
{
	struct ph_boot_ent e;

	assert_int_equal(ph_boot_parse_ls(line, &e), 0);
	return ph_boot_check_dir(ctx, "~/.cache/phsync", &e, uid);
}

static void
test_folders(void **state)
{
	phsync_ctx *ctx = NULL;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(dir_rc(ctx, "drwx------ 2 1000 1000 4096 Nov 25 14:22 x", 1000), 0);
	assert_int_equal(dir_rc(ctx, "drwxr-xr-x 2 1000 1000 4096 Nov 25 14:22 x", 1000), 0);
	assert_int_equal(dir_rc(ctx, "-", 1000), 0); /* missing: phsync makes it */
	assert_int_equal(dir_rc(ctx, "drwxrwxrwx 2 1000 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	assert_non_null(strstr(phsync_ctx_error(ctx), "writable by other users (drwxrwxrwx)"));
	assert_non_null(strstr(phsync_ctx_error(ctx), "chmod go-w ~/.cache/phsync"));
	assert_int_equal(dir_rc(ctx, "drwxrwxr-x 2 1000 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	assert_int_equal(dir_rc(ctx, "drwx---rwx 2 1000 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	/* /tmp's sticky bit keeps other users' files apart, not their new ones out. */
	assert_int_equal(dir_rc(ctx, "drwxrwxrwt 2 1000 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	/* An ACL granting someone write shows as the group's w (its mask). */
	assert_int_equal(dir_rc(ctx, "drwxrwx---+ 2 1000 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	assert_int_equal(dir_rc(ctx, "drwx------ 2 65534 1000 4096 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	assert_non_null(strstr(phsync_ctx_error(ctx), "belongs to uid 65534, not to the login user "
	                                              "(uid 1000)"));
	assert_int_equal(dir_rc(ctx, "lrwxrwxrwx 1 1000 1000 9 Nov 25 14:22 x -> /tmp/e", 1000),
	                 PHSYNC_EUNSAFE);
	assert_non_null(strstr(phsync_ctx_error(ctx), "is a symlink"));
	assert_int_equal(dir_rc(ctx, "-rwx------ 1 1000 1000 9 Nov 25 14:22 x", 1000),
	                 PHSYNC_EUNSAFE);
	phsync_ctx_free(ctx);
}

static int
file_ok(const char *line, size_t size)
{
	struct ph_boot_ent e;

	assert_int_equal(ph_boot_parse_ls(line, &e), 0);
	return ph_boot_file_ok(&e, 1000, size);
}

static void
test_cached_file(void **state)
{
	(void)state;
	assert_true(file_ok("-rwx------ 1 1000 1000 5000 Nov 25 14:22 h", 5000));
	assert_true(file_ok("-rwxr-xr-x 1 1000 1000 5000 Nov 25 14:22 h", 0));
	/* Anything else is replaced: */
	assert_false(file_ok("-rwx------ 1 1000 1000 4999 Nov 25 14:22 h", 5000)); /* cut */
	assert_false(file_ok("-rwx---rwx 1 1000 1000 5000 Nov 25 14:22 h", 5000));
	assert_false(file_ok("-rwxrwx--- 1 1000 1000 5000 Nov 25 14:22 h", 5000));
	assert_false(file_ok("-rwx------ 1 0 1000 5000 Nov 25 14:22 h", 5000));
	assert_false(file_ok("-rw------- 1 1000 1000 5000 Nov 25 14:22 h", 5000));
	assert_false(file_ok("lrwxrwxrwx 1 1000 1000 5 Nov 25 14:22 h -> /x", 0));
	assert_false(file_ok("prwx------ 1 1000 1000 0 Nov 25 14:22 h", 0));
	assert_false(file_ok("-", 0));
}

/* What toybox, busybox and GNU stat print for the script's format. */
#define ID "65024 10953351 846600 81c0 10123 2026-11-25 19:46:21.792041776 +0000 " \
           "2026-11-25 19:46:21.792041776 +0000"

static void
test_command(void **state)
{
	char *c;

	(void)state;
	c = ph_boot_command(".cache/phsync/phsync-helper-0.1.0-aarch64", "/sdcard/DCIM/it's", NULL);
	assert_non_null(c);
	assert_int_equal(strncmp(c, "sh -c '", 7), 0);
	/* The script itself holds no quote, no '!' and no newline (csh, fish). */
	{
		const char *end = strchr(c + 7, '\'');

		assert_non_null(end);
		assert_null(memchr(c + 7, '!', (size_t)(end - c - 7)));
		assert_null(memchr(c + 7, '\n', (size_t)(end - c - 7)));
		assert_string_equal(end, "' phsync-boot '.cache/phsync/phsync-helper-0.1.0-aarch64' "
		                         "'/sdcard/DCIM/it'\\''s' 'x'");
	}
	free(c);
	c = ph_boot_command(".cache/phsync/h", "", NULL);
	assert_non_null(c);
	assert_non_null(strstr(c, "' phsync-boot '.cache/phsync/h' '/' 'x'"));
	free(c);
	/* A remembered identity goes as one quoted word; anything but what
	 * stat prints goes as none. */
	c = ph_boot_command(".cache/phsync/h", "/", ID);
	assert_non_null(c);
	assert_non_null(strstr(c, "' phsync-boot '.cache/phsync/h' '/' '" ID "'"));
	free(c);
	c = ph_boot_command(".cache/phsync/h", "/", "1234 5678' ; rm -rf ~ ; '");
	assert_non_null(c);
	assert_non_null(strstr(c, "' phsync-boot '.cache/phsync/h' '/' 'x'"));
	free(c);
	assert_null(ph_boot_command(".cache/phsync/h x", "/", NULL));
	assert_null(ph_boot_command(".cache/phsync/h'", "/", NULL));
	assert_null(ph_boot_command("/abs/h", "/", NULL));
	assert_null(ph_boot_command("-h", "/", NULL));
	assert_null(ph_boot_command("", "/", NULL));
}

/* The script of a first contact: one line with no quote, '!' or newline,
 * case arms only for the helpers offered, the identity only with its
 * architecture offered. */
static void
test_command_first(void **state)
{
	const char *pre = ".cache/phsync/phsync-helper-0.1.0-";
	char *c, *end;

	(void)state;
	c = ph_boot_command_first(pre, "/sdcard/DCIM", 1u | 4u, 1, NULL, NULL);
	assert_non_null(c);
	assert_int_equal(strncmp(c, "sh -c '", 7), 0);
	end = strchr(c + 7, '\'');
	assert_non_null(end);
	assert_null(memchr(c + 7, '!', (size_t)(end - c - 7)));
	assert_null(memchr(c + 7, '\n', (size_t)(end - c - 7)));
	assert_non_null(strstr(c, "command -v phsync"));
	assert_non_null(strstr(c, "aarch64|arm64|armv8b) a=aarch64;; "));
	assert_non_null(strstr(c, "x86_64|amd64) a=x86_64;; "));
	assert_null(strstr(c, "a=armv7"));
	/* The check that follows is the known-copy script's. */
	assert_non_null(strstr(c, "exec 3<\"$1\"; f=/proc/$$/fd/3;"));
	assert_string_equal(end, "' phsync-boot '.cache/phsync/phsync-helper-0.1.0-' "
	                         "'/sdcard/DCIM' 'x' 'x'");
	free(c);
	/* Without the own try; a remembered identity goes with its arch ... */
	c = ph_boot_command_first(pre, "/", 2u, 0, "armv7", ID);
	assert_non_null(c);
	assert_null(strstr(c, "command -v phsync"));
	assert_non_null(strstr(c, "' '/' '" ID "' 'armv7'"));
	free(c);
	/* ... only when that arch is offered and the identity is stat's. */
	c = ph_boot_command_first(pre, "/", 1u, 0, "armv7", ID);
	assert_non_null(strstr(c, "' '/' 'x' 'x'"));
	free(c);
	c = ph_boot_command_first(pre, "/", 2u, 0, "armv7", "1234 5678' ; rm -rf ~ ; '");
	assert_non_null(strstr(c, "' '/' 'x' 'x'"));
	free(c);
	c = ph_boot_command_first(pre, "/", 2u, 0, "mips", ID);
	assert_non_null(strstr(c, "' '/' 'x' 'x'"));
	free(c);
	assert_null(ph_boot_command_first(pre, "/", 0, 1, NULL, NULL));
	assert_null(ph_boot_command_first("/abs/h-", "/", 1u, 1, NULL, NULL));
	assert_null(ph_boot_command_first(".cache/x y-", "/", 1u, 1, NULL, NULL));
}

static void
test_arches(void **state)
{
	(void)state;
	assert_int_equal(ph_boot_arch_of("aarch64"), 0);
	assert_int_equal(ph_boot_arch_of("arm64"), 0);
	assert_int_equal(ph_boot_arch_of("armv8b"), 0);
	assert_int_equal(ph_boot_arch_of("armv7l"), 1);
	assert_int_equal(ph_boot_arch_of("armv7"), 1);
	assert_int_equal(ph_boot_arch_of("armv8l"), 1);
	assert_int_equal(ph_boot_arch_of("x86_64"), 2);
	assert_int_equal(ph_boot_arch_of("amd64"), 2);
	assert_int_equal(ph_boot_arch_of("armv6l"), -1);
	assert_int_equal(ph_boot_arch_of("aarch64x"), -1);
	assert_int_equal(ph_boot_arch_of("x86"), -1);
	assert_int_equal(ph_boot_arch_of(""), -1);
	assert_int_equal(ph_boot_arch_index("armv7"), 1);
	assert_int_equal(ph_boot_arch_index("armv7l"), -1);
}

/* What a hostile or broken shell may say where the script names the phone's
 * machine: only the three forms, only what was offered, no lie about a
 * machine phsync offered a helper for. */
static void
test_origin(void **state)
{
	int a;

	(void)state;
	assert_int_equal(ph_boot_parse_origin("own", 5u, 1, &a), PH_BOOT_O_OWN);
	assert_int_equal(ph_boot_parse_origin("own", 5u, 0, &a), -1);
	assert_int_equal(ph_boot_parse_origin("arch x86_64", 5u, 1, &a), PH_BOOT_O_ARCH);
	assert_int_equal(a, 2);
	assert_int_equal(ph_boot_parse_origin("arch armv7", 5u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("arch mips", 7u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("arch x86_64 ", 7u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("arch ", 7u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("machine mips", 7u, 1, &a), PH_BOOT_O_MACHINE);
	assert_int_equal(a, -1);
	assert_int_equal(ph_boot_parse_origin("machine armv7l", 5u, 1, &a), PH_BOOT_O_MACHINE);
	assert_int_equal(a, 1);
	assert_int_equal(ph_boot_parse_origin("machine x86_64", 5u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("own ", 5u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("end", 5u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("", 5u, 1, &a), -1);
	assert_int_equal(ph_boot_parse_origin("drwx------ 3 0 0 4096 Nov 25 19:54 .", 5u, 1, &a),
	                 -1);
}

static void
test_ls_names(void **state)
{
	(void)state;
	assert_true(ph_boot_ls_is("drwx------ 3 0 0 4096 Nov 25 19:54 .", "."));
	assert_false(ph_boot_ls_is("drwx------ 3 0 0 4096 Nov 25 19:54 .cache", "."));
	assert_true(ph_boot_ls_is("drwx------    3 0        0     4096 Nov 25 19:54 .cache",
	                          ".cache"));
	assert_false(ph_boot_ls_is("drwx------ 2 0 0 4096 2026-11-25 19:54 .cache/phsync",
	                           ".cache"));
	assert_true(ph_boot_ls_is("drwx------ 2 0 0 4096 2026-11-25 19:54 .cache/phsync",
	                          ".cache/phsync"));
	assert_true(ph_boot_ls_is("lrwxrwxrwx 1 0 0 9 Nov 25 14:22 .cache/phsync -> /tmp/evil",
	                          ".cache/phsync"));
	/* Only a symlink's line has an arrow. */
	assert_false(ph_boot_ls_is("drwx------ 1 0 0 9 Nov 25 14:22 .cache/phsync -> /tmp/evil",
	                           ".cache/phsync"));
	assert_false(ph_boot_ls_is(".", "."));
	assert_false(ph_boot_ls_is("end", "."));
}

static void
test_ident(void **state)
{
	(void)state;
	assert_true(ph_boot_ident_ok(ID));
	assert_false(ph_boot_ident_ok("-"));
	assert_false(ph_boot_ident_ok("x"));
	assert_false(ph_boot_ident_ok(""));
	assert_false(ph_boot_ident_ok("stat: cannot stat '/proc/1/fd/3'"));
	assert_false(ph_boot_ident_ok("65024 10953351 3 81a4 0 $(reboot)"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ls_lines),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_folders),
		cmocka_unit_test(test_cached_file),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_command_first),
		cmocka_unit_test(test_arches),
		cmocka_unit_test(test_origin),
		cmocka_unit_test(test_ident),
		cmocka_unit_test(test_ls_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
