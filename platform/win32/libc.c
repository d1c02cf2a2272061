/* SPDX-License-Identifier: ISC */
/* platform.h's C library pieces on Windows: localtime_s, the computer's DNS
 * host name, OpenProcess for "does it run", GetActiveProcessorCount,
 * GetDiskFreeSpaceExW, GetFinalPathNameByHandleW, writes of one piece at a
 * time, threads (winpthreads). */
#include <errno.h>
#include <io.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <windows.h>

#include "platform.h"
#include "win32.h"

int
ph_localtime(time_t t, struct tm *tm)
{
	return localtime_s(tm, &t) == 0 ? 0 : -EINVAL;
}

void
ph_hostname(char *buf, size_t n)
{
	wchar_t w[256];
	DWORD len = sizeof(w) / sizeof(w[0]);
	char *s = NULL;

	if (n == 0)
		return;
	buf[0] = '\0';
	if (!GetComputerNameExW(ComputerNameDnsHostname, w, &len) || ph_win_narrow(w, &s) != 0)
		return;
	strncpy(buf, s, n - 1);
	buf[n - 1] = '\0';
	free(s);
}

int
ph_pid_alive(uint32_t pid)
{
	HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
	DWORD code;
	int alive;

	if (h == NULL)
		/* No such process; any other failure (access denied: another
		 * user's) cannot tell, so it may run. */
		return GetLastError() == ERROR_INVALID_PARAMETER ? 0 : 1;
	alive = !GetExitCodeProcess(h, &code) || code == STILL_ACTIVE;
	CloseHandle(h);
	return alive;
}

int
ph_cpu_count(void)
{
	DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);

	return n > 0 ? (n > 4096 ? 4096 : (int)n) : 1;
}

int
ph_free_space(int fd, uint64_t *bytes)
{
	ULARGE_INTEGER avail;
	wchar_t *w;
	int rc;

	rc = ph_win_at_path(fd, ".", &w);
	if (rc != 0)
		return rc;
	/* What this user may still write: quotas counted, as f_bavail. */
	rc = GetDiskFreeSpaceExW(w, &avail, NULL, NULL) ? 0 : ph_win_errno(GetLastError());
	free(w);
	if (rc == 0)
		*bytes = avail.QuadPart;
	return rc;
}

/* The final path of the open handle h, without its \\?\ prefix (\\?\UNC\
 * back to \\), as malloc'd UTF-8 in *out. */
static int
final_path(HANDLE h, char **out)
{
	wchar_t *w = NULL, *p;
	DWORD n, m;
	int rc;

	n = GetFinalPathNameByHandleW(h, NULL, 0, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	if (n == 0)
		return GetLastError() == ERROR_MORE_DATA ? -ENAMETOOLONG :
		       ph_win_errno(GetLastError());
	if ((w = malloc(((size_t)n + 1) * sizeof(*w))) == NULL)
		return -ENOMEM;
	m = GetFinalPathNameByHandleW(h, w, n, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	if (m == 0 || m >= n) {
		rc = m == 0 ? ph_win_errno(GetLastError()) : -EIO;
		goto out;
	}
	p = w;
	if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) {
		p += 6;   /* keep two backslashes: \\server\share */
		p[0] = L'\\';
	} else if (wcsncmp(p, L"\\\\?\\", 4) == 0 && p[4] != L'\0' && p[5] == L':') {
		p += 4;   /* C:\dir */
	}
	rc = ph_win_narrow(p, out);
out:
	free(w);
	return rc;
}

int
ph_realpath(const char *path, char *out, size_t n)
{
	char *s = NULL;
	wchar_t *w;
	HANDLE h;
	size_t len;
	int rc;

	rc = ph_win_long_path(path, &w);
	if (rc != 0)
		return rc;
	/* Links followed (no OPEN_REPARSE_POINT); a folder opens too. */
	h = CreateFileW(w, FILE_READ_ATTRIBUTES,
	                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
	                FILE_FLAG_BACKUP_SEMANTICS, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	rc = final_path(h, &s);
	CloseHandle(h);
	if (rc != 0)
		return rc;
	len = strlen(s);
	if (len >= n)
		rc = -ENAMETOOLONG;
	else
		memcpy(out, s, len + 1);
	free(s);
	return rc;
}

int64_t
ph_writev(int fd, const struct ph_iov *iov, int cnt)
{
	int64_t done = 0;
	int i;

	for (i = 0; i < cnt; i++) {
		size_t left = iov[i].len;
		const char *p = iov[i].base;

		while (left > 0) {
			/* _write takes an unsigned int count. */
			unsigned k = left > (1u << 30) ? (1u << 30) : (unsigned)left;
			int w = _write(fd, p, k);

			if (w < 0)
				return done > 0 ? done : -errno;
			done += w;
			if ((unsigned)w < k)
				return done;
			p += w;
			left -= (size_t)w;
		}
	}
	return done;
}

int
ph_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	return pthread_create(th, NULL, fn, arg);
}

void *
ph_utf8_ctype_new(void)
{
	return NULL;   /* names go to libraries wide (ph_wide_name) */
}

void *
ph_utf8_ctype_use(void *ctype)
{
	(void)ctype;
	return NULL;
}

void
ph_utf8_ctype_free(void *ctype)
{
	(void)ctype;
}

int
ph_wide_name(const char *utf8, wchar_t **out)
{
	return ph_win_widen(utf8, out);
}

int
ph_narrow_name(const wchar_t *wide, char **out)
{
	return ph_win_narrow(wide, out);
}
