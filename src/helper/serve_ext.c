/* SPDX-License-Identifier: ISC */
/* The remote helper's OpenSSH extensions (serve_int.h): statvfs@openssh.com,
 * limits@openssh.com, copy-data and fsync@openssh.com, as OpenSSH's
 * sftp-server answers them (posix-rename is a file request, serve_fs.c). */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "serve_int.h"

int
ph_serve_statvfs(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct ph_loc l;
	struct statvfs v;
	size_t st;
	int err, fd, rc = 0, replied;

	if ((err = ph_serve_take_path(s, id, r, out, "malformed statvfs", &l, &replied)) != 0 || replied)
		return err;
	err = ph_confine_open_stat(&l, &fd);
	ph_loc_close(&l);
	if (err != 0)
		return ph_serve_status_errno(out, id, err);
	rc = fstatvfs(fd, &v);
	err = errno;
	close(fd);
	if (rc != 0)
		return ph_serve_status_errno(out, id, err);
	if ((st = ph_serve_begin(out, PH_FXP_EXTENDED_REPLY, id)) == SIZE_MAX)
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
	return ph_serve_end(out, st, rc);
}

int
ph_serve_limits(uint32_t id, struct ph_buf *out)
{
	size_t st = ph_serve_begin(out, PH_FXP_EXTENDED_REPLY, id);
	int rc = 0;

	if (st == SIZE_MAX)
		return -1;
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_PACKET);
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_IO);
	rc |= ph_buf_put_u64(out, PH_SERVE_MAX_IO);
	rc |= ph_buf_put_u64(out, SERVE_MAX_HANDLES);
	return ph_serve_end(out, st, rc);
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
int
ph_serve_copy_data(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *rh, *wh;
	uint64_t roff, len, woff, done = 0, limit;
	struct stat rs, ws;
	uint8_t *buf;
	int e = 0;

	if ((rh = ph_serve_handle_get(s, r)) == NULL || ph_rd_u64(r, &roff) != 0 ||
	    ph_rd_u64(r, &len) != 0 || (wh = ph_serve_handle_get(s, r)) == NULL ||
	    ph_rd_u64(r, &woff) != 0 || rh->fd < 0 || wh->fd < 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed copy-data");
	if (!rh->readable || !wh->writable)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED, "handles not open for copying");
	if (roff > (uint64_t)INT64_MAX || woff > (uint64_t)INT64_MAX ||
	    (len != 0 && (len > (uint64_t)INT64_MAX - roff || len > (uint64_t)INT64_MAX - woff)))
		return ph_serve_status(out, id, PH_FX_FAILURE, "offset out of range");
	if (fstat(rh->fd, &rs) != 0 || fstat(wh->fd, &ws) != 0)
		return ph_serve_status_errno(out, id, errno);
	if (rh == wh || (rs.st_dev == ws.st_dev && rs.st_ino == ws.st_ino))
		return ph_serve_status(out, id, PH_FX_FAILURE, "copy-data within one file is refused");
	limit = (uint64_t)rs.st_size > roff ? (uint64_t)rs.st_size - roff : 0;
	if (len != 0 && len < limit)
		limit = len;
	if (limit > (uint64_t)INT64_MAX - woff)
		return ph_serve_status(out, id, PH_FX_FAILURE, "offset out of range");
	if ((buf = malloc(PH_SERVE_MAX_IO)) == NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "out of memory");
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
		if ((e = ph_serve_write_all(wh->fd, buf, (size_t)n, woff + done)) != 0)
			break;
		done += (uint64_t)n;
	}
	free(buf);
	ph_serve_wrote(wh, woff, done);
	if (e != 0)
		return ph_serve_status_errno(out, id, e);
	/* OpenSSH answers a copy past the end of the source with EOF. */
	if (len != 0 && done < len)
		return ph_serve_status(out, id, PH_FX_EOF, "the source ended before the length asked for");
	return ph_serve_status(out, id, PH_FX_OK, "");
}

int
ph_serve_fsync(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);

	if (h == NULL || h->fd < 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed fsync");
	if (fsync(h->fd) != 0)
		return ph_serve_status_errno(out, id, errno);
	h->wb_lo = h->wb_hi = 0;
	return ph_serve_status(out, id, PH_FX_OK, "");
}
