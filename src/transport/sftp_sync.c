/* SPDX-License-Identifier: ISC */
/* The SFTP client's synchronous wrappers: a request sent and its reply
 * awaited, for one-off calls (setup, pair, doctor, tests). See sftp.h. */
#include <string.h>

#include "buf.h"
#include "ctx.h"
#include "sftp.h"
#include "sftp_int.h"

/* Synchronous wrappers: a reply is copied out before the buffer moves on.
 * They expect STATUS or ATTRS; any other reply type is a protocol error. */
struct sync_wait {
	int done;
	int err;
	uint8_t type;
	struct ph_sftp_attrs attrs;
};

static void
sync_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct sync_wait *w = arg;

	(void)s;
	w->done = 1;
	w->type = r->type;
	w->err = r->err;
	if (r->type == PH_FXP_STATUS && r->err == 0)
		w->err = r->status == PH_FX_OK ? 0 : PHSYNC_EPROTO;
	else if (r->type == PH_FXP_ATTRS)
		w->attrs = r->attrs;
	else if (r->type != PH_FXP_STATUS && r->err == 0)
		w->err = PHSYNC_EPROTO;
}

/* Waits for a STATUS reply to a request queued with sync_cb. */
static int
sync_status(struct ph_sftp *s, int rc, struct sync_wait *w)
{
	if (rc != 0)
		return rc; /* never queued: nothing owed to w */
	rc = ph_sftp_wait(s, &w->done);
	/* Interrupted: the reply is still owed to w, which lives on the
	 * caller's stack; settle it now (the link is given up). */
	if (rc != 0 && !w->done)
		ph_sftp_abort(s, rc);
	if (rc == 0 && w->err == 0 && w->type != PH_FXP_STATUS)
		rc = PHSYNC_EPROTO;
	return rc != 0 ? rc : w->err;
}

/* One READ of ph_sftp_read_ranges_sync. */
struct range_wait {
	int done, err;
	uint8_t *buf;
	uint32_t want, got;
};

static void
range_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct range_wait *w = arg;

	(void)s;
	w->done = 1;
	if (r->type == PH_FXP_DATA && r->len <= w->want) {
		memcpy(w->buf, r->data, r->len);
		w->got = r->len;
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		w->got = 0;
	} else {
		w->err = r->err ? r->err : PHSYNC_EPROTO;
	}
}

/* An OPEN awaited: the handle goes to h. */
struct open_wait {
	int done, err;
	struct ph_sftp_handle *h;
};

static void
open_cb_sync(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct open_wait *w = arg;

	(void)s;
	w->done = 1;
	if (ph_sftp_handle_set(w->h, r) != 0)
		w->err = r->err ? r->err : PHSYNC_EPROTO;
}

int
ph_sftp_read_ranges_sync(struct ph_sftp *s, const char *path, const uint64_t *off,
                         const uint32_t *len, uint8_t *const *buf, uint32_t *got, size_t n)
{
	struct ph_sftp_handle h;
	struct open_wait ow = { 0, 0, &h };
	struct range_wait w[4];
	struct sync_wait cw = { 0 };
	size_t i;
	int rc;

	if (n > 4)
		return ph_sftp_req_refuse(s, PHSYNC_EINVAL);
	rc = ph_sftp_open(s, path, PH_FXF_READ, NULL, open_cb_sync, &ow);
	if (rc == 0)
		rc = ph_sftp_wait(s, &ow.done);
	if (rc != 0) {
		if (!ow.done)
			ph_sftp_abort(s, rc);
		return rc;
	}
	if (ow.err != 0)
		return ow.err;
	memset(w, 0, sizeof(w));
	for (i = 0; i < n && rc == 0; i++) {
		w[i].buf = buf[i];
		w[i].want = len[i];
		if ((rc = ph_sftp_read(s, &h, off[i], len[i], range_cb, &w[i])) != 0)
			w[i].done = 1; /* never queued */
	}
	for (i = 0; i < n && rc == 0; i++)
		rc = ph_sftp_wait(s, &w[i].done);
	for (i = 0; i < n && rc != 0; i++)
		if (!w[i].done) {
			ph_sftp_abort(s, rc);
			return rc;
		}
	if (rc == 0) {
		for (i = 0; i < n; i++) {
			if (w[i].err != 0 && rc == 0)
				rc = w[i].err;
			got[i] = w[i].got;
		}
	}
	{
		int crc = sync_status(s, ph_sftp_close(s, &h, sync_cb, &cw), &cw);

		if (rc == 0 && (crc == PHSYNC_ECONNECT || crc == PHSYNC_EINTR))
			rc = crc; /* a refused CLOSE of a read handle is no loss */
	}
	return rc;
}

int
ph_sftp_remove_sync(struct ph_sftp *s, const char *path)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_remove(s, path, sync_cb, &w), &w);
}

int
ph_sftp_rmdir_sync(struct ph_sftp *s, const char *path)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_rmdir(s, path, sync_cb, &w), &w);
}

