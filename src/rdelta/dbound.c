/* SPDX-License-Identifier: ISC */
/* Bounds on a peer's delta and signature; see dbound.h. */
#include <stdio.h>

#include "phsync/error.h"
#include "dbound.h"

#define HELPER_MAX_SIG (3u << 20)  /* the helper's own cap (serve.h) */
#define SIG_HEADER 20u
#define HELPER_STRONG 8u

int
ph_dbound_op(const struct phsync_delta_op *op, uint64_t listed, char *msg, size_t len)
{
	if (op->type == PHSYNC_OP_END) {
		if (op->len == listed)
			return 0;
		snprintf(msg, len, "the helper's delta builds %llu bytes, not the %llu listed "
		         "(changed while read?); not copied, retried next run",
		         (unsigned long long)op->len, (unsigned long long)listed);
		return PHSYNC_EREMOTE;
	}
	if (op->type != PHSYNC_OP_COPY && op->type != PHSYNC_OP_LITERAL)
		return 0;
	/* The reader keeps out_off + len from wrapping. */
	if (op->out_off <= listed && op->len <= listed - op->out_off)
		return 0;
	snprintf(msg, len, "the helper's delta writes past the %llu bytes listed for the "
	         "file; not copied (the old copy is kept)", (unsigned long long)listed);
	return PHSYNC_EREMOTE;
}

size_t
ph_dbound_sig_len(uint64_t size)
{
	uint32_t block = phsync_delta_block_len(size);
	uint64_t blocks = size / block + (size % block != 0);

	if (blocks > (HELPER_MAX_SIG - SIG_HEADER) / (4 + HELPER_STRONG))
		return 0;
	return SIG_HEADER + (size_t)blocks * (4 + HELPER_STRONG);
}
