/* SPDX-License-Identifier: ISC */
/* platform/pfs.h, the folder-relative file calls, through whichever side was
 * built: POSIX here (the normal and the PHSYNC_PORTABLE suites), Windows as
 * build-win/tests/unit/win32/test_pfs.exe under Wine (docs/WINDOWS.md). The
 * same checks on both: what is on disk, byte for byte, and the exact error.
 * Only pfs.h, platform.h and standard C are used, so nothing here is POSIX
 * or Windows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "pfs.h"
#include "platform.h"

/* The scratch folder, in the current folder (ctest's: the build's). */
static char scratch[64];
static int cwd = -1, root = -1;

static void
rm_tree(int dirfd, const char *name)
{
	struct ph_dir *d;
	struct ph_dirent e;
	int fd;

	fd = ph_openat(dirfd, name, PH_O_DIR | PH_O_NOFOLLOW, 0);
	if (fd >= 0) {
		if (ph_dir_list(fd, &d) == 0) {
			while (ph_dir_read(d, &e) > 0) {
				struct ph_stat st;

				if (ph_fstatat(fd, e.name, &st) == 0 && st.type == PH_FT_DIR)
					rm_tree(fd, e.name);
				else
					ph_unlinkat(fd, e.name, 0);
			}
			ph_dir_end(d);
		}
		ph_close(fd);
		ph_unlinkat(dirfd, name, PH_AT_REMOVEDIR);
	} else {
		ph_unlinkat(dirfd, name, 0);
	}
}

static int
setup(void **state)
{
	unsigned i, seed = (unsigned)time(NULL) ^ (unsigned)clock();

	(void)state;
	cwd = ph_dir_open_path(".");
	if (cwd < 0)
		return -1;
	for (i = 0; i < 100; i++) {
		snprintf(scratch, sizeof(scratch), "pfs-test-%08x", seed + i * 7919u);
		if (ph_mkdirat(cwd, scratch, 0700) == 0)
			break;
	}
	if (i == 100)
		return -1;
	root = ph_openat(cwd, scratch, PH_O_DIR, 0);
	return root < 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	ph_close(root);
	rm_tree(cwd, scratch);
	ph_close(cwd);
	return 0;
}

/* A new file name in dir holding s (no newline added). */
static void
put(int dir, const char *name, const char *s)
{
	int fd = ph_openat(dir, name, PH_O_WRONLY | PH_O_CREAT | PH_O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, s, strlen(s), 0), (int64_t)strlen(s));
	assert_int_equal(ph_close(fd), 0);
}

/* name's whole content in buf (n bytes), NUL-terminated; the length. */
static int64_t
get(int dir, const char *name, char *buf, size_t n)
{
	int fd = ph_openat(dir, name, PH_O_RDONLY | PH_O_NOFOLLOW, 0);
	int64_t k;

	assert_true(fd >= 0);
	k = ph_pread(fd, buf, n - 1, 0);
	assert_true(k >= 0);
	buf[k] = '\0';
	assert_int_equal(ph_close(fd), 0);
	return k;
}

static void
test_create_read_write(void **state)
{
	static const char data[] = "line one\nline two\r\n\0end";
	struct ph_stat st;
	char buf[64];
	int fd;

	(void)state;
	fd = ph_openat(root, "a.bin", PH_O_RDWR | PH_O_CREAT | PH_O_EXCL, 0644);
	assert_true(fd >= 0);
	/* Bytes as they are: no newline is translated (Windows' text mode). */
	assert_int_equal(ph_pwrite(fd, data, sizeof(data), 0), (int64_t)sizeof(data));
	assert_int_equal(ph_pread(fd, buf, 8, 9), 8);
	assert_memory_equal(buf, "line two", 8);
	assert_int_equal(ph_pread(fd, buf, sizeof(buf), sizeof(data)), 0); /* the end */
	/* Past the end: the gap reads as zeros. */
	assert_int_equal(ph_pwrite(fd, "Z", 1, 100), 1);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.size, 101);
	assert_int_equal(st.type, PH_FT_REG);
	assert_int_equal(ph_pread(fd, buf, 4, 96), 4);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	assert_int_equal(ph_durable_sync(&fd, 1), 0);
	assert_int_equal(ph_close(fd), 0);

	assert_int_equal(ph_fstatat(root, "a.bin", &st), 0);
	assert_int_equal(st.size, 101);
	assert_int_equal(st.type, PH_FT_REG);
	assert_int_equal(st.nlink, 1);
	assert_int_equal(ph_openat(root, "a.bin", PH_O_RDWR | PH_O_CREAT | PH_O_EXCL, 0644),
	                 -EEXIST);
	assert_int_equal(ph_openat(root, "missing", PH_O_RDONLY, 0), -ENOENT);
	assert_int_equal(ph_fstatat(root, "missing", &st), -ENOENT);
	/* Cut, then grown with zeros. */
	fd = ph_openat(root, "a.bin", PH_O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_ftruncate(fd, 4), 0);
	assert_int_equal(ph_ftruncate(fd, 6), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.size, 6);
	assert_int_equal(ph_pread(fd, buf, sizeof(buf), 0), 6);
	assert_memory_equal(buf, "line\0\0", 6);
	assert_int_equal(ph_close(fd), 0);
	/* TRUNC empties it. */
	fd = ph_openat(root, "a.bin", PH_O_WRONLY | PH_O_TRUNC, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.size, 0);
	assert_int_equal(ph_close(fd), 0);
	assert_int_equal(ph_unlinkat(root, "a.bin", 0), 0);
	assert_int_equal(ph_unlinkat(root, "a.bin", 0), -ENOENT);
}

