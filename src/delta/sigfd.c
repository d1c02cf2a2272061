/* SPDX-License-Identifier: ISC */
/* The block signature of a file read through a descriptor (sigfd.h). */
#include <errno.h>

#include "pfs.h"
#include "phsync/delta.h"
#include "sigfd.h"

int
ph_sig_fd(int fd, uint64_t size, uint32_t block_len, unsigned strong_len, void *buf,
          size_t bufsize, struct ph_buf *out)
{
	phsync_sig_gen *g = NULL;
	size_t start = out->len;
	uint64_t off = 0;
	int rc = 0, done = 0;

	if (phsync_sig_gen_new(NULL, size, block_len, strong_len, &g) != 0)
		return -ENOMEM;
	while (!done && rc == 0) {
		struct phsync_in in = { buf, 0, 0 };
		int end;

		if (off < size) {
			size_t want = size - off < bufsize ? (size_t)(size - off) : bufsize;
			int64_t n = ph_pread(fd, buf, want, off);

			if (n == -EINTR)
				continue;
			if (n <= 0) {
				rc = n < 0 ? (int)n : -EIO;   /* shrank while read */
				break;
			}
			in.size = (size_t)n;
			off += (uint64_t)n;
		}
		end = off >= size;
		do {
			struct phsync_out o;

			if (ph_buf_reserve(out, 64u << 10) != 0) {
				rc = -ENOMEM;
				break;
			}
			o.ptr = out->data + out->len;
			o.size = out->cap - out->len;
			o.pos = 0;
			if (phsync_sig_gen_stream(g, &o, &in, end, &done) != 0)
				rc = -EIO;
			out->len += o.pos;
		} while (rc == 0 && !done && (in.pos < in.size || end));
	}
	phsync_sig_gen_free(g);
	if (rc != 0)
		out->len = start;
	return rc;
}
