/* SPDX-License-Identifier: ISC */
/* Folder-relative file calls, one interface on every OS (docs/WINDOWS.md,
 * sections 1-4): the POSIX side is platform/pfs.c (openat, fstatat, flock,
 * pread...), the Windows side platform/win32/pfs.c (CreateFileW on \\?\ long
 * UTF-16 paths, LockFileEx, ReadFile at an offset...). Descriptors are ints
 * on both: on Windows a C runtime fd over a HANDLE, opened binary and shared
 * for delete, so phsync's own open files never block its renames. Names are
 * UTF-8 and relative to a folder descriptor; on Windows a name with a drive,
 * a ':' or an empty, "." or ".." component is refused (-EINVAL), "." alone
 * being the folder itself. Every call returns 0 (or a descriptor, a count)
 * or a negative errno value; nothing is left in errno. */
#ifndef PH_PFS_H
#define PH_PFS_H

#include <stddef.h>
#include <stdint.h>

/* The longest name in a folder, in bytes (POSIX's NAME_MAX, which mingw lacks). */
#define PH_NAME_MAX 255

/* As a folder descriptor: name is then a path, absolute or relative to the
 * current folder (on Windows also with a drive, "C:\\x" or "C:/x"). */
#define PH_AT_CWD (-100)

/* ph_openat flags (one of the first three, then any of the others). */
#define PH_O_RDONLY   0x0000
#define PH_O_WRONLY   0x0001
#define PH_O_RDWR     0x0002
#define PH_O_CREAT    0x0010
#define PH_O_EXCL     0x0020 /* with PH_O_CREAT: fail with -EEXIST */
#define PH_O_TRUNC    0x0040
#define PH_O_DIR      0x0080 /* a folder, to list or to open names in */
#define PH_O_NOFOLLOW 0x0100 /* a symlink (Windows: a symlink or junction): -ELOOP */
#define PH_O_NONBLOCK 0x0200 /* POSIX: a FIFO does not block the open (reads of a
                                regular file are the same); Windows: nothing */
#define PH_O_PRIVATE  0x0400 /* with PH_O_CREAT, a new file only its owner may
                                open: POSIX the mode's group and other bits
                                cleared; Windows a protected DACL granting the
                                current user alone (win32/private.c) */

/* ph_stat.type */
enum ph_ftype { PH_FT_OTHER = 0, PH_FT_REG, PH_FT_DIR, PH_FT_LNK };

struct ph_stat {
	uint64_t size;
	uint64_t dev;      /* the file system (Windows: the volume's serial number) */
	uint64_t ino;      /* the file on it (Windows: the file index) */
	int64_t mtime_ns;  /* since 1970, in ns (held at INT64_MIN/MAX past 1677-2262) */
	int64_t mtime_sec; /* the same in whole seconds, rounded down: any time at all */
	uint32_t mtime_nsec; /* and the ns within that second */
	int64_t ctime_ns;  /* the last change of data or metadata (held as mtime_ns) */
	uint32_t mode;     /* permission bits (Windows: 0444 when read-only, else 0644/0755) */
	uint32_t nlink;
	enum ph_ftype type;
};

/* 1 when c separates a path's components: '/' (Windows: '\\' too). */
int ph_path_sep(int c);

/* The folder path (absolute, or relative to the current folder) as a folder
 * descriptor. Returns the fd or -errno. */
int ph_dir_open_path(const char *path);

/* Opens name in the folder dirfd. mode is the new file's permission bits
 * (ignored on Windows, where PH_O_PRIVATE alone narrows who may open it). Returns the fd or -errno: -ELOOP for a symlink with
 * PH_O_NOFOLLOW, -ENOTDIR for a non-folder with PH_O_DIR, -EISDIR for a
 * folder without it, -EBUSY on Windows when another program holds the file
 * without sharing it. */
int ph_openat(int dirfd, const char *name, int flags, unsigned mode);

/* Closes a descriptor of ph_openat or ph_dir_open_path: 0 or -errno. */
int ph_close(int fd);

/* What name in dirfd is, never following a symlink; ph_fstat the open fd. */
int ph_fstatat(int dirfd, const char *name, struct ph_stat *st);
int ph_fstat(int fd, struct ph_stat *st);

/* Removes the file name (a folder with PH_AT_REMOVEDIR, which must be
 * empty: -ENOTEMPTY) from dirfd. */
#define PH_AT_REMOVEDIR 1
int ph_unlinkat(int dirfd, const char *name, int flags);

/* Creates the folder name in dirfd (-EEXIST if any file has that name). */
int ph_mkdirat(int dirfd, const char *name, unsigned mode);

