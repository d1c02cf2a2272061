/* SPDX-License-Identifier: ISC */
/* Bounded byte buffers and big-endian wire codecs shared by the SFTP
 * client and the helper protocol, and the growth of every array. Readers
 * never read past the end: every get returns -1 on a short buffer and
 * leaves the cursor unchanged. */
#ifndef PH_BUF_H
#define PH_BUF_H

#include <stddef.h>
#include <stdint.h>

struct ph_buf {
	uint8_t *data;
	size_t len;   /* bytes in use */
	size_t cap;   /* bytes allocated */
	size_t max;   /* growth cap: ensure() fails past it */
};

/* A read cursor over bytes someone else owns. */
struct ph_rd {
	const uint8_t *p;
	size_t left;
};

/* Doubles the array whose pointer is at pp (any object pointer: `&v` for
 * `struct x *v`), of *cap elements of elem bytes each; an empty one (*cap
 * 0) gets first. For the one place every growing array of the program
 * grows: `if (n == cap && ph_grow(&v, &cap, sizeof(*v), 64) != 0)`.
 * Returns 0, or PHSYNC_ENOMEM with the array as it was (no memory, or a
 * size past SIZE_MAX). */
int ph_grow(void *pp, size_t *cap, size_t elem, size_t first);

/* Makes room for n more bytes; returns 0 or PHSYNC_ENOMEM (cap or malloc). */
int ph_buf_reserve(struct ph_buf *b, size_t n);
/* Frees the storage; the struct may be reused after. */
void ph_buf_free(struct ph_buf *b);
/* Appends; returns 0 or PHSYNC_ENOMEM. */
int ph_buf_put(struct ph_buf *b, const void *p, size_t n);
int ph_buf_put_u8(struct ph_buf *b, uint8_t v);
int ph_buf_put_u32(struct ph_buf *b, uint32_t v);
int ph_buf_put_u64(struct ph_buf *b, uint64_t v);
/* An SSH string: u32 length then bytes. */
int ph_buf_put_str(struct ph_buf *b, const void *p, size_t n);
int ph_buf_put_cstr(struct ph_buf *b, const char *s);
/* Appends printf's text (no terminating NUL counted in len; one always
 * follows it in data, so text built this way is a C string). Returns 0 or
 * PHSYNC_ENOMEM. The growing text buffer where POSIX has open_memstream. */
int ph_buf_printf(struct ph_buf *b, const char *fmt, ...);

static inline void
ph_be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t
ph_be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Cursor reads: 0 on success, -1 when the bytes are not there. */
int ph_rd_u8(struct ph_rd *r, uint8_t *v);
int ph_rd_u32(struct ph_rd *r, uint32_t *v);
int ph_rd_u64(struct ph_rd *r, uint64_t *v);
/* An SSH string, returned as a pointer into the buffer (not terminated). */
int ph_rd_str(struct ph_rd *r, const uint8_t **s, uint32_t *n);

#endif
