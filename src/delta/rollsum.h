/* SPDX-License-Identifier: ISC */
/* The delta engine's rolling weak sum (see docs/DELTA.md, "Rolling sum").
 *
 * For a window x[0..n): a = sum x[i], b = sum (n - i) * x[i], both mod 2^32;
 * the weak sum is (b * PH_ROLLSUM_MUL) ^ a. Sliding the window by one byte
 * costs two adds and a multiply by n, with no table and no call. */
#ifndef PH_ROLLSUM_H
#define PH_ROLLSUM_H

#include <stddef.h>
#include <stdint.h>

#define PH_ROLLSUM_MUL 0x9E3779B1u /* odd: the product keeps all of b */

/* a and b of the window p[0..n). Written as fixed 32-byte chunks so the
 * compiler vectorises the inner sums without needing a scalar epilogue. */
static inline void
ph_rollsum_block(const uint8_t *p, size_t n, uint32_t *pa, uint32_t *pb)
{
	uint32_t a = 0, b = 0;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		uint32_t s = 0, t = 0;

		for (size_t j = 0; j < 32; j++) {
			s += p[i + j];
			t += (uint32_t)(32 - j) * p[i + j];
		}
		b += 32 * a + t;
		a += s;
	}
	for (; i < n; i++) {
		a += p[i];
		b += a;
	}
	*pa = a;
	*pb = b;
}

/* The 32-bit weak sum stored in signatures; its top bits index the
 * filter and the hash table. */
static inline uint32_t
ph_rollsum_weak(uint32_t a, uint32_t b)
{
	return (b * PH_ROLLSUM_MUL) ^ a;
}

#endif
