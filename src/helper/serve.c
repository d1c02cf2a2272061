/* SPDX-License-Identifier: ISC */
/* The remote helper: an SFTP v3 server confined to one folder, plus block
 * signatures and deltas computed where the files are (docs/PROTOCOL.md).
 *
 * Every request is hostile input: each length and count is checked before
 * use, a path must be the root or lie beneath it, and below the root no
 * symlink is followed and nothing is acted on by a name after a check
 * (confine.c: each folder on the way is opened with O_NOFOLLOW, the last
 * component is acted on with the *at() calls from that folder, or opened
 * with O_NOFOLLOW and changed through its descriptor). The root itself is
 * the user's word and may be a symlink (/sdcard is one on Android).
 * Requests are handled one at a time, in order: a client pipelines them,
 * and replies come back in the order asked; so every request's work is
 * bounded (a READ's length, a copy or a delta by its file's size). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "ph_config.h"
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif

#include "phsync/delta.h"
#include "phsync/phsync.h"
#include "confine.h"
#include "platform.h"
#include "reap.h"
#include "serve.h"
#include "sftpwire.h"
#include "sigfd.h"

#define MAX_HANDLES 256
#define MAX_DELTAS 64            /* deltas under way at once (memory bound) */
#define MAX_NAMES 512            /* entries in one READDIR reply */
#define NAMES_BYTES (64u << 10)  /* ... and bytes */
#define MAX_PATH PH_CONFINE_MAX_PATH
#define WRITEBACK_STEP (1u << 20) /* writeback starts per this much written */

struct delta {
	phsync_sig *sig;
	phsync_diff *diff;
	uint64_t file_off;           /* next file offset to read */
	uint64_t file_end;           /* its size at delta-start: read no further */
	uint64_t out_off;            /* delta bytes produced so far */
	int eof, done;
};

struct handle {
	int used;
	uint32_t gen;
	int fd;                      /* a file, or -1 */
	DIR *dir;                    /* a folder, or NULL */
	int readable, writable;
	uint64_t wb_lo, wb_hi;       /* written, its writeback not started yet */
	struct delta *delta;
};

struct ph_serve {
	char root[MAX_PATH];
	size_t rootlen;
	int inited;
	unsigned version;            /* helper protocol agreed, 0: plain SFTP */
	struct handle h[MAX_HANDLES];
	uint32_t gen;
	unsigned ndeltas;
	struct ph_reap *reap;        /* closes what renames and removes replaced */
};

/* ---- replies ----------------------------------------------------------- */

/* Starts a reply: the length is patched by end_reply. */
static size_t
begin_reply(struct ph_buf *out, uint8_t type, uint32_t id)
{
	size_t start = out->len;

	if (ph_buf_put_u32(out, 0) != 0 || ph_buf_put_u8(out, type) != 0 ||
	    ph_buf_put_u32(out, id) != 0)
		return SIZE_MAX;
	return start;
}

static int
end_reply(struct ph_buf *out, size_t start, int rc)
{
	if (start == SIZE_MAX || rc != 0) {
		if (start != SIZE_MAX)
			out->len = start;
		return -1;
	}
	ph_be32_put(out->data + start, (uint32_t)(out->len - start - 4));
	return 0;
}

static int
status(struct ph_buf *out, uint32_t id, uint32_t code, const char *msg)
{
	size_t st = begin_reply(out, PH_FXP_STATUS, id);
	int rc = 0;

	if (st == SIZE_MAX)
		return -1;
	rc |= ph_buf_put_u32(out, code);
	rc |= ph_buf_put_cstr(out, msg);
	rc |= ph_buf_put_cstr(out, "");
	return end_reply(out, st, rc);
}

static uint32_t
errno_code(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return PH_FX_NO_SUCH_FILE;
	case EACCES:
	case EPERM:
	case ELOOP:
		return PH_FX_PERMISSION_DENIED;
	default:
		return PH_FX_FAILURE;
	}
}

static int
status_errno(struct ph_buf *out, uint32_t id, int e)
{
	if (e == ELOOP)
		return status(out, id, PH_FX_PERMISSION_DENIED,
		              "a symlink on the way (the helper follows none)");
	if (e == PH_CONFINE_ESETID)
		return status(out, id, PH_FX_PERMISSION_DENIED,
		              "setuid, setgid and sticky bits are refused");
	if (e == PH_CONFINE_ENOTREG)
		return status(out, id, PH_FX_FAILURE, "neither a regular file nor a folder");
	return status(out, id, errno_code(e), strerror(e));
}

/* A stat as the wire's attributes: times before 1970 as 0, after 2106 as
 * the last second the field holds. */
static int
put_attrs(struct ph_buf *out, const struct stat *st)
{
	uint64_t mt = st->st_mtime < 0 ? 0 : (uint64_t)st->st_mtime;
	uint64_t at = st->st_atime < 0 ? 0 : (uint64_t)st->st_atime;
	struct ph_sftp_attrs a = {
		.flags = PH_ATTR_SIZE | PH_ATTR_UIDGID | PH_ATTR_PERMISSIONS | PH_ATTR_ACMODTIME,
		.size = (uint64_t)st->st_size,
		.uid = (uint32_t)st->st_uid, .gid = (uint32_t)st->st_gid,
		.perm = (uint32_t)st->st_mode,
		.atime = at > UINT32_MAX ? UINT32_MAX : (uint32_t)at,
		.mtime = mt > UINT32_MAX ? UINT32_MAX : (uint32_t)mt,
	};

	return ph_wire_put_attrs(out, &a);
}

