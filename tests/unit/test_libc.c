/* SPDX-License-Identifier: ISC */
/* The C library pieces of platform.h (platform/libc.c on POSIX,
 * platform/win32/libc.c on Windows, where this same source runs under Wine)
 * and core's plain-C ones (str.h's ph_strndup, buf.h's ph_buf_printf). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "buf.h"
#include "pfs.h"
#include "platform.h"
#include "str.h"
#include "ut_fs.h"

static char dir[128];

static int
setup(void **state)
{
	(void)state;
	return ut_scratch(dir, sizeof(dir), "phsync-libc");
}

static int
teardown(void **state)
{
	(void)state;
	ut_rmtree(dir);
	return 0;
}

static void
test_localtime(void **state)
{
	static const time_t when[] = { 0, 86399, 1700000000, 951782400 /* 29 Feb 2000 */ };
	struct tm a, *b;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(when) / sizeof(when[0]); i++) {
		assert_int_equal(ph_localtime(when[i], &a), 0);
		b = localtime(&when[i]);   /* the C library's own answer */
		assert_non_null(b);
		assert_int_equal(a.tm_year, b->tm_year);
		assert_int_equal(a.tm_mon, b->tm_mon);
		assert_int_equal(a.tm_mday, b->tm_mday);
		assert_int_equal(a.tm_hour, b->tm_hour);
		assert_int_equal(a.tm_min, b->tm_min);
		assert_int_equal(a.tm_sec, b->tm_sec);
	}
}

static void
test_host_cpus_pid(void **state)
{
	char host[256], cut[4];

	(void)state;
	memset(host, 'x', sizeof(host));
	ph_hostname(host, sizeof(host));
	assert_true(strlen(host) > 0 && strlen(host) < sizeof(host));
	memset(cut, 'x', sizeof(cut));
	ph_hostname(cut, sizeof(cut));
	assert_true(strlen(cut) < sizeof(cut));
	assert_memory_equal(cut, host, strlen(cut));
	assert_true(ph_cpu_count() >= 1);
	/* This process runs; pid 0x7ffffff0 is no process's. */
	assert_int_equal(ph_pid_alive((uint32_t)getpid()), 1);
	assert_int_equal(ph_pid_alive(0x7ffffff0u), 0);
}

static void
test_free_space(void **state)
{
	uint64_t bytes = 0;
	int fd;

	(void)state;
	fd = ph_dir_open_path(dir);
	assert_true(fd >= 0);
	assert_int_equal(ph_free_space(fd, &bytes), 0);
	assert_true(bytes > 0);
	ph_close(fd);
}

static void
test_realpath(void **state)
{
	char p[400], q[400], a[1024], b[1024], tiny[8];
	size_t n;
	int fd;

	(void)state;
	fd = ph_dir_open_path(dir);
	assert_true(fd >= 0);
	assert_int_equal(ph_mkdirat(fd, "a", 0700), 0);
	assert_int_equal(ph_mkdirat(fd, "a/b", 0700), 0);
	ph_close(fd);
	snprintf(p, sizeof(p), "%s/a/b", dir);
	snprintf(q, sizeof(q), "%s/a/./../a/b", dir);
	assert_int_equal(ph_realpath(p, a, sizeof(a)), 0);
	assert_int_equal(ph_realpath(q, b, sizeof(b)), 0);
	assert_string_equal(a, b);
	/* Absolute: "/..." on POSIX, "C:\..." or "\\server\share\..." on Windows. */
	assert_true(a[0] == '/' || (a[0] != '\0' && a[1] == ':') || (a[0] == '\\' && a[1] == '\\'));
	n = strlen(a);
	assert_true(n > 4 && a[n - 1] == 'b' && a[n - 3] == 'a' && ph_path_sep(a[n - 2]));
	assert_int_equal(ph_realpath(p, tiny, sizeof(tiny)), -ENAMETOOLONG);
	snprintf(p, sizeof(p), "%s/none", dir);
	assert_int_equal(ph_realpath(p, a, sizeof(a)), -ENOENT);
}

static void
test_strndup_printf(void **state)
{
	struct ph_buf b = { 0 };
	char *s, big[1000];

	(void)state;
	s = ph_strndup("abcdef", 3);
	assert_string_equal(s, "abc");
	free(s);
	s = ph_strndup("ab", 10);
	assert_string_equal(s, "ab");
	free(s);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(ph_buf_printf(&b, "%d-%s|", 42, "a"), 0);
	assert_int_equal(ph_buf_printf(&b, "%s", big), 0);   /* past the first guess */
	assert_int_equal(ph_buf_printf(&b, "|%" PRIu64, (uint64_t)1 << 40), 0);
	assert_int_equal(b.len, 5 + 999 + 1 + 13);
	assert_memory_equal(b.data, "42-a|x", 6);
	assert_string_equal((char *)b.data + 5 + 999, "|1099511627776");
	ph_buf_free(&b);
	/* A cap holds. */
	b.max = 64;
	assert_int_equal(ph_buf_printf(&b, "%s", big), PHSYNC_ENOMEM);
	ph_buf_free(&b);
}

