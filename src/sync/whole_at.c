/* SPDX-License-Identifier: ISC */
/* A local file's whole-content hash through its folder's descriptor
 * (whole.h): the replace guard of the pull's I/O thread (lio.c) and the
 * whole-file checks (whole.c, offload.c) share it. On its own so that lio.c
 * builds with nothing else of sync (the Windows unit test of the pull's
 * write path compiles it so). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "pfs.h"
#include "whole.h"

int
ph_whole_hash_at(int dirfd, const char *name, uint8_t out[16], uint64_t *size)
{
	XXH3_state_t *hs = XXH3_createState();
	XXH128_canonical_t c;
	uint8_t *buf = malloc(1u << 18);
	uint64_t total = 0;
	int fd = -1, rc = 0;
	ssize_t n;

	if (hs == NULL || buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((fd = ph_openat(dirfd, name, PH_O_RDONLY | PH_O_NOFOLLOW, 0)) < 0) {
		rc = fd;
		goto out;
	}
	XXH3_128bits_reset(hs);
	while ((n = read(fd, buf, 1u << 18)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		XXH3_128bits_update(hs, buf, (size_t)n);
		total += (uint64_t)n;
	}
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(hs));
	memcpy(out, c.digest, 16);
	if (size != NULL)
		*size = total;
out:
	if (fd >= 0)
		ph_close(fd);
	free(buf);
	XXH3_freeState(hs);
	return rc;
}
