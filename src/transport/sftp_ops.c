/* SPDX-License-Identifier: ISC */
/* The SFTP client's request builders: one function per request, each
 * writing its packet into the send buffer. See sftp.h. */
#include <string.h>

#include "buf.h"
#include "ctx.h"
#include "sftp.h"
#include "sftp_int.h"

static int
simple_path(struct ph_sftp *s, uint8_t type, const char *path,
            const struct ph_sftp_attrs *a, int with_attrs, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = ph_sftp_req_begin(s, type, cb, arg, &start);

	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, path);
	if (rc == 0 && with_attrs)
		rc = ph_wire_put_attrs(&s->out, a);
	return ph_sftp_req_end(s, start, rc);
}

static int
simple_handle(struct ph_sftp *s, uint8_t type, const struct ph_sftp_handle *h,
              ph_sftp_cb cb, void *arg, size_t *start)
{
	int rc = ph_sftp_req_begin(s, type, cb, arg, start);

	if (rc != 0)
		return rc;
	return ph_buf_put_str(&s->out, h->b, h->len);
}

int
ph_sftp_handle_set(struct ph_sftp_handle *h, const struct ph_sftp_reply *r)
{
	if (r->type != PH_FXP_HANDLE || r->len == 0 || r->len > PH_SFTP_MAX_HANDLE)
		return PHSYNC_EPROTO;
	memcpy(h->b, r->data, r->len);
	h->len = r->len;
	return 0;
}

/* A request whose only field is the handle. */
static int
handle_only(struct ph_sftp *s, uint8_t type, const struct ph_sftp_handle *h, ph_sftp_cb cb,
            void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, type, h, cb, arg, &start);

	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_open(struct ph_sftp *s, const char *path, uint32_t pflags,
             const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = ph_sftp_req_begin(s, PH_FXP_OPEN, cb, arg, &start);

	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, path);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, pflags);
	if (rc == 0)
		rc = ph_wire_put_attrs(&s->out, a);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_opendir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_OPENDIR, path, NULL, 0, cb, arg);
}

int
ph_sftp_readdir(struct ph_sftp *s, const struct ph_sftp_handle *h, ph_sftp_cb cb,
                void *arg)
{
	return handle_only(s, PH_FXP_READDIR, h, cb, arg);
}

int
ph_sftp_close(struct ph_sftp *s, const struct ph_sftp_handle *h, ph_sftp_cb cb,
              void *arg)
{
	return handle_only(s, PH_FXP_CLOSE, h, cb, arg);
}

int
ph_sftp_read(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t off,
             uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_READ, h, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, len);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_write(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t off,
              const void *data, uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_WRITE, h, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, data, len);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_write_fill(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t off,
                   uint32_t len, ph_sftp_fill_fn fill_fn, void *fill_arg, ph_sftp_cb cb,
                   void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_WRITE, h, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, len);
	if (rc == 0)
		rc = ph_buf_reserve(&s->out, len);
	if (rc == 0 && (rc = fill_fn(fill_arg, s->out.data + s->out.len, len)) == 0)
		s->out.len += len;
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_stat(struct ph_sftp *s, int lstat, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, lstat ? PH_FXP_LSTAT : PH_FXP_STAT, path, NULL, 0, cb, arg);
}

int
ph_sftp_fstat(struct ph_sftp *s, const struct ph_sftp_handle *h, ph_sftp_cb cb, void *arg)
{
	return handle_only(s, PH_FXP_FSTAT, h, cb, arg);
}

int
ph_sftp_setstat(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a,
                ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_SETSTAT, path, a, 1, cb, arg);
}

int
ph_sftp_fsetstat(struct ph_sftp *s, const struct ph_sftp_handle *h,
                 const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_FSETSTAT, h, cb, arg, &start);

	if (rc == 0)
		rc = ph_wire_put_attrs(&s->out, a);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_mkdir(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a,
              ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_MKDIR, path, a, 1, cb, arg);
}

int
ph_sftp_remove(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_REMOVE, path, NULL, 0, cb, arg);
}

int
ph_sftp_rmdir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_RMDIR, path, NULL, 0, cb, arg);
}

