/* SPDX-License-Identifier: ISC */
/* The remote helper's handle table (serve_int.h): up to SERVE_MAX_HANDLES
 * open files and folders, each named to the client by its slot and a
 * generation (a stale handle is refused), its delta under way if any, and
 * the writes through a handle with their writeback started as they come. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"
#include "serve_int.h"

struct handle *
ph_serve_handle_get(struct ph_serve *s, struct ph_rd *r)
{
	const uint8_t *p;
	uint32_t n, idx, gen;

	if (ph_rd_str(r, &p, &n) != 0 || n != 8)
		return NULL;
	idx = ph_be32_get(p);
	gen = ph_be32_get(p + 4);
	if (idx >= SERVE_MAX_HANDLES || !s->h[idx].used || s->h[idx].gen != gen)
		return NULL;
	return &s->h[idx];
}

struct handle *
ph_serve_handle_new(struct ph_serve *s, uint32_t *idx)
{
	uint32_t i;

	for (i = 0; i < SERVE_MAX_HANDLES; i++) {
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

int
ph_serve_handle_reply(struct ph_buf *out, uint32_t id, uint32_t idx, const struct handle *h)
{
	uint8_t b[8];
	size_t st = ph_serve_begin(out, PH_FXP_HANDLE, id);

	if (st == SIZE_MAX)
		return -1;
	ph_be32_put(b, idx);
	ph_be32_put(b + 4, h->gen);
	return ph_serve_end(out, st, ph_buf_put_str(out, b, sizeof(b)));
}

void
ph_serve_delta_free(struct ph_serve *s, struct delta *d)
{
	if (d == NULL)
		return;
	phsync_diff_free(d->diff);
	phsync_sig_free(d->sig);
	free(d);
	s->ndeltas--;
}

void
ph_serve_handle_close(struct ph_serve *s, struct handle *h)
{
	if (h->dir != NULL)
		closedir(h->dir);
	else if (h->fd >= 0)
		close(h->fd);
	ph_serve_delta_free(s, h->delta);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

int
ph_serve_write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
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
void
ph_serve_wrote(struct handle *h, uint64_t off, uint64_t n)
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
	if (h->wb_hi - h->wb_lo >= SERVE_WRITEBACK_STEP) {
		(void)ph_writeback_hint(h->fd, h->wb_lo, h->wb_hi - h->wb_lo);
		h->wb_lo = h->wb_hi;
	}
}
