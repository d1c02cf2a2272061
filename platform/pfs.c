/* SPDX-License-Identifier: ISC */
/* pfs.h's POSIX side: the *at calls, flock, pread and pwrite, readdir. The
 * Windows side is platform/win32/pfs.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "pfs.h"

/* PH_AT_CWD as the OS spells it. */
#define AT(fd) ((fd) == PH_AT_CWD ? AT_FDCWD : (fd))

int
ph_path_sep(int c)
{
	return c == '/';
}

int
ph_open_blocks_replace(void)
{
	return 0;
}

int
ph_dir_sync_needed(void)
{
	return 1;
}

int
ph_dir_open_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int
ph_openat(int dirfd, const char *name, int flags, unsigned mode)
{
	int of = O_CLOEXEC | O_NOCTTY, fd;

	switch (flags & 3) {
	case PH_O_WRONLY: of |= O_WRONLY; break;
	case PH_O_RDWR: of |= O_RDWR; break;
	default: of |= O_RDONLY; break;
	}
	if (flags & PH_O_CREAT)
		of |= O_CREAT;
	if (flags & PH_O_EXCL)
		of |= O_EXCL;
	if (flags & PH_O_TRUNC)
		of |= O_TRUNC;
	if (flags & PH_O_DIR)
		of |= O_DIRECTORY;
	if (flags & PH_O_NOFOLLOW)
		of |= O_NOFOLLOW;
	if (flags & PH_O_NONBLOCK)
		of |= O_NONBLOCK;
	if (flags & PH_O_PRIVATE)
		mode &= 0700;
	fd = openat(AT(dirfd), name, of, (mode_t)mode);
	if (fd < 0)
		return -errno;
	/* A folder opens read-only on POSIX: refused as Windows does (a file
	 * CREAT|EXCL made is never one: no need to look). */
	if (!(flags & PH_O_DIR) && (flags & (PH_O_CREAT | PH_O_EXCL)) != (PH_O_CREAT | PH_O_EXCL)) {
		struct stat st;

		if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
			close(fd);
			return -EISDIR;
		}
	}
	return fd;
}

int
ph_close(int fd)
{
	return close(fd) == 0 ? 0 : -errno;
}

/* sec.nsec in ns, held at the ends of int64_t (before 1677, after 2262). */
static int64_t
ts_ns(int64_t sec, long nsec)
{
	if (sec >= INT64_MAX / 1000000000)
		return INT64_MAX;
	if (sec <= INT64_MIN / 1000000000)
		return INT64_MIN;
	return sec * 1000000000 + nsec;
}

static void
fill(const struct stat *s, struct ph_stat *st)
{
	st->size = (uint64_t)s->st_size;
	st->dev = (uint64_t)s->st_dev;
	st->ino = (uint64_t)s->st_ino;
	st->mtime_ns = ts_ns((int64_t)s->st_mtim.tv_sec, s->st_mtim.tv_nsec);
	st->mtime_sec = (int64_t)s->st_mtim.tv_sec;
	st->mtime_nsec = (uint32_t)s->st_mtim.tv_nsec;
	st->ctime_ns = ts_ns((int64_t)s->st_ctim.tv_sec, s->st_ctim.tv_nsec);
	st->mode = (uint32_t)(s->st_mode & 07777);
	st->nlink = (uint32_t)s->st_nlink;
	st->type = S_ISREG(s->st_mode) ? PH_FT_REG : S_ISDIR(s->st_mode) ? PH_FT_DIR :
	           S_ISLNK(s->st_mode) ? PH_FT_LNK : PH_FT_OTHER;
}