static int
attrs_reply(struct ph_buf *out, uint32_t id, const struct stat *st)
{
	size_t s = begin_reply(out, PH_FXP_ATTRS, id);

	if (s == SIZE_MAX)
		return -1;
	return end_reply(out, s, put_attrs(out, st));
}

/* ---- requests: fields --------------------------------------------------- */

static struct handle *
get_handle(struct ph_serve *s, struct ph_rd *r)
{
	const uint8_t *p;
	uint32_t n, idx, gen;

	if (ph_rd_str(r, &p, &n) != 0 || n != 8)
		return NULL;
	idx = ph_be32_get(p);
	gen = ph_be32_get(p + 4);
	if (idx >= MAX_HANDLES || !s->h[idx].used || s->h[idx].gen != gen)
		return NULL;
	return &s->h[idx];
}

static struct handle *
new_handle(struct ph_serve *s, uint32_t *idx)
{
	uint32_t i;

	for (i = 0; i < MAX_HANDLES; i++) {
		if (!s->h[i].used) {
			memset(&s->h[i], 0, sizeof(s->h[i]));
			s->h[i].used = 1;
			s->h[i].gen = ++s->gen;
			s->h[i].fd = -1;
			*idx = i;
			return &s->h[i];
		}
	}
	return NULL;
}

static int
handle_reply(struct ph_buf *out, uint32_t id, uint32_t idx, const struct handle *h)
{
	uint8_t b[8];
	size_t st = begin_reply(out, PH_FXP_HANDLE, id);

	if (st == SIZE_MAX)
		return -1;
	ph_be32_put(b, idx);
	ph_be32_put(b + 4, h->gen);
	return end_reply(out, st, ph_buf_put_str(out, b, sizeof(b)));
}

static void
delta_free(struct ph_serve *s, struct delta *d)
{
	if (d == NULL)
		return;
	phsync_diff_free(d->diff);
	phsync_sig_free(d->sig);
	free(d);
	s->ndeltas--;
}

