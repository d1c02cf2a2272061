/* SPDX-License-Identifier: ISC */
/* Bounded byte buffers, big-endian cursors, and arrays' growth. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/error.h"
#include "buf.h"

int
ph_grow(void *pp, size_t *cap, size_t elem, size_t first)
{
	size_t nc = *cap ? *cap : first;
	void *old, *nv;

	if (*cap > 0 && nc > SIZE_MAX / 2)
		return PHSYNC_ENOMEM;
	if (*cap > 0)
		nc *= 2;
	if (elem == 0 || nc == 0 || nc > SIZE_MAX / elem)
		return PHSYNC_ENOMEM;
	/* The caller's pointer is read and written as bytes: it may be of any
	 * object pointer type (all have void *'s representation here). */
	memcpy(&old, pp, sizeof(old));
	if ((nv = realloc(old, nc * elem)) == NULL)
		return PHSYNC_ENOMEM;
	memcpy(pp, &nv, sizeof(nv));
	*cap = nc;
	return 0;
}

int
ph_buf_reserve(struct ph_buf *b, size_t n)
{
	size_t need, ncap;
	uint8_t *p;

	if (n > SIZE_MAX - b->len)
		return PHSYNC_ENOMEM;
	need = b->len + n;
	if (need <= b->cap)
		return 0;
	if (b->max != 0 && need > b->max)
		return PHSYNC_ENOMEM;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (b->max != 0 && ncap > b->max)
		ncap = b->max;
	p = realloc(b->data, ncap);
	if (p == NULL)
		return PHSYNC_ENOMEM;
	b->data = p;
	b->cap = ncap;
	return 0;
}

int
ph_buf_printf(struct ph_buf *b, const char *fmt, ...)
{
	size_t room = 128;

	for (;;) {
		va_list ap;
		int n;

		if (ph_buf_reserve(b, room) != 0)
			return PHSYNC_ENOMEM;
		va_start(ap, fmt);
		n = vsnprintf((char *)b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return 0;
		}
		/* Too long: C99 says by how much; an older C library (-1) not. */
		room = n >= 0 ? (size_t)n + 1 : (b->cap - b->len) * 2;
	}
}

void
ph_buf_free(struct ph_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int
ph_buf_put(struct ph_buf *b, const void *p, size_t n)
{
	int rc = ph_buf_reserve(b, n);

	if (rc != 0)
		return rc;
	if (n != 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int
ph_buf_put_u8(struct ph_buf *b, uint8_t v)
{
	return ph_buf_put(b, &v, 1);
}

int
ph_buf_put_u32(struct ph_buf *b, uint32_t v)
{
	uint8_t t[4];

	ph_be32_put(t, v);
	return ph_buf_put(b, t, 4);
}

int
ph_buf_put_u64(struct ph_buf *b, uint64_t v)
{
	uint8_t t[8];

	ph_be32_put(t, (uint32_t)(v >> 32));
	ph_be32_put(t + 4, (uint32_t)v);
	return ph_buf_put(b, t, 8);
}

int
ph_buf_put_str(struct ph_buf *b, const void *p, size_t n)
{
	int rc;

	if (n > UINT32_MAX)
		return PHSYNC_EINVAL;
	if ((rc = ph_buf_reserve(b, 4 + n)) != 0)
		return rc;
	ph_buf_put_u32(b, (uint32_t)n);
	return ph_buf_put(b, p, n);
}

int
ph_buf_put_cstr(struct ph_buf *b, const char *s)
{
	return ph_buf_put_str(b, s, strlen(s));
}

int
ph_rd_u8(struct ph_rd *r, uint8_t *v)
{
	if (r->left < 1)
		return -1;
	*v = *r->p++;
	r->left--;
	return 0;
}

int
ph_rd_u32(struct ph_rd *r, uint32_t *v)
{
	if (r->left < 4)
		return -1;
	*v = ph_be32_get(r->p);
	r->p += 4;
	r->left -= 4;
	return 0;
}

int
ph_rd_u64(struct ph_rd *r, uint64_t *v)
{
	if (r->left < 8)
		return -1;
	*v = (uint64_t)ph_be32_get(r->p) << 32 | ph_be32_get(r->p + 4);
	r->p += 8;
	r->left -= 8;
	return 0;
}

int
ph_rd_str(struct ph_rd *r, const uint8_t **s, uint32_t *n)
{
	uint32_t len;

	if (r->left < 4)
		return -1;
	len = ph_be32_get(r->p);
	if (len > r->left - 4)
		return -1;
	*s = r->p + 4;
	*n = len;
	r->p += 4 + (size_t)len;
	r->left -= 4 + (size_t)len;
	return 0;
}