int
ph_fstatat(int dirfd, const char *name, struct ph_stat *st)
{
	struct stat s;

	if (fstatat(AT(dirfd), name, &s, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	fill(&s, st);
	return 0;
}

int
ph_fstat(int fd, struct ph_stat *st)
{
	struct stat s;

	if (fstat(fd, &s) != 0)
		return -errno;
	fill(&s, st);
	return 0;
}

int
ph_unlinkat(int dirfd, const char *name, int flags)
{
	int e = unlinkat(AT(dirfd), name, (flags & PH_AT_REMOVEDIR) ? AT_REMOVEDIR : 0);

	if (e == 0)
		return 0;
	/* POSIX lets rmdir answer EEXIST for a folder that is not empty. */
	return errno == EEXIST ? -ENOTEMPTY : -errno;
}

int
ph_mkdirat(int dirfd, const char *name, unsigned mode)
{
	return mkdirat(AT(dirfd), name, (mode_t)mode) == 0 ? 0 : -errno;
}

int
ph_renameat(int fromdir, const char *from, int todir, const char *to)
{
	return renameat(AT(fromdir), from, AT(todir), to) == 0 ? 0 : -errno;
}

int
ph_dir_sync(int dirfd)
{
	/* Some file systems cannot fsync a folder (EINVAL): their renames are
	 * as durable as they get. */
	if (fsync(dirfd) == 0 || errno == EINVAL)
		return 0;
	return -errno;
}

int
ph_ftruncate(int fd, uint64_t size)
{
	if (size > (uint64_t)INT64_MAX)
		return -EINVAL;
	return ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
}

int
ph_futime(int fd, int64_t mtime_ns)
{
	struct timespec ts[2];

	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = (time_t)(mtime_ns / 1000000000);
	ts[1].tv_nsec = (long)(mtime_ns % 1000000000);
	if (ts[1].tv_nsec < 0) {
		ts[1].tv_sec--;
		ts[1].tv_nsec += 1000000000;
	}
	return futimens(fd, ts) == 0 ? 0 : -errno;
}

int
ph_set_times(int fd, int64_t sec, uint32_t nsec)
{
	struct timespec ts[2];

	ts[0].tv_sec = ts[1].tv_sec = (time_t)sec;
	ts[0].tv_nsec = ts[1].tv_nsec = (long)nsec;
	return futimens(fd, ts) == 0 ? 0 : -errno;
}

int
ph_fchmod(int fd, unsigned mode)
{
	return fchmod(fd, (mode_t)mode) == 0 ? 0 : -errno;
}

int64_t
ph_pread(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t k;

	if (off > (uint64_t)INT64_MAX)
		return -EINVAL;
	k = pread(fd, buf, n, (off_t)off);
	return k < 0 ? -errno : (int64_t)k;
}

int64_t
ph_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	ssize_t k;

	if (off > (uint64_t)INT64_MAX)
		return -EINVAL;
	k = pwrite(fd, buf, n, (off_t)off);
	return k < 0 ? -errno : (int64_t)k;
}

int
ph_lock(int fd, int how)
{
	int op = (how & PH_LOCK_EX) ? LOCK_EX : LOCK_SH;

	if (how & PH_LOCK_NB)
		op |= LOCK_NB;
	while (flock(fd, op) != 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int
ph_unlock(int fd)
{
	return flock(fd, LOCK_UN) == 0 ? 0 : -errno;
}

struct ph_dir {
	DIR *d;
};

int
ph_dir_list(int dirfd, struct ph_dir **out)
{
	struct ph_dir *pd;
	int fd;

	*out = NULL;
	/* A descriptor of its own: closedir closes it, the caller's stays. */
	fd = openat(AT(dirfd), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	pd = malloc(sizeof(*pd));
	if (pd == NULL) {
		close(fd);
		return -ENOMEM;
	}
	pd->d = fdopendir(fd);
	if (pd->d == NULL) {
		int e = errno;

		close(fd);
		free(pd);
		return -e;
	}
	*out = pd;
	return 0;
}

int
ph_dir_read(struct ph_dir *d, struct ph_dirent *ent)
{
	struct dirent *de;

	for (;;) {
		errno = 0;
		de = readdir(d->d);
		if (de == NULL)
			return errno != 0 ? -errno : 0;
		if (de->d_name[0] == '.' &&
		    (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		break;
	}
	ent->name = de->d_name;
	ent->st = NULL;
	ent->type = PH_FT_OTHER;
#ifdef DT_REG
	if (de->d_type == DT_REG)
		ent->type = PH_FT_REG;
	else if (de->d_type == DT_DIR)
		ent->type = PH_FT_DIR;
	else if (de->d_type == DT_LNK)
		ent->type = PH_FT_LNK;
#endif
	return 1;
}

void
ph_dir_end(struct ph_dir *d)
{
	if (d == NULL)
		return;
	closedir(d->d);
	free(d);
}
