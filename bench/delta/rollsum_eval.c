/* SPDX-License-Identifier: ISC */
/* Compares rolling weak sums on real data: how many windows share a weak
 * value with a window of different content (each costs a strong hash in
 * the diff), against the ideal for a 32-bit hash.
 *   rollsum_eval FILE [BLOCK]   (samples up to 4M windows) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../../src/delta/rollsum.h"

struct pair {
	uint32_t weak;
	uint64_t strong;
};

static int
cmp(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;

	if (a->weak != b->weak)
		return a->weak < b->weak ? -1 : 1;
	return a->strong < b->strong ? -1 : a->strong > b->strong;
}

/* Windows whose weak sum equals that of an earlier window with other
 * content, after sorting by (weak, strong). */
static uint64_t
collisions(struct pair *v, size_t n)
{
	uint64_t c = 0;

	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 1; i < n; i++)
		if (v[i].weak == v[i - 1].weak && v[i].strong != v[i - 1].strong)
			c++;
	return c;
}

int
main(int argc, char **argv)
{
	FILE *f = fopen(argv[1], "rb");
	size_t L = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024, len, n, step;
	uint8_t *d;
	struct pair *ph, *rs, *rk;
	uint32_t mpow = 1;
	const uint32_t M = 0x08104225u; /* librsync's RabinKarp multiplier */

	if (f == NULL)
		return 1;
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	rewind(f);
	d = malloc(len);
	if (fread(d, 1, len, f) != len)
		return 1;
	n = len - L;
	step = n / 4000000 + 1;
	n = n / step;
	ph = malloc(n * sizeof(*ph));
	rs = malloc(n * sizeof(*rs));
	rk = malloc(n * sizeof(*rk));
	for (size_t i = 0; i < L; i++)
		mpow *= M;
	{
		uint32_t a, b, h = 0;

		ph_rollsum_block(d, L, &a, &b);
		for (size_t i = 0; i < L; i++)
			h = h * M + d[i];
		for (size_t p = 0, k = 0; k < n; p++) {
			if (p % step == 0) {
				uint64_t s = XXH3_64bits(d + p, L);

				ph[k].weak = ph_rollsum_weak(a, b);
				rs[k].weak = (a & 0xffff) | b << 16; /* rsync's packing */
				rk[k].weak = h;
				ph[k].strong = rs[k].strong = rk[k].strong = s;
				k++;
			}
			a += d[p + L] - d[p];
			b += a - (uint32_t)L * d[p];
			h = h * M + d[p + L] - mpow * d[p];
		}
	}
	printf("%s: %zu windows of %zu bytes; ideal 32-bit hash: ~%.0f collisions\n",
	       argv[1], n, L, (double)n * n / 2 / 4294967296.0);
	printf("  phsync (b*K)^a:          %llu\n", (unsigned long long)collisions(ph, n));
	printf("  rsync a|b<<16:           %llu\n", (unsigned long long)collisions(rs, n));
	printf("  librsync RabinKarp:      %llu\n", (unsigned long long)collisions(rk, n));
	return 0;
}