int
ph_sftp_rename_sync(struct ph_sftp *s, const char *from, const char *to)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_rename(s, from, to, PH_RENAME_PLAIN, sync_cb, &w), &w);
}

int
ph_sftp_stat_sync(struct ph_sftp *s, int lstat, const char *path,
                  struct ph_sftp_attrs *a)
{
	struct sync_wait w = { 0 };
	int rc = ph_sftp_stat(s, lstat, path, sync_cb, &w);

	if (rc != 0)
		return rc; /* never queued */
	if ((rc = ph_sftp_wait(s, &w.done)) != 0) {
		if (!w.done)
			ph_sftp_abort(s, rc); /* w must not outlive this call */
		return rc;
	}
	if (w.err != 0)
		return w.err;
	if (w.type != PH_FXP_ATTRS)
		return PHSYNC_EPROTO;
	*a = w.attrs;
	return 0;
}

int
ph_sftp_mkdir_sync(struct ph_sftp *s, const char *path, uint32_t mode)
{
	struct ph_sftp_attrs a = { .flags = PH_ATTR_PERMISSIONS, .perm = mode };
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_mkdir(s, path, &a, sync_cb, &w), &w);
}

/* Synchronous one-offs for pair and doctor: a handle, writes, statvfs. */

/* Waits for a reply owed to a callback whose state lives on the caller's
 * stack; on a failed wait the link is given up, so nothing is owed. */
static int
wait_owed(struct ph_sftp *s, int rc, const int *done)
{
	if (rc != 0)
		return rc; /* never queued */
	rc = ph_sftp_wait(s, done);
	if (rc != 0 && !*done)
		ph_sftp_abort(s, rc);
	return rc;
}

int
ph_sftp_open_sync(struct ph_sftp *s, const char *path, uint32_t pflags,
                  const struct ph_sftp_attrs *a, struct ph_sftp_handle *h)
{
	struct open_wait w = { 0, 0, h };
	int rc = wait_owed(s, ph_sftp_open(s, path, pflags, a, open_cb_sync, &w), &w.done);

	if (rc != 0)
		return rc;
	return w.err;
}

int
ph_sftp_write_sync(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t off,
                   const void *data, size_t len)
{
	const uint8_t *p = data;
	int rc = 0;

	while (len > 0 && rc == 0) {
		uint32_t k = len > s->max_write ? s->max_write : (uint32_t)len;
		struct sync_wait w = { 0 };

		rc = sync_status(s, ph_sftp_write(s, h, off, p, k, sync_cb, &w), &w);
		p += k;
		off += k;
		len -= k;
	}
	return rc;
}

int
ph_sftp_close_sync(struct ph_sftp *s, const struct ph_sftp_handle *h)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_close(s, h, sync_cb, &w), &w);
}

int
ph_sftp_fsync_sync(struct ph_sftp *s, const struct ph_sftp_handle *h)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_fsync(s, h, sync_cb, &w), &w);
}

int
ph_sftp_setstat_sync(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_setstat(s, path, a, sync_cb, &w), &w);
}

int
ph_sftp_posix_rename_sync(struct ph_sftp *s, const char *from, const char *to)
{
	struct sync_wait w = { 0 };

	if (!(s->exts & PH_EXT_POSIX_RENAME))
		return ph_sftp_req_refuse(s, PHSYNC_EUNSUPPORTED);
	return sync_status(s, ph_sftp_rename(s, from, to, 1, sync_cb, &w), &w);
}

struct statvfs_wait {
	int done, err;
	struct ph_sftp_statvfs *st;
};

static void
statvfs_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct statvfs_wait *w = arg;
	struct ph_rd rd = { r->data, r->len };
	uint64_t v[11];
	size_t i;

	(void)s;
	w->done = 1;
	if (r->type != PH_FXP_EXTENDED_REPLY) {
		w->err = r->err ? r->err : PHSYNC_EPROTO;
		return;
	}
	/* bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid,
	 * flag, namemax: eleven u64 (PROTOCOL, statvfs@openssh.com). */
	for (i = 0; i < 11; i++)
		if (ph_rd_u64(&rd, &v[i]) != 0) {
			w->err = PHSYNC_EPROTO;
			return;
		}
	w->st->frsize = v[1] ? v[1] : v[0];
	w->st->blocks = v[2];
	w->st->bavail = v[4];
	w->st->namemax = v[10];
}

int
ph_sftp_statvfs_sync(struct ph_sftp *s, const char *path, struct ph_sftp_statvfs *st)
{
	struct statvfs_wait w = { 0, 0, st };
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_STATVFS))
		return ph_sftp_req_refuse(s, PHSYNC_EUNSUPPORTED);
	if ((rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, statvfs_cb, &w, &start)) != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_STATVFS);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, path);
	if ((rc = wait_owed(s, ph_sftp_req_end(s, start, rc), &w.done)) != 0)
		return rc;
	return w.err;
}
