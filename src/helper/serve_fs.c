/* SPDX-License-Identifier: ISC */
/* The remote helper's SFTP v3 file requests (serve_int.h): OPEN, OPENDIR,
 * READDIR, READ, WRITE, STAT/LSTAT, FSTAT, SETSTAT/FSETSTAT, REMOVE, MKDIR,
 * RMDIR and RENAME (also posix-rename). Below the root no symlink is
 * followed and nothing is acted on by a name after a check: each path is
 * resolved to its folder's descriptor (confine.c) and the last component is
 * acted on with the *at() calls from there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform.h"
#include "serve_int.h"

int
ph_serve_open(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct ph_sftp_attrs a;
	uint32_t pf, idx;
	int err, flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, fd;
	struct handle *h;
	struct stat st;

	if (ph_serve_rd_loc(s, r, &l, &err) != 0 || ph_rd_u32(r, &pf) != 0 ||
	    ph_wire_get_attrs(r, &a) != 0) {
		ph_loc_close(&l);
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed OPEN");
	}
	if (err == 0)
		err = ph_confine_check_mode(&a);
	if (err != 0) {
		ph_loc_close(&l);
		return ph_serve_status_errno(out, id, err);
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
		return ph_serve_status_errno(out, id, err);
	/* Regular files only: a FIFO or a device would hang or misbehave. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ph_serve_status(out, id, PH_FX_FAILURE, "not a regular file");
	}
	/* F_SETFL takes only the status flags (O_APPEND, O_NONBLOCK, ...) of
	 * those it is given: the open's own, less O_NONBLOCK, in one call. */
	(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	if ((h = ph_serve_handle_new(s, &idx)) == NULL) {
		close(fd);
		return ph_serve_status(out, id, PH_FX_FAILURE, "too many open handles");
	}
	h->fd = fd;
	h->readable = !(pf & PH_FXF_WRITE) || (pf & PH_FXF_READ);
	h->writable = (pf & PH_FXF_WRITE) != 0;
	return ph_serve_handle_reply(out, id, idx, h);
}

int
ph_serve_opendir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	uint32_t idx;
	int err, fd, replied;
	struct handle *h;

	if ((err = ph_serve_take_path(s, id, r, out, "malformed OPENDIR", &l, &replied)) != 0 || replied)
		return err;
	fd = openat(l.dirfd, l.name,
	            O_RDONLY | O_DIRECTORY | O_CLOEXEC | (l.follow ? 0 : O_NOFOLLOW));
	err = errno;
	ph_loc_close(&l);
	if (fd < 0)
		return ph_serve_status_errno(out, id, err);
	if ((h = ph_serve_handle_new(s, &idx)) == NULL) {
		close(fd);
		return ph_serve_status(out, id, PH_FX_FAILURE, "too many open handles");
	}
	if ((h->dir = fdopendir(fd)) == NULL) {
		err = errno;
		close(fd);
		ph_serve_handle_close(s, h);
		return ph_serve_status_errno(out, id, err);
	}
	return ph_serve_handle_reply(out, id, idx, h);
}

int
ph_serve_readdir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	size_t st, countat;
	uint32_t count = 0;
	struct dirent *de;
	int rc = 0;

	if (h == NULL || h->dir == NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "not an open folder");
	if ((st = ph_serve_begin(out, PH_FXP_NAME, id)) == SIZE_MAX)
		return -1;
	countat = out->len;
	rc |= ph_buf_put_u32(out, 0);
	while (rc == 0 && count < SERVE_MAX_NAMES && out->len - countat < SERVE_NAMES_BYTES) {
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
		rc |= ph_serve_put_attrs(out, &sb);
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
			return ph_serve_status_errno(out, id, e);
		return ph_serve_status(out, id, PH_FX_EOF, "end of folder");
	}
	ph_be32_put(out->data + countat, count);
	return ph_serve_end(out, st, 0);
}

/* Empties the helper's pipe of the n bytes a READ put there. */
static int
spipe_drop(struct ph_serve *s, size_t n)
{
	char buf[4096];

	while (n > 0) {
		ssize_t k = read(s->spipe[0], buf, n < sizeof(buf) ? n : sizeof(buf));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		n -= (size_t)k;
	}
	return 0;
}

/* A READ whose bytes go from the file to the sink without being copied
 * through the helper: its pages are moved into the helper's own pipe first,
 * so that the reply's length is what the file gave (a short reply is the
 * end of the file) before any of it is sent; then out's replies, this
 * reply's header, and the pages. Half of the helper's CPU in a pull of
 * photos was these two copies (docs/PERFORMANCE.md). Returns 0 (answered),
 * 1 (nothing sent: the caller reads and copies, which reports any error the
 * file has) or -1 (the stream cannot go on). */
static int
read_spliced(struct ph_serve *s, struct handle *h, uint32_t id, uint64_t off, uint32_t len,
             struct ph_buf *out)
{
	size_t got = 0;
	int64_t n = 0;

	while (got < len && (n = ph_splice_in(h->fd, off + got, s->spipe[1], len - got)) > 0)
		got += (size_t)n;
	if (n < 0) {
		if (n == -EINVAL || n == -ENOSYS)
			h->nosplice = 1;
		return spipe_drop(s, got) != 0 ? -1 : 1;
	}
	if (got == 0)
		return ph_serve_status(out, id, PH_FX_EOF, "end of file");
	if (ph_serve_data_head(out, id, got) != 0 || ph_serve_flush(s->out_fd, out) != 0)
		return -1;
	while (got > 0) {
		if ((n = ph_splice_out(s->spipe[0], s->out_fd, got)) <= 0)
			return -1;
		got -= (size_t)n;
	}
	return 0;
}

