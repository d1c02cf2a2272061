/* SPDX-License-Identifier: ISC */
/* Windows-only platform pieces beside platform.h (docs/WINDOWS.md): UTF-8
 * names as UTF-16 long paths, folder descriptors over directory HANDLEs, the
 * durable replace, and Windows errors as errno values. */
#ifndef PH_WIN32_H
#define PH_WIN32_H

#include <stddef.h>
#include <wchar.h>

/* A UTF-8 string as a malloc'd UTF-16 one (*out). Returns 0, -EILSEQ for
 * bytes that are not UTF-8, or -ENOMEM. */
int ph_win_widen(const char *utf8, wchar_t **out);

/* A UTF-16 string as a malloc'd UTF-8 one (*out). Returns 0, -EILSEQ for an
 * unpaired surrogate (a name Windows holds but UTF-8 cannot), or -ENOMEM. */
int ph_win_narrow(const wchar_t *w, char **out);

/* path (UTF-8, '/' or '\\', relative to the current folder or absolute) as
 * an absolute UTF-16 path with the \\?\ prefix (\\?\UNC\ for a share), so
 * no MAX_PATH limit applies and no name is reinterpreted. Malloc'd in *out.
 * Returns 0 or -errno. */
int ph_win_long_path(const char *path, wchar_t **out);

/* Opens the folder path as a descriptor (a C runtime fd over a directory
 * HANDLE), the Windows form of an O_DIRECTORY fd: the *_at calls below take
 * it. Returns the fd or -errno; _close() closes it. */
int ph_win_dir_open(const char *path);

/* The long path of name (UTF-8, relative, '/' separated; "." alone is the
 * folder itself) in the folder dirfd, in *out (malloc'd); with PH_AT_CWD
 * (pfs.h), the path name as ph_win_long_path makes it. Returns 0 or -errno. */
int ph_win_at_path(int dirfd, const char *name, wchar_t **out);

/* The durable replace: flushes from (in fromdir) with FlushFileBuffers, then
 * renames it over to (in todir) with MoveFileExW(REPLACE_EXISTING |
 * WRITE_THROUGH). Every handle of the caller's on from must be closed (a
 * C runtime fd holds no FILE_SHARE_DELETE, so Windows refuses the rename).
 * A target another program holds open fails with -EACCES or -EBUSY and is
 * left as it was, and so is from. Returns 0 or -errno. */
int ph_win_replace_at(int fromdir, const char *from, int todir, const char *to);

/* A security descriptor that gives the current user alone access to a new
 * file (a protected DACL of one entry: pfs.h's PH_O_PRIVATE, platform/win32/
 * private.c). *out is LocalFree'd by the caller. Returns 0 or -errno. */
int ph_win_private_sd(void **out);

/* A Windows error code (GetLastError()) as the nearest negative errno. */
int ph_win_errno(unsigned long err);
/* A known folder's path (SHGetKnownFolderPath, UTF-8) followed by tail,
 * into out: 0, -ENOENT (none, or empty), -ENAMETOOLONG. win32/psys.c. */
int ph_win_known_folder(const struct _GUID *id, const char *tail, char *out, size_t len);

#endif