int
ph_sftp_rename(struct ph_sftp *s, const char *from, const char *to, int posix,
               ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (posix && (s->exts & PH_EXT_POSIX_RENAME)) {
		rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, cb, arg, &start);
		if (rc != 0)
			return rc;
		rc = ph_buf_put_cstr(&s->out, PH_XN_POSIX_RENAME);
	} else {
		rc = ph_sftp_req_begin(s, PH_FXP_RENAME, cb, arg, &start);
		if (rc != 0)
			return rc;
	}
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, from);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, to);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_fsync(struct ph_sftp *s, const struct ph_sftp_handle *h, ph_sftp_cb cb,
              void *arg)
{
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_FSYNC))
		return ph_sftp_req_refuse(s, PHSYNC_EUNSUPPORTED);
	rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, cb, arg, &start);
	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_FSYNC);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, h->b, h->len);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_copy_data(struct ph_sftp *s, const struct ph_sftp_handle *rh, uint64_t roff,
                  uint64_t len, const struct ph_sftp_handle *wh, uint64_t woff,
                  ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_COPY_DATA))
		return ph_sftp_req_refuse(s, PHSYNC_EUNSUPPORTED);
	if (len == 0)
		/* 0 means "to the end of the file" on the wire */
		return ph_sftp_req_refuse(s, PHSYNC_EINVAL);
	rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, cb, arg, &start);
	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_COPY_DATA);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, rh->b, rh->len);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, roff);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, len);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, wh->b, wh->len);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, woff);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_check_file(struct ph_sftp *s, const struct ph_sftp_handle *h, const char *algs,
                   uint64_t off, uint64_t len, uint32_t block, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (block < 256 || len == 0 || len % block != 0)
		/* 0 would mean "the whole file" on the wire */
		return ph_sftp_req_refuse(s, PHSYNC_EINVAL);
	if ((rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, cb, arg, &start)) != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_CHECK_FILE_HANDLE);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, h->b, h->len);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, algs);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, len);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, block);
	return ph_sftp_req_end(s, start, rc);
}

int
ph_sftp_check_file_parse(const struct ph_sftp_reply *r, const uint8_t **alg,
                         uint32_t *alglen, uint32_t (*dlen_of)(const uint8_t *alg,
                                                                uint32_t alglen),
                         uint32_t n, uint8_t *out)
{
	struct ph_rd rd = { r->data, r->len };
	const uint8_t *a, *d;
	uint32_t al, dl, len, i;

	if (r->type != PH_FXP_EXTENDED_REPLY || ph_rd_str(&rd, &a, &al) != 0)
		return PHSYNC_EPROTO;
	if (al == 10 && memcmp(a, PH_XN_CHECK_FILE, 10) == 0 && ph_rd_str(&rd, &a, &al) != 0)
		return PHSYNC_EPROTO;
	if ((len = dlen_of(a, al)) == 0)
		return PHSYNC_EPROTO;   /* not an algorithm we asked for */
	*alg = a;
	*alglen = al;
	if (rd.left == (uint64_t)n * len) {
		memcpy(out, rd.p, rd.left);
		return 0;
	}
	if (rd.left != (uint64_t)n * (4 + len))
		return PHSYNC_EPROTO;
	for (i = 0; i < n; i++) {
		if (ph_rd_str(&rd, &d, &dl) != 0 || dl != len)
			return PHSYNC_EPROTO;
		memcpy(out + (size_t)i * len, d, len);
	}
	return 0;
}

/* Starts a helper request: EXTENDED with its name and the handle. */
static int
begin_helper(struct ph_sftp *s, const char *name, const struct ph_sftp_handle *h,
             ph_sftp_cb cb, void *arg, size_t *start)
{
	int rc;

	if (s->helper < 1)
		return ph_sftp_req_refuse(s, PHSYNC_EUNSUPPORTED);
	if ((rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, cb, arg, start)) != 0)
		return rc;
	if ((rc = ph_buf_put_cstr(&s->out, name)) == 0)
		rc = ph_buf_put_str(&s->out, h->b, h->len);
	return rc == 0 ? 0 : ph_sftp_req_end(s, *start, rc);   /* a failure leaves nothing queued */
}

int
ph_sftp_helper_sig(struct ph_sftp *s, const struct ph_sftp_handle *h, uint32_t block_len,
                   ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin_helper(s, PH_HELPER_SIG, h, cb, arg, &start);

	if (rc != 0)
		return rc;
	return ph_sftp_req_end(s, start, ph_buf_put_u32(&s->out, block_len));
}

int
ph_sftp_helper_delta_start(struct ph_sftp *s, const struct ph_sftp_handle *h,
                           const void *sig, size_t siglen, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (siglen > PH_SFTP_MAX_PACKET - 1024)
		return ph_sftp_req_refuse(s, PHSYNC_EINVAL);
	if ((rc = begin_helper(s, PH_HELPER_DSTART, h, cb, arg, &start)) != 0)
		return rc;
	return ph_sftp_req_end(s, start, ph_buf_put_str(&s->out, sig, siglen));
}

int
ph_sftp_helper_delta_read(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t doff,
                          uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin_helper(s, PH_HELPER_DREAD, h, cb, arg, &start);

	if (rc != 0)
		return rc;
	if ((rc = ph_buf_put_u64(&s->out, doff)) == 0)
		rc = ph_buf_put_u32(&s->out, len);
	return ph_sftp_req_end(s, start, rc);
}

