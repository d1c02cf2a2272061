/* SPDX-License-Identifier: ISC */
/* phsync/sys.h over platform/pfs.h, platform.h and psys.h: the command's
 * and the watcher's files and clock, the same on every OS. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/sys.h"
#include "cmdio.h"
#include "pfs.h"
#include "platform.h"
#include "psys.h"

/* The public flags are pfs.h's, so they pass through unchanged. */
_Static_assert(PHSYNC_O_RDONLY == PH_O_RDONLY && PHSYNC_O_WRONLY == PH_O_WRONLY &&
               PHSYNC_O_RDWR == PH_O_RDWR && PHSYNC_O_CREAT == PH_O_CREAT &&
               PHSYNC_O_EXCL == PH_O_EXCL && PHSYNC_O_TRUNC == PH_O_TRUNC &&
               PHSYNC_O_NOFOLLOW == PH_O_NOFOLLOW, "phsync/sys.h's flags are pfs.h's");
_Static_assert(PHSYNC_LOCK_SH == PH_LOCK_SH && PHSYNC_LOCK_EX == PH_LOCK_EX &&
               PHSYNC_LOCK_NB == PH_LOCK_NB, "phsync/sys.h's locks are pfs.h's");
_Static_assert((int)PHSYNC_FT_OTHER == (int)PH_FT_OTHER && (int)PHSYNC_FT_REG == (int)PH_FT_REG &&
               (int)PHSYNC_FT_DIR == (int)PH_FT_DIR && (int)PHSYNC_FT_LNK == (int)PH_FT_LNK,
               "phsync/sys.h's types are pfs.h's");

#define OPEN_FLAGS (PHSYNC_O_WRONLY | PHSYNC_O_RDWR | PHSYNC_O_CREAT | PHSYNC_O_EXCL | \
                    PHSYNC_O_TRUNC | PHSYNC_O_NOFOLLOW)

int
phsync_file_open(const char *path, int flags, unsigned mode)
{
	if (flags & ~OPEN_FLAGS)
		return -EINVAL;
	return ph_openat(PH_AT_CWD, path, flags, mode);
}

int
phsync_file_temp(char *tmpl, unsigned mode)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	size_t len = strlen(tmpl), i;
	unsigned char r[6];
	int tries, fd = -EEXIST;

	if (len < 6 || strcmp(tmpl + len - 6, "XXXXXX") != 0)
		return -EINVAL;
	for (tries = 0; tries < 100 && fd == -EEXIST; tries++) {
		if ((fd = ph_random(r, sizeof(r))) != 0)
			return fd;
		for (i = 0; i < 6; i++)
			tmpl[len - 6 + i] = set[r[i] % (sizeof(set) - 1)];
		fd = ph_openat(PH_AT_CWD, tmpl, PH_O_RDWR | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW,
		               mode);
	}
	return fd;
}

int
phsync_file_lock(int fd, int how)
{
	return ph_lock(fd, how);
}

int64_t
phsync_file_pread(int fd, void *buf, size_t n, uint64_t off)
{
	return ph_pread(fd, buf, n, off);
}

int64_t
phsync_file_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	return ph_pwrite(fd, buf, n, off);
}

int
phsync_file_truncate(int fd, uint64_t size)
{
	return ph_ftruncate(fd, size);
}

int
phsync_file_rename(const char *from, const char *to)
{
	return ph_renameat(PH_AT_CWD, from, PH_AT_CWD, to);
}

int
phsync_file_unlink(const char *path)
{
	return ph_unlinkat(PH_AT_CWD, path, 0);
}

static void
fill(const struct ph_stat *s, struct phsync_fstat *st)
{
	st->size = s->size;
	st->dev = s->dev;
	st->ino = s->ino;
	st->type = (enum phsync_ftype)s->type;
}

int
phsync_file_lstat(const char *path, struct phsync_fstat *st)
{
	struct ph_stat s;
	int rc = ph_fstatat(PH_AT_CWD, path, &s);

	if (rc == 0)
		fill(&s, st);
	return rc;
}

int
phsync_file_stat(const char *path, struct phsync_fstat *st)
{
	char *real;
	int rc;

	/* The links resolved first (the whole path, as stat follows them),
	 * then the file itself, which is then never a link. */
	if ((real = malloc(4096)) == NULL)
		return -ENOMEM;
	if ((rc = ph_realpath(path, real, 4096)) == 0)
		rc = phsync_file_lstat(real, st);
	free(real);
	return rc;
}

int
phsync_file_fstat(int fd, struct phsync_fstat *st)
{
	struct ph_stat s;
	int rc = ph_fstat(fd, &s);

	if (rc == 0)
		fill(&s, st);
	return rc;
}

int
phsync_dir_make(const char *path)
{
	char *dir = strdup(path), *s;
	int rc = 0;

	if (dir == NULL)
		return -ENOMEM;
	/* Each parent, then the folder: a separator ends a parent, and the
	 * first character never does (the root, or a drive's "C:" after it). */
	for (s = dir + 1;; s++) {
		char c = *s;

		if (!ph_path_sep((unsigned char)c) && c != '\0')
			continue;
		*s = '\0';
		rc = ph_mkdirat(PH_AT_CWD, dir, 0700);
		*s = c;
		if (c == '\0')
			break;
		/* A parent that cannot be made (a drive, a share) may exist:
		 * only the folder's own result counts. */
		rc = 0;
	}
	if (rc == -EEXIST) {
		struct phsync_fstat st;

		/* There already: done when it is a folder (or a link to one). */
		rc = phsync_file_stat(dir, &st);
		if (rc == 0 && st.type != PHSYNC_FT_DIR)
			rc = -ENOTDIR;
	}
	free(dir);
	return rc;
}

int
phsync_dir_each(const char *path,
                int (*fn)(void *arg, const char *name, enum phsync_ftype type), void *arg)
{
	struct ph_dirent e;
	struct ph_dir *d;
	int dfd, rc;

	if ((dfd = ph_dir_open_path(path)) < 0)
		return dfd;
	if ((rc = ph_dir_list(dfd, &d)) != 0) {
		ph_close(dfd);
		return rc;
	}
	/* A name Windows gives that UTF-8 cannot hold is left out. */
	while ((rc = ph_dir_read(d, &e)) > 0 || rc == -EILSEQ) {
		if (rc < 0)
			continue;
		if ((rc = fn(arg, e.name, (enum phsync_ftype)e.type)) != 0)
			break;
	}
	ph_dir_end(d);
	ph_close(dfd);
	return rc;
}

int
phsync_path_real(const char *path, char *out, size_t len)
{
	return ph_realpath(path, out, len);
}

int
phsync_path_sep(int c)
{
	return ph_path_sep(c);
}

int
phsync_home_dir(char *out, size_t len)
{
	return ph_home_dir(out, len);
}

int
phsync_state_home(char *out, size_t len)
{
	return ph_state_home(out, len);
}

int
phsync_config_path(const char *name, char *out, size_t len)
{
	return ph_config_path(name, out, len);
}

int
phsync_args_utf8(int *argc, char ***argv)
{
	return ph_args_utf8(argc, argv);
}

int
phsync_fd_binary(int fd)
{
	return ph_fd_binary(fd);
}

int
phsync_localtime(time_t t, struct tm *tm)
{
	return ph_localtime(t, tm);
}
