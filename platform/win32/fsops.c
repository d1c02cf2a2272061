/* SPDX-License-Identifier: ISC */
/* Windows forms of platform.h's file system operations, and the durable
 * replace (win32.h). Folders are descriptors over directory HANDLEs
 * (ph_win_dir_open); names are UTF-8, made long UTF-16 paths in wpath.c. */
#include <errno.h>
#include <io.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "platform.h"
#include "win32.h"

int
ph_fs_time_step(int fd)
{
	intptr_t oh = _get_osfhandle(fd);
	wchar_t fs[MAX_PATH + 1];

	if (oh == -1 || oh == -2)
		return 0;
	if (!GetVolumeInformationByHandleW((HANDLE)oh, NULL, 0, NULL, NULL, NULL, fs,
	                                   MAX_PATH + 1))
		return 0;
	/* FAT, FAT32 and exFAT keep times in 2 s steps (as the POSIX side). */
	return _wcsicmp(fs, L"FAT") == 0 || _wcsicmp(fs, L"FAT32") == 0 ||
	       _wcsicmp(fs, L"exFAT") == 0 ? 2 : 0;
}

/* The long paths of from (in fromdir) and to (in todir). */
static int
both_paths(int fromdir, const char *from, int todir, const char *to, wchar_t **wfrom,
           wchar_t **wto)
{
	int rc;

	*wto = NULL;
	rc = ph_win_at_path(fromdir, from, wfrom);
	if (rc != 0)
		return rc;
	rc = ph_win_at_path(todir, to, wto);
	if (rc != 0) {
		free(*wfrom);
		*wfrom = NULL;
	}
	return rc;
}

int
ph_rename_noreplace(int fromdir, const char *from, int dirfd, const char *to)
{
	wchar_t *wfrom, *wto;
	int rc;

	rc = both_paths(fromdir, from, dirfd, to, &wfrom, &wto);
	if (rc != 0)
		return rc;
	/* Without MOVEFILE_REPLACE_EXISTING the file system itself refuses an
	 * existing target: no window between a look and the rename. */
	rc = MoveFileExW(wfrom, wto, MOVEFILE_WRITE_THROUGH) ? 0 : ph_win_errno(GetLastError());
	free(wfrom);
	free(wto);
	return rc;
}

int
ph_win_replace_at(int fromdir, const char *from, int todir, const char *to)
{
	wchar_t *wfrom, *wto;
	HANDLE h;
	int rc;

	rc = both_paths(fromdir, from, todir, to, &wfrom, &wto);
	if (rc != 0)
		return rc;
	/* FlushFileBuffers flushes the file, whichever handle asks: the
	 * caller's own handles are closed already (see win32.h). */
	h = CreateFileW(wfrom, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
	                NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		rc = ph_win_errno(GetLastError());
		goto out;
	}
	if (!FlushFileBuffers(h))
		rc = ph_win_errno(GetLastError());
	CloseHandle(h);
	if (rc != 0)
		goto out;
	if (!MoveFileExW(wfrom, wto, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
		rc = ph_win_errno(GetLastError());
out:
	free(wfrom);
	free(wto);
	return rc;
}

int
ph_open_ref(int dirfd, const char *name)
{
	/* A file held open on Windows cannot be renamed over or removed unless
	 * every handle shares delete, and its space is freed at the last
	 * close either way: holding it brings the reaper nothing (core/reap.c
	 * then closes nothing, as where no reference can be had). */
	(void)dirfd;
	(void)name;
	return -1;
}

int
ph_open_beneath_dir(int root, const char *rel)
{
	/* No one-call confined open: the caller walks rel a component at a
	 * time (ph_openat with PH_O_NOFOLLOW refuses links and junctions). */
	(void)root;
	(void)rel;
	return -ENOSYS;
}

int
ph_exe_path(char *buf, size_t n)
{
	wchar_t w[32768];
	char *u = NULL;
	DWORD k;
	size_t len;
	int rc;

	if (n < 2)
		return -ENAMETOOLONG;
	k = GetModuleFileNameW(NULL, w, sizeof(w) / sizeof(w[0]));
	if (k == 0 || k >= sizeof(w) / sizeof(w[0]))
		return k == 0 ? ph_win_errno(GetLastError()) : -ENAMETOOLONG;
	if ((rc = ph_win_narrow(w, &u)) != 0)
		return rc;
	len = strlen(u);
	if (len >= n) {
		free(u);
		return -ENAMETOOLONG;
	}
	memcpy(buf, u, len + 1);
	free(u);
	return 0;
}
