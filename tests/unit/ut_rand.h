/* SPDX-License-Identifier: ISC */
/* The unit tests' one pseudo-random step (xorshift64, Marsaglia 2003):
 * repeatable sequences from a seed, for inputs made up in bulk
 * (test_rorder.c, test_strsort.c, test_treesort.c). Not for anything
 * that must be unpredictable. */
#ifndef UT_RAND_H
#define UT_RAND_H

#include <stdint.h>

/* The next state after *s (stored there and returned); a state of 0
 * stays 0, so seed with anything else. */
static inline uint64_t
ut_xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