/* PH_AT_CWD: a path from the current folder instead of a name in a folder. */
static void
test_paths_from_cwd(void **state)
{
	char path[128], buf[16];
	struct ph_stat st;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/by-path", scratch);
	fd = ph_openat(PH_AT_CWD, path, PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, "cwd", 3, 0), 3);
	assert_int_equal(ph_close(fd), 0);
	assert_int_equal(get(root, "by-path", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "cwd");
	assert_int_equal(ph_fstatat(PH_AT_CWD, path, &st), 0);
	assert_int_equal(st.size, 3);
	snprintf(path, sizeof(path), "%s/sub", scratch);
	assert_int_equal(ph_mkdirat(PH_AT_CWD, path, 0700), 0);
	fd = ph_dir_open_path(path);
	assert_true(fd >= 0);
	assert_int_equal(ph_close(fd), 0);
	assert_int_equal(ph_unlinkat(PH_AT_CWD, path, PH_AT_REMOVEDIR), 0);
	snprintf(path, sizeof(path), "%s/by-path", scratch);
	assert_int_equal(ph_unlinkat(PH_AT_CWD, path, 0), 0);
	assert_int_equal(ph_fstatat(root, "by-path", &st), -ENOENT);
}

static void
test_folders_and_listing(void **state)
{
	struct ph_dirent e;
	struct ph_dir *d;
	struct ph_stat st;
	int dfd, seen = 0, r;

	(void)state;
	assert_int_equal(ph_mkdirat(root, "d", 0755), 0);
	assert_int_equal(ph_mkdirat(root, "d", 0755), -EEXIST);
	put(root, "f", "x");
	assert_int_equal(ph_openat(root, "f", PH_O_DIR, 0), -ENOTDIR);
	assert_int_equal(ph_openat(root, "d", PH_O_RDONLY, 0), -EISDIR);
	assert_int_equal(ph_fstatat(root, "d", &st), 0);
	assert_int_equal(st.type, PH_FT_DIR);
	dfd = ph_openat(root, "d", PH_O_DIR | PH_O_NOFOLLOW, 0);
	assert_true(dfd >= 0);
	put(dfd, "inner", "in d");
	/* "d/inner" through the parent, and "." is the folder itself. */
	assert_int_equal(ph_fstatat(root, "d/inner", &st), 0);
	assert_int_equal(st.size, 4);
	assert_int_equal(ph_fstatat(dfd, ".", &st), 0);
	assert_int_equal(st.type, PH_FT_DIR);
	assert_int_equal(ph_dir_sync(dfd), 0);

	assert_int_equal(ph_dir_list(root, &d), 0);
	while ((r = ph_dir_read(d, &e)) > 0) {
		if (strcmp(e.name, "d") == 0) {
			assert_true(e.type == PH_FT_DIR || e.type == PH_FT_OTHER);
			seen |= 1;
		} else if (strcmp(e.name, "f") == 0) {
			assert_true(e.type == PH_FT_REG || e.type == PH_FT_OTHER);
			seen |= 2;
		} else {
			fail_msg("unexpected entry %s", e.name);
		}
	}
	assert_int_equal(r, 0);
	ph_dir_end(d);
	assert_int_equal(seen, 3);

	assert_int_equal(ph_unlinkat(root, "d", PH_AT_REMOVEDIR), -ENOTEMPTY);
	assert_int_equal(ph_unlinkat(dfd, "inner", 0), 0);
	assert_int_equal(ph_close(dfd), 0);
	assert_int_equal(ph_unlinkat(root, "d", PH_AT_REMOVEDIR), 0);
	assert_int_equal(ph_unlinkat(root, "f", 0), 0);
	assert_int_equal(ph_fstatat(root, "d", &st), -ENOENT);
}