static void
close_handle(struct ph_serve *s, struct handle *h)
{
	if (h->dir != NULL)
		closedir(h->dir);
	else if (h->fd >= 0)
		close(h->fd);
	delta_free(s, h->delta);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

/* ---- paths -------------------------------------------------------------- */

static int
rd_loc(struct ph_serve *s, struct ph_rd *r, struct ph_loc *l, int *err)
{
	const uint8_t *p;
	uint32_t n;

	l->dirfd = -1;
	if (ph_rd_str(r, &p, &n) != 0)
		return -1;
	*err = ph_confine_resolve(s->root, s->rootlen, p, n, l);
	return 0;
}

/* A request whose only field before the rest is a path: reads and resolves
 * it. Returns 0 with l resolved (*replied 0), or with *replied set after
 * writing the error reply (what names a malformed request); -1 when even
 * that could not be written. */
static int
take_path(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
          const char *what, struct ph_loc *l, int *replied)
{
	int err;

	*replied = 1;
	if (rd_loc(s, r, l, &err) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, what);
	if (err != 0)
		return status_errno(out, id, err);
	*replied = 0;
	return 0;
}

/* ---- file operations ---------------------------------------------------- */

static int
do_open(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct ph_sftp_attrs a;
	uint32_t pf, idx;
	int err, flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, fd;
	struct handle *h;
	struct stat st;

	if (rd_loc(s, r, &l, &err) != 0 || ph_rd_u32(r, &pf) != 0 || ph_wire_get_attrs(r, &a) != 0) {
		ph_loc_close(&l);
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed OPEN");
	}
	if (err == 0)
		err = ph_confine_check_mode(&a);
	if (err != 0) {
		ph_loc_close(&l);
		return status_errno(out, id, err);
	}
	if ((pf & (PH_FXF_READ | PH_FXF_WRITE)) == (PH_FXF_READ | PH_FXF_WRITE))
		flags |= O_RDWR;
	else if (pf & PH_FXF_WRITE)
		flags |= O_WRONLY;
	else
		flags |= O_RDONLY;
	if (pf & PH_FXF_CREAT)
		flags |= O_CREAT;
	if (pf & PH_FXF_TRUNC)
		flags |= O_TRUNC;
	if (pf & PH_FXF_EXCL)
		flags |= O_EXCL;
	if (pf & PH_FXF_APPEND)
		flags |= O_APPEND;
	fd = openat(l.dirfd, l.name, flags,
	            (a.flags & PH_ATTR_PERMISSIONS) ? (mode_t)(a.perm & 0777) : (mode_t)0666);
	err = errno;
	ph_loc_close(&l);
	if (fd < 0)
		return status_errno(out, id, err);
	/* Regular files only: a FIFO or a device would hang or misbehave. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return status(out, id, PH_FX_FAILURE, "not a regular file");
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((h = new_handle(s, &idx)) == NULL) {
		close(fd);
		return status(out, id, PH_FX_FAILURE, "too many open handles");
	}
	h->fd = fd;
	h->readable = !(pf & PH_FXF_WRITE) || (pf & PH_FXF_READ);
	h->writable = (pf & PH_FXF_WRITE) != 0;
	return handle_reply(out, id, idx, h);
}

static int
do_opendir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	uint32_t idx;
	int err, fd, replied;
	struct handle *h;

	if ((err = take_path(s, id, r, out, "malformed OPENDIR", &l, &replied)) != 0 || replied)
		return err;
	fd = openat(l.dirfd, l.name,
	            O_RDONLY | O_DIRECTORY | O_CLOEXEC | (l.follow ? 0 : O_NOFOLLOW));
	err = errno;
	ph_loc_close(&l);
	if (fd < 0)
		return status_errno(out, id, err);
	if ((h = new_handle(s, &idx)) == NULL) {
		close(fd);
		return status(out, id, PH_FX_FAILURE, "too many open handles");
	}
	if ((h->dir = fdopendir(fd)) == NULL) {
		err = errno;
		close(fd);
		close_handle(s, h);
		return status_errno(out, id, err);
	}
	return handle_reply(out, id, idx, h);
}

static int
do_readdir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	size_t st, countat;
	uint32_t count = 0;
	struct dirent *de;
	int rc = 0;

	if (h == NULL || h->dir == NULL)
		return status(out, id, PH_FX_FAILURE, "not an open folder");
	if ((st = begin_reply(out, PH_FXP_NAME, id)) == SIZE_MAX)
		return -1;
	countat = out->len;
	rc |= ph_buf_put_u32(out, 0);
	while (rc == 0 && count < MAX_NAMES && out->len - countat < NAMES_BYTES) {
		struct stat sb;

		errno = 0;
		if ((de = readdir(h->dir)) == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* Gone since readdir saw it: leave it out, as if listed a moment later. */
		if (fstatat(dirfd(h->dir), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		rc |= ph_buf_put_cstr(out, de->d_name);
		rc |= ph_buf_put_cstr(out, "");   /* longname: nobody reads it */
		rc |= put_attrs(out, &sb);
		count++;
	}
	if (rc != 0) {
		out->len = st;
		return -1;
	}
	if (count == 0) {
		int e = errno;

		out->len = st;
		if (e != 0)
			return status_errno(out, id, e);
		return status(out, id, PH_FX_EOF, "end of folder");
	}
	ph_be32_put(out->data + countat, count);
	return end_reply(out, st, 0);
}

static int
do_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	uint64_t off;
	uint32_t len;
	size_t st, at;
	ssize_t n;
	size_t got = 0;

	if (h == NULL || h->fd < 0 || ph_rd_u64(r, &off) != 0 || ph_rd_u32(r, &len) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed READ");
	if (!h->readable)
		return status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (off > (uint64_t)INT64_MAX)
		return status(out, id, PH_FX_EOF, "end of file");
	if (len > PH_SERVE_MAX_IO)
		len = PH_SERVE_MAX_IO;
	if ((st = begin_reply(out, PH_FXP_DATA, id)) == SIZE_MAX ||
	    ph_buf_reserve(out, 4 + (size_t)len) != 0) {
		if (st != SIZE_MAX)
			out->len = st;
		return -1;
	}
	at = out->len + 4;
	while (got < len) {
		n = pread(h->fd, out->data + at + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			out->len = st;
			return status_errno(out, id, e);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got == 0) {
		out->len = st;
		return status(out, id, PH_FX_EOF, "end of file");
	}
	ph_be32_put(out->data + out->len, (uint32_t)got);
	out->len = at + got;
	return end_reply(out, st, 0);
}

static int
write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Bytes [off, off + n) of h were written: their writeback starts once a
 * MiB or more is waiting, so the disk works while the client still sends
 * and the fsync that makes the file durable finds little left to write.
 * Before, each fsync started its file's writeback from nothing: 60 fsyncs
 * in a row, 0.2 s with the helper idle, at the end of a 60-photo push
 * (strace -T of the helper). A hint: nothing depends on it. */
static void
wrote(struct handle *h, uint64_t off, uint64_t n)
{
	if (n == 0)
		return;
	if (h->wb_hi == h->wb_lo || off > h->wb_hi || off + n < h->wb_lo) {
		/* Not touching what waits: that goes now, this waits. */
		if (h->wb_hi > h->wb_lo)
			(void)ph_writeback_hint(h->fd, h->wb_lo, h->wb_hi - h->wb_lo);
		h->wb_lo = off;
		h->wb_hi = off + n;
	} else {
		h->wb_lo = off < h->wb_lo ? off : h->wb_lo;
		h->wb_hi = off + n > h->wb_hi ? off + n : h->wb_hi;
	}
	if (h->wb_hi - h->wb_lo >= WRITEBACK_STEP) {
		(void)ph_writeback_hint(h->fd, h->wb_lo, h->wb_hi - h->wb_lo);
		h->wb_lo = h->wb_hi;
	}
}

static int
do_write(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	uint64_t off;
	const uint8_t *data;
	uint32_t len;
	int e;

	if (h == NULL || h->fd < 0 || ph_rd_u64(r, &off) != 0 || ph_rd_str(r, &data, &len) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed WRITE");
	if (!h->writable)
		return status(out, id, PH_FX_PERMISSION_DENIED, "not open for writing");
	if (off > (uint64_t)INT64_MAX - len)
		return status(out, id, PH_FX_FAILURE, "offset out of range");
	if ((e = write_all(h->fd, data, len, off)) != 0)
		return status_errno(out, id, e);
	wrote(h, off, len);
	return status(out, id, PH_FX_OK, "");
}

static int
do_stat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct stat st;
	int err, replied;

	if ((err = take_path(s, id, r, out, "malformed STAT", &l, &replied)) != 0 || replied)
		return err;
	/* STAT and LSTAT alike: below the root no symlink is followed, so a
	 * link is reported as the link it is. */
	err = ph_confine_stat(&l, &st) != 0 ? errno : 0;
	ph_loc_close(&l);
	if (err != 0)
		return status_errno(out, id, err);
	return attrs_reply(out, id, &st);
}

static int
do_fstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	struct stat st;

	if (h == NULL || h->fd < 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed FSTAT");
	if (fstat(h->fd, &st) != 0)
		return status_errno(out, id, errno);
	return attrs_reply(out, id, &st);
}

static int
do_setstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out, int byhandle)
{
	struct ph_loc l = { .dirfd = -1 };
	struct ph_sftp_attrs a;
	struct handle *h = NULL;
	int err = 0;

	if (byhandle) {
		if ((h = get_handle(s, r)) == NULL || h->fd < 0 || ph_wire_get_attrs(r, &a) != 0)
			return status(out, id, PH_FX_BAD_MESSAGE, "malformed FSETSTAT");
		err = ph_confine_set_fd(h->fd, &a);
	} else {
		if (rd_loc(s, r, &l, &err) != 0 || ph_wire_get_attrs(r, &a) != 0) {
			ph_loc_close(&l);
			return status(out, id, PH_FX_BAD_MESSAGE, "malformed SETSTAT");
		}
		/* Through a descriptor of the object itself, opened with
		 * O_NOFOLLOW: a symlink put in its place is refused, never
		 * followed (confine.c). */
		if (err == 0)
			err = ph_confine_setstat(&l, &a);
		ph_loc_close(&l);
	}
	if (err != 0)
		return status_errno(out, id, err);
	return status(out, id, PH_FX_OK, "");
}

static int
do_path_op(struct ph_serve *s, uint8_t type, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct ph_sftp_attrs a;
	int err, rc = 0;

	if (rd_loc(s, r, &l, &err) != 0 || (type == PH_FXP_MKDIR && ph_wire_get_attrs(r, &a) != 0)) {
		ph_loc_close(&l);
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed request");
	}
	if (err == 0 && type == PH_FXP_MKDIR)
		err = ph_confine_check_mode(&a);
	if (err != 0) {
		ph_loc_close(&l);
		return status_errno(out, id, err);
	}
	if (l.is_root && type != PH_FXP_MKDIR) {
		/* The root stays: a sync never removes the folder it syncs. */
		rc = EACCES;
	} else if (type == PH_FXP_REMOVE) {
		struct stat st;

		/* unlinkat(0) removes a symlink itself, never its target. The
		 * look first only picks the message: a folder swapped in after it
		 * still fails unlinkat(0). */
		if (fstatat(l.dirfd, l.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			rc = EISDIR;
		} else {
			/* The file removed is let go of by the reaper (reap.c). */
			int held = ph_reap_hold(l.dirfd, l.name);

			if (unlinkat(l.dirfd, l.name, 0) != 0)
				rc = errno;
			ph_reap_release(&s->reap, held);
		}
	} else if (type == PH_FXP_RMDIR) {
		if (unlinkat(l.dirfd, l.name, AT_REMOVEDIR) != 0)
			rc = errno;
	} else {
		mode_t m = (a.flags & PH_ATTR_PERMISSIONS) ? (mode_t)(a.perm & 0777) : 0777;

		if (mkdirat(l.dirfd, l.name, m) != 0)
			rc = errno;
	}
	ph_loc_close(&l);
	if (rc != 0)
		return status_errno(out, id, rc);
	return status(out, id, PH_FX_OK, "");
}

static int
do_rename(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out, int posix)
{
	struct ph_loc a, b;
	int ea, eb, rc = 0;

	b.dirfd = -1;
	if (rd_loc(s, r, &a, &ea) != 0 || rd_loc(s, r, &b, &eb) != 0) {
		ph_loc_close(&a);
		ph_loc_close(&b);
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed RENAME");
	}
	if (ea != 0 || eb != 0)
		rc = ea != 0 ? ea : eb;
	else if (a.is_root || b.is_root)
		rc = EACCES;
	else if (posix) {
		/* The file replaced is let go of by the reaper (reap.c). */
		int held = ph_reap_hold(b.dirfd, b.name);

		if (renameat(a.dirfd, a.name, b.dirfd, b.name) != 0)
			rc = errno;
		ph_reap_release(&s->reap, held);
	} else {
		/* SFTP v3 RENAME never replaces: link + unlink as OpenSSH does,
		 * atomic where the file system has hard links. Without them the
		 * look and the rename are two steps: a file made at the target
		 * in between is replaced, in the same folder (both names are
		 * resolved through their folders' descriptors, so nothing outside
		 * the root is reached). renameat2(RENAME_NOREPLACE) would close
		 * that, but an app's seccomp filter on older 32-bit Android kills
		 * the process for it; phsync's client renames with posix-rename. */
		struct stat st;

		if (linkat(a.dirfd, a.name, b.dirfd, b.name, 0) == 0) {
			if (unlinkat(a.dirfd, a.name, 0) != 0)
				rc = errno;
		} else if (errno == EEXIST) {
			rc = EEXIST;
		} else if (fstatat(b.dirfd, b.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			rc = EEXIST;
		} else if (renameat(a.dirfd, a.name, b.dirfd, b.name) != 0) {
			rc = errno;
		}
	}
	ph_loc_close(&a);
	ph_loc_close(&b);
	if (rc == EEXIST)
		return status(out, id, PH_FX_FAILURE, "the target exists");
	if (rc != 0)
		return status_errno(out, id, rc);
	return status(out, id, PH_FX_OK, "");
}

/* ---- extensions --------------------------------------------------------- */

static int
ext_statvfs(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct statvfs v;
	size_t st;
	int err, fd, rc = 0, replied;

	if ((err = take_path(s, id, r, out, "malformed statvfs", &l, &replied)) != 0 || replied)
		return err;
	err = ph_confine_open_stat(&l, &fd);
	ph_loc_close(&l);
	if (err != 0)
		return status_errno(out, id, err);
	rc = fstatvfs(fd, &v);
	err = errno;
	close(fd);
	if (rc != 0)
		return status_errno(out, id, err);
	if ((st = begin_reply(out, PH_FXP_EXTENDED_REPLY, id)) == SIZE_MAX)
		return -1;
	rc |= ph_buf_put_u64(out, v.f_bsize);
	rc |= ph_buf_put_u64(out, v.f_frsize);
	rc |= ph_buf_put_u64(out, v.f_blocks);
	rc |= ph_buf_put_u64(out, v.f_bfree);
	rc |= ph_buf_put_u64(out, v.f_bavail);
	rc |= ph_buf_put_u64(out, v.f_files);
	rc |= ph_buf_put_u64(out, v.f_ffree);
	rc |= ph_buf_put_u64(out, v.f_favail);
	rc |= ph_buf_put_u64(out, v.f_fsid);
	rc |= ph_buf_put_u64(out, (v.f_flag & ST_RDONLY ? 1 : 0) | (v.f_flag & ST_NOSUID ? 2 : 0));
	rc |= ph_buf_put_u64(out, v.f_namemax);
	return end_reply(out, st, rc);
}

static int
ext_limits(uint32_t id, struct ph_buf *out)
{
	size_t st = begin_reply(out, PH_FXP_EXTENDED_REPLY, id);
	int rc = 0;

	if (st == SIZE_MAX)
		return -1;
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_PACKET);
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_IO);
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_IO);
	rc |= ph_buf_put_u64(out, MAX_HANDLES);
	return end_reply(out, st, rc);
}

/* copy-data (read handle, offset, length, write handle, offset): length 0
 * copies to the source's end. Two bounds (issue 22, item 5):
 * - within one file (the same handle, two handles, or two hard-linked
 *   names: the same device and inode) it is refused, whatever the ranges,
 *   as OpenSSH's sftp-server refuses the same handle or path. A copy onto
 *   itself that reads what it has just written never reaches the source's
 *   end: it ran until the disk was full, answering nothing else. Refusing
 *   overlapping ranges only would be enough for that, but a sync never
 *   copies within one file (a delta push copies from the old file into a
 *   new temp file), and one rule on the inode is easier to trust;
 * - the bytes copied are at most what the source held when the request
 *   came (its size then, less the offset): a source that grows meanwhile
 *   (another writer) does not keep the copy going. An EOF reply says the
 *   source ended before the length asked for, as with OpenSSH. */
static int
ext_copy_data(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *rh, *wh;
	uint64_t roff, len, woff, done = 0, limit;
	struct stat rs, ws;
	uint8_t *buf;
	int e = 0;

	if ((rh = get_handle(s, r)) == NULL || ph_rd_u64(r, &roff) != 0 ||
	    ph_rd_u64(r, &len) != 0 || (wh = get_handle(s, r)) == NULL ||
	    ph_rd_u64(r, &woff) != 0 || rh->fd < 0 || wh->fd < 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed copy-data");
	if (!rh->readable || !wh->writable)
		return status(out, id, PH_FX_PERMISSION_DENIED, "handles not open for copying");
	if (roff > (uint64_t)INT64_MAX || woff > (uint64_t)INT64_MAX ||
	    (len != 0 && (len > (uint64_t)INT64_MAX - roff || len > (uint64_t)INT64_MAX - woff)))
		return status(out, id, PH_FX_FAILURE, "offset out of range");
	if (fstat(rh->fd, &rs) != 0 || fstat(wh->fd, &ws) != 0)
		return status_errno(out, id, errno);
	if (rh == wh || (rs.st_dev == ws.st_dev && rs.st_ino == ws.st_ino))
		return status(out, id, PH_FX_FAILURE, "copy-data within one file is refused");
	limit = (uint64_t)rs.st_size > roff ? (uint64_t)rs.st_size - roff : 0;
	if (len != 0 && len < limit)
		limit = len;
	if (limit > (uint64_t)INT64_MAX - woff)
		return status(out, id, PH_FX_FAILURE, "offset out of range");
	if ((buf = malloc(PH_SERVE_MAX_IO)) == NULL)
		return status(out, id, PH_FX_FAILURE, "out of memory");
	while (done < limit) {
		size_t want = PH_SERVE_MAX_IO;
		ssize_t n;

		if (limit - done < want)
			want = (size_t)(limit - done);
		n = pread(rh->fd, buf, want, (off_t)(roff + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			break;
		}
		if (n == 0)
			break;     /* shrank meanwhile */
		if ((e = write_all(wh->fd, buf, (size_t)n, woff + done)) != 0)
			break;
		done += (uint64_t)n;
	}
	free(buf);
	wrote(wh, woff, done);
	if (e != 0)
		return status_errno(out, id, e);
	/* OpenSSH answers a copy past the end of the source with EOF. */
	if (len != 0 && done < len)
		return status(out, id, PH_FX_EOF, "the source ended before the length asked for");
	return status(out, id, PH_FX_OK, "");
}

static int
ext_fsync(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);

	if (h == NULL || h->fd < 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed fsync");
	if (fsync(h->fd) != 0)
		return status_errno(out, id, errno);
	h->wb_lo = h->wb_hi = 0;
	return status(out, id, PH_FX_OK, "");
}

/* phsync-sig: the block signature of an open file, read from its start to
 * its end now. The client compares the length in it with what it expects. */
static int
ext_sig(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	uint32_t block_len;
	uint8_t *buf;
	struct stat sb;
	uint64_t blocks;
	size_t st;
	int rc;

	if (h == NULL || h->fd < 0 || ph_rd_u32(r, &block_len) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed signature request");
	if (!h->readable)
		return status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (fstat(h->fd, &sb) != 0)
		return status_errno(out, id, errno);
	if (block_len == 0)
		block_len = phsync_delta_block_len((uint64_t)sb.st_size);
	if (block_len < PHSYNC_SIG_MIN_BLOCK || block_len > PHSYNC_SIG_MAX_BLOCK)
		return status(out, id, PH_FX_FAILURE, "block length out of range");
	blocks = ((uint64_t)sb.st_size + block_len - 1) / block_len;
	if (20 + blocks * 12 > PH_SERVE_MAX_SIG)
		return status(out, id, PH_FX_FAILURE, "the signature would be too large");
	if ((buf = malloc(PH_SERVE_MAX_IO)) == NULL)
		return status(out, id, PH_FX_FAILURE, "out of memory");
	if ((st = begin_reply(out, PH_FXP_EXTENDED_REPLY, id)) == SIZE_MAX) {
		free(buf);
		return -1;
	}
	rc = ph_sig_fd(h->fd, (uint64_t)sb.st_size, block_len, 8, buf, PH_SERVE_MAX_IO, out);
	free(buf);
	if (rc == 0)
		return end_reply(out, st, 0);
	out->len = st;
	if (rc == -ENOMEM)
		return -1;
	if (rc == -EIO)
		return status(out, id, PH_FX_FAILURE, "the file changed while it was read");
	return status_errno(out, id, -rc);
}

/* phsync-delta-start: the client's signature of its old copy; the delta of
 * this open file against it is then read with phsync-delta-read. */
static int
ext_delta_start(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	const uint8_t *sig;
	uint32_t siglen;
	struct delta *d;
	struct phsync_in in;
	struct stat sb;

	if (h == NULL || h->fd < 0 || ph_rd_str(r, &sig, &siglen) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed delta request");
	if (!h->readable)
		return status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (h->delta != NULL)
		return status(out, id, PH_FX_FAILURE, "a delta of this handle is under way");
	if (s->ndeltas >= MAX_DELTAS)
		return status(out, id, PH_FX_FAILURE, "too many deltas at once");
	if (fstat(h->fd, &sb) != 0)
		return status_errno(out, id, errno);
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return status(out, id, PH_FX_FAILURE, "out of memory");
	s->ndeltas++;
	/* The delta covers the bytes the file held now: one read of a file that
	 * matches the client's copy reads on until output fills, and a file
	 * growing meanwhile must not keep it reading. */
	d->file_end = (uint64_t)sb.st_size;
	in.ptr = sig;
	in.size = siglen;
	in.pos = 0;
	if (phsync_sig_new(NULL, &d->sig) != 0) {
		delta_free(s, d);
		return status(out, id, PH_FX_FAILURE, "out of memory");
	}
	if (phsync_sig_load(d->sig, &in, 1) != 0) {
		delta_free(s, d);
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed signature");
	}
	/* The diff and its window (half a MiB) come with the first read and go
	 * with the last: a client starts up to MAX_DELTAS deltas in a burst,
	 * and a window each from the start faulted 36 MB of fresh pages in
	 * for 60 photos (perf of a pull), where one reused window serves. */
	h->delta = d;
	return status(out, id, PH_FX_OK, "");
}

/* phsync-delta-read (handle, offset in the delta, length): the next bytes
 * of the delta, in order; EOF once it is all sent. */
static int
ext_delta_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = get_handle(s, r);
	struct delta *d;
	uint64_t doff;
	uint32_t len;
	size_t st, at;
	struct phsync_out o;
	int rc;

	if (h == NULL || ph_rd_u64(r, &doff) != 0 || ph_rd_u32(r, &len) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed delta read");
	if ((d = h->delta) == NULL)
		return status(out, id, PH_FX_FAILURE, "no delta under way on this handle");
	/* Reads asked ahead past the end meet EOF whatever their offset. */
	if (d->done)
		return status(out, id, PH_FX_EOF, "end of delta");
	if (doff != d->out_off)
		return status(out, id, PH_FX_FAILURE, "delta read out of order");
	if (len > PH_SERVE_MAX_IO)
		len = PH_SERVE_MAX_IO;
	if (len == 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "empty delta read");
	if (d->diff == NULL && phsync_diff_new(NULL, d->sig, &d->diff) != 0)
		return status(out, id, PH_FX_FAILURE, "out of memory");
	if ((st = begin_reply(out, PH_FXP_DATA, id)) == SIZE_MAX ||
	    ph_buf_reserve(out, 4 + (size_t)len) != 0) {
		if (st != SIZE_MAX)
			out->len = st;
		return -1;
	}
	at = out->len + 4;
	o.ptr = out->data + at;
	o.size = len;
	o.pos = 0;
	while (o.pos < o.size && !d->done) {
		struct phsync_in in = { NULL, 0, 0 };
		void *room;
		size_t want;
		ssize_t n;

		rc = phsync_diff_stream(d->diff, &o, &in, d->eof, &d->done);
		if (rc != 0) {
			out->len = st;
			return status(out, id, PH_FX_FAILURE, "the delta engine failed");
		}
		if (o.pos == o.size || d->done || d->eof)
			continue;
		/* The diff wants input: the file is read straight into its window
		 * (a copy through a buffer of our own cost a third of a pull's
		 * helper CPU, perf on bench_wire's 60 photos). */
		if ((want = phsync_diff_space(d->diff, &room)) == 0) {
			out->len = st;
			return status(out, id, PH_FX_FAILURE, "the delta engine failed");
		}
		if (want > PH_SERVE_MAX_IO)
			want = PH_SERVE_MAX_IO;
		if (want > d->file_end - d->file_off)
			want = (size_t)(d->file_end - d->file_off);
		n = 0;
		while (want > 0 && (n = pread(h->fd, room, want, (off_t)d->file_off)) < 0 &&
		       errno == EINTR)
			;
		if (n < 0) {
			int e = errno;

			out->len = st;
			return status_errno(out, id, e);
		}
		if (n == 0)
			d->eof = 1;
		phsync_diff_commit(d->diff, (size_t)n);
		d->file_off += (uint64_t)n;
	}
	if (d->done) {
		/* Later reads answer EOF from d->done alone. */
		phsync_diff_free(d->diff);
		phsync_sig_free(d->sig);
		d->diff = NULL;
		d->sig = NULL;
	}
	if (o.pos == 0) {
		out->len = st;
		return status(out, id, PH_FX_EOF, "end of delta");
	}
	d->out_off += o.pos;
	ph_be32_put(out->data + out->len, (uint32_t)o.pos);
	out->len = at + o.pos;
	return end_reply(out, st, 0);
}

static int
do_extended(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	const uint8_t *name;
	uint32_t n;

	if (ph_rd_str(r, &name, &n) != 0)
		return status(out, id, PH_FX_BAD_MESSAGE, "malformed EXTENDED");
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
	if (IS(PH_XN_POSIX_RENAME))
		return do_rename(s, id, r, out, 1);
	if (IS(PH_XN_FSYNC))
		return ext_fsync(s, id, r, out);
	if (IS(PH_XN_STATVFS))
		return ext_statvfs(s, id, r, out);
	if (IS(PH_XN_LIMITS))
		return ext_limits(id, out);
	if (IS(PH_XN_COPY_DATA))
		return ext_copy_data(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_SIG))
		return ext_sig(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_DSTART))
		return ext_delta_start(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_DREAD))
		return ext_delta_read(s, id, r, out);
#undef IS
	return status(out, id, PH_FX_OP_UNSUPPORTED, "unknown extension");
}

/* ---- the session -------------------------------------------------------- */

/* INIT: the client may offer "phsync@phsync.org" with the highest helper
 * protocol version it speaks; the reply names the version both use, or
 * leaves the extension out (plain SFTP) when there is none. */
static int
do_init(struct ph_serve *s, struct ph_rd *r, struct ph_buf *out)
{
	static const char *const exts[][2] = {
		{ PH_XN_POSIX_RENAME, "1" }, { PH_XN_STATVFS, "2" },
		{ PH_XN_FSYNC, "1" }, { PH_XN_LIMITS, "1" },
		{ PH_XN_COPY_DATA, "1" },
	};
	uint32_t version, nl, dl;
	const uint8_t *name, *data;
	size_t st, i;
	int rc = 0, n = 0;
	char v[16];

	if (ph_rd_u32(r, &version) != 0 || version < 3)
		return -1;
	while (r->left > 0 && n++ < 64) {
		if (ph_rd_str(r, &name, &nl) != 0 || ph_rd_str(r, &data, &dl) != 0)
			return -1;
		if (nl == strlen(PH_HELPER_EXT) && memcmp(name, PH_HELPER_EXT, nl) == 0 &&
		    dl > 0 && dl < 8) {
			unsigned long want = 0;

			for (i = 0; i < dl; i++) {
				if (data[i] < '0' || data[i] > '9')
					break;
				want = want * 10 + (data[i] - '0');
			}
			if (i == dl && want >= PH_HELPER_PROTO_MIN)
				s->version = want < PH_HELPER_PROTO_MAX ? (unsigned)want
				                                        : PH_HELPER_PROTO_MAX;
		}
	}
	if ((st = out->len, ph_buf_put_u32(out, 0)) != 0 || ph_buf_put_u8(out, PH_FXP_VERSION) != 0 ||
	    ph_buf_put_u32(out, 3) != 0)
		return -1;
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		rc |= ph_buf_put_cstr(out, exts[i][0]);
		rc |= ph_buf_put_cstr(out, exts[i][1]);
	}
	if (s->version != 0) {
		snprintf(v, sizeof(v), "%u", s->version);
		rc |= ph_buf_put_cstr(out, PH_HELPER_EXT);
		rc |= ph_buf_put_cstr(out, v);
	}
	if (rc != 0)
		return -1;
	ph_be32_put(out->data + st, (uint32_t)(out->len - st - 4));
	s->inited = 1;
	return 0;
}

int
ph_serve_packet(struct ph_serve *s, const uint8_t *p, size_t len, struct ph_buf *out)
{
	struct ph_rd r = { p, len };
	uint8_t type;
	uint32_t id;
	struct handle *h;

	if (ph_rd_u8(&r, &type) != 0)
		return -1;
	if (type == PH_FXP_INIT)
		return s->inited ? -1 : do_init(s, &r, out);
	if (!s->inited || ph_rd_u32(&r, &id) != 0)
		return -1;
	switch (type) {
	case PH_FXP_OPEN:
		return do_open(s, id, &r, out);
	case PH_FXP_CLOSE:
		if ((h = get_handle(s, &r)) == NULL)
			return status(out, id, PH_FX_FAILURE, "not an open handle");
		close_handle(s, h);
		return status(out, id, PH_FX_OK, "");
	case PH_FXP_READ:
		return do_read(s, id, &r, out);
	case PH_FXP_WRITE:
		return do_write(s, id, &r, out);
	case PH_FXP_LSTAT:
	case PH_FXP_STAT:
		return do_stat(s, id, &r, out);
	case PH_FXP_FSTAT:
		return do_fstat(s, id, &r, out);
	case PH_FXP_SETSTAT:
		return do_setstat(s, id, &r, out, 0);
	case PH_FXP_FSETSTAT:
		return do_setstat(s, id, &r, out, 1);
	case PH_FXP_OPENDIR:
		return do_opendir(s, id, &r, out);
	case PH_FXP_READDIR:
		return do_readdir(s, id, &r, out);
	case PH_FXP_REMOVE:
	case PH_FXP_MKDIR:
	case PH_FXP_RMDIR:
		return do_path_op(s, type, id, &r, out);
	case PH_FXP_RENAME:
		return do_rename(s, id, &r, out, 0);
	case PH_FXP_EXTENDED:
		return do_extended(s, id, &r, out);
	default:
		return status(out, id, PH_FX_OP_UNSUPPORTED, "not supported by phsync serve");
	}
}

int
ph_serve_new(const char *root, struct ph_serve **out)
{
	struct ph_serve *s = calloc(1, sizeof(*s));
	size_t n = strlen(root);
	int i;

	if (s == NULL)
		return PHSYNC_ENOMEM;
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		n = 0;
	if (n >= sizeof(s->root)) {
		free(s);
		return PHSYNC_EINVAL;
	}
	memcpy(s->root, root, n);
	s->root[n] = '\0';
	s->rootlen = n;
	for (i = 0; i < MAX_HANDLES; i++)
		s->h[i].fd = -1;
	*out = s;
	return 0;
}

void
ph_serve_free(struct ph_serve *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < MAX_HANDLES; i++)
		if (s->h[i].used)
			close_handle(s, &s->h[i]);
	ph_reap_end(&s->reap);
	free(s);
}

