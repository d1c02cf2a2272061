/* SPDX-License-Identifier: ISC */
/* Times XXH3_64bits over a buffer: the ceiling for phsync's signature and
 * matched-diff speed on this machine.
 *   xxh3_speed [MB]   (default 300; also reports a 1 MiB in-cache buffer) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Best GB/s of hashing len bytes in block-sized pieces, reps times. */
static double
speed(const uint8_t *buf, size_t len, size_t block, int reps)
{
	double best = 0;
	volatile uint64_t sink = 0;

	for (int r = 0; r < reps; r++) {
		double t0 = now(), dt;

		for (size_t off = 0; off < len; off += block)
			sink += XXH3_64bits(buf + off, len - off < block ? len - off : block);
		dt = now() - t0;
		if (len / dt / 1e9 > best)
			best = len / dt / 1e9;
	}
	(void)sink;
	return best;
}

int
main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
	size_t len = mb * 1000000;
	uint8_t *buf = malloc(len);

	if (buf == NULL)
		return 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("xxh3_64 %zu MB buffer, 17344-byte blocks: %.2f GB/s\n", mb,
	       speed(buf, len, 17344, 5));
	printf("xxh3_64 1 MiB buffer (in cache), 17344-byte blocks: %.2f GB/s\n",
	       speed(buf, 1 << 20, 17344, 2000));
	free(buf);
	return 0;
}
