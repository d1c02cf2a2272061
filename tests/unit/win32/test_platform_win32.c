/* SPDX-License-Identifier: ISC */
/* The Windows platform layer (platform/win32/): UTF-8 <-> UTF-16 names, \\?\
 * long paths, folder descriptors, the durable replace, rename without
 * replace, and platform.h's Windows side. Runs under Wine here (ctest -L
 * windows); every check is on what is on disk or on the exact error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <windows.h>
#include <cmocka.h>

#include "platform.h"
#include "psys.h"
#include "win32.h"

/* The test's folder (UTF-8, no prefix) under the Windows temp folder. */
static char root[MAX_PATH * 4];

static void
rm_tree(const wchar_t *dir)
{
	WIN32_FIND_DATAW fd;
	wchar_t pat[1024], sub[1024];
	HANDLE h;

	_snwprintf(pat, 1024, L"%ls\\*", dir);
	h = FindFirstFileW(pat, &fd);
	if (h != INVALID_HANDLE_VALUE) {
		do {
			if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
				continue;
			_snwprintf(sub, 1024, L"%ls\\%ls", dir, fd.cFileName);
			if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
				rm_tree(sub);
			else
				DeleteFileW(sub);
		} while (FindNextFileW(h, &fd));
		FindClose(h);
	}
	RemoveDirectoryW(dir);
}

static int
setup(void **state)
{
	wchar_t tmp[MAX_PATH + 1], dir[MAX_PATH + 64];
	char *u;

	(void)state;
	if (GetTempPathW(MAX_PATH + 1, tmp) == 0)
		return -1;
	_snwprintf(dir, MAX_PATH + 64, L"%lsphsync-win32-%lu-%lu", tmp,
	           (unsigned long)GetCurrentProcessId(), (unsigned long)GetTickCount());
	if (!CreateDirectoryW(dir, NULL))
		return -1;
	if (ph_win_narrow(dir, &u) != 0)
		return -1;
	snprintf(root, sizeof(root), "%s", u);
	free(u);
	return 0;
}

static int
teardown(void **state)
{
	wchar_t *w;

	(void)state;
	if (ph_win_long_path(root, &w) == 0) {
		rm_tree(w);
		free(w);
	}
	return 0;
}

/* Writes s as name in the folder dirfd (through a long path). */
static void
put(int dirfd, const char *name, const char *s)
{
	wchar_t *w;
	HANDLE h;
	DWORD n;

	assert_int_equal(ph_win_at_path(dirfd, name, &w), 0);
	h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	free(w);
	assert_true(h != INVALID_HANDLE_VALUE);
	assert_true(WriteFile(h, s, (DWORD)strlen(s), &n, NULL));
	assert_int_equal(n, strlen(s));
	CloseHandle(h);
}

/* The content of name in dirfd into buf (NUL-terminated); -1 if absent. */
static int
get(int dirfd, const char *name, char *buf, size_t size)
{
	wchar_t *w;
	HANDLE h;
	DWORD n;

	assert_int_equal(ph_win_at_path(dirfd, name, &w), 0);
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return -1;
	assert_true(ReadFile(h, buf, (DWORD)size - 1, &n, NULL));
	buf[n] = '\0';
	CloseHandle(h);
	return 0;
}

static void
test_utf8_round_trip(void **state)
{
	/* Latin, CJK and an emoji outside the BMP (a surrogate pair). */
	const char *name = "Gr\xc3\xbc\xc3\x9f" "e/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80.txt";
	const wchar_t want[] = { L'G', L'r', 0xfc, 0xdf, L'e', L'/', 0x65e5, 0x672c, L'/',
	                         0xd83d, 0xde00, L'.', L't', L'x', L't', 0 };
	wchar_t *w;
	char *back;

	(void)state;
	assert_int_equal(ph_win_widen(name, &w), 0);
	assert_int_equal(wcslen(w), wcslen(want));
	assert_memory_equal(w, want, sizeof(want));
	assert_int_equal(ph_win_narrow(w, &back), 0);
	assert_string_equal(back, name);
	free(back);
	free(w);
}

