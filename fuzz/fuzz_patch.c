/* SPDX-License-Identifier: ISC */
/* libFuzzer: apply arbitrary bytes as a delta to a small basis, in fuzzed
 * chunks and output sizes. Must never crash, read outside the basis or
 * loop; when it succeeds, the op reader must agree on the length. */
#include "fuzz_delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t basis[4096], obuf[4096];
	const uint8_t *range[2] = { basis, basis };
	phsync_patch *p = NULL;
	size_t ichunk, ochunk, pos = 3;
	uint64_t written = 0;
	int rc = 0, done = 0;

	if (size < 3)
		return 0;
	for (size_t i = 0; i < sizeof(basis); i++)
		basis[i] = (uint8_t)(i * 131 + (i >> 8));
	range[1] = basis + data[0] * 16; /* basis length 0 .. 4080 */
	ichunk = fz_chunk(data[1]);
	ochunk = fz_chunk(data[2]);
	if (phsync_patch_new(NULL, (uint64_t)(range[1] - range[0]), fz_read_mem,
	                     range, &p) < 0)
		return 0;
	while (rc == 0 && !(done && pos == size)) {
		size_t n = size - pos < ichunk ? size - pos : ichunk;
		struct phsync_in in = { data + pos, n, 0 };
		int stall = 0;

		do {
			struct phsync_out o = { obuf, ochunk, 0 };
			size_t before = in.pos;

			rc = phsync_patch_stream(p, &o, &in, pos + n == size, &done);
			written += o.pos;
			stall = (o.pos == 0 && in.pos == before && !done) ? stall + 1 : 0;
			if (stall > 2)
				abort(); /* no progress: the engine would loop */
		} while (rc == 0 && (in.pos < in.size || (pos + n == size && !done)));
		pos += n;
	}
	if (rc == 0) {
		phsync_delta_reader *r;
		struct phsync_in in = { data + 3, size - 3, 0 };
		struct phsync_delta_op op;
		uint64_t total = 0;

		if (phsync_delta_reader_new(NULL, (uint64_t)(range[1] - range[0]), &r) < 0)
			abort();
		do {
			if (phsync_delta_read(r, &in, 1, &op) != 0)
				abort();
			if (op.type == PHSYNC_OP_END)
				total = op.len;
		} while (op.type != PHSYNC_OP_NONE);
		if (total != written)
			abort();
		phsync_delta_reader_free(r);
	}
	phsync_patch_free(p);
	return 0;
}
