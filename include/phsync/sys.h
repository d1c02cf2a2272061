/* SPDX-License-Identifier: ISC */
/* Files, folders and the local time for programs built on libphsync (the
 * phsync command and its watcher): the same calls on POSIX and Windows. platform/pfs.h and
 * psys.h do the work (open, flock, pread and readdir there; CreateFileW on
 * the \\?\ long path, LockFileEx, ReadFile at an offset and FindFirstFileExW
 * on Windows). Paths are UTF-8. A descriptor is the C library's (read, write
 * and close work on it), not inherited by child processes, and on Windows
 * binary and shared for delete. Every call returns 0 (or a count) or a
 * negative errno value. */
#ifndef PHSYNC_SYS_H
#define PHSYNC_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PHSYNC_O_RDONLY   0x0000
#define PHSYNC_O_WRONLY   0x0001
#define PHSYNC_O_RDWR     0x0002
#define PHSYNC_O_CREAT    0x0010
#define PHSYNC_O_EXCL     0x0020
#define PHSYNC_O_TRUNC    0x0040
#define PHSYNC_O_NOFOLLOW 0x0100   /* a symlink (Windows: or junction): -ELOOP */

/* Opens path (a file, never a folder: -EISDIR) with PHSYNC_O_* flags;
 * mode (less the umask on POSIX) for a file it creates. Returns the fd. */
int phsync_file_open(const char *path, int flags, unsigned mode);

/* A file made for the caller alone: tmpl ends in "XXXXXX", replaced by
 * random letters and digits until the name is new (created read-write,
 * mode less the umask). Returns the fd. */
int phsync_file_temp(char *tmpl, unsigned mode);

#define PHSYNC_LOCK_SH 0
#define PHSYNC_LOCK_EX 1
#define PHSYNC_LOCK_NB 2   /* with SH or EX: -EWOULDBLOCK instead of waiting */

/* Locks the open file (flock's rules: per open file, let go at its close;
 * Windows: LockFileEx on one byte far past the data). */
int phsync_file_lock(int fd, int how);

/* Positioned read and write; the count, or a negative errno. */
int64_t phsync_file_pread(int fd, void *buf, size_t n, uint64_t off);
int64_t phsync_file_pwrite(int fd, const void *buf, size_t n, uint64_t off);
int phsync_file_truncate(int fd, uint64_t size);

/* Renames from to to, replacing to (Windows: MoveFileExW with
 * REPLACE_EXISTING and WRITE_THROUGH). */
int phsync_file_rename(const char *from, const char *to);
int phsync_file_unlink(const char *path);

enum phsync_ftype { PHSYNC_FT_OTHER = 0, PHSYNC_FT_REG, PHSYNC_FT_DIR, PHSYNC_FT_LNK };

struct phsync_fstat {
	uint64_t size;
	uint64_t dev, ino;          /* which file (Windows: volume serial, file index) */
	enum phsync_ftype type;
};

/* path itself (a symlink is PHSYNC_FT_LNK), as lstat. */
int phsync_file_lstat(const char *path, struct phsync_fstat *st);
/* The file path names, every link followed, as stat. */
int phsync_file_stat(const char *path, struct phsync_fstat *st);
int phsync_file_fstat(int fd, struct phsync_fstat *st);

/* Makes the folder path and its parents (mkdir -p; new ones 0700). 0 also
 * when it is there; -ENOTDIR when path is there and no folder. */
int phsync_dir_make(const char *path);

/* Calls fn(arg, name, type) for each entry of the folder path but "." and
 * "..", type PHSYNC_FT_OTHER when the listing cannot tell. A non-zero
 * return from fn stops the listing and is returned. */
int phsync_dir_each(const char *path,
                    int (*fn)(void *arg, const char *name, enum phsync_ftype type),
                    void *arg);

/* path made absolute with every link, "." and ".." resolved (realpath;
 * Windows: C:\dir), into out (len bytes). The file must exist. */
int phsync_path_real(const char *path, char *out, size_t len);

/* Whether c separates folders in a path ('/'; on Windows '\\' too). */
int phsync_path_sep(int c);

/* The user's home folder: $HOME, else the user database's (Windows:
 * %USERPROFILE%), into out. */
int phsync_home_dir(char *out, size_t len);

/* The folder phsync keeps its state in: $XDG_STATE_HOME/phsync, else
 * ~/.local/state/phsync (Windows: %LOCALAPPDATA%\phsync), into out. */
int phsync_state_home(char *out, size_t len);

/* The path of name in phsync's config folder: $XDG_CONFIG_HOME/phsync/name,
 * else ~/.config/phsync/name (Windows: %APPDATA%\phsync\name), into out.
 * Returns 0, -ENOENT or -ENAMETOOLONG. */
int phsync_config_path(const char *name, char *out, size_t len);

/* Replaces *argv with the command line in UTF-8 where the C library gives
 * another encoding (Windows: the ANSI code page); for main() to call first.
 * On failure *argc and *argv stay as they were. */
int phsync_args_utf8(int *argc, char ***argv);

/* Makes fd (standard input or output) carry bytes unchanged (Windows:
 * out of msvcrt's text mode, which turns "\n" into "\r\n"). */
int phsync_fd_binary(int fd);

/* t as the local time (localtime_r; Windows: localtime_s). */
int phsync_localtime(time_t t, struct tm *tm);

#endif