static void
test_rename_replaces(void **state)
{
	char buf[32];
	struct ph_stat st;
	int sub, fd;

	(void)state;
	put(root, "old", "old content");
	put(root, "new", "NEW");
	/* The source held open by phsync itself: shared for delete, so the
	 * rename goes through and the open fd still reads the file. */
	fd = ph_openat(root, "new", PH_O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_renameat(root, "new", root, "old"), 0);
	assert_int_equal(get(root, "old", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "NEW");
	assert_int_equal(ph_fstatat(root, "new", &st), -ENOENT);
	assert_int_equal(ph_pread(fd, buf, 3, 0), 3);
	assert_memory_equal(buf, "NEW", 3);
	assert_int_equal(ph_close(fd), 0);

	/* Into another folder, over a file there. */
	assert_int_equal(ph_mkdirat(root, "sub", 0755), 0);
	sub = ph_openat(root, "sub", PH_O_DIR, 0);
	assert_true(sub >= 0);
	put(sub, "old", "sub's");
	assert_int_equal(ph_renameat(root, "old", sub, "old"), 0);
	assert_int_equal(get(sub, "old", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "NEW");
	assert_int_equal(ph_renameat(root, "gone", sub, "x"), -ENOENT);
	/* Without replacing: the existing target stays. */
	put(root, "other", "other");
	assert_int_equal(ph_rename_noreplace(root, "other", sub, "old"), -EEXIST);
	assert_int_equal(get(sub, "old", buf, sizeof(buf)), 3);
	assert_int_equal(ph_unlinkat(sub, "old", 0), 0);
	assert_int_equal(ph_close(sub), 0);
}

static void
test_mtime(void **state)
{
	/* A multiple of 100 ns: Windows keeps times in 100 ns steps. */
	const int64_t t = 1600000000LL * 1000000000 + 123456700;
	const int64_t old = 86400LL * 1000000000 + 500;   /* 1970-01-02 */
	struct ph_stat st;
	int fd;

	(void)state;
	fd = ph_openat(root, "timed", PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ph_futime(fd, t), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.mtime_ns, t);
	assert_int_equal(ph_close(fd), 0);
	assert_int_equal(ph_fstatat(root, "timed", &st), 0);
	assert_int_equal(st.mtime_ns, t);
	assert_true(st.ctime_ns > 0);

	fd = ph_openat(root, "timed", PH_O_WRONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_futime(fd, old), 0);
	assert_int_equal(ph_close(fd), 0);
	assert_int_equal(ph_fstatat(root, "timed", &st), 0);
	assert_int_equal(st.mtime_ns, old);
}

static void
test_locks(void **state)
{
	char buf[8];
	int a, b;

	(void)state;
	put(root, "lock", "held data");
	a = ph_openat(root, "lock", PH_O_RDWR, 0);
	b = ph_openat(root, "lock", PH_O_RDWR, 0);
	assert_true(a >= 0 && b >= 0);

	assert_int_equal(ph_lock(a, PH_LOCK_EX | PH_LOCK_NB), 0);
	assert_int_equal(ph_lock(b, PH_LOCK_SH | PH_LOCK_NB), -EWOULDBLOCK);
	assert_int_equal(ph_lock(b, PH_LOCK_EX | PH_LOCK_NB), -EWOULDBLOCK);
	/* The lock keeps the data readable through another descriptor. */
	assert_int_equal(ph_pread(b, buf, 4, 0), 4);
	assert_memory_equal(buf, "held", 4);
	assert_int_equal(ph_unlock(a), 0);

	/* Shared with shared; an exclusive one waits for both to go. */
	assert_int_equal(ph_lock(a, PH_LOCK_SH | PH_LOCK_NB), 0);
	assert_int_equal(ph_lock(b, PH_LOCK_SH | PH_LOCK_NB), 0);
	assert_int_equal(ph_unlock(b), 0);
	assert_int_equal(ph_lock(b, PH_LOCK_EX | PH_LOCK_NB), -EWOULDBLOCK);
	assert_int_equal(ph_unlock(a), 0);
	assert_int_equal(ph_lock(b, PH_LOCK_EX), 0);   /* free now: does not wait */

	/* Closing the descriptor lets go of its lock. */
	assert_int_equal(ph_close(b), 0);
	assert_int_equal(ph_lock(a, PH_LOCK_EX | PH_LOCK_NB), 0);
	assert_int_equal(ph_close(a), 0);
}

static void
test_unicode_and_long_names(void **state)
{
	/* é, 日本, and U+1F600 (a surrogate pair in UTF-16). */
	static const char uname[] = "caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80.txt";
	char dname[121], fname[201], path[400], buf[32];
	struct ph_dirent e;
	struct ph_dir *d;
	struct ph_stat st;
	int found = 0, sub;

	(void)state;
	assert_int_equal(ph_mkdirat(root, "u", 0755), 0);
	sub = ph_openat(root, "u", PH_O_DIR, 0);
	assert_true(sub >= 0);
	put(sub, uname, "unicode");
	assert_int_equal(ph_dir_list(sub, &d), 0);
	while (ph_dir_read(d, &e) > 0)
		found += strcmp(e.name, uname) == 0;
	ph_dir_end(d);
	assert_int_equal(found, 1);
	assert_int_equal(get(sub, uname, buf, sizeof(buf)), 7);
	assert_int_equal(ph_unlinkat(sub, uname, 0), 0);

	/* 120 + 200 characters below the folder: past Windows' MAX_PATH (260)
	 * wherever the folder is, reached through its descriptor. */
	memset(dname, 'D', sizeof(dname) - 1);
	dname[sizeof(dname) - 1] = '\0';
	memset(fname, 'f', sizeof(fname) - 1);
	fname[sizeof(fname) - 1] = '\0';
	assert_int_equal(ph_mkdirat(sub, dname, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s", dname, fname);
	put(sub, path, "deep");
	assert_int_equal(ph_fstatat(sub, path, &st), 0);
	assert_int_equal(st.size, 4);
	assert_int_equal(get(sub, path, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "deep");
	assert_int_equal(ph_unlinkat(sub, path, 0), 0);
	assert_int_equal(ph_unlinkat(sub, dname, PH_AT_REMOVEDIR), 0);
	assert_int_equal(ph_close(sub), 0);
}

/* platform.h's random source: filled, and not the same twice. */
/* ph_set_times (both times, to the 100 ns Windows keeps), times outside
 * what ns since 1970 hold in 64 bits (mtime_sec exact, mtime_ns held at its
 * end), before 1970, and ph_fchmod's owner-write bit (Windows: read-only). */
/* A listing's own stats (pfs.h: Windows gives each entry's, POSIX none)
 * are exactly what ph_fstatat says of the same name, field for field; the
 * walk (scan/local.c) takes them instead of opening each file. 700 names
 * take more than one 64 KiB buffer of FileIdBothDirectoryInfo. */
static void
test_listing_stats(void **state)
{
	static const char *const extra[] = { "été 日本.jpg", "ro", "sub", "empty", "timed" };
	struct ph_dir *d;
	struct ph_dirent e;
	struct ph_stat st;
	char name[32];
	unsigned i, n = 0, with = 0;
	int fd, r, dfd;

	(void)state;
	assert_int_equal(ph_mkdirat(root, "many", 0755), 0);
	dfd = ph_openat(root, "many", PH_O_DIR | PH_O_NOFOLLOW, 0);
	assert_true(dfd >= 0);
	for (i = 0; i < 700; i++) {
		snprintf(name, sizeof(name), "file_%04u.dat", i);
		put(dfd, name, i % 2 ? "odd" : "even!");
	}
	put(dfd, extra[0], "unicode");
	fd = ph_openat(dfd, "ro", PH_O_RDWR | PH_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ph_fchmod(fd, 0444), 0);
	ph_close(fd);
	assert_int_equal(ph_mkdirat(dfd, "sub", 0755), 0);
	put(dfd, "empty", "");
	fd = ph_openat(dfd, "timed", PH_O_RDWR | PH_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, "0123456789", 10, 0), 10);
	assert_int_equal(ph_set_times(fd, 1700000000, 123456700), 0);
	ph_close(fd);

	assert_int_equal(ph_dir_list(dfd, &d), 0);
	while ((r = ph_dir_read(d, &e)) > 0) {
		n++;
		if (e.st == NULL)
			continue;
		with++;
		assert_int_equal(ph_fstatat(dfd, e.name, &st), 0);
		assert_true(e.st->type == st.type);
		assert_true(e.type == st.type);
		if (st.type == PH_FT_REG)
			assert_true(e.st->size == st.size);
		assert_true(e.st->dev == st.dev);
		assert_true(e.st->ino == st.ino);
		assert_true(e.st->mtime_ns == st.mtime_ns);
		assert_true(e.st->mtime_sec == st.mtime_sec);
		assert_int_equal(e.st->mtime_nsec, st.mtime_nsec);
		assert_true(e.st->ctime_ns == st.ctime_ns);
		assert_int_equal(e.st->mode, st.mode);
		if (strcmp(e.name, "timed") == 0) {
			assert_true(e.st->mtime_sec == 1700000000 && e.st->size == 10);
			assert_int_equal(e.st->mtime_nsec, 123456700);
		}
		if (strcmp(e.name, "ro") == 0)
			assert_int_equal(e.st->mode & 0222, 0);
	}
	assert_int_equal(r, 0);
	ph_dir_end(d);
	assert_int_equal(n, 700 + sizeof(extra) / sizeof(extra[0]));
#ifdef _WIN32
	assert_int_equal(with, n); /* every one: no file opened to walk it */
#else
	assert_int_equal(with, 0);
#endif
	/* A second listing of the same descriptor starts from the top again,
	 * and the descriptor itself still works. */
	assert_int_equal(ph_dir_list(dfd, &d), 0);
	for (i = 0; (r = ph_dir_read(d, &e)) > 0; i++)
		;
	assert_int_equal(r, 0);
	assert_int_equal(i, n);
	ph_dir_end(d);
	assert_int_equal(ph_fstatat(dfd, "timed", &st), 0);
	ph_close(dfd);
	fd = ph_openat(root, "many/ro", PH_O_RDWR, 0);
	if (fd < 0) { /* (Windows: a read-only file opens for reading only) */
		fd = ph_openat(root, "many/ro", PH_O_RDONLY, 0);
		assert_true(fd >= 0);
	}
	assert_int_equal(ph_fchmod(fd, 0644), 0);
	ph_close(fd);
	rm_tree(root, "many");
}

static void
test_times_and_mode(void **state)
{
	struct ph_stat st;
	int fd;

	(void)state;
	fd = ph_openat(root, "t", PH_O_RDWR | PH_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ph_set_times(fd, 1700000000, 123456700), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_true(st.mtime_sec == 1700000000);
	assert_int_equal(st.mtime_nsec, 123456700);
	assert_true(st.mtime_ns == 1700000000123456700LL);
	/* The year 2400 (ext4 keeps times up to 2446). */
	assert_int_equal(ph_set_times(fd, 13569465600LL, 0), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_true(st.mtime_sec == 13569465600LL);
	assert_true(st.mtime_ns == INT64_MAX);
	assert_int_equal(ph_set_times(fd, -86400, 500000000), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_true(st.mtime_sec == -86400);
	assert_int_equal(st.mtime_nsec, 500000000);
	assert_true(st.mtime_ns == -86400LL * 1000000000 + 500000000);
	assert_int_equal(ph_fchmod(fd, 0444), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.mode & 0222, 0);
	assert_int_equal(ph_fchmod(fd, 0644), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_int_equal(st.mode & 0777, 0644);
	ph_close(fd);
	/* A folder's descriptor (opened for listing: restore gives folders
	 * their times through it). */
	assert_int_equal(ph_mkdirat(root, "timed", 0755), 0);
	fd = ph_openat(root, "timed", PH_O_RDONLY | PH_O_DIR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_set_times(fd, 1600000000, 250000000), 0);
	assert_int_equal(ph_fstat(fd, &st), 0);
	assert_true(st.mtime_sec == 1600000000);
	assert_int_equal(st.mtime_nsec, 250000000);
	ph_close(fd);
	assert_int_equal(ph_unlinkat(root, "timed", PH_AT_REMOVEDIR), 0);
}

static void
test_random(void **state)
{
	unsigned char a[300], b[300], zero[300];

	(void)state;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(zero, 0, sizeof(zero));
	assert_int_equal(ph_random(a, sizeof(a)), 0);   /* more than one piece on POSIX */
	assert_int_equal(ph_random(b, sizeof(b)), 0);
	assert_int_equal(ph_random(b, 0), 0);
	/* Odds of a false failure: 2^-352 at most (the last check, 44 bytes). */
	assert_memory_not_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, zero, sizeof(a));
	assert_memory_not_equal(a + 256, zero + 256, sizeof(a) - 256);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_read_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths_from_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folders_and_listing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unicode_and_long_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_times_and_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_stats, setup, teardown),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
