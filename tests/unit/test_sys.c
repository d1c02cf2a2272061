/* SPDX-License-Identifier: ISC */
/* phsync/sys.h, the files, folders and clock the command and the watcher
 * use (src/core/sys.c): the same source on Linux (unit.test_sys) and under
 * Wine (win.unit.test_sys). Folders made with their parents, a temp file
 * made from a template, locks between two descriptors, positioned reads and
 * writes, a replacing rename, stat and lstat, a folder's listing with types,
 * real paths, the state folder, the local time, a text-mode stream made to
 * carry bytes. Only sys.h and standard C (and ut_fs for the scratch folder).
 * Run as `test_sys --args é日` (unit.test_sys_args) it checks instead that
 * the argument arrives as those UTF-8 bytes (Windows: from the wide command
 * line, where main's argv is in the ANSI code page). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "phsync/sys.h"
#include "ut_fs.h"

static char dir[1024];

static int
setup(void **state)
{
	(void)state;
	return ut_scratch(dir, sizeof(dir), "phsync-sys");
}

static int
teardown(void **state)
{
	(void)state;
	ut_rmtree(dir);
	return 0;
}

static void
at(char *out, size_t len, const char *name)
{
	assert_true((size_t)snprintf(out, len, "%s/%s", dir, name) < len);
}

static void
put(const char *name, const char *text)
{
	char p[1200];
	int fd;

	at(p, sizeof(p), name);
	fd = phsync_file_open(p, PHSYNC_O_WRONLY | PHSYNC_O_CREAT | PHSYNC_O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(phsync_file_pwrite(fd, text, strlen(text), 0), (int64_t)strlen(text));
	assert_int_equal(close(fd), 0);
}

static void
test_dir_make(void **state)
{
	struct phsync_fstat st;
	char p[1200];

	(void)state;
	at(p, sizeof(p), "a/b/c");
	assert_int_equal(phsync_dir_make(p), 0);
	assert_int_equal(phsync_file_lstat(p, &st), 0);
	assert_int_equal(st.type, PHSYNC_FT_DIR);
	assert_int_equal(phsync_dir_make(p), 0); /* there already */
	put("a/file", "x");
	at(p, sizeof(p), "a/file");
	assert_int_equal(phsync_dir_make(p), -ENOTDIR);
	at(p, sizeof(p), "a/file/d");
	assert_true(phsync_dir_make(p) < 0);
}

static void
test_temp(void **state)
{
	char t1[1200], t2[1200], p[1200];
	struct phsync_fstat st;
	int a, b;

	(void)state;
	at(t1, sizeof(t1), "out.tmp-XXXXXX");
	memcpy(t2, t1, sizeof(t2));
	a = phsync_file_temp(t1, 0666);
	b = phsync_file_temp(t2, 0666);
	assert_true(a >= 0 && b >= 0);
	assert_string_not_equal(t1, t2);
	assert_null(strstr(t1, "XXXXXX"));
	assert_int_equal(strlen(t1), strlen(dir) + strlen("/out.tmp-XXXXXX"));
	assert_int_equal(phsync_file_pwrite(a, "abc\r\n", 5, 0), 5);
	assert_int_equal(phsync_file_fstat(a, &st), 0);
	assert_int_equal(st.size, 5);
	assert_int_equal(st.type, PHSYNC_FT_REG);
	assert_int_equal(close(a), 0);
	assert_int_equal(close(b), 0);
	at(p, sizeof(p), "no-template");
	assert_int_equal(phsync_file_temp(p, 0666), -EINVAL);
}

static void
test_lock(void **state)
{
	char p[1200];
	int a, b, c;

	(void)state;
	at(p, sizeof(p), "lock");
	a = phsync_file_open(p, PHSYNC_O_RDWR | PHSYNC_O_CREAT, 0600);
	b = phsync_file_open(p, PHSYNC_O_RDWR | PHSYNC_O_CREAT, 0600);
	c = phsync_file_open(p, PHSYNC_O_RDONLY | PHSYNC_O_NOFOLLOW, 0);
	assert_true(a >= 0 && b >= 0 && c >= 0);
	assert_int_equal(phsync_file_lock(a, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB), 0);
	assert_int_equal(phsync_file_lock(b, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB), -EWOULDBLOCK);
	assert_int_equal(phsync_file_lock(c, PHSYNC_LOCK_SH | PHSYNC_LOCK_NB), -EWOULDBLOCK);
	/* The locked file's data stays readable and writable (a pid in it). */
	assert_int_equal(phsync_file_truncate(a, 0), 0);
	assert_int_equal(phsync_file_pwrite(a, "123\n", 4, 0), 4);
	{
		char buf[8] = "";

		assert_int_equal(phsync_file_pread(b, buf, sizeof(buf) - 1, 0), 4);
		assert_string_equal(buf, "123\n");
	}
	assert_int_equal(close(a), 0); /* the lock goes with it */
	assert_int_equal(phsync_file_lock(c, PHSYNC_LOCK_SH | PHSYNC_LOCK_NB), 0);
	assert_int_equal(phsync_file_lock(b, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB), -EWOULDBLOCK);
	assert_int_equal(close(c), 0);
	assert_int_equal(phsync_file_lock(b, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB), 0);
	assert_int_equal(close(b), 0);
}

