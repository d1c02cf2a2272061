/* SPDX-License-Identifier: ISC */
/* File system operations whose best form differs by OS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

#ifdef HAVE_OPENAT2
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#endif
#if defined(HAVE_STATFS_FSTYPENAME)
#include <string.h>
#include <sys/param.h>
#include <sys/mount.h>
#elif defined(HAVE_SYS_VFS_H)
#include <sys/vfs.h>
#elif defined(HAVE_STATVFS_FSTYPENAME)
#include <string.h>
#include <sys/statvfs.h>
#endif

int
ph_fs_time_step(int fd)
{
#if defined(HAVE_STATFS_FSTYPENAME) || defined(HAVE_SYS_VFS_H)
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return 0;
#if defined(HAVE_STATFS_FSTYPENAME)
	return strcmp(sf.f_fstypename, "msdos") == 0 || strcmp(sf.f_fstypename, "exfat") == 0 ?
	       2 : 0;
#else
	/* MSDOS_SUPER_MAGIC (vfat, msdos) and EXFAT_SUPER_MAGIC */
	return (unsigned long)sf.f_type == 0x4d44ul || (unsigned long)sf.f_type == 0x2011bab0ul ?
	       2 : 0;
#endif
#elif defined(HAVE_STATVFS_FSTYPENAME)
	struct statvfs sv; /* NetBSD */

	if (fstatvfs(fd, &sv) != 0)
		return 0;
	return strcmp(sv.f_fstypename, "msdos") == 0 || strcmp(sv.f_fstypename, "exfat") == 0 ?
	       2 : 0;
#else
	/* POSIX cannot name a file system's type: times are taken as exact,
	 * and a FAT folder's files (times rounded to 2 s) look changed when
	 * compared with the phone's to the second. */
	(void)fd;
	return 0;
#endif
}

int
ph_rename_noreplace(int fromdir, const char *from, int dirfd, const char *to)
{
	struct stat st;

#ifdef HAVE_RENAMEAT2
	if (renameat2(fromdir, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -errno;
#endif
	/* A hard link fails on an existing name; FAT and some FUSE file
	 * systems have none, where only a look first remains (a window, on
	 * a folder nobody else writes to during the run). */
	if (linkat(fromdir, from, dirfd, to, 0) == 0) {
		unlinkat(fromdir, from, 0);
		return 0;
	}
	if (errno == EEXIST)
		return -EEXIST;
	if (fstatat(dirfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	if (errno != ENOENT)
		return -errno;
	return renameat(fromdir, from, dirfd, to) == 0 ? 0 : -errno;
}

int
ph_open_beneath_dir(int root, const char *rel)
{
#ifdef HAVE_OPENAT2
	struct open_how how;
	long r;

	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	r = syscall(SYS_openat2, root, rel, &how, sizeof(how));
	if (r >= 0)
		return (int)r;
	/* An old kernel or a seccomp filter: the caller walks it. */
	if (errno == ENOSYS || errno == EPERM || errno == E2BIG)
		return -ENOSYS;
	return -errno;
#else
	/* No one-call confined open (the BSDs' O_RESOLVE_BENEATH stops at
	 * "..", not at symlinks): the caller walks rel a component at a
	 * time with O_NOFOLLOW, which refuses the same names. */
	(void)root;
	(void)rel;
	return -ENOSYS;
#endif
}
