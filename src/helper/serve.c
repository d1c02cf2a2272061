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
 * bounded (a READ's length, a copy or a delta by its file's size).
 *
 * This file is the session: INIT, the dispatch of each request to its
 * file (serve_int.h says which does what), the server's life, and the loop
 * that reads packets and writes replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_config.h"
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif

#include "phsync/phsync.h"
#include "platform.h"
#include "serve_int.h"

/* EXTENDED: each extension to the file that answers it; phsync's own only
 * once INIT agreed a helper protocol. */
static int
do_extended(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out)
{
	const uint8_t *name;
	uint32_t n;

	if (ph_rd_str(r, &name, &n) != 0)
		return ph_serve_status(out, id, PH_FX_BAD_MESSAGE, "malformed EXTENDED");
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
	if (IS(PH_XN_POSIX_RENAME))
		return ph_serve_rename(s, id, r, out, 1);
	if (IS(PH_XN_FSYNC))
		return ph_serve_fsync(s, id, r, out);
	if (IS(PH_XN_STATVFS))
		return ph_serve_statvfs(s, id, r, out);
	if (IS(PH_XN_LIMITS))
		return ph_serve_limits(id, out);
	if (IS(PH_XN_COPY_DATA))
		return ph_serve_copy_data(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_SIG))
		return ph_serve_sig(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_DSTART))
		return ph_serve_delta_start(s, id, r, out);
	if (s->version >= 1 && IS(PH_HELPER_DREAD))
		return ph_serve_delta_read(s, id, r, out);
#undef IS
	return ph_serve_status(out, id, PH_FX_OP_UNSUPPORTED, "unknown extension");
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
		return ph_serve_open(s, id, &r, out);
	case PH_FXP_CLOSE:
		if ((h = ph_serve_handle_get(s, &r)) == NULL)
			return ph_serve_status(out, id, PH_FX_FAILURE, "not an open handle");
		ph_serve_handle_close(s, h);
		return ph_serve_status(out, id, PH_FX_OK, "");
	case PH_FXP_READ:
		return ph_serve_read(s, id, &r, out);
	case PH_FXP_WRITE:
		return ph_serve_write(s, id, &r, out);
	case PH_FXP_LSTAT:
	case PH_FXP_STAT:
		return ph_serve_stat(s, id, &r, out);
	case PH_FXP_FSTAT:
		return ph_serve_fstat(s, id, &r, out);
	case PH_FXP_SETSTAT:
		return ph_serve_setstat(s, id, &r, out, 0);
	case PH_FXP_FSETSTAT:
		return ph_serve_setstat(s, id, &r, out, 1);
	case PH_FXP_OPENDIR:
		return ph_serve_opendir(s, id, &r, out);
	case PH_FXP_READDIR:
		return ph_serve_readdir(s, id, &r, out);
	case PH_FXP_REMOVE:
	case PH_FXP_MKDIR:
	case PH_FXP_RMDIR:
		return ph_serve_path_op(s, type, id, &r, out);
	case PH_FXP_RENAME:
		return ph_serve_rename(s, id, &r, out, 0);
	case PH_FXP_EXTENDED:
		return do_extended(s, id, &r, out);
	default:
		return ph_serve_status(out, id, PH_FX_OP_UNSUPPORTED, "not supported by phsync serve");
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
	for (i = 0; i < SERVE_MAX_HANDLES; i++)
		s->h[i].fd = -1;
	s->out_fd = s->spipe[0] = s->spipe[1] = -1;
	*out = s;
	return 0;
}

static void
spipe_close(struct ph_serve *s)
{
	if (s->spipe[0] >= 0) {
		close(s->spipe[0]);
		close(s->spipe[1]);
	}
	s->spipe[0] = s->spipe[1] = -1;
}

void
ph_serve_sink(struct ph_serve *s, int out_fd)
{
	s->out_fd = out_fd;
	if (s->spipe[0] >= 0)
		return;
	if (pipe(s->spipe) != 0) {
		s->spipe[0] = s->spipe[1] = -1;
		return;
	}
	/* A whole reply's pages must fit, with one more for a read that does
	 * not start on a page: the pipe is never waited on (a short READ reply
	 * would say the file ends there). Where it cannot hold that, READ
	 * copies as before (and where the OS has no splice: serve_fs.c). */
	(void)ph_pipe_grow(s->spipe[0], 2 * PH_SERVE_MAX_IO);
	if (ph_pipe_size(s->spipe[0]) < (int64_t)PH_SERVE_MAX_IO + 65536)
		spipe_close(s);
}

void
ph_serve_free(struct ph_serve *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < SERVE_MAX_HANDLES; i++)
		if (s->h[i].used)
			ph_serve_handle_close(s, &s->h[i]);
	ph_reap_end(&s->reap);
	spipe_close(s);
	free(s);
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
	ph_serve_sink(s, out_fd);
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
			if (out.len >= (512u << 10) && ph_serve_flush(out_fd, &out) != 0)
				goto out;
		}
		memmove(in, in + pos, have - pos);
		have -= pos;
		if (out.len > 0 && ph_serve_flush(out_fd, &out) != 0)
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
