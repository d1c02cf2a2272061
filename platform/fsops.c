/* File system operations whose best form differs by OS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

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
