/* SPDX-License-Identifier: ISC */
/* Bounds on a peer's delta and signature; see dbound.h. */
#include <stdio.h>

#include "phsync/error.h"
#include "dbound.h"

#define HELPER_MAX_SIG (3u << 20)  /* the helper's own cap (serve.h) */
#define SIG_HEADER 20u
#define HELPER_STRONG 8u
/* The delta format's sizes (docs/DELTA.md): header, COPY, LITERAL, END. */
#define DELTA_HEADER 8u
#define DELTA_COPY 17u
#define DELTA_LITERAL 5u
#define DELTA_END 25u

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

uint64_t
ph_dbound_delta_copies(uint64_t listed, uint32_t block)
{
	if (block == 0)
		return UINT64_MAX;
	return listed / block + 1;
}

/* a + b * c, or UINT64_MAX where it would not fit. */
static uint64_t
sat_muladd(uint64_t a, uint64_t b, uint64_t c)
{
	if (b != 0 && c > (UINT64_MAX - a) / b)
		return UINT64_MAX;
	return a + b * c;
}

uint64_t
ph_dbound_delta_len(uint64_t listed, uint32_t block)
{
	uint64_t copies = ph_dbound_delta_copies(listed, block);
	uint64_t literals, n;

	if (copies == UINT64_MAX || listed > UINT64_MAX / 2)
		return UINT64_MAX;
	literals = copies + listed / PHSYNC_DELTA_MAX_LITERAL + 1;
	n = sat_muladd(listed + DELTA_HEADER + DELTA_END, copies, DELTA_COPY);
	return n == UINT64_MAX ? n : sat_muladd(n, literals, DELTA_LITERAL);
}

int
ph_dbound_work(uint64_t listed, uint32_t block, uint64_t fed, uint64_t copies, char *msg,
               size_t len)
{
	uint64_t max_copies = ph_dbound_delta_copies(listed, block);
	uint64_t max_len = ph_dbound_delta_len(listed, block);

	if (copies > max_copies) {
		snprintf(msg, len, "the helper's delta holds more than the %llu block copies a "
		         "file of %llu bytes can need (%u-byte blocks); not copied (the old copy "
		         "is kept)", (unsigned long long)max_copies, (unsigned long long)listed,
		         block);
		return PHSYNC_EREMOTE;
	}
	if (fed > max_len) {
		snprintf(msg, len, "the helper's delta is longer than the %llu bytes any delta of "
		         "a file of %llu bytes can be; not copied (the old copy is kept)",
		         (unsigned long long)max_len, (unsigned long long)listed);
		return PHSYNC_EREMOTE;
	}
	return 0;
}