static void
test_rename_stat(void **state)
{
	char p[1200], q[1200], real[1200], buf[16];
	struct phsync_fstat s1, s2;
	int fd, rc;

	(void)state;
	put("old", "old data");
	put("new", "new");
	at(p, sizeof(p), "new");
	at(q, sizeof(q), "old");
	/* The target held open (as `phsync status` may hold a record while the
	 * watcher replaces it): POSIX replaces it; Windows refuses, after its
	 * retries, and then both files are as they were. */
	fd = phsync_file_open(q, PHSYNC_O_RDONLY, 0);
	assert_true(fd >= 0);
	switch ((rc = phsync_file_rename(p, q))) {
	case 0:
		break;
	case -EACCES:
	case -EBUSY:
		assert_int_equal(phsync_file_lstat(q, &s1), 0);
		assert_int_equal(s1.size, 8);
		assert_int_equal(phsync_file_lstat(p, &s1), 0);
		assert_int_equal(s1.size, 3);
		break;
	default:
		fail();
	}
	assert_int_equal(close(fd), 0);
	/* Not held: replaced everywhere. */
	if (rc != 0)
		assert_int_equal(phsync_file_rename(p, q), 0);
	assert_int_equal(phsync_file_lstat(p, &s1), -ENOENT);
	fd = phsync_file_open(q, PHSYNC_O_RDONLY, 0);
	assert_true(fd >= 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(phsync_file_pread(fd, buf, sizeof(buf), 0), 3);
	assert_string_equal(buf, "new");
	assert_int_equal(phsync_file_pread(fd, buf, sizeof(buf), 3), 0);
	/* stat (links followed), lstat and fstat name the same file. */
	assert_int_equal(phsync_file_fstat(fd, &s1), 0);
	assert_int_equal(phsync_file_stat(q, &s2), 0);
	assert_true(s1.dev == s2.dev && s1.ino == s2.ino && s2.size == 3);
	assert_int_equal(phsync_file_lstat(q, &s2), 0);
	assert_true(s1.dev == s2.dev && s1.ino == s2.ino);
	assert_int_equal(close(fd), 0);
	assert_int_equal(phsync_file_lstat(dir, &s2), 0);
	assert_int_equal(s2.type, PHSYNC_FT_DIR);
	/* A folder is no file to open. */
	assert_int_equal(phsync_file_open(dir, PHSYNC_O_RDONLY, 0), -EISDIR);
	assert_int_equal(phsync_file_open(p, PHSYNC_O_RDONLY, 0), -ENOENT);
	assert_int_equal(phsync_file_open(q, PHSYNC_O_WRONLY | PHSYNC_O_CREAT | PHSYNC_O_EXCL, 0600),
	                 -EEXIST);
	/* The real path: absolute, the same file. */
	assert_int_equal(phsync_path_real(q, real, sizeof(real)), 0);
	assert_true(real[0] == '/' || (real[1] == ':' && phsync_path_sep(real[2])) ||
	            (phsync_path_sep(real[0]) && phsync_path_sep(real[1])));
	assert_int_equal(phsync_file_stat(real, &s2), 0);
	assert_true(s1.dev == s2.dev && s1.ino == s2.ino);
	assert_int_equal(phsync_path_real(p, real, sizeof(real)), -ENOENT);
	assert_int_equal(phsync_path_real(q, real, 4), -ENAMETOOLONG);
	assert_int_equal(phsync_file_unlink(q), 0);
	assert_int_equal(phsync_file_unlink(q), -ENOENT);
	assert_true(phsync_path_sep('/'));
	assert_false(phsync_path_sep('a'));
}

struct listed {
	int n, files, dirs, stop_at;
	char names[8][32];
};

static int
list_one(void *arg, const char *name, enum phsync_ftype type)
{
	struct listed *l = arg;

	if (l->n < 8)
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
	l->n++;
	l->files += type == PHSYNC_FT_REG;
	l->dirs += type == PHSYNC_FT_DIR;
	return l->n == l->stop_at ? 42 : 0;
}

static void
test_dir_each(void **state)
{
	struct listed l;
	char p[1200];
	int i, seen = 0;

	(void)state;
	put("f1", "1");
	put("f2 \xc3\xa9", "2");
	at(p, sizeof(p), "sub");
	assert_int_equal(phsync_dir_make(p), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(phsync_dir_each(dir, list_one, &l), 0);
	assert_int_equal(l.n, 3);
	for (i = 0; i < 3; i++)
		seen |= !strcmp(l.names[i], "f1") ? 1 : !strcmp(l.names[i], "f2 \xc3\xa9") ? 2 :
		        !strcmp(l.names[i], "sub") ? 4 : 8;
	assert_int_equal(seen, 7);
	/* The types from the listing itself (readdir's d_type; the attributes
	 * FindFirstFileExW gives). */
	assert_int_equal(l.files, 2);
	assert_int_equal(l.dirs, 1);
	memset(&l, 0, sizeof(l));
	l.stop_at = 2;
	assert_int_equal(phsync_dir_each(dir, list_one, &l), 42);
	assert_int_equal(l.n, 2);
	at(p, sizeof(p), "missing");
	assert_int_equal(phsync_dir_each(p, list_one, &l), -ENOENT);
}

static void
test_state_home_and_time(void **state)
{
	char home[1200];
	struct tm a, *b;
	time_t t = 1700000000;

	(void)state;
	assert_int_equal(phsync_state_home(home, sizeof(home)), 0);
	assert_non_null(strstr(home, "phsync"));
	assert_int_equal(phsync_state_home(home, 3), -ENAMETOOLONG);
	assert_int_equal(phsync_home_dir(home, sizeof(home)), 0);
	assert_true(home[0] == '/' || (home[1] == ':' && phsync_path_sep(home[2])) ||
	            (phsync_path_sep(home[0]) && phsync_path_sep(home[1])));
	assert_int_equal(phsync_localtime(t, &a), 0);
	b = localtime(&t);
	assert_non_null(b);
	assert_true(a.tm_year == b->tm_year && a.tm_yday == b->tm_yday &&
	            a.tm_hour == b->tm_hour && a.tm_min == b->tm_min);
}

/* The daemon's default config: %APPDATA%\phsync on Windows (not the
 * profile's .config, nor the state's %LOCALAPPDATA%), the XDG folder on
 * POSIX. */
static void
test_config_path(void **state)
{
	char p[1200], want[1300], home[1200];

	(void)state;
#ifdef _WIN32
	const char *x = getenv("APPDATA");

	assert_non_null(x);
	snprintf(want, sizeof(want), "%s\\phsync\\phsync.conf", x);
	assert_int_equal(phsync_config_path("phsync.conf", p, sizeof(p)), 0);
	assert_string_equal(p, want);
	assert_int_equal(phsync_state_home(home, sizeof(home)), 0);
	assert_null(strstr(p, home));
#else
	char *old = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;

	setenv("XDG_CONFIG_HOME", "/cfg/x", 1);
	assert_int_equal(phsync_config_path("phsync.conf", p, sizeof(p)), 0);
	assert_string_equal(p, "/cfg/x/phsync/phsync.conf");
	setenv("XDG_CONFIG_HOME", "relative", 1); /* not absolute: ignored */
	assert_int_equal(phsync_config_path("phsync.conf", p, sizeof(p)), 0);
	assert_int_equal(phsync_home_dir(home, sizeof(home)), 0);
	snprintf(want, sizeof(want), "%s/.config/phsync/phsync.conf", home);
	assert_string_equal(p, want);
	if (old != NULL)
		setenv("XDG_CONFIG_HOME", old, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	free(old);
#endif
	assert_int_equal(phsync_config_path("phsync.conf", p, 8), -ENAMETOOLONG);
}

static void
test_fd_binary(void **state)
{
	struct phsync_fstat st;
	char p[1200];
	FILE *f;

	(void)state;
	at(p, sizeof(p), "text");
	f = fopen(p, "w"); /* text mode, on Windows */
	assert_non_null(f);
	assert_int_equal(phsync_fd_binary(fileno(f)), 0);
	assert_int_equal(write(fileno(f), "a\nb\n", 4), 4);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(phsync_file_lstat(p, &st), 0);
	assert_int_equal(st.size, 4);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dir_make, setup, teardown),
		cmocka_unit_test_setup_teardown(test_temp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_stat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_each, setup, teardown),
		cmocka_unit_test(test_state_home_and_time),
		cmocka_unit_test(test_config_path),
		cmocka_unit_test_setup_teardown(test_fd_binary, setup, teardown),
	};

	if (argc >= 2 && strcmp(argv[1], "--args") == 0) {
		int rc = phsync_args_utf8(&argc, &argv);

		if (rc != 0 || argc != 3 || strcmp(argv[2], "\xc3\xa9\xe6\x97\xa5") != 0) {
			fprintf(stderr, "rc %d, argc %d, argv[2] not UTF-8 \"\xc3\xa9\xe6\x97\xa5\"\n", rc,
			        argc);
			return 1;
		}
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
