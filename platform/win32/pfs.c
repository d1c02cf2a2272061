/* SPDX-License-Identifier: ISC */
/* pfs.h's Windows side: folder-relative calls on \\?\ long UTF-16 paths
 * (ph_win_at_path), descriptors as C runtime fds over HANDLEs opened binary
 * and shared for read, write and delete, LockFileEx, ReadFile/WriteFile at an
 * offset, listings with each entry's stat (FileIdBothDirectoryInfo).
 * docs/WINDOWS.md says what differs. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "pfs.h"
#include "win32.h"

#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
/* 100 ns ticks from 1601 (FILETIME) to 1970. */
#define EPOCH_TICKS 116444736000000000LL
/* ph_renameat's tries while another program holds a file, and the first
 * wait (doubled each time: 10 + 20 + 40 + 80 ms at most). */
#define RENAME_TRIES 5
#define RENAME_WAIT_MS 10
/* The byte ph_lock locks: far past any file's data, so a lock never keeps
 * another program from reading the file (Windows' locks are mandatory). */
#define LOCK_OFF_HIGH 0x7fffffffu
#define LOCK_OFF_LOW 0xfffffff0u

static HANDLE
fd_handle(int fd)
{
	intptr_t oh = _get_osfhandle(fd);

	return oh == -1 || oh == -2 ? INVALID_HANDLE_VALUE : (HANDLE)oh;
}

/* A FILETIME in ns since 1970, held at the ends of int64_t (after 2262). */
static int64_t
ft_ns(LONGLONG ticks)
{
	int64_t t = (int64_t)ticks - EPOCH_TICKS;

	if (t >= INT64_MAX / 100)
		return INT64_MAX;
	return t <= INT64_MIN / 100 ? INT64_MIN : t * 100;
}

/* The same in whole seconds, rounded down. */
static int64_t
ft_sec(LONGLONG ticks)
{
	int64_t t = (int64_t)ticks - EPOCH_TICKS;

	return t / 10000000 - (t % 10000000 < 0);
}

/* 1 when h (opened with FILE_FLAG_OPEN_REPARSE_POINT, attributes attrs) is a
 * symlink or junction: a reparse point that names another file. Other
 * reparse points (cloud placeholders, dedup) are the file's own data. */
static int
is_link(HANDLE h, DWORD attrs)
{
	FILE_ATTRIBUTE_TAG_INFO tag;

	if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT))
		return 0;
	if (!GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof(tag)))
		return 1;   /* cannot tell: taken as a link, refused */
	return IsReparseTagNameSurrogate(tag.ReparseTag) ? 1 : 0;
}

static int
fill(HANDLE h, struct ph_stat *st)
{
	BY_HANDLE_FILE_INFORMATION bi;
	FILE_BASIC_INFO basic;
	LARGE_INTEGER t;

	if (!GetFileInformationByHandle(h, &bi))
		return ph_win_errno(GetLastError());
	memset(st, 0, sizeof(*st));
	st->size = ((uint64_t)bi.nFileSizeHigh << 32) | bi.nFileSizeLow;
	st->dev = bi.dwVolumeSerialNumber;
	st->ino = ((uint64_t)bi.nFileIndexHigh << 32) | bi.nFileIndexLow;
	st->nlink = bi.nNumberOfLinks;
	t.LowPart = bi.ftLastWriteTime.dwLowDateTime;
	t.HighPart = (LONG)bi.ftLastWriteTime.dwHighDateTime;
	st->mtime_ns = ft_ns(t.QuadPart);
	st->mtime_sec = ft_sec(t.QuadPart);
	st->mtime_nsec = (uint32_t)((t.QuadPart % 10000000 + 10000000) % 10000000) * 100u;
	/* ChangeTime (data or metadata) where the file system keeps it. */
	if (GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof(basic)) &&
	    basic.ChangeTime.QuadPart != 0)
		st->ctime_ns = ft_ns(basic.ChangeTime.QuadPart);
	else
		st->ctime_ns = st->mtime_ns;
	if (is_link(h, bi.dwFileAttributes))
		st->type = PH_FT_LNK;
	else if (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
		st->type = PH_FT_DIR;
	else if (bi.dwFileAttributes & FILE_ATTRIBUTE_DEVICE)
		st->type = PH_FT_OTHER;
	else
		st->type = PH_FT_REG;
	st->mode = st->type == PH_FT_DIR ? 0755 : 0644;
	if (bi.dwFileAttributes & FILE_ATTRIBUTE_READONLY)
		st->mode &= ~0222u;
	return 0;
}

