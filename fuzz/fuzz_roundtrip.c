/* SPDX-License-Identifier: ISC */
/* libFuzzer: split the input into old and new files, run signature, diff
 * and patch in fuzzed chunk sizes, and abort unless patch rebuilds new
 * exactly. Finds logic bugs that the format fuzzers cannot. */
#include "fuzz_delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct buf {
	uint8_t *p;
	size_t n;
};

typedef int (*step_fn)(void *, struct phsync_out *, struct phsync_in *, int, int *);

static int
step_sig(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_sig_gen_stream(o, out, in, end, done);
}

static int
step_diff(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_diff_stream(o, out, in, end, done);
}

static int
step_patch(void *o, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_patch_stream(o, out, in, end, done);
}

/* Runs src through step in chunk-sized pieces into a new buffer. */
static void
pump(step_fn step, void *obj, const uint8_t *src, size_t n, size_t chunk, struct buf *out)
{
	size_t pos = 0, cap = 1024;
	int done = 0;

	out->p = malloc(cap);
	out->n = 0;
	while (!done) {
		size_t k = n - pos < chunk ? n - pos : chunk;
		struct phsync_in in = { src + pos, k, 0 };

		do {
			struct phsync_out o;

			if (cap - out->n < chunk) {
				cap = cap * 2 + chunk;
				out->p = realloc(out->p, cap);
			}
			o.ptr = out->p + out->n;
			o.size = chunk;
			o.pos = 0;
			if (step(obj, &o, &in, pos + k == n, &done) != 0)
				abort();
			out->n += o.pos;
		} while (in.pos < in.size || (pos + k == n && !done));
		pos += k;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	phsync_sig_gen *g;
	phsync_sig *sig;
	phsync_diff *d;
	phsync_patch *p;
	struct buf s, delta, out;
	const uint8_t *old, *nw;
	const uint8_t *range[2];
	size_t old_len, new_len, chunk;
	uint32_t block;

	if (size < 4)
		return 0;
	block = 16 + data[0] % 64;
	chunk = fz_chunk(data[1]);
	old_len = ((size_t)data[2] * 256 + data[3]) % (size - 3);
	old = data + 4;
	old_len = old_len > size - 4 ? size - 4 : old_len;
	nw = old + old_len;
	new_len = size - 4 - old_len;
	range[0] = old;
	range[1] = old + old_len;

	if (phsync_sig_gen_new(NULL, data[0] & 0x80 ? PHSYNC_LEN_UNKNOWN : old_len,
	                       block, 4 + data[1] % 5, &g) != 0)
		abort();
	pump(step_sig, g, old, old_len, chunk, &s);
	phsync_sig_gen_free(g);
	if (phsync_sig_new(NULL, &sig) != 0)
		abort();
	{
		struct phsync_in in = { s.p, s.n, 0 };

		if (phsync_sig_load(sig, &in, 1) != 0)
			abort();
	}
	if (phsync_diff_new(NULL, sig, &d) != 0)
		abort();
	pump(step_diff, d, nw, new_len, chunk, &delta);
	if (phsync_patch_new(NULL, old_len, fz_read_mem, range, &p) != 0)
		abort();
	pump(step_patch, p, delta.p, delta.n, chunk, &out);
	if (out.n != new_len || (new_len && memcmp(out.p, nw, new_len) != 0))
		abort();
	/* The same diff reset (as the push planner reuses it) makes the same
	 * delta, in other-sized pieces. */
	{
		struct buf again;

		if (phsync_diff_reset(d, sig) != 0)
			abort();
		pump(step_diff, d, nw, new_len, fz_chunk(data[0]), &again);
		if (again.n != delta.n || (delta.n && memcmp(again.p, delta.p, delta.n) != 0))
			abort();
		free(again.p);
	}
	phsync_patch_free(p);
	phsync_diff_free(d);
	phsync_sig_free(sig);
	free(s.p);
	free(delta.p);
	free(out.p);
	return 0;
}
