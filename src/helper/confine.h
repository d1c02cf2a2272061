/* SPDX-License-Identifier: ISC */
/* The remote helper's file operations beneath its root (confine.c): a
 * request's path becomes a folder descriptor opened beneath the root
 * without following a symlink, plus one name in it; a change to an object
 * is made through a descriptor of that object opened with O_NOFOLLOW, a
 * change to a name through its folder's descriptor (the *at() calls), and
 * never through a path looked up again after a check (docs/PROTOCOL.md,
 * "Confinement"). Only libc: it builds into the static helper. Internal. */
#ifndef PH_CONFINE_H
#define PH_CONFINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* struct ph_sftp_attrs: the attributes a SETSTAT, FSETSTAT, OPEN or MKDIR carries. */
#include "sftpwire.h"

#define PH_CONFINE_MAX_PATH 4096


/* Errors beside the errno values the functions return. */
enum {
	PH_CONFINE_ESETID = -2,   /* setuid, setgid or sticky bits asked for */
	PH_CONFINE_ENOTREG = -3   /* neither a regular file nor a folder */
};

/* Where a request's path points: a folder fd and a name in it (dirfd is
 * AT_FDCWD and name the root's own path for the root). follow says whether
 * the last component may be a symlink (only the root's). */
struct ph_loc {
	int dirfd;
	char name[PH_CONFINE_MAX_PATH];
	int follow;
	int is_root;
};

/* Resolves the request path p (n bytes, not NUL-terminated) against root
 * (rootlen bytes, "" for "/"): every folder below the root is opened with
 * O_NOFOLLOW from the one before. Returns 0 with l filled (ph_loc_close it),
 * or an errno value with l->dirfd -1: EACCES for a path outside the root or
 * with ".", ".." or empty components, ELOOP for a symlink on the way. */
int ph_confine_resolve(const char *root, size_t rootlen, const uint8_t *p, uint32_t n,
                     struct ph_loc *l);
/* Closes l's folder; a no-op when there is none. */
void ph_loc_close(struct ph_loc *l);
/* lstat of l (stat for the root): 0, or -1 with errno set. Information
 * only: nothing may act on the name because of what this said. */
int ph_confine_stat(const struct ph_loc *l, struct stat *st);

/* 0 when a's permission bits may be set, PH_CONFINE_ESETID when they hold
 * setuid, setgid or sticky bits (refused, never dropped silently). */
int ph_confine_check_mode(const struct ph_sftp_attrs *a);
/* Applies a's size, permissions, owner and times to fd, in that order.
 * Returns 0, PH_CONFINE_ESETID (nothing changed), or the errno value of the
 * first change that failed. */
int ph_confine_set_fd(int fd, const struct ph_sftp_attrs *a);
/* SETSTAT by path: opens the object l names (a regular file or a folder;
 * a symlink is refused with ELOOP, anything else with PH_CONFINE_ENOTREG)
 * and applies a through that descriptor. An object the helper can neither
 * read nor write cannot be opened, and is refused with EACCES. Returns as
 * ph_confine_set_fd. */
int ph_confine_setstat(const struct ph_loc *l, const struct ph_sftp_attrs *a);
/* Opens l for fstatvfs (read-only, not waiting on a FIFO, never taking a
 * terminal), never following a symlink below the root. Returns 0 with *fd
 * set, or an errno value. */
int ph_confine_open_stat(const struct ph_loc *l, int *fd);

#endif
