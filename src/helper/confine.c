/* SPDX-License-Identifier: ISC */
/* The remote helper's file operations beneath its root; see confine.h.
 *
 * The rule (issue 22, item 4): nothing is acted on by a name after a check
 * of that name. A folder on the way is opened with O_NOFOLLOW from the one
 * before, so the folder descriptor a request ends with lies beneath the
 * root whatever is renamed meanwhile; the last component is then either
 * acted on through that descriptor (openat, mkdirat, unlinkat, renameat:
 * the kernel looks the name up once, in that folder, and none of these
 * follows a symlink in the last place), or opened with O_NOFOLLOW and
 * changed through the descriptor it gives (fchmod, fchown, futimens,
 * ftruncate). Before, SETSTAT checked the name with fstatat and then ran
 * fchmodat on the same name, which follows a symlink put there in between:
 * a second session made an outside file 0646.
 *
 * The walk is by hand, not openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS):
 * the helper runs on phones inside an app's seccomp filter, which kills a
 * process making a system call it does not know (SIGSYS) instead of
 * failing it, and the walk gives the same guarantee with calls every
 * kernel has. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"

int
ph_confine_resolve(const char *root, size_t rootlen, const uint8_t *p, uint32_t n, struct ph_loc *l)
{
	char path[PH_CONFINE_MAX_PATH];
	const char *top = rootlen ? root : "/";
	char *comp, *slash;
	int fd, nfd;

	l->dirfd = -1;
	l->follow = 0;
	l->is_root = 0;
	if (n == 0 || n >= sizeof(path) || memchr(p, '\0', n) != NULL)
		return EACCES;
	memcpy(path, p, n);
	path[n] = '\0';
	if ((rootlen == 0 && strcmp(path, "/") == 0) ||
	    (rootlen > 0 && strcmp(path, root) == 0)) {
		/* The root is the user's word and may be a symlink (/sdcard). */
		l->dirfd = AT_FDCWD;
		snprintf(l->name, sizeof(l->name), "%s", top);
		l->follow = 1;
		l->is_root = 1;
		return 0;
	}
	if (strncmp(path, root, rootlen) != 0 || path[rootlen] != '/')
		return EACCES;
	if ((fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return errno;
	comp = path + rootlen + 1;
	for (;;) {
		slash = strchr(comp, '/');
		if (slash != NULL)
			*slash = '\0';
		if (comp[0] == '\0' || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
			close(fd);
			return EACCES;
		}
		if (slash == NULL)
			break;
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			int e = errno;
			struct stat st;

			/* A symlink opened with O_DIRECTORY|O_NOFOLLOW gives ENOTDIR
			 * on Linux, ELOOP elsewhere: say which it is (for the
			 * message only). */
			if (e == ENOTDIR && fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				e = ELOOP;
			close(fd);
			return e;
		}
		close(fd);
		fd = nfd;
		comp = slash + 1;
	}
	l->dirfd = fd;
	snprintf(l->name, sizeof(l->name), "%s", comp);
	return 0;
}

void
ph_loc_close(struct ph_loc *l)
{
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->dirfd = -1;
}

int
ph_confine_stat(const struct ph_loc *l, struct stat *st)
{
	return fstatat(l->dirfd, l->name, st, l->follow ? 0 : AT_SYMLINK_NOFOLLOW);
}

int
ph_confine_check_mode(const struct ph_sftp_attrs *a)
{
	/* A setuid file of the phone's user would run as that user for whoever
	 * starts it, a setgid folder hands its group on, a sticky one stops
	 * others removing their files: none is anything a sync carries, and
	 * the client masks its modes with 0777. */
	if ((a->flags & PH_ATTR_PERMISSIONS) && (a->perm & 07000) != 0)
		return PH_CONFINE_ESETID;
	return 0;
}

int
ph_confine_set_fd(int fd, const struct ph_sftp_attrs *a)
{
	if (ph_confine_check_mode(a) != 0)
		return PH_CONFINE_ESETID;
	if ((a->flags & PH_ATTR_SIZE) && ftruncate(fd, (off_t)a->size) != 0)
		return errno;
	if ((a->flags & PH_ATTR_PERMISSIONS) && fchmod(fd, (mode_t)(a->perm & 0777)) != 0)
		return errno;
	if ((a->flags & PH_ATTR_UIDGID) && fchown(fd, (uid_t)a->uid, (gid_t)a->gid) != 0)
		return errno;
	if (a->flags & PH_ATTR_ACMODTIME) {
		struct timespec ts[2];

		ts[0].tv_sec = a->atime;
		ts[0].tv_nsec = 0;
		ts[1].tv_sec = a->mtime;
		ts[1].tv_nsec = 0;
		if (futimens(fd, ts) != 0)
			return errno;
	}
	return 0;
}

/* Opens what l names to change it: for writing when its size changes, else
 * for reading (or writing, for a file its owner may write but not read).
 * O_NONBLOCK: a FIFO does not wait for a peer; O_NOCTTY: a terminal does
 * not become the helper's. Returns 0 with *fd a regular file or a folder,
 * or an errno value / PH_CONFINE_ENOTREG. */
static int
open_target(const struct ph_loc *l, int for_size, int *fd)
{
	int base = O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (l->follow ? 0 : O_NOFOLLOW);
	struct stat st;
	int f, e;

	f = openat(l->dirfd, l->name, base | (for_size ? O_WRONLY : O_RDONLY));
	e = errno;
	if (f < 0 && e == EACCES && !for_size)
		f = openat(l->dirfd, l->name, base | O_WRONLY);
	if (f < 0)
		return e;
	if (fstat(f, &st) != 0) {
		e = errno;
		close(f);
		return e;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		close(f);
		return PH_CONFINE_ENOTREG;
	}
	*fd = f;
	return 0;
}

int
ph_confine_setstat(const struct ph_loc *l, const struct ph_sftp_attrs *a)
{
	int fd = -1, rc;

	if ((rc = ph_confine_check_mode(a)) != 0)
		return rc;
	if ((rc = open_target(l, (a->flags & PH_ATTR_SIZE) != 0, &fd)) != 0)
		return rc;
	rc = ph_confine_set_fd(fd, a);
	close(fd);
	return rc;
}

int
ph_confine_open_stat(const struct ph_loc *l, int *fd)
{
	/* Not O_PATH: fstatvfs on one fails (EBADF) on the kernels before 3.12
	 * that old phones still run. */
	*fd = openat(l->dirfd, l->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
	             (l->follow ? 0 : O_NOFOLLOW));
	return *fd < 0 ? errno : 0;
}
