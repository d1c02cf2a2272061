/* SPDX-License-Identifier: ISC */
/* pfs.h's ph_set_atime_mtime, Windows side: SetFileTime through a handle
 * of its own that may write attributes (a folder's descriptor is opened
 * for listing only). */
#include <errno.h>
#include <io.h>
#include <stdint.h>
#include <windows.h>

#include "pfs.h"
#include "win32.h"

/* 100 ns ticks from 1601 (FILETIME) to 1970. */
#define EPOCH_TICKS 116444736000000000LL

static int
to_filetime(int64_t sec, FILETIME *ft)
{
	LARGE_INTEGER t;

	/* FILETIME counts 100 ns from 1601 up to about the year 30828. */
	if (sec < -EPOCH_TICKS / 10000000 || sec > (INT64_MAX - EPOCH_TICKS) / 10000000 - 1)
		return -EINVAL;
	t.QuadPart = sec * 10000000 + EPOCH_TICKS;
	ft->dwLowDateTime = t.LowPart;
	ft->dwHighDateTime = (DWORD)t.HighPart;
	return 0;
}

int
ph_set_atime_mtime(int fd, int64_t atime, int64_t mtime)
{
	intptr_t oh = _get_osfhandle(fd);
	FILETIME fa, fm;
	HANDLE h;
	int rc;

	if (oh == -1 || oh == -2)
		return -EBADF;
	if ((rc = to_filetime(atime, &fa)) != 0 || (rc = to_filetime(mtime, &fm)) != 0)
		return rc;
	/* Always a handle of its own: a folder's descriptor has no
	 * FILE_WRITE_ATTRIBUTES (Windows refuses SetFileTime on it, Wine lets
	 * it through, so this one path is what runs, and is tested, on both). */
	h = ReOpenFile((HANDLE)oh, FILE_WRITE_ATTRIBUTES,
	               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
	               FILE_FLAG_BACKUP_SEMANTICS);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	rc = SetFileTime(h, NULL, &fa, &fm) ? 0 : ph_win_errno(GetLastError());
	CloseHandle(h);
	return rc;
}