static void
test_bad_encodings(void **state)
{
	const wchar_t lone[] = { L'a', 0xd800, L'b', 0 };
	wchar_t *w;
	char *s;

	(void)state;
	assert_int_equal(ph_win_widen("a\xff" "b", &w), -EILSEQ);
	assert_null(w);
	assert_int_equal(ph_win_widen("\xc0\xaf", &w), -EILSEQ);   /* overlong '/' */
	/* A name Windows can hold (an unpaired surrogate) but UTF-8 cannot. */
	assert_int_equal(ph_win_narrow(lone, &s), -EILSEQ);
	assert_null(s);
}

static void
test_long_path_form(void **state)
{
	wchar_t *w, *full;
	DWORD n;

	(void)state;
	assert_int_equal(ph_win_long_path("some/rel/name", &w), 0);
	assert_int_equal(wcsncmp(w, L"\\\\?\\", 4), 0);
	assert_null(wcschr(w, L'/'));
	n = GetFullPathNameW(L"some\\rel\\name", 0, NULL, NULL);
	full = malloc(n * sizeof(*full));
	assert_non_null(full);
	GetFullPathNameW(L"some\\rel\\name", n, full, NULL);
	assert_true(wcscmp(w + 4, full) == 0);
	free(full);
	free(w);
	assert_int_equal(ph_win_long_path("\\\\server\\share\\x", &w), 0);
	assert_true(wcscmp(w, L"\\\\?\\UNC\\server\\share\\x") == 0);
	free(w);
	assert_int_equal(ph_win_long_path("", &w), -ENOENT);
	/* A reserved name alone is a device (\\.\NUL), never a file. */
	assert_int_equal(ph_win_long_path("NUL", &w), -EINVAL);
	assert_int_equal(ph_win_long_path("CON", &w), -EINVAL);
}

/* A file 5 folders of 60 characters deep (over 300 characters, past
 * MAX_PATH): the folders made through long paths, the file written and read
 * by its name relative to a folder descriptor. (The descriptor is the test's
 * folder: Wine 8's GetFinalPathNameByHandleW fails with ERROR_MORE_DATA for
 * a folder whose own path is longer than MAX_PATH, docs/WINDOWS.md.) */
static void
test_long_path_deep(void **state)
{
	char path[1024], rel[512], seg[61], buf[64];
	wchar_t *w;
	HANDLE h;
	DWORD n;
	int i, fd;

	(void)state;
	memset(seg, 'd', 60);
	seg[60] = '\0';
	snprintf(path, sizeof(path), "%s", root);
	rel[0] = '\0';
	for (i = 0; i < 5; i++) {
		seg[0] = (char)('0' + i);
		strcat(path, "/");
		strcat(path, seg);
		strcat(rel, seg);
		strcat(rel, "/");
		assert_int_equal(ph_win_long_path(path, &w), 0);
		assert_true(CreateDirectoryW(w, NULL));
		free(w);
	}
	assert_true(strlen(path) > MAX_PATH);
	strcat(rel, "deep.txt");
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	put(fd, rel, "deep content");
	assert_int_equal(get(fd, rel, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "deep content");
	_close(fd);
	/* The same file by its absolute long path. */
	strcat(path, "/deep.txt");
	assert_int_equal(ph_win_long_path(path, &w), 0);
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
	free(w);
	assert_true(h != INVALID_HANDLE_VALUE);
	assert_true(ReadFile(h, buf, sizeof(buf) - 1, &n, NULL));
	buf[n] = '\0';
	CloseHandle(h);
	assert_string_equal(buf, "deep content");
	/* The deep folder itself opens as a descriptor. */
	fd = ph_win_dir_open(path);
	assert_int_equal(fd, -ENOTDIR);
	path[strlen(path) - strlen("/deep.txt")] = '\0';
	fd = ph_win_dir_open(path);
	assert_true(fd >= 0);
	_close(fd);
}

static void
test_at_path_names(void **state)
{
	const char *bad[] = { "", "/abs", "\\abs", "a:b", "C:x", "../up", "a/../b", "./a", "a//b",
	                      "a/", "a/.", ".." };
	wchar_t *w;
	size_t i;
	int fd;

	(void)state;
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ph_win_at_path(fd, bad[i], &w), -EINVAL);
		assert_null(w);
	}
	assert_int_equal(ph_win_at_path(fd, "a/b.txt", &w), 0);
	assert_int_equal(wcsncmp(w, L"\\\\?\\", 4), 0);
	assert_true(wcslen(w) > 8 && wcscmp(w + wcslen(w) - 8, L"\\a\\b.txt") == 0);
	free(w);
	/* "." alone is the folder itself: its path, nothing appended. */
	assert_int_equal(ph_win_at_path(fd, ".", &w), 0);
	assert_int_equal(wcsncmp(w, L"\\\\?\\", 4), 0);
	assert_true(wcslen(w) > 4 && w[wcslen(w) - 1] != L'.');
	free(w);
	_close(fd);
	assert_int_equal(ph_win_at_path(4000, "x", &w), -EBADF);
}

