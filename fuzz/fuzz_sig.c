/* SPDX-License-Identifier: ISC */
/* libFuzzer: parse arbitrary bytes as a signature in fuzzed chunks; when
 * they load, read the block list and diff a buffer against them. */
#include "fuzz_delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct phsync_sig_info info;
	phsync_sig *sig = NULL;
	phsync_diff *d = NULL;
	size_t chunk, pos = 1;
	int rc = 0;

	if (size < 1)
		return 0;
	chunk = fz_chunk(data[0]);
	if (phsync_sig_new(NULL, &sig) < 0)
		return 0;
	while (rc == 0 && pos < size) {
		size_t n = size - pos < chunk ? size - pos : chunk;
		struct phsync_in in = { data + pos, n, 0 };

		rc = phsync_sig_load(sig, &in, pos + n == size);
		if (rc == 0 && in.pos != n)
			abort();
		pos += n;
	}
	if (rc == 0 && phsync_sig_get_info(sig, &info) == 0) {
		uint32_t w;
		uint64_t s;
		struct phsync_in in = { data, size, 0 };
		struct phsync_delta_op op;

		for (uint64_t i = 0; i < info.count; i++)
			if (phsync_sig_block(sig, i, &w, &s) != 0)
				abort();
		if (phsync_diff_new(NULL, sig, &d) == 0) {
			do {
				if (phsync_diff_next(d, &in, 1, &op) != 0)
					abort();
				if (op.type == PHSYNC_OP_COPY &&
				    (op.off > info.basis_len || op.len > info.basis_len - op.off))
					abort();
			} while (op.type != PHSYNC_OP_END);
		}
	}
	phsync_diff_free(d);
	phsync_sig_free(sig);
	return 0;
}