static int
flush_fd(int fd, struct ph_buf *out)
{
	size_t off = 0;

	while (off < out->len) {
		ssize_t w = write(fd, out->data + off, out->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	out->len = 0;
	return 0;
}

int
ph_serve_run(const char *root, int in_fd, int out_fd)
{
	struct ph_serve *s = NULL;
	struct ph_buf out = { NULL, 0, 0, 16u << 20 };
	uint8_t *in = NULL;
	size_t cap = PH_SERVE_MAX_PACKET + 4 + (256u << 10), have = 0, pos;
	int rc = 1;

	signal(SIGPIPE, SIG_IGN);
#ifdef HAVE_MALLOPT
	/* Each delta's window (half a MiB) and reply buffers stay in the heap
	 * for the next file instead of going back to the kernel: glibc mapped
	 * and unmapped them per file, and faulting fresh pages in cost more
	 * than the copy into them (strace and perf of a 60-photo pull). */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	/* sshd hands the channel over through pipes of 64 KiB. While a delta
	 * is computed here the client's requests pile up in sshd, which then
	 * feeds them 64 KiB a write and moves the rest of its buffer down
	 * after each: sshd spent a quarter of a 60-photo pull's CPU in memmove
	 * (perf record -a). Pipes of 1 MiB (the unprivileged limit) take a
	 * burst in a few writes. Not a pipe, not allowed, or an OS that sizes
	 * pipes itself: nothing changes. */
	(void)ph_pipe_grow(in_fd, 1 << 20);
	(void)ph_pipe_grow(out_fd, 1 << 20);
	if (ph_serve_new(root, &s) != 0 || (in = malloc(cap)) == NULL) {
		fprintf(stderr, "phsync serve: out of memory\n");
		goto out;
	}
	for (;;) {
		ssize_t n;

		/* Take every complete packet, then reply before waiting for more. */
		pos = 0;
		while (have - pos >= 4) {
			uint32_t plen = ph_be32_get(in + pos);

			if (plen == 0 || plen > PH_SERVE_MAX_PACKET) {
				fprintf(stderr, "phsync serve: packet of %u bytes refused\n", plen);
				goto out;
			}
			if (have - pos - 4 < plen)
				break;
			if (ph_serve_packet(s, in + pos + 4, plen, &out) != 0) {
				fprintf(stderr, "phsync serve: malformed request, closing\n");
				goto out;
			}
			pos += 4 + (size_t)plen;
			if (out.len >= (512u << 10) && flush_fd(out_fd, &out) != 0)
				goto out;
		}
		memmove(in, in + pos, have - pos);
		have -= pos;
		if (out.len > 0 && flush_fd(out_fd, &out) != 0)
			goto out;
		n = read(in_fd, in + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "phsync serve: read: %s\n", strerror(errno));
			goto out;
		}
		if (n == 0) {
			rc = have == 0 ? 0 : 1;
			if (rc != 0)
				fprintf(stderr, "phsync serve: the client left in the middle of a "
				        "request\n");
			break;
		}
		have += (size_t)n;
	}
out:
	ph_serve_free(s);
	ph_buf_free(&out);
	free(in);
	return rc;
}

int
phsync_serve(const char *root, int in_fd, int out_fd)
{
	return ph_serve_run(root, in_fd, out_fd);
}
