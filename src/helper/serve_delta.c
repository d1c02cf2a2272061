/* SPDX-License-Identifier: ISC */
/* phsync's own requests to the remote helper (serve_int.h,
 * docs/PROTOCOL.md): phsync-sig, the block signature of an open file;
 * phsync-delta-start and phsync-delta-read, the delta of an open file
 * against the client's signature of its old copy, computed here next to the
 * file and read in order. Offered once INIT agreed a helper protocol. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "phsync/delta.h"
#include "serve_int.h"
#include "sigfd.h"

/* phsync-sig: the block signature of an open file, read from its start to
 * its end now. The client compares the length in it with what it expects. */
int
ph_serve_sig(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	uint32_t block_len;
	uint8_t *buf;
	struct stat sb;
	uint64_t blocks;
	size_t st;
	int rc;

	if (h == NULL || h->fd < 0 || ph_rd_u32(r, &block_len) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed signature request");
	if (!h->readable)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (fstat(h->fd, &sb) != 0)
		return ph_serve_status_errno(out, id, errno);
	if (block_len == 0)
		block_len = phsync_delta_block_len((uint64_t)sb.st_size);
	if (block_len < PHSYNC_SIG_MIN_BLOCK || block_len > PHSYNC_SIG_MAX_BLOCK)
		return ph_serve_status(out, id, PH_FX_FAILURE, "block length out of range");
	blocks = ((uint64_t)sb.st_size + block_len - 1) / block_len;
	if (20 + blocks * 12 > PH_SERVE_MAX_SIG)
		return ph_serve_status(out, id, PH_FX_FAILURE, "the signature would be too large");
	if ((buf = malloc(PH_SERVE_MAX_IO)) == NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "out of memory");
	if ((st = ph_serve_begin(out, PH_FXP_EXTENDED_REPLY, id)) == SIZE_MAX) {
		free(buf);
		return -1;
	}
	rc = ph_sig_fd(h->fd, (uint64_t)sb.st_size, block_len, 8, buf, PH_SERVE_MAX_IO, out);
	free(buf);
	if (rc == 0)
		return ph_serve_end(out, st, 0);
	out->len = st;
	if (rc == -ENOMEM)
		return -1;
	if (rc == -EIO)
		return ph_serve_status(out, id, PH_FX_FAILURE, "the file changed while it was read");
	return ph_serve_status_errno(out, id, -rc);
}

/* phsync-delta-start: the client's signature of its old copy; the delta of
 * this open file against it is then read with phsync-delta-read. */
int
ph_serve_delta_start(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	const uint8_t *sig;
	uint32_t siglen;
	struct delta *d;
	struct phsync_in in;
	struct stat sb;

	if (h == NULL || h->fd < 0 || ph_rd_str(r, &sig, &siglen) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed delta request");
	if (!h->readable)
		return ph_serve_status(out, id, PH_FX_PERMISSION_DENIED, "not open for reading");
	if (h->delta != NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "a delta of this handle is under way");
	if (s->ndeltas >= SERVE_MAX_DELTAS)
		return ph_serve_status(out, id, PH_FX_FAILURE, "too many deltas at once");
	if (fstat(h->fd, &sb) != 0)
		return ph_serve_status_errno(out, id, errno);
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "out of memory");
	s->ndeltas++;
	/* The delta covers the bytes the file held now: one read of a file that
	 * matches the client's copy reads on until output fills, and a file
	 * growing meanwhile must not keep it reading. */
	d->file_end = (uint64_t)sb.st_size;
	in.ptr = sig;
	in.size = siglen;
	in.pos = 0;
	if (phsync_sig_new(NULL, &d->sig) != 0) {
		ph_serve_delta_free(s, d);
		return ph_serve_status(out, id, PH_FX_FAILURE, "out of memory");
	}
	if (phsync_sig_load(d->sig, &in, 1) != 0) {
		ph_serve_delta_free(s, d);
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed signature");
	}
	/* The diff and its window (half a MiB) come with the first read and go
	 * with the last: a client starts up to SERVE_MAX_DELTAS deltas in a burst,
	 * and a window each from the start faulted 36 MB of fresh pages in
	 * for 60 photos (perf of a pull), where one reused window serves. */
	h->delta = d;
	return ph_serve_status(out, id, PH_FX_OK, "");
}

/* phsync-delta-read (handle, offset in the delta, length): the next bytes
 * of the delta, in order; EOF once it is all sent. */
int
ph_serve_delta_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	struct handle *h = ph_serve_handle_get(s, r);
	struct delta *d;
	uint64_t doff;
	uint32_t len;
	size_t st, at;
	struct phsync_out o;
	int rc;

	if (h == NULL || ph_rd_u64(r, &doff) != 0 || ph_rd_u32(r, &len) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed delta read");
	if ((d = h->delta) == NULL)
		return ph_serve_status(out, id, PH_FX_FAILURE, "no delta under way on this handle");
	/* Reads asked ahead past the end meet EOF whatever their offset. */
	if (d->done)
		return ph_serve_status(out, id, PH_FX_EOF, "end of delta");
	if (doff != d->out_off)
		return ph_serve_status(out, id, PH_FX_FAILURE, "delta read out of order");
	if (len > PH_SERVE_MAX_IO)
		len = PH_SERVE_MAX_IO;
	if (len == 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "empty delta read");
	if (d->diff == NULL && phsync_diff_new(NULL, d->sig, &d->diff) != 0)
		return ph_serve_status(out, id, PH_FX_FAILURE, "out of memory");
	if ((st = ph_serve_data_begin(out, id, len, &at)) == SIZE_MAX)
		return -1;
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
			return ph_serve_status(out, id, PH_FX_FAILURE, "the delta engine failed");
		}
		if (o.pos == o.size || d->done || d->eof)
			continue;
		/* The diff wants input: the file is read straight into its window
		 * (a copy through a buffer of our own cost a third of a pull's
		 * helper CPU, perf on bench_wire's 60 photos). */
		if ((want = phsync_diff_space(d->diff, &room)) == 0) {
			out->len = st;
			return ph_serve_status(out, id, PH_FX_FAILURE, "the delta engine failed");
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
			return ph_serve_status_errno(out, id, e);
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
		return ph_serve_status(out, id, PH_FX_EOF, "end of delta");
	}
	d->out_off += o.pos;
	return ph_serve_data_end(out, st, o.pos);
}
