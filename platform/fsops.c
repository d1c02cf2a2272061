/* SPDX-License-Identifier: ISC */
/* File system operations whose best form differs by OS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

#if defined(HAVE_STATFS_FSTYPENAME)
#include <string.h>
#include <sys/param.h>
#include <sys/mount.h>
#elif defined(HAVE_SYS_VFS_H)
#include <sys/vfs.h>
#endif

int
ph_fs_time_step(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return 0;
#if defined(HAVE_STATFS_FSTYPENAME)
	return strcmp(sf.f_fstypename, "msdos") == 0 || strcmp(sf.f_fstypename, "exfat") == 0 ?
	       2 : 0;
#elif defined(HAVE_SYS_VFS_H)
	/* MSDOS_SUPER_MAGIC (vfat, msdos) and EXFAT_SUPER_MAGIC */
	return (unsigned long)sf.f_type == 0x4d44ul || (unsigned long)sf.f_type == 0x2011bab0ul ?
	       2 : 0;
#else
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
