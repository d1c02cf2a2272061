/* SPDX-License-Identifier: ISC */
/* The few OS-specific pieces, chosen by feature tests (ph_config.h). */
#ifndef PH_PLATFORM_H
#define PH_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <wchar.h>

/* 1 when the CPU has AES instructions (AES-GCM is then the fastest cipher). */
int ph_cpu_has_aes(void);

/* Makes the data and metadata of fds durable. With several files on one
 * file system it may sync the whole file system once (syncfs) instead of
 * each file, which is far cheaper for many small files; without syncfs,
 * fsync each file, then one F_FULLFSYNC per file system where there is one
 * (macOS: the drive's cache too). Returns 0 or -errno. */
int ph_durable_sync(const int *fds, size_t n);

/* The time step (seconds) of the file system holding fd when it keeps
 * coarse times (FAT and exFAT: 2), else 0. */
int ph_fs_time_step(int fd);

/* Renames from (in folder fromdir) to to (in dirfd), failing with -EEXIST
 * instead of replacing an existing to. Returns 0 or -errno. */
int ph_rename_noreplace(int fromdir, const char *from, int dirfd, const char *to);

/* Starts writing back a written range early so a later fsync is short and
 * dirty memory stays bounded (sync_file_range). A hint: 0, or -ENOSYS
 * where the OS has no such call (the fsync then writes it all), -errno. */
int ph_writeback_hint(int fd, uint64_t off, uint64_t len);

/* Grows the pipe fd's buffer to size bytes where a program may choose it
 * (F_SETPIPE_SZ). A hint: 0, -ENOSYS where the OS sizes pipes itself, or
 * -errno (not a pipe, over the limit). */
int ph_pipe_grow(int fd, size_t size);

/* The capacity in bytes of the pipe fd (F_GETPIPE_SZ), -ENOSYS where the
 * OS does not say, or -errno. */
int64_t ph_pipe_size(int fd);

/* Moves up to len bytes of the file fd from off into the pipe pw without
 * copying them through this process (splice: the pipe takes references to
 * the file's cached pages; a later write to the file may show in them until
 * they are read). Never waits for room in the pipe. Returns the bytes
 * moved, 0 at the end of the file, -EAGAIN when the pipe is full, -ENOSYS
 * where the OS has no such call, or -errno (-EINVAL: fd's file system
 * cannot). */
int64_t ph_splice_in(int fd, uint64_t off, int pw, size_t len);

/* Moves up to len bytes from the pipe pr to out (a pipe, socket or file),
 * waiting for room in out as a write would. Returns the bytes moved, 0 when
 * pr is empty, -ENOSYS, or -errno. */
int64_t ph_splice_out(int pr, int out, size_t len);

/* Drops fd's cached pages so the next read comes from the disk
 * (posix_fadvise DONTNEED): 0, -ENOSYS where no call does (the next read
 * may come from memory), or -errno. */
int ph_drop_cache(int fd);

/* A descriptor that keeps the file name in dirfd (never followed) alive,
 * to be closed after a rename or remove unlinks it: O_PATH (no read, no
 * permission needed), else a non-blocking read-only open that lets go of
 * anything but a regular file. -1 when none can be had. */
int ph_open_ref(int dirfd, const char *name);

/* Opens the folder rel beneath root, refusing "..", absolute paths and
 * symlinks on the way in one call (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS). Returns the fd; -ELOOP or -EXDEV for a name that
 * leaves root or crosses a symlink; -ENOSYS where there is no such call
 * (no openat2, an old kernel, a seccomp filter): the caller then walks rel
 * a component at a time with O_NOFOLLOW; or -errno. */
int ph_open_beneath_dir(int root, const char *rel);

/* The running program's absolute path into buf (n bytes): 0, -ENOSYS when
 * the OS cannot say, -ENAMETOOLONG, or -errno. */
int ph_exe_path(char *buf, size_t n);

/* Fills buf with n bytes from the OS's random source (getentropy, in
 * pieces of 256; Windows: BCryptGenRandom). Returns 0 or -errno. */
int ph_random(void *buf, size_t n);

/* C library pieces not every OS has (docs/WINDOWS.md, section 7): the
 * POSIX call in platform/libc.c, the Windows one in platform/win32/libc.c. */

/* The local time of t into *tm (localtime_r; Windows: localtime_s).
 * Returns 0, or -EINVAL for a time the C library cannot break down. */
int ph_localtime(time_t t, struct tm *tm);

/* This computer's name (gethostname; Windows: its DNS host name), UTF-8,
 * into buf (n bytes, always terminated, cut to fit); "" when unknown. */