/* Renames from (in fromdir) over to (in todir), replacing a file there in
 * one step. On Windows MoveFileExW(REPLACE_EXISTING | WRITE_THROUGH), tried
 * again a few times while another program (a virus scanner, an indexer)
 * holds either file, then -EBUSY (either file is held open without
 * sharing delete) or -EACCES, with both files as they were.
 * platform.h's ph_rename_noreplace is the form that never replaces. */
int ph_renameat(int fromdir, const char *from, int todir, const char *to);
/* 1 where a rename cannot replace a file this process still holds open
 * (Windows: MoveFileEx refuses such a target, whatever its sharing), so the
 * old copy's descriptors must be closed first; 0 on POSIX, where an open
 * old copy is kept to free its blocks off the replacing thread. */
int ph_open_blocks_replace(void);

/* Makes a rename or create in the folder dirfd durable: fsync of the folder
 * on POSIX; 0 on Windows, where MOVEFILE_WRITE_THROUGH and the file's own
 * FlushFileBuffers (ph_durable_sync) already did. */
int ph_dir_sync(int dirfd);
/* Does a rename need a sync of its folder to be durable? 1 on POSIX; 0 on
 * Windows (written through; a folder there cannot be flushed, and its
 * descriptor is not one ph_durable_sync takes). */
int ph_dir_sync_needed(void);

/* Cuts or extends the file fd (open for writing) to size bytes. */
int ph_ftruncate(int fd, uint64_t size);

/* Sets fd's modification time (ns since 1970), leaving the access time.
 * fd must be open for writing on Windows (SetFileTime). */
int ph_futime(int fd, int64_t mtime_ns);

/* Sets fd's access and modification times both to sec.nsec since 1970 (any
 * time the file system holds; Windows: SetFileTime, in 100 ns steps, fd
 * open for writing). A copy's access time is its modification time. */
int ph_set_times(int fd, int64_t sec, uint32_t nsec);

/* Sets fd's access time to atime and its modification time to mtime
 * (whole seconds since 1970; futimens). fd may be a folder's descriptor:
 * on Windows, where that handle cannot write attributes, SetFileTime goes
 * through a handle of its own that can (ReOpenFile, for any fd).
 * platform/ftimes.c, platform/win32/ftimes.c. */
int ph_set_atime_mtime(int fd, int64_t atime, int64_t mtime);

/* Sets fd's permission bits (fchmod). Windows keeps only "read-only": set
 * when mode gives the owner no write permission, cleared otherwise. */
int ph_fchmod(int fd, unsigned mode);

/* Reads/writes up to n bytes at off without using the fd's position:
 * returns the count (0 at the end of the file) or -errno. On Windows
 * (ReadFile/WriteFile with an OVERLAPPED offset) the fd's position moves
 * too; no caller mixes the two on one fd. */
int64_t ph_pread(int fd, void *buf, size_t n, uint64_t off);
int64_t ph_pwrite(int fd, const void *buf, size_t n, uint64_t off);

/* A lock on the whole file fd (advisory between phsync runs): exclusive
 * (PH_LOCK_EX) or shared (PH_LOCK_SH), waiting for it or, with PH_LOCK_NB,
 * failing with -EWOULDBLOCK while another descriptor holds a conflicting
 * one. POSIX: flock; Windows: LockFileEx on one byte far past any data (so
 * the file's bytes stay readable by others; its locks are per handle, as
 * flock's are per open file). Closing fd lets go of it too. */
#define PH_LOCK_SH 0
#define PH_LOCK_EX 1
#define PH_LOCK_NB 2
int ph_lock(int fd, int how);
int ph_unlock(int fd);

/* One folder's listing: open with the folder's descriptor (which stays the
 * caller's), then read until 0. */
struct ph_dir;
struct ph_dirent {
	const char *name;   /* UTF-8, valid until the next ph_dir_read */
	enum ph_ftype type; /* PH_FT_OTHER when the listing cannot tell */
	/* What ph_fstatat(dirfd, name) says, where the listing itself gives it
	 * (Windows: the folder's FileIdBothDirectoryInfo, so a walk opens no
	 * file; nlink 0, unknown there), valid until the next ph_dir_read; NULL
	 * where it does not (POSIX: readdir names types only). */
	const struct ph_stat *st;
};
int ph_dir_list(int dirfd, struct ph_dir **out);
/* 1 with *ent filled, 0 at the end, or -errno (-EILSEQ for a name that is
 * not valid UTF-16 on Windows: that entry is skipped, the next read goes on).
 * "." and ".." are never returned. */
int ph_dir_read(struct ph_dir *d, struct ph_dirent *ent);
void ph_dir_end(struct ph_dir *d);

#endif