/* The open-file limit as it stands is at least what ph_raise_nofile made
 * it, and holds: that many descriptors less a margin (at most 600) open at
 * once. lio.c sizes its batches by it. */
static void
test_nofile_limit(void **state)
{
	char p[192];
	uint64_t raised, lim, want, i;
	int fds[600], fd;

	(void)state;
	raised = ph_raise_nofile();
	lim = ph_nofile_limit();
	assert_true(lim >= raised && lim >= 64);
	snprintf(p, sizeof(p), "%s/nofile", dir);
	fd = ph_openat(PH_AT_CWD, p, PH_O_WRONLY | PH_O_CREAT, 0600);
	assert_true(fd >= 0);
	ph_close(fd);
	want = lim - 32 < 600 ? lim - 32 : 600;
	for (i = 0; i < want; i++) {
		fds[i] = ph_openat(PH_AT_CWD, p, PH_O_RDONLY, 0);
		assert_true(fds[i] >= 0);
	}
	for (i = 0; i < want; i++)
		ph_close(fds[i]);
}

/* ph_set_atime_mtime sets the two times apart, on a folder's descriptor
 * too (on Windows through a handle of its own: the folder's is read-only),
 * as a pull gives its folders and its root their source times. */
static void
test_set_atime_mtime(void **state)
{
	char p[192];
	struct ph_stat st;
	struct stat sb;
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/timed", dir);
	assert_int_equal(ph_mkdirat(PH_AT_CWD, p, 0755), 0);
	fd = ph_openat(PH_AT_CWD, p, PH_O_DIR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_set_atime_mtime(fd, 1500000000, 1600000000), 0);
	ph_close(fd);
	assert_int_equal(ph_fstatat(PH_AT_CWD, p, &st), 0);
	assert_true(st.type == PH_FT_DIR);
	assert_int_equal(st.mtime_sec, 1600000000);
	assert_int_equal(st.mtime_nsec, 0);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal((int64_t)sb.st_atime, 1500000000);
	assert_int_equal((int64_t)sb.st_mtime, 1600000000);
	/* A file opened for writing, before 1970 too. */
	snprintf(p, sizeof(p), "%s/timed/f", dir);
	fd = ph_openat(PH_AT_CWD, p, PH_O_WRONLY | PH_O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ph_set_atime_mtime(fd, 1700000000, -86400), 0);
	ph_close(fd);
	assert_int_equal(ph_fstatat(PH_AT_CWD, p, &st), 0);
	assert_int_equal(st.mtime_sec, -86400);
	assert_int_equal(ph_unlinkat(PH_AT_CWD, p, 0), 0);
	snprintf(p, sizeof(p), "%s/timed", dir);
	assert_int_equal(ph_unlinkat(PH_AT_CWD, p, PH_AT_REMOVEDIR), 0);
}

/* Names to and from libraries that convert them (libarchive): on Windows
 * UTF-8 to UTF-16 and back exactly (a surrogate pair among them), an
 * unpaired surrogate refused; on POSIX neither is needed (-ENOSYS, NULL). */
static void
test_wide_names(void **state)
{
	static const wchar_t bad[] = { 0xd800, L'x', 0 };
	static const wchar_t want[] = { 0xe9, L't', 0xe9, L' ', 0x65e5, L'/', 0xd83d, 0xde00,
	                                L'.', L'j', L'p', L'g', 0 };
	const char *name = "\xc3\xa9t\xc3\xa9 \xe6\x97\xa5/\xf0\x9f\x98\x80.jpg";
	wchar_t *w = (wchar_t *)1;
	char *s = (char *)1;

	(void)state;
#ifdef _WIN32
	assert_int_equal(ph_wide_name(name, &w), 0);
	assert_true(wcscmp(w, want) == 0);
	assert_int_equal(ph_narrow_name(w, &s), 0);
	assert_string_equal(s, name);
	free(w);
	free(s);
	assert_int_equal(ph_narrow_name(bad, &s), -EILSEQ);
	assert_null(s);
	assert_int_equal(ph_wide_name("\xff\xfe", &w), -EILSEQ);
	assert_null(w);
#else
	(void)want;
	assert_int_equal(ph_wide_name(name, &w), -ENOSYS);
	assert_null(w);
	assert_int_equal(ph_narrow_name(bad, &s), -ENOSYS);
	assert_null(s);
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_localtime),
		cmocka_unit_test(test_host_cpus_pid),
		cmocka_unit_test(test_free_space),
		cmocka_unit_test(test_realpath),
		cmocka_unit_test(test_strndup_printf),
		cmocka_unit_test(test_nofile_limit),
		cmocka_unit_test(test_set_atime_mtime),
		cmocka_unit_test(test_wide_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
