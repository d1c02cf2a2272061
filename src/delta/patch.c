/* SPDX-License-Identifier: ISC */
/* Reading deltas op by op, and patch: basis + delta -> new file. Every
 * field is checked before use (docs/DELTA.md, "Bounds checks"). */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "delta_int.h"

enum rstate { R_HEADER, R_OP, R_LITERAL, R_DONE };

struct phsync_delta_reader {
	phsync_ctx *ctx;
	int err;
	enum rstate state;
	uint64_t basis_len;
	uint64_t out_off;     /* bytes of the new file described so far */
	uint64_t lit_left;
	uint8_t hb[PH_OP_END_LEN];
	size_t hb_len, hb_need;
};

struct phsync_patch {
	struct phsync_delta_reader r;
	phsync_read_basis_fn read_basis;
	void *arg;
	uint64_t copy_off, copy_left;
	XXH3_state_t *hash;
	int done;
};

static void
reader_init(struct phsync_delta_reader *r, phsync_ctx *ctx, uint64_t basis_len)
{
	memset(r, 0, sizeof(*r));
	r->ctx = ctx;
	r->basis_len = basis_len;
	r->state = R_HEADER;
	r->hb_need = PH_DELTA_HDR_LEN;
}

int
phsync_delta_reader_new(phsync_ctx *ctx, uint64_t basis_len,
                        phsync_delta_reader **out)
{
	*out = malloc(sizeof(**out));
	if (*out == NULL)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a delta reader");
	reader_init(*out, ctx, basis_len);
	return 0;
}

void
phsync_delta_reader_free(phsync_delta_reader *r)
{
	free(r);
}

static int
corrupt(struct phsync_delta_reader *r, const char *what)
{
	return ph_err(r->ctx, PHSYNC_ECORRUPT, "corrupt delta: %s (at new-file offset %llu)",
	              what, (unsigned long long)r->out_off);
}

/* Validates the op gathered in r->hb and fills *op; 0 or ECORRUPT. */
static int
decode(struct phsync_delta_reader *r, struct phsync_delta_op *op)
{
	const uint8_t *h = r->hb;
	uint64_t off, len;

	switch (h[0]) {
	case PH_OP_COPY:
		off = ph_get_be64(h + 1);
		len = ph_get_be64(h + 9);
		if (len == 0)
			return corrupt(r, "empty COPY");
		if (off > r->basis_len || len > r->basis_len - off)
			return corrupt(r, "COPY beyond the end of the basis");
		if (len > UINT64_MAX - r->out_off)
			return corrupt(r, "length overflow");
		op->type = PHSYNC_OP_COPY;
		op->out_off = r->out_off;
		op->off = off;
		op->len = len;
		r->out_off += len;
		return 0;
	case PH_OP_LITERAL:
		len = ph_get_be32(h + 1);
		if (len == 0 || len > PHSYNC_DELTA_MAX_LITERAL)
			return corrupt(r, "LITERAL length out of range");
		if (len > UINT64_MAX - r->out_off)
			return corrupt(r, "length overflow");
		r->lit_left = len;
		r->state = R_LITERAL;
		return 0;
	case PH_OP_END:
		if (ph_get_be64(h + 1) != r->out_off)
			return corrupt(r, "END length differs from the ops' total");
		op->type = PHSYNC_OP_END;
		op->out_off = r->out_off;
		op->len = r->out_off;
		memcpy(op->hash, h + 9, 16);
		r->state = R_DONE;
		return 0;
	default:
		return corrupt(r, "unknown op code");
	}
}

/* The reader's step; a literal piece is at most max bytes (max 0: the
 * reader stops at literal bytes). */