void ph_hostname(char *buf, size_t n);

/* 0 when no process has the id pid, else 1 (it runs, or cannot be told:
 * someone else's). POSIX: kill(pid, 0) and ESRCH; Windows: OpenProcess and
 * its exit code. */
int ph_pid_alive(uint32_t pid);

/* The CPUs online (sysconf; Windows: GetActiveProcessorCount), at least 1. */
int ph_cpu_count(void);

/* The bytes an unprivileged writer may still use on the file system of
 * the folder fd (fstatvfs: f_bavail * f_frsize; Windows:
 * GetDiskFreeSpaceExW, quotas counted) into *bytes. 0 or -errno. */
int ph_free_space(int fd, uint64_t *bytes);

/* path made absolute, with every symlink, "." and ".." resolved (realpath;
 * Windows: GetFinalPathNameByHandleW, in the form C:\dir or
 * \\server\share\dir), into out (n bytes). The file must exist.
 * Returns 0, -ENAMETOOLONG when it does not fit, or -errno. */
int ph_realpath(const char *path, char *out, size_t n);

/* Names handed to libraries that convert them (libarchive's writer). On
 * POSIX they go as UTF-8 bytes under a C.UTF-8 character type for the
 * calling thread: ph_utf8_ctype_new makes one (NULL when the system has
 * none), ph_utf8_ctype_use makes it the thread's and returns the one to
 * give back to it afterwards (NULL: nothing to give back), and
 * ph_utf8_ctype_free frees it. On Windows libraries read byte names in the
 * ANSI code page, so names go to them wide instead: ph_wide_name gives the
 * UTF-8 name as a malloc'd UTF-16 string (0, -EILSEQ, -ENOMEM), and answers
 * -ENOSYS on POSIX, where ph_utf8_ctype_new is NULL on Windows. Names read
 * back from such a library come wide the same way: ph_narrow_name gives a
 * UTF-16 name as a malloc'd UTF-8 string (0, -EILSEQ, -ENOMEM; -ENOSYS on
 * POSIX, where the library's byte names are the bytes). */
void *ph_utf8_ctype_new(void);
void *ph_utf8_ctype_use(void *ctype);
void ph_utf8_ctype_free(void *ctype);
int ph_wide_name(const char *utf8, wchar_t **out);
int ph_narrow_name(const wchar_t *wide, char **out);

/* One piece of a gathered write. */
struct ph_iov {
	const void *base;
	size_t len;
};

/* Writes the pieces in order (writev; Windows: one write per piece until
 * one comes short). Returns the bytes written, which may be fewer than
 * asked (the caller goes on from there), or -errno. */
int64_t ph_writev(int fd, const struct ph_iov *iov, int cnt);

/* pthread_create for a worker that must never take the process's signals
 * (Ctrl-C goes to the caller's thread): on POSIX every signal is blocked
 * in the new thread; Windows sends no signals to threads (Ctrl-C comes on
 * a thread of its own). Returns pthread_create's answer. */
int ph_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* Raises the soft open-file limit to the hard one; returns the new soft
 * limit (or the old one if it could not be raised). */
uint64_t ph_raise_nofile(void);

/* The soft open-file limit as it stands (getrlimit; Windows: the C
 * runtime's table of fds), without raising it;
 * UINT64_MAX when there is none or it cannot be told. */
uint64_t ph_nofile_limit(void);

struct stat;

/* A stat's modification and status-change times in nanoseconds since the
 * epoch, and the modification time's nanoseconds within its second (its
 * seconds: st_mtime). Whole seconds where the system keeps no more. */
int64_t ph_st_mtime_ns(const struct stat *st);
int64_t ph_st_ctime_ns(const struct stat *st);
uint32_t ph_st_mtime_nsec(const struct stat *st);

/* ph_socket's flags. */
#define PH_SOCK_NONBLOCK 1u

/* socket(domain, type, protocol), close-on-exec from the start where the
 * OS can (SOCK_CLOEXEC), else set at once; non-blocking with
 * PH_SOCK_NONBLOCK. Where sends can raise no SIGPIPE only by a socket
 * option (SO_NOSIGPIPE), it is set. Returns the fd or -errno. */
int ph_socket(int domain, int type, int protocol, unsigned flags);

/* send(2) without flags that never raises SIGPIPE on a peer gone
 * (MSG_NOSIGNAL; on macOS the SO_NOSIGPIPE ph_socket set; else SIGPIPE
 * blocked around the send and the one it raised taken back). As send:
 * the bytes sent, or -1 with errno (EPIPE for a peer gone). */
ssize_t ph_send_nosigpipe(int fd, const void *buf, size_t len);

#endif
