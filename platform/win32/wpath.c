/* SPDX-License-Identifier: ISC */
/* Windows paths: UTF-8 (phsync's names everywhere) to UTF-16 (the W calls)
 * at this one boundary, \\?\ long paths, folder descriptors over directory
 * HANDLEs, and Windows errors as errno values. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "pfs.h"
#include "win32.h"

int
ph_win_errno(unsigned long err)
{
	switch (err) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
	case ERROR_BAD_NETPATH:
	case ERROR_BAD_NET_NAME:
		return -ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_CURRENT_DIRECTORY:
		return -EACCES;
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
	case ERROR_BUSY:
		return -EBUSY;
	case ERROR_FILE_EXISTS:
	case ERROR_ALREADY_EXISTS:
		return -EEXIST;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL:
		return -ENOSPC;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
		return -ENOMEM;
	case ERROR_INVALID_NAME:
	case ERROR_BAD_PATHNAME:
	case ERROR_INVALID_PARAMETER:
		return -EINVAL;
	case ERROR_FILENAME_EXCED_RANGE:
		return -ENAMETOOLONG;
	case ERROR_DIR_NOT_EMPTY:
		return -ENOTEMPTY;
	case ERROR_DIRECTORY:
		return -ENOTDIR;
	case ERROR_NOT_SAME_DEVICE:
		return -EXDEV;
	case ERROR_INVALID_HANDLE:
		return -EBADF;
	case ERROR_TOO_MANY_OPEN_FILES:
		return -EMFILE;
	case ERROR_WRITE_PROTECT:
		return -EROFS;
	case ERROR_NOT_SUPPORTED:
	case ERROR_INVALID_FUNCTION:
		return -ENOTSUP;
	case ERROR_NO_UNICODE_TRANSLATION:
		return -EILSEQ;
	case ERROR_CANT_RESOLVE_FILENAME:
		return -ELOOP;
	default:
		return -EIO;
	}
}

int
ph_win_widen(const char *utf8, wchar_t **out)
{
	wchar_t *w;
	int n;

	*out = NULL;
	n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
	if (n <= 0)
		return -EILSEQ;
	w = malloc((size_t)n * sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, w, n) != n) {
		free(w);
		return -EILSEQ;
	}
	*out = w;
	return 0;
}

int
ph_win_narrow(const wchar_t *w, char **out)
{
	char *s;
	int n;

	*out = NULL;
	n = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, NULL, 0, NULL, NULL);
	if (n <= 0)
		return -EILSEQ;
	s = malloc((size_t)n);
	if (s == NULL)
		return -ENOMEM;
	if (WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, s, n, NULL, NULL) != n) {
		free(s);
		return -EILSEQ;
	}
	*out = s;
	return 0;
}

static void
to_backslashes(wchar_t *w)
{
	for (; *w != L'\0'; w++) {
		if (*w == L'/')
			*w = L'\\';
	}
}

/* full (absolute, from GetFullPathNameW) with the long-path prefix in front. */
static int
prefix_long(const wchar_t *full, wchar_t **out)
{
	const wchar_t *pre = L"\\\\?\\";
	size_t skip = 0, len;
	wchar_t *w;

	/* \\.\NAME is a device: a reserved name (NUL, CON, COM1...) in the path. */
	if (wcsncmp(full, L"\\\\.\\", 4) == 0)
		return -EINVAL;
	if (full[0] == L'\\' && full[1] == L'\\') {
		pre = L"\\\\?\\UNC\\";
		skip = 2;
	}
	len = wcslen(pre) + wcslen(full + skip) + 1;
	w = malloc(len * sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	wcscpy(w, pre);
	wcscat(w, full + skip);
	*out = w;
	return 0;
}

int
ph_win_long_path(const char *path, wchar_t **out)
{
	wchar_t *w = NULL, *full = NULL;
	DWORD n, m;
	int rc;

	*out = NULL;
	if (path[0] == '\0')
		return -ENOENT;
	rc = ph_win_widen(path, &w);
	if (rc != 0)
		return rc;
	if (wcsncmp(w, L"\\\\?\\", 4) == 0) {
		*out = w;   /* already a long path: taken as it is */
		return 0;
	}
	to_backslashes(w);
	n = GetFullPathNameW(w, 0, NULL, NULL);
	if (n == 0) {
		rc = ph_win_errno(GetLastError());
		goto out;
	}
	full = malloc((size_t)n * sizeof(*full));
	if (full == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	m = GetFullPathNameW(w, n, full, NULL);
	if (m == 0 || m >= n) {
		rc = m == 0 ? ph_win_errno(GetLastError()) : -EIO;
		goto out;
	}
	rc = prefix_long(full, out);
out:
	free(full);
	free(w);
	return rc;
}

int
ph_win_dir_open(const char *path)
{
	BY_HANDLE_FILE_INFORMATION info;
	wchar_t *w;
	HANDLE h;
	int rc, fd;

	rc = ph_win_long_path(path, &w);
	if (rc != 0)
		return rc;
	/* FILE_FLAG_BACKUP_SEMANTICS opens a folder; FILE_SHARE_DELETE lets it
	 * be renamed while held (the descriptor follows it, as on POSIX). */
	h = CreateFileW(w, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES,
	                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
	                OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	if (!GetFileInformationByHandle(h, &info)) {
		rc = ph_win_errno(GetLastError());
		goto fail;
	}
	if (!(info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
		rc = -ENOTDIR;
		goto fail;
	}
	fd = _open_osfhandle((intptr_t)h, _O_RDONLY);
	if (fd < 0) {
		rc = -EMFILE;
		goto fail;
	}
	return fd;
fail:
	CloseHandle(h);
	return rc;
}

/* 0 when name is a relative path of plain components: no drive, no
 * alternate data stream (':'), no empty, "." or ".." component. */
static int
check_rel_name(const char *name)
{
	const char *p = name, *e;
	size_t len;

	if (*name == '\0' || *name == '/' || *name == '\\')
		return -EINVAL;
	if (strchr(name, ':') != NULL)
		return -EINVAL;
	while (*p != '\0') {
		e = p + strcspn(p, "/\\");
		len = (size_t)(e - p);
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p = *e != '\0' ? e + 1 : e;
		if (*e != '\0' && *p == '\0')
			return -EINVAL;   /* a trailing separator */
	}
	return 0;
}

int
ph_win_at_path(int dirfd, const char *name, wchar_t **out)
{
	intptr_t oh = _get_osfhandle(dirfd);
	wchar_t *wname = NULL, *w = NULL;
	size_t dlen, nlen;
	DWORD n, m;
	int rc;

	*out = NULL;
	if (dirfd == PH_AT_CWD)
		return ph_win_long_path(name, out);   /* a path, not a name */
	if (oh == -1 || oh == -2)
		return -EBADF;
	if (strcmp(name, ".") == 0) {
		/* the folder itself */
		wname = calloc(1, sizeof(*wname));
		rc = wname == NULL ? -ENOMEM : 0;
	} else {
		rc = check_rel_name(name);
		if (rc == 0)
			rc = ph_win_widen(name, &wname);
	}
	if (rc != 0)
		return rc;
	to_backslashes(wname);
	n = GetFinalPathNameByHandleW((HANDLE)oh, NULL, 0, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	if (n == 0) {
		/* Wine 8 answers ERROR_MORE_DATA for a folder whose path is
		 * longer than MAX_PATH (docs/WINDOWS.md). */
		rc = GetLastError() == ERROR_MORE_DATA ? -ENAMETOOLONG :
		     ph_win_errno(GetLastError());
		goto out;
	}
	nlen = wcslen(wname);
	w = malloc(((size_t)n + 1 + nlen + 1) * sizeof(*w));
	if (w == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	m = GetFinalPathNameByHandleW((HANDLE)oh, w, n, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	if (m == 0 || m >= n) {
		rc = m == 0 ? ph_win_errno(GetLastError()) : -EIO;
		goto out;
	}
	dlen = wcslen(w);
	if (nlen > 0 && dlen > 0 && w[dlen - 1] != L'\\')
		w[dlen++] = L'\\';
	memcpy(w + dlen, wname, (nlen + 1) * sizeof(*w));
	*out = w;
	w = NULL;
out:
	free(w);
	free(wname);
	return rc;
}
