/* SPDX-License-Identifier: ISC */
/* Delta uploads over plain SFTP: plans a changed file as copy-data pieces
 * of the remote old version plus literal bytes (the push executor sends
 * them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "buf.h"
#include "pdelta.h"
#include "pfs.h"

#define READ_CHUNK (1u << 20)

static int
add_op(struct ph_pdelta *d, int copy, uint64_t out_off, uint64_t off, uint64_t len)
{
	struct ph_dop *last = d->n > 0 ? &d->ops[d->n - 1] : NULL;

	if (len == 0)
		return 0;
	if (copy)
		d->copy_bytes += len;
	else
		d->literal_bytes += len;
	/* A literal arrives in pieces; copies of adjacent old bytes join. */
	if (last != NULL && last->copy == copy && last->out_off + last->len == out_off &&
	    (!copy || last->off + last->len == off)) {
		last->len += len;
		return 0;
	}
	if (d->n == d->cap && ph_grow(&d->ops, &d->cap, sizeof(*d->ops), 16) != 0)
		return PHSYNC_ENOMEM;
	d->ops[d->n].out_off = out_off;
	d->ops[d->n].off = off;
	d->ops[d->n].len = len;
	d->ops[d->n].copy = copy;
	d->n++;
	return 0;
}

/* Spreads the checks over the copied blocks: the first and the last (and
 * evenly between, were there more); a changed head or tail, the usual
 * edits, is not missed. Each costs a block read on the link. */
static void
pick_checks(struct ph_pdelta *d)
{
	uint64_t bl = d->info.block_len, total = 0, want[PH_PDELTA_CHECKS], seen = 0;
	size_t i;
	unsigned k = 0, n;

	for (i = 0; i < d->n; i++)
		if (d->ops[i].copy)
			total += (d->ops[i].off + d->ops[i].len - 1) / bl - d->ops[i].off / bl + 1;
	if (total == 0)
		return;
	n = total < PH_PDELTA_CHECKS ? (unsigned)total : PH_PDELTA_CHECKS;
	for (k = 0; k < n; k++)
		want[k] = n == 1 ? 0 : k * (total - 1) / (n - 1);
	k = 0;
	for (i = 0; i < d->n && k < n; i++) {
		uint64_t first, cnt;

		if (!d->ops[i].copy)
			continue;
		first = d->ops[i].off / bl;
		cnt = (d->ops[i].off + d->ops[i].len - 1) / bl - first + 1;
		while (k < n && want[k] < seen + cnt) {
			uint64_t b = first + (want[k] - seen);

			if (d->nchecks == 0 || d->check[d->nchecks - 1] != b)
				d->check[d->nchecks++] = b;
			k++;
		}
		seen += cnt;
	}
}

int
ph_pdelta_plan(phsync_ctx *ctx, phsync_diff **diffp, int fd, uint64_t size,
               const uint8_t *sig, size_t siglen, uint64_t old_size,
               ph_pdelta_feed_fn *feed, void *feed_arg, struct ph_pdelta *d)
{
	struct phsync_in in = { sig, siglen, 0 };
	phsync_diff *diff;
	uint64_t off = 0;
	int rc, end = 0;

	memset(d, 0, sizeof(*d));
	if ((rc = phsync_sig_new(ctx, &d->sig)) != 0)
		return rc;
	if ((rc = phsync_sig_load(d->sig, &in, 1)) != 0 ||
	    (rc = phsync_sig_get_info(d->sig, &d->info)) != 0 ||
	    (d->info.basis_len != old_size && (rc = PHSYNC_ECORRUPT) != 0))
		goto out;
	if ((rc = *diffp == NULL ? phsync_diff_new(ctx, d->sig, diffp)
	                         : phsync_diff_reset(*diffp, d->sig)) != 0)
		goto out;
	diff = *diffp;
	/* The file is read straight into the diff's window (one copy of every
	 * byte fewer than through a buffer of our own), and fed to the
	 * caller's hashing from there. */
	end = size == 0;
	for (;;) {
		struct phsync_in ni = { NULL, 0, 0 };
		struct phsync_delta_op op;
		size_t want, got = 0;
		void *room;

		if ((rc = phsync_diff_next(diff, &ni, end, &op)) != 0)
			goto out;
		if (op.type == PHSYNC_OP_END) {
			if (op.len != size)
				rc = PHSYNC_EIO;
			break;
		}
		if (op.type != PHSYNC_OP_NONE) {
			if ((rc = add_op(d, op.type == PHSYNC_OP_COPY, op.out_off, op.off, op.len)) != 0)
				goto out;
			continue;
		}
		if (end || (want = phsync_diff_space(diff, &room)) == 0) {
			rc = PHSYNC_EIO; /* the engine wants more than the file has */
			break;
		}
		if (want > READ_CHUNK)
			want = READ_CHUNK;
		if (want > size - off)
			want = (size_t)(size - off);
		while (got < want) {
			int64_t r = ph_pread(fd, (uint8_t *)room + got, want - got, off + got);

			if (r == -EINTR)
				continue;
			if (r <= 0) {
				rc = PHSYNC_EIO; /* error, or the file shrank */
				goto out;
			}
			got += (size_t)r;
		}
		phsync_diff_commit(diff, got);
		off += got;
		end = off == size;
		feed(feed_arg, room, got, end);
	}
	if (rc == 0)
		pick_checks(d);
out:
	if (rc != 0)
		ph_pdelta_free(d);
	return rc;
}

void
ph_pdelta_block(const struct ph_pdelta *d, uint64_t b, uint64_t *off, uint32_t *len)
{
	uint64_t bl = d->info.block_len, o = b * bl;

	*off = o;
	*len = (uint32_t)(d->info.basis_len - o < bl ? d->info.basis_len - o : bl);
}

int
ph_pdelta_block_ok(const struct ph_pdelta *d, uint64_t b, const void *data, size_t len)
{
	uint64_t off, strong;
	uint32_t bl, weak;

	ph_pdelta_block(d, b, &off, &bl);
	if (len != bl || phsync_sig_block(d->sig, b, &weak, &strong) != 0)
		return 0;
	return (XXH3_64bits(data, len) >> (64 - 8 * d->info.strong_len)) == strong;
}

void
ph_pdelta_free(struct ph_pdelta *d)
{
	free(d->ops);
	phsync_sig_free(d->sig);
	memset(d, 0, sizeof(*d));
}
