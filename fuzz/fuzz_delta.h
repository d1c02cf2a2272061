/* SPDX-License-Identifier: ISC */
/* Shared by the delta fuzzers: drive an engine step over a byte string in
 * chunk sizes taken from the input, so chunk boundaries are fuzzed too. */
#ifndef FUZZ_DELTA_H
#define FUZZ_DELTA_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/delta.h"

/* A chunk length in [1, 4096] from one control byte. */
static inline size_t
fz_chunk(uint8_t c)
{
	return c < 128 ? (size_t)c + 1 : ((size_t)c - 127) * 16;
}

static inline int
fz_read_mem(void *arg, uint64_t off, void *buf, size_t len, size_t *got)
{
	const uint8_t *const *b = arg; /* b[0] = data, b[1] = data + len */
	size_t have = (size_t)(b[1] - b[0]);

	if (off > have)
		abort();
	*got = have - off < len ? have - off : len;
	memcpy(buf, b[0] + off, *got);
	return 0;
}

#endif
