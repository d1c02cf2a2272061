/* SPDX-License-Identifier: ISC */
/* The OS's random source (platform.h): getentropy, which glibc, musl,
 * macOS and the BSDs have (sys/random.h on macOS). Windows:
 * platform/win32/random.c. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/random.h>)
#include <sys/random.h> /* getentropy on macOS */
#endif
#endif

#include "platform.h"

/* getentropy's most per call. */
#define ENTROPY_MAX 256

int
ph_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		size_t k = n < ENTROPY_MAX ? n : ENTROPY_MAX;

		if (getentropy(p, k) != 0)
			return -errno;
		p += k;
		n -= k;
	}
	return 0;
}
