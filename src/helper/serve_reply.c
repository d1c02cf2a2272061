/* SPDX-License-Identifier: ISC */
/* The remote helper's replies (serve_int.h): the frame of each reply, the
 * STATUS that answers a failure (errno mapped to SFTP's codes), a stat as
 * the wire's attributes, a request's path resolved beneath the root
 * (confine.c), and the replies written out. The bottom of the helper's
 * files: it calls none of them. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_int.h"

/* Starts a reply: the length is patched by ph_serve_end. */
size_t
ph_serve_begin(struct ph_buf *out, uint8_t type, uint32_t id)
{
	size_t start = out->len;

	if (ph_buf_put_u32(out, 0) != 0 || ph_buf_put_u8(out, type) != 0 ||
	    ph_buf_put_u32(out, id) != 0)
		return SIZE_MAX;
	return start;
}

int
ph_serve_end(struct ph_buf *out, size_t start, int rc)
{
	if (start == SIZE_MAX || rc != 0) {
		if (start != SIZE_MAX)
			out->len = start;
		return -1;
	}
	ph_be32_put(out->data + start, (uint32_t)(out->len - start - 4));
	return 0;
}

size_t
ph_serve_data_begin(struct ph_buf *out, uint32_t id, uint32_t len, size_t *at)
{
	size_t start = ph_serve_begin(out, PH_FXP_DATA, id);

	if (start == SIZE_MAX)
		return SIZE_MAX;
	if (ph_buf_reserve(out, 4 + (size_t)len) != 0) {
		out->len = start;
		return SIZE_MAX;
	}
	*at = out->len + 4;
	return start;
}

int
ph_serve_data_end(struct ph_buf *out, size_t start, size_t n)
{
	ph_be32_put(out->data + out->len, (uint32_t)n);
	out->len += 4 + n;
	return ph_serve_end(out, start, 0);
}

int
ph_serve_data_head(struct ph_buf *out, uint32_t id, size_t n)
{
	size_t start = ph_serve_begin(out, PH_FXP_DATA, id);

	if (start == SIZE_MAX || n > PH_SERVE_MAX_IO || ph_buf_put_u32(out, (uint32_t)n) != 0)
		return ph_serve_end(out, start, -1);
	ph_be32_put(out->data + start, (uint32_t)(out->len - start - 4 + n));
	return 0;
}

int
ph_serve_flush(int fd, struct ph_buf *out)
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
ph_serve_status(struct ph_buf *out, uint32_t id, uint32_t code, const char *msg)
{
	size_t st = ph_serve_begin(out, PH_FXP_STATUS, id);
	int rc = 0;

	if (st == SIZE_MAX)
		return -1;
	rc |= ph_buf_put_u32(out, code);
	rc |= ph_buf_put_cstr(out, msg);
	rc |= ph_buf_put_cstr(out, "");
	return ph_serve_end(out, st, rc);
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

int
ph_serve_status_errno(struct ph_buf *out, uint32_t id, int e)
{
	if (e == ELOOP)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED,
		              "a symlink on the way (the helper follows none)");
	if (e == PH_CONFINE_ESETID)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED,
		              "setuid, setgid and sticky bits are refused");
	if (e == PH_CONFINE_ENOTREG)
		return ph_serve_status(out, id, PH_FX_FAILURE, "neither a regular file nor a folder");
	return ph_serve_status(out, id, errno_code(e), strerror(e));
}

/* A stat as the wire's attributes: times before 1970 as 0, after 2106 as
 * the last second the field holds. */
int
ph_serve_put_attrs(struct ph_buf *out, const struct stat *st)
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

int
ph_serve_attrs_reply(struct ph_buf *out, uint32_t id, const struct stat *st)
{
	size_t s = ph_serve_begin(out, PH_FXP_ATTRS, id);

	if (s == SIZE_MAX)
		return -1;
	return ph_serve_end(out, s, ph_serve_put_attrs(out, st));
}

/* ---- a request's path -------------------------------------------------- */

int
ph_serve_rd_loc(struct ph_serve *s, struct ph_rd *r, struct ph_loc *l, int *err)
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
int
ph_serve_take_path(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                   const char *what, struct ph_loc *l, int *replied)
{
	int err;

	*replied = 1;
	if (ph_serve_rd_loc(s, r, l, &err) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, what);
	if (err != 0)
		return ph_serve_status_errno(out, id, err);
	*replied = 0;
	return 0;
}