static int
reader_next(struct phsync_delta_reader *r, struct phsync_in *in, int end,
            size_t max, struct phsync_delta_op *op)
{
	const uint8_t *src = in->ptr;
	int rc = 0;

	memset(op, 0, sizeof(*op));
	if (r->err)
		return r->err;
	while (op->type == PHSYNC_OP_NONE) {
		size_t avail = in->size - in->pos, n;

		if (r->state == R_DONE) {
			if (avail > 0)
				rc = corrupt(r, "bytes after END");
			break;
		}
		if (r->state == R_LITERAL) {
			n = avail < max ? avail : max;
			if (n > r->lit_left)
				n = (size_t)r->lit_left;
			if (n == 0)
				break;
			op->type = PHSYNC_OP_LITERAL;
			op->out_off = r->out_off;
			op->len = n;
			op->data = src + in->pos;
			in->pos += n;
			r->out_off += n;
			r->lit_left -= n;
			if (r->lit_left == 0)
				r->state = R_OP;
			break;
		}
		if (avail == 0)
			break;
		if (r->state == R_OP && r->hb_len == 0) {
			switch (src[in->pos]) {
			case PH_OP_COPY: r->hb_need = PH_OP_COPY_LEN; break;
			case PH_OP_LITERAL: r->hb_need = PH_OP_LITERAL_LEN; break;
			case PH_OP_END: r->hb_need = PH_OP_END_LEN; break;
			default:
				rc = corrupt(r, "unknown op code");
				goto out;
			}
		}
		n = r->hb_need - r->hb_len;
		if (n > avail)
			n = avail;
		memcpy(r->hb + r->hb_len, src + in->pos, n);
		r->hb_len += n;
		in->pos += n;
		if (r->hb_len < r->hb_need)
			break;
		r->hb_len = 0;
		if (r->state == R_HEADER) {
			if (memcmp(r->hb, PH_DELTA_MAGIC, 4) != 0) {
				rc = corrupt(r, "not a phsync delta (bad magic)");
				goto out;
			}
			if (r->hb[4] != PHSYNC_DELTA_VERSION || r->hb[5] || r->hb[6] || r->hb[7]) {
				rc = corrupt(r, "unsupported version or flags");
				goto out;
			}
			r->state = R_OP;
			continue;
		}
		rc = decode(r, op);
		if (rc < 0)
			goto out;
	}
	if (end && r->state != R_DONE && op->type == PHSYNC_OP_NONE &&
	    in->pos == in->size)
		rc = corrupt(r, "truncated");
out:
	if (rc < 0) {
		memset(op, 0, sizeof(*op));
		r->err = rc;
	}
	return rc;
}

int
phsync_delta_read(phsync_delta_reader *r, struct phsync_in *in, int end,
                  struct phsync_delta_op *op)
{
	return reader_next(r, in, end, SIZE_MAX, op);
}

int
phsync_patch_new(phsync_ctx *ctx, uint64_t basis_len,
                 phsync_read_basis_fn read_basis, void *arg, phsync_patch **out)
{
	phsync_patch *p;

	*out = NULL;
	if (read_basis == NULL && basis_len > 0)
		return ph_err(ctx, PHSYNC_EINVAL, "patch needs a basis reader");
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto fail;
	reader_init(&p->r, ctx, basis_len);
	p->read_basis = read_basis;
	p->arg = arg;
	p->hash = XXH3_createState();
	if (p->hash == NULL)
		goto fail;
	XXH3_128bits_reset(p->hash);
	*out = p;
	return 0;
fail:
	phsync_patch_free(p);
	return ph_err(ctx, PHSYNC_ENOMEM, "out of memory for a patch");
}

void
phsync_patch_free(phsync_patch *p)
{
	if (p == NULL)
		return;
	XXH3_freeState(p->hash);
	free(p);
}

/* Copies from the basis into out as far as out has room. */
static int
patch_copy(phsync_patch *p, struct phsync_out *out)
{
	while (p->copy_left > 0 && out->pos < out->size) {
		uint8_t *dst = (uint8_t *)out->ptr + out->pos;
		size_t n = out->size - out->pos, got = 0;
		int rc;

		if (n > p->copy_left)
			n = (size_t)p->copy_left;
		rc = p->read_basis(p->arg, p->copy_off, dst, n, &got);
		if (rc < 0)
			return rc;
		if (got == 0 || got > n)
			return ph_err(p->r.ctx, PHSYNC_EIO,
			              "basis ended at %llu, before its declared length",
			              (unsigned long long)p->copy_off);
		XXH3_128bits_update(p->hash, dst, got);
		out->pos += got;
		p->copy_off += got;
		p->copy_left -= got;
	}
	return 0;
}

int
phsync_patch_stream(phsync_patch *p, struct phsync_out *out,
                    struct phsync_in *in, int end, int *done)
{
	struct phsync_delta_op op;
	XXH128_canonical_t c;
	int rc = 0;

	*done = 0;
	if (p->r.err)
		return p->r.err;
	for (;;) {
		rc = patch_copy(p, out);
		if (rc < 0)
			goto fail;
		if (p->copy_left > 0)
			return 0;
		rc = reader_next(&p->r, in, end, out->size - out->pos, &op);
		if (rc < 0)
			return rc;
		switch (op.type) {
		case PHSYNC_OP_NONE:
			*done = p->done;
			return 0;
		case PHSYNC_OP_COPY:
			p->copy_off = op.off;
			p->copy_left = op.len;
			break;
		case PHSYNC_OP_LITERAL:
			memcpy((uint8_t *)out->ptr + out->pos, op.data, (size_t)op.len);
			XXH3_128bits_update(p->hash, op.data, (size_t)op.len);
			out->pos += (size_t)op.len;
			break;
		case PHSYNC_OP_END:
			XXH128_canonicalFromHash(&c, XXH3_128bits_digest(p->hash));
			if (memcmp(c.digest, op.hash, 16) != 0) {
				rc = ph_err(p->r.ctx, PHSYNC_ECORRUPT,
				            "patched file fails the delta's XXH3-128 check");
				goto fail;
			}
			p->done = 1;
			break;
		}
	}
fail:
	p->r.err = rc;
	return rc;
}
