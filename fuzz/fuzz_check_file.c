/* SPDX-License-Identifier: ISC */
/* libFuzzer: a hostile server's check-file reply and samples against an old
 * copy (src/rdelta/cfdelta.c over src/transport/sftp.c's reply parser).
 *
 * Input: 3 bytes of new size (1 .. 16 MiB), 2 bytes of old-copy length, the
 * old copy's bytes (as a memfd), 64 bytes offered as every sample, then the
 * EXTENDED_REPLY body. When the reply is taken, the old copy is matched and
 * every range ph_cf_at gives is checked to stay inside both files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfdelta.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t buf[256u << 10];
	struct ph_sftp_reply r;
	struct ph_cf *cf;
	uint64_t size, old, off;
	uint32_t i, ns, slen;
	int fd;

	if (n < 5 + 64)
		return 0;
	size = 1 + ((uint64_t)d[0] << 16 | (uint64_t)d[1] << 8 | d[2]);
	old = (uint64_t)d[3] << 8 | d[4];
	d += 5;
	n -= 5;
	if (old + 64 > n)
		return 0;
	if (ph_cf_new(size, &cf) != 0)
		return 0;
	ns = ph_cf_samples(cf, &slen);
	for (i = 0; i < ns; i++)
		ph_cf_sample_take(cf, i, d + old, slen);
	memset(&r, 0, sizeof(r));
	r.type = PH_FXP_EXTENDED_REPLY;
	r.data = d + old + 64;
	r.len = (uint32_t)(n - old - 64);
	if (ph_cf_take(cf, &r) == 0 && (fd = memfd_create("old", 0)) >= 0) {
		if (write(fd, d, old) == (ssize_t)old) {
			ph_cf_match(cf, fd, old, buf, sizeof(buf));
			for (off = 0; off < size;) {
				int64_t src;
				uint64_t run;

				ph_cf_at(cf, off, &src, &run);
				if (run == 0 || off + run > size ||
				    (src >= 0 && (uint64_t)src + run > old))
					abort();
				off += run;
			}
		}
		close(fd);
	}
	ph_cf_free(cf);
	return 0;
}