int
ph_path_sep(int c)
{
	return c == '/' || c == '\\';
}

int
ph_open_blocks_replace(void)
{
	return 1;
}

int
ph_dir_sync_needed(void)
{
	return 0;
}

int
ph_dir_open_path(const char *path)
{
	return ph_win_dir_open(path);
}

static DWORD
disposition(int flags)
{
	if ((flags & PH_O_CREAT) && (flags & PH_O_EXCL))
		return CREATE_NEW;
	if ((flags & PH_O_CREAT) && (flags & PH_O_TRUNC))
		return CREATE_ALWAYS;
	if (flags & PH_O_CREAT)
		return OPEN_ALWAYS;
	if (flags & PH_O_TRUNC)
		return TRUNCATE_EXISTING;
	return OPEN_EXISTING;
}

/* What the open handle h is, against what flags asked for. */
static int
check_opened(HANDLE h, int flags)
{
	BY_HANDLE_FILE_INFORMATION bi;

	if (!GetFileInformationByHandle(h, &bi))
		return ph_win_errno(GetLastError());
	if ((flags & PH_O_NOFOLLOW) && is_link(h, bi.dwFileAttributes))
		return -ELOOP;
	if ((flags & PH_O_DIR) && !(bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
		return -ENOTDIR;
	if (!(flags & PH_O_DIR) && (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
		return -EISDIR;
	return 0;
}

int
ph_openat(int dirfd, const char *name, int flags, unsigned mode)
{
	DWORD access, fl = FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS;
	wchar_t *w;
	HANDLE h;
	int rc, fd, crt = _O_BINARY;
	SECURITY_ATTRIBUTES sa = { sizeof(sa), NULL, FALSE };

	(void)mode;
	if (flags & PH_O_DIR) {
		access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
	} else if ((flags & 3) == PH_O_WRONLY) {
		access = GENERIC_WRITE | FILE_READ_ATTRIBUTES;
		crt |= _O_WRONLY;
	} else if ((flags & 3) == PH_O_RDWR) {
		access = GENERIC_READ | GENERIC_WRITE;
		crt |= _O_RDWR;
	} else {
		access = GENERIC_READ;
		crt |= _O_RDONLY;
	}
	if (flags & PH_O_NOFOLLOW)
		fl |= FILE_FLAG_OPEN_REPARSE_POINT;
	rc = ph_win_at_path(dirfd, name, &w);
	if (rc != 0)
		return rc;
	/* BACKUP_SEMANTICS opens a folder too, so a folder is told apart below
	 * (-EISDIR) instead of failing as "access denied". */
	if ((flags & PH_O_PRIVATE) && (flags & PH_O_CREAT) &&
	    (rc = ph_win_private_sd(&sa.lpSecurityDescriptor)) != 0) {
		free(w);
		return rc;
	}
	h = CreateFileW(w, access, SHARE_ALL, &sa, disposition(flags), fl, NULL);
	free(w);
	LocalFree(sa.lpSecurityDescriptor);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	if ((rc = check_opened(h, flags)) != 0)
		goto fail;
	fd = _open_osfhandle((intptr_t)h, crt);
	if (fd < 0) {
		rc = -EMFILE;
		goto fail;
	}
	return fd;
fail:
	CloseHandle(h);
	return rc;
}

int
ph_close(int fd)
{
	return _close(fd) == 0 ? 0 : -EBADF;
}

int
ph_fstatat(int dirfd, const char *name, struct ph_stat *st)
{
	wchar_t *w;
	HANDLE h;
	int rc;

	rc = ph_win_at_path(dirfd, name, &w);
	if (rc != 0)
		return rc;
	/* Attributes only: no sharing conflict with any other open. */
	h = CreateFileW(w, FILE_READ_ATTRIBUTES, SHARE_ALL, NULL, OPEN_EXISTING,
	                FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	rc = fill(h, st);
	CloseHandle(h);
	return rc;
}

int
ph_fstat(int fd, struct ph_stat *st)
{
	HANDLE h = fd_handle(fd);

	return h == INVALID_HANDLE_VALUE ? -EBADF : fill(h, st);
}

int
ph_unlinkat(int dirfd, const char *name, int flags)
{
	wchar_t *w;
	BOOL ok;
	int rc;

	rc = ph_win_at_path(dirfd, name, &w);
	if (rc != 0)
		return rc;
	ok = (flags & PH_AT_REMOVEDIR) ? RemoveDirectoryW(w) : DeleteFileW(w);
	rc = ok ? 0 : ph_win_errno(GetLastError());
	free(w);
	return rc;
}

int
ph_mkdirat(int dirfd, const char *name, unsigned mode)
{
	wchar_t *w;
	int rc;

	(void)mode;
	rc = ph_win_at_path(dirfd, name, &w);
	if (rc != 0)
		return rc;
	rc = CreateDirectoryW(w, NULL) ? 0 : ph_win_errno(GetLastError());
	free(w);
	return rc;
}

/* Does another program hold w open without sharing delete (so that it can
 * be neither replaced nor renamed)? Windows says "access denied" for a
 * rename over such a file, as for a real lack of permission; asking for
 * delete access with every sharing allowed tells the two apart. */
static int
held_by_other(const wchar_t *w)
{
	HANDLE h = CreateFileW(w, DELETE, SHARE_ALL, NULL, OPEN_EXISTING,
	                       FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);

	if (h == INVALID_HANDLE_VALUE)
		return GetLastError() == ERROR_SHARING_VIOLATION;
	CloseHandle(h);
	return 0;
}

int
ph_renameat(int fromdir, const char *from, int todir, const char *to)
{
	wchar_t *wfrom = NULL, *wto = NULL;
	DWORD err, wait = RENAME_WAIT_MS;
	int rc, i;

	rc = ph_win_at_path(fromdir, from, &wfrom);
	if (rc == 0)
		rc = ph_win_at_path(todir, to, &wto);
	if (rc != 0)
		goto out;
	for (i = 0;; i++) {
		if (MoveFileExW(wfrom, wto, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
			rc = 0;
			break;
		}
		err = GetLastError();
		rc = ph_win_errno(err);
		/* A virus scanner or an indexer holds a file for a moment: try
		 * again a few times (as Git for Windows does), then report it. */
		if (i + 1 == RENAME_TRIES ||
		    (err != ERROR_ACCESS_DENIED && err != ERROR_SHARING_VIOLATION &&
		     err != ERROR_LOCK_VIOLATION))
			break;
		Sleep(wait);
		wait *= 2;
	}
	/* Still refused: a file held open by another program is -EBUSY. */
	if (rc == -EACCES && (held_by_other(wto) || held_by_other(wfrom)))
		rc = -EBUSY;
out:
	free(wfrom);
	free(wto);
	return rc;
}

int
ph_dir_sync(int dirfd)
{
	/* Renames were written through (MOVEFILE_WRITE_THROUGH); Windows
	 * cannot flush a folder. */
	return fd_handle(dirfd) == INVALID_HANDLE_VALUE ? -EBADF : 0;
}

int
ph_ftruncate(int fd, uint64_t size)
{
	HANDLE h = fd_handle(fd);
	FILE_END_OF_FILE_INFO eof;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (size > (uint64_t)INT64_MAX)
		return -EINVAL;
	eof.EndOfFile.QuadPart = (LONGLONG)size;
	return SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof(eof)) ? 0 :
	       ph_win_errno(GetLastError());
}

int
ph_futime(int fd, int64_t mtime_ns)
{
	HANDLE h = fd_handle(fd);
	LARGE_INTEGER t;
	FILETIME ft;
	int64_t ticks;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	ticks = mtime_ns / 100;
	if (mtime_ns % 100 < 0)
		ticks--;   /* rounded down, as a file system of 100 ns steps does */
	if (ticks < -EPOCH_TICKS)
		return -EINVAL;   /* before 1601 */
	t.QuadPart = ticks + EPOCH_TICKS;
	ft.dwLowDateTime = t.LowPart;
	ft.dwHighDateTime = (DWORD)t.HighPart;
	return SetFileTime(h, NULL, NULL, &ft) ? 0 : ph_win_errno(GetLastError());
}

int
ph_set_times(int fd, int64_t sec, uint32_t nsec)
{
	HANDLE h = fd_handle(fd);
	FILE_BASIC_INFO bi;
	LARGE_INTEGER t;
	FILETIME ft;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	/* FILETIME counts 100 ns from 1601 up to about the year 30828. */
	if (sec < -EPOCH_TICKS / 10000000 || sec > (INT64_MAX - EPOCH_TICKS) / 10000000 - 1)
		return -EINVAL;
	t.QuadPart = sec * 10000000 + (int64_t)(nsec / 100) + EPOCH_TICKS;
	ft.dwLowDateTime = t.LowPart;
	ft.dwHighDateTime = (DWORD)t.HighPart;
	if (GetFileInformationByHandleEx(h, FileBasicInfo, &bi, sizeof(bi)) &&
	    (bi.FileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
		/* A folder's descriptor is opened for listing only, without
		 * FILE_WRITE_ATTRIBUTES (Windows refuses SetFileTime on it, Wine
		 * lets it through): a handle of its own that may, always, so
		 * that one path runs and is tested on both (restore's folder
		 * times). */
		HANDLE w = ReOpenFile(h, FILE_WRITE_ATTRIBUTES, SHARE_ALL, FILE_FLAG_BACKUP_SEMANTICS);
		int rc;

		if (w == INVALID_HANDLE_VALUE)
			return ph_win_errno(GetLastError());
		rc = SetFileTime(w, NULL, &ft, &ft) ? 0 : ph_win_errno(GetLastError());
		CloseHandle(w);
		return rc;
	}
	return SetFileTime(h, NULL, &ft, &ft) ? 0 : ph_win_errno(GetLastError());
}

int
ph_fchmod(int fd, unsigned mode)
{
	HANDLE h = fd_handle(fd);
	FILE_BASIC_INFO bi;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (!GetFileInformationByHandleEx(h, FileBasicInfo, &bi, sizeof(bi)))
		return ph_win_errno(GetLastError());
	if (mode & 0200)
		bi.FileAttributes &= ~(DWORD)FILE_ATTRIBUTE_READONLY;
	else
		bi.FileAttributes |= FILE_ATTRIBUTE_READONLY;
	if (bi.FileAttributes == 0)
		bi.FileAttributes = FILE_ATTRIBUTE_NORMAL;
	/* Zero times mean "unchanged". */
	bi.CreationTime.QuadPart = bi.LastAccessTime.QuadPart = 0;
	bi.LastWriteTime.QuadPart = bi.ChangeTime.QuadPart = 0;
	return SetFileInformationByHandle(h, FileBasicInfo, &bi, sizeof(bi)) ? 0 :
	       ph_win_errno(GetLastError());
}

/* One ReadFile or WriteFile of at most 1 GiB at off. */
static int64_t
at_offset(int fd, void *rbuf, const void *wbuf, size_t n, uint64_t off)
{
	HANDLE h = fd_handle(fd);
	OVERLAPPED ov;
	DWORD done = 0, want;
	BOOL ok;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (off > (uint64_t)INT64_MAX)
		return -EINVAL;
	want = n > (1u << 30) ? (1u << 30) : (DWORD)n;
	memset(&ov, 0, sizeof(ov));
	ov.Offset = (DWORD)off;
	ov.OffsetHigh = (DWORD)(off >> 32);
	ok = rbuf != NULL ? ReadFile(h, rbuf, want, &done, &ov) :
	     WriteFile(h, wbuf, want, &done, &ov);
	if (!ok) {
		DWORD err = GetLastError();

		return err == ERROR_HANDLE_EOF ? 0 : ph_win_errno(err);
	}
	return (int64_t)done;
}

int64_t
ph_pread(int fd, void *buf, size_t n, uint64_t off)
{
	return at_offset(fd, buf, NULL, n, off);
}

int64_t
ph_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	return at_offset(fd, NULL, buf, n, off);
}

int
ph_lock(int fd, int how)
{
	HANDLE h = fd_handle(fd);
	DWORD fl = 0, err;
	OVERLAPPED ov;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (how & PH_LOCK_EX)
		fl |= LOCKFILE_EXCLUSIVE_LOCK;
	if (how & PH_LOCK_NB)
		fl |= LOCKFILE_FAIL_IMMEDIATELY;
	memset(&ov, 0, sizeof(ov));
	ov.Offset = LOCK_OFF_LOW;
	ov.OffsetHigh = LOCK_OFF_HIGH;
	if (LockFileEx(h, fl, 0, 1, 0, &ov))
		return 0;
	err = GetLastError();
	return err == ERROR_LOCK_VIOLATION || err == ERROR_IO_PENDING ? -EWOULDBLOCK :
	       ph_win_errno(err);
}

int
ph_unlock(int fd)
{
	HANDLE h = fd_handle(fd);
	OVERLAPPED ov;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	memset(&ov, 0, sizeof(ov));
	ov.Offset = LOCK_OFF_LOW;
	ov.OffsetHigh = LOCK_OFF_HIGH;
	return UnlockFileEx(h, 0, 1, 0, &ov) ? 0 : ph_win_errno(GetLastError());
}

/* A folder's listing: FileIdBothDirectoryInfo, a buffer at a time, on a
 * handle of its own to the same folder (ReOpenFile: the folder the
 * caller's descriptor holds, not its name looked up again; the caller's
 * handle keeps its own place). Each entry comes with what ph_fstatat
 * would open the file for (size, times, file id, attributes, reparse
 * tag), so a walk opens no file: on Windows an open, two queries and a
 * close cost more than the whole listing (docs/WINDOWS.md). */
#define DIR_BUF (64 * 1024)
#define DIR_NAME_MAX 255   /* UTF-16 units in one name (NTFS, exFAT, FAT) */

struct ph_dir {
	HANDLE h;
	uint64_t dev;           /* the folder's volume serial number */
	int started, ended;
	size_t next, used;      /* the next entry in buf; buf's bytes (0: none) */
	char name[DIR_NAME_MAX * 3 + 1];   /* the last one returned, UTF-8 */
	struct ph_stat st;      /* ... and its stat */
	LONGLONG buf[DIR_BUF / sizeof(LONGLONG)]; /* (aligned for the entries) */
};

int
ph_dir_list(int dirfd, struct ph_dir **out)
{
	DWORD access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
	BY_HANDLE_FILE_INFORMATION bi;
	struct ph_dir *d;
	HANDLE h;
	int rc;

	*out = NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	if (dirfd == PH_AT_CWD)
		h = CreateFileW(L".", access, SHARE_ALL, NULL, OPEN_EXISTING,
		                FILE_FLAG_BACKUP_SEMANTICS, NULL);
	else if ((h = fd_handle(dirfd)) != INVALID_HANDLE_VALUE)
		h = ReOpenFile(h, access, SHARE_ALL, FILE_FLAG_BACKUP_SEMANTICS);
	else
		SetLastError(ERROR_INVALID_HANDLE);
	if (h == INVALID_HANDLE_VALUE) {
		rc = ph_win_errno(GetLastError());
		free(d);
		return rc;
	}
	if (!GetFileInformationByHandle(h, &bi)) {
		rc = ph_win_errno(GetLastError());
		CloseHandle(h);
		free(d);
		return rc;
	}
	if (!(bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
		CloseHandle(h);
		free(d);
		return -ENOTDIR;
	}
	d->h = h;
	d->dev = bi.dwVolumeSerialNumber;
	*out = d;
	return 0;
}

/* The entry's type as fill() tells it from the file's own handle: a
 * reparse point's tag is in EaSize in a listing. */
static enum ph_ftype
entry_type(const FILE_ID_BOTH_DIR_INFO *e)
{
	if ((e->FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
	    IsReparseTagNameSurrogate(e->EaSize))
		return PH_FT_LNK;
	if (e->FileAttributes & FILE_ATTRIBUTE_DIRECTORY)
		return PH_FT_DIR;
	if (e->FileAttributes & FILE_ATTRIBUTE_DEVICE)
		return PH_FT_OTHER;
	return PH_FT_REG;
}

/* The entry's stat, field for field as fill() makes it. */
static void
entry_stat(const struct ph_dir *d, const FILE_ID_BOTH_DIR_INFO *e, struct ph_stat *st)
{
	LONGLONG w = e->LastWriteTime.QuadPart;

	memset(st, 0, sizeof(*st));
	st->size = (uint64_t)e->EndOfFile.QuadPart;
	st->dev = d->dev;
	st->ino = (uint64_t)e->FileId.QuadPart;
	st->mtime_ns = ft_ns(w);
	st->mtime_sec = ft_sec(w);
	st->mtime_nsec = (uint32_t)((w % 10000000 + 10000000) % 10000000) * 100u;
	st->ctime_ns = e->ChangeTime.QuadPart != 0 ? ft_ns(e->ChangeTime.QuadPart) : st->mtime_ns;
	st->type = entry_type(e);
	st->mode = st->type == PH_FT_DIR ? 0755 : 0644;
	if (e->FileAttributes & FILE_ATTRIBUTE_READONLY)
		st->mode &= ~0222u;
}

/* The next entry in buf, checked against its bounds; NULL when the buffer
 * is used up, or (*bad set) when an entry does not fit in it. */
static const FILE_ID_BOTH_DIR_INFO *
next_entry(struct ph_dir *d, int *bad)
{
	const size_t head = offsetof(FILE_ID_BOTH_DIR_INFO, FileName);
	const FILE_ID_BOTH_DIR_INFO *e;

	*bad = 0;
	if (d->next >= d->used)
		return NULL;
	e = (const FILE_ID_BOTH_DIR_INFO *)((const char *)d->buf + d->next);
	if (d->used - d->next < head || e->FileNameLength % 2 != 0 ||
	    e->FileNameLength / 2 > DIR_NAME_MAX || d->used - d->next - head < e->FileNameLength ||
	    (e->NextEntryOffset != 0 && (e->NextEntryOffset % 8 != 0 ||
	                                 e->NextEntryOffset < head + e->FileNameLength ||
	                                 e->NextEntryOffset >= d->used - d->next))) {
		*bad = 1;
		return NULL;
	}
	d->next = e->NextEntryOffset == 0 ? d->used : d->next + e->NextEntryOffset;
	return e;
}

int
ph_dir_read(struct ph_dir *d, struct ph_dirent *ent)
{
	for (;;) {
		const FILE_ID_BOTH_DIR_INFO *e;
		const WCHAR *n;
		int len, bad;

		if ((e = next_entry(d, &bad)) == NULL) {
			if (bad)
				return -EIO;
			if (d->ended)
				return 0;
			/* (The first query starts the listing over: the handle is
			 * new, but a restart costs nothing and says what is meant.) */
			if (!GetFileInformationByHandleEx(d->h, d->started ? FileIdBothDirectoryInfo :
			                                  FileIdBothDirectoryRestartInfo, d->buf,
			                                  sizeof(d->buf))) {
				DWORD err = GetLastError();

				d->ended = 1;
				return err == ERROR_NO_MORE_FILES ? 0 : ph_win_errno(err);
			}
			d->started = 1;
			d->next = 0;
			d->used = sizeof(d->buf);
			continue;
		}
		n = e->FileName;
		len = (int)(e->FileNameLength / 2);
		if (len == 0 || (n[0] == L'.' && (len == 1 || (len == 2 && n[1] == L'.'))))
			continue;
		len = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, n, len, d->name,
		                          (int)sizeof(d->name) - 1, NULL, NULL);
		if (len <= 0)
			return -EILSEQ;   /* an unpaired surrogate: this entry only */
		d->name[len] = '\0';
		ent->name = d->name;
		ent->type = entry_type(e);
		ent->st = NULL;
		/* A file system without file ids (0) leaves the identity to
		 * ph_fstatat, as before. */
		if (e->FileId.QuadPart != 0) {
			entry_stat(d, e, &d->st);
			ent->st = &d->st;
		}
		return 1;
	}
}

void
ph_dir_end(struct ph_dir *d)
{
	if (d == NULL)
		return;
	CloseHandle(d->h);
	free(d);
}