static void
test_dir_open_errors(void **state)
{
	char path[1024];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", root);
	assert_int_equal(ph_win_dir_open(path), -ENOENT);
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	put(fd, "plain.txt", "x");
	_close(fd);
	snprintf(path, sizeof(path), "%s/plain.txt", root);
	assert_int_equal(ph_win_dir_open(path), -ENOTDIR);
}

static void
test_rename_noreplace(void **state)
{
	char buf[64];
	int fd;

	(void)state;
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	put(fd, "nr-a", "A");
	put(fd, "nr-b", "B");
	assert_int_equal(ph_rename_noreplace(fd, "nr-a", fd, "nr-b"), -EEXIST);
	assert_int_equal(get(fd, "nr-a", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "A");
	assert_int_equal(get(fd, "nr-b", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "B");
	assert_int_equal(ph_rename_noreplace(fd, "nr-a", fd, "nr-\xc3\xa9"), 0);
	assert_int_equal(get(fd, "nr-a", buf, sizeof(buf)), -1);
	assert_int_equal(get(fd, "nr-\xc3\xa9", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "A");
	_close(fd);
}

static void
test_replace(void **state)
{
	char buf[64];
	int fd;

	(void)state;
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	put(fd, "rp-old", "old content");
	put(fd, ".rp-\xe6\x97\xa5.tmp", "new content");
	assert_int_equal(ph_win_replace_at(fd, ".rp-\xe6\x97\xa5.tmp", fd, "rp-old"), 0);
	assert_int_equal(get(fd, "rp-old", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "new content");
	assert_int_equal(get(fd, ".rp-\xe6\x97\xa5.tmp", buf, sizeof(buf)), -1);
	/* A target that does not exist yet is simply created. */
	put(fd, "rp-tmp2", "second");
	assert_int_equal(ph_win_replace_at(fd, "rp-tmp2", fd, "rp-fresh"), 0);
	assert_int_equal(get(fd, "rp-fresh", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "second");
	assert_int_equal(ph_win_replace_at(fd, "rp-missing", fd, "rp-old"), -ENOENT);
	_close(fd);
}

/* A target another program holds open (without FILE_SHARE_DELETE, as any
 * fopen) cannot be replaced: that file fails, both stay as they were. */
static void
test_replace_held_open(void **state)
{
	char buf[64];
	wchar_t *w;
	HANDLE h;
	int fd, rc;

	(void)state;
	fd = ph_win_dir_open(root);
	assert_true(fd >= 0);
	put(fd, "held", "held content");
	put(fd, "held.tmp", "replacement");
	assert_int_equal(ph_win_at_path(fd, "held", &w), 0);
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
	free(w);
	assert_true(h != INVALID_HANDLE_VALUE);
	rc = ph_win_replace_at(fd, "held.tmp", fd, "held");
	assert_true(rc == -EACCES || rc == -EBUSY);
	CloseHandle(h);
	assert_int_equal(get(fd, "held", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "held content");
	assert_int_equal(get(fd, "held.tmp", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "replacement");
	/* Once it is closed, the replace goes through. */
	assert_int_equal(ph_win_replace_at(fd, "held.tmp", fd, "held"), 0);
	assert_int_equal(get(fd, "held", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "replacement");
	_close(fd);
}

static void
test_durable_sync_and_limits(void **state)
{
	char path[1024];
	FILE *f[600];
	int fds[2], i;

	(void)state;
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/sync%d", root, i);
		fds[i] = _open(path, _O_CREAT | _O_RDWR | _O_BINARY, 0600);
		assert_true(fds[i] >= 0);
		assert_int_equal(_write(fds[i], "data", 4), 4);
	}
	assert_int_equal(ph_durable_sync(fds, 2), 0);
	assert_int_equal(ph_fs_time_step(fds[0]), 0);   /* the temp folder is not FAT */
	for (i = 0; i < 2; i++)
		_close(fds[i]);
	fds[0] = 4000;   /* never opened */
	assert_int_equal(ph_durable_sync(fds, 1), -EBADF);
	assert_int_equal(ph_fs_time_step(4000), 0);
	ph_writeback_hint(fds[1], 0, 4);   /* a no-op on Windows, must not fail */

	/* The C runtime's default is 512 streams: raised, 600 open at once. */
	assert_true(ph_raise_nofile() >= 2048);
	snprintf(path, sizeof(path), "%s/sync0", root);
	for (i = 0; i < 600; i++) {
		f[i] = fopen(path, "rb");
		assert_non_null(f[i]);
	}
	for (i = 0; i < 600; i++)
		fclose(f[i]);
}

/* ph_ansi_path: a folder the ANSI code page can spell (clés) is spelled in
 * it, one it cannot (日本) by its short name, a file not made yet there by
 * its folder's short name and its own; each reaches the file through the
 * C runtime's narrow fopen, as libssh opens keys, the config, known_hosts. */
static void
test_ansi_path(void **state)
{
	static const char *const dirs[] = { "cl\xc3\xa9s", "\xe6\x97\xa5\xe6\x9c\xac" };
	char path[MAX_PATH * 4], narrow[MAX_PATH * 4], buf[64];
	wchar_t *w;
	FILE *f;
	size_t i, k;
	int fd;

	(void)state;
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s\\%s", root, dirs[i]);
		assert_int_equal(ph_win_long_path(path, &w), 0);
		assert_true(CreateDirectoryW(w, NULL));
		free(w);
		fd = ph_win_dir_open(path);
		assert_true(fd >= 0);
		put(fd, "key", "secret");
		_close(fd);
		/* An existing file: fopen of the narrow name reads it. */
		snprintf(path, sizeof(path), "%s\\%s\\key", root, dirs[i]);
		assert_int_equal(ph_ansi_path(path, narrow, sizeof(narrow)), 0);
		f = fopen(narrow, "rb");
		assert_non_null(f);
		k = fread(buf, 1, sizeof(buf) - 1, f);
		buf[k] = '\0';
		fclose(f);
		assert_string_equal(buf, "secret");
		if (i == 1)   /* the short name: ASCII */
			for (k = 0; narrow[k] != '\0'; k++)
				assert_true((unsigned char)narrow[k] < 0x80);
		/* A file not made yet (known_hosts): made under its own name. */
		snprintf(path, sizeof(path), "%s\\%s\\known_hosts", root, dirs[i]);
		assert_int_equal(ph_ansi_path(path, narrow, sizeof(narrow)), 0);
		f = fopen(narrow, "wb");
		assert_non_null(f);
		assert_int_equal(fputs("hosts", f) >= 0, 1);
		fclose(f);
		snprintf(path, sizeof(path), "%s\\%s", root, dirs[i]);
		fd = ph_win_dir_open(path);
		assert_true(fd >= 0);
		assert_int_equal(get(fd, "known_hosts", buf, sizeof(buf)), 0);
		assert_string_equal(buf, "hosts");
		_close(fd);
	}
	/* Too small a buffer: said, never cut. */
	assert_int_equal(ph_ansi_path(path, narrow, 4), -ENAMETOOLONG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_round_trip),
		cmocka_unit_test(test_bad_encodings),
		cmocka_unit_test(test_long_path_form),
		cmocka_unit_test(test_long_path_deep),
		cmocka_unit_test(test_at_path_names),
		cmocka_unit_test(test_dir_open_errors),
		cmocka_unit_test(test_rename_noreplace),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_replace_held_open),
		cmocka_unit_test(test_durable_sync_and_limits),
		cmocka_unit_test(test_ansi_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
