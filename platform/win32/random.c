/* SPDX-License-Identifier: ISC */
/* The OS's random source on Windows (platform.h): BCryptGenRandom with the
 * system's preferred generator. */
#include <errno.h>
#include <stdint.h>
#include <windows.h>
#include <bcrypt.h>

#include "platform.h"

/* BCryptGenRandom takes a ULONG count: pieces of at most 1 MiB. */
#define PIECE (1u << 20)

int
ph_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		ULONG k = n < PIECE ? (ULONG)n : PIECE;

		if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, p, k, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
			return -EIO;
		p += k;
		n -= k;
	}
	return 0;
}