int
ph_serve_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	uint64_t off;
	uint32_t len;
	size_t st, at;
	ssize_t n;
	size_t got = 0;

	if (h == NULL || h->fd < 0 || ph_rd_u64(r, &off) != 0 || ph_rd_u32(r, &len) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed READ");
	if (!h->readable)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (off > (uint64_t)INT64_MAX)
		return ph_serve_status(out, id, PH_FX_EOF, "end of file");
	if (len > PH_SERVE_MAX_IO)
		len = PH_SERVE_MAX_IO;
	if (s->spipe[0] >= 0 && !h->nosplice && len >= SERVE_SPLICE_MIN) {
		int rc = read_spliced(s, h, id, off, len, out);

		if (rc <= 0)
			return rc;
	}
	if ((st = ph_serve_data_begin(out, id, len, &at)) == SIZE_MAX)
		return -1;
	while (got < len) {
		n = pread(h->fd, out->data + at + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			out->len = st;
			return ph_serve_status_errno(out, id, e);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got == 0) {
		out->len = st;
		return ph_serve_status(out, id, PH_FX_EOF, "end of file");
	}
	return ph_serve_data_end(out, st, got);
}

int
ph_serve_write(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	uint64_t off;
	const uint8_t *data;
	uint32_t len;
	int e;

	if (h == NULL || h->fd < 0 || ph_rd_u64(r, &off) != 0 || ph_rd_str(r, &data, &len) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed WRITE");
	if (!h->writable)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED, "not open for writing");
	if (off > (uint64_t)INT64_MAX - len)
		return ph_serve_status(out, id, PH_FX_FAILURE, "offset out of range");
	if ((e = ph_serve_write_all(h->fd, data, len, off)) != 0)
		return ph_serve_status_errno(out, id, e);
	ph_serve_wrote(h, off, len);
	return ph_serve_status(out, id, PH_FX_OK, "");
}

int
ph_serve_stat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct stat st;
	int err, replied;

	if ((err = ph_serve_take_path(s, id, r, out, "malformed STAT", &l, &replied)) != 0 || replied)
		return err;
	/* STAT and LSTAT alike: below the root no symlink is followed, so a
	 * link is reported as the link it is. */
	err = ph_confine_stat(&l, &st) != 0 ? errno : 0;
	ph_loc_close(&l);
	if (err != 0)
		return ph_serve_status_errno(out, id, err);
	return ph_serve_attrs_reply(out, id, &st);
}

int
ph_serve_fstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	struct stat st;

	if (h == NULL || h->fd < 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed FSTAT");
	if (fstat(h->fd, &st) != 0)
		return ph_serve_status_errno(out, id, errno);
	return ph_serve_attrs_reply(out, id, &st);
}

int
ph_serve_setstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                 int byhandle)
{
	struct ph_loc l = { .dirfd = -1 };
	struct ph_sftp_attrs a;
	struct handle *h = NULL;
	int err = 0;

	if (byhandle) {
		if ((h = ph_serve_handle_get(s, r)) == NULL || h->fd < 0 || ph_wire_get_attrs(r, &a) != 0)
			return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed FSETSTAT");
		err = ph_confine_set_fd(h->fd, &a);
	} else {
		if (ph_serve_rd_loc(s, r, &l, &err) != 0 || ph_wire_get_attrs(r, &a) != 0) {
			ph_loc_close(&l);
			return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed SETSTAT");
		}
		/* Through a descriptor of the object itself, opened with
		 * O_NOFOLLOW: a symlink put in its place is refused, never
		 * followed (confine.c). */
		if (err == 0)
			err = ph_confine_setstat(&l, &a);
		ph_loc_close(&l);
	}
	if (err != 0)
		return ph_serve_status_errno(out, id, err);
	return ph_serve_status(out, id, PH_FX_OK, "");
}

int
ph_serve_path_op(struct ph_serve *s, uint8_t type, uint32_t id, struct ph_rd *r,
                 struct ph_buf *out)
{
	struct ph_loc l;
	struct ph_sftp_attrs a;
	int err, rc = 0;

	if (ph_serve_rd_loc(s, r, &l, &err) != 0 ||
	    (type == PH_FXP_MKDIR && ph_wire_get_attrs(r, &a) != 0)) {
		ph_loc_close(&l);
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed request");
	}
	if (err == 0 && type == PH_FXP_MKDIR)
		err = ph_confine_check_mode(&a);
	if (err != 0) {
		ph_loc_close(&l);
		return ph_serve_status_errno(out, id, err);
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
		return ph_serve_status_errno(out, id, rc);
	return ph_serve_status(out, id, PH_FX_OK, "");
}

int
ph_serve_rename(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                int posix)
{
	struct ph_loc a, b;
	int ea, eb, rc = 0;

	b.dirfd = -1;
	if (ph_serve_rd_loc(s, r, &a, &ea) != 0 || ph_serve_rd_loc(s, r, &b, &eb) != 0) {
		ph_loc_close(&a);
		ph_loc_close(&b);
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed RENAME");
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
		return ph_serve_status(out, id, PH_FX_FAILURE, "the target exists");
	if (rc != 0)
		return ph_serve_status_errno(out, id, rc);
	return ph_serve_status(out, id, PH_FX_OK, "");
}
