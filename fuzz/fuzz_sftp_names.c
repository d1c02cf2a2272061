/* SPDX-License-Identifier: ISC */
/* libFuzzer: the body of an SFTP NAME reply (what READDIR returns) as the
 * client's entry iterator sees it: a u32 count, then entries (name,
 * longname, attributes). ph_sftp_names_next must stop at the end of the
 * data or at the count, report malformed bodies, and hand out names and
 * attributes that lie inside the body. The seeds are NAME bodies from real
 * servers (fuzz/make-sftp-seeds.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sftp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ph_sftp_reply r;
	struct ph_sftp_names it;
	struct ph_sftp_attrs a;
	const uint8_t *name;
	uint32_t namelen, n = 0;
	uint8_t *body;
	int rc;

	if (size < 4)
		return 0;
	/* An exact-size copy, so ASan sees any read past the body. */
	if ((body = malloc(size - 4 ? size - 4 : 1)) == NULL)
		return 0;
	memcpy(body, data + 4, size - 4);
	memset(&r, 0, sizeof(r));
	r.type = PH_FXP_NAME;
	r.count = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
	r.data = body;
	r.len = (uint32_t)(size - 4);
	ph_sftp_names_init(&it, &r);
	while ((rc = ph_sftp_names_next(&it, &name, &namelen, &a)) == 1) {
		if (name < body || namelen > r.len || name + namelen > body + r.len)
			abort();
		for (uint32_t i = 0; i < namelen; i++)
			sink += name[i];
		sink += (unsigned)(a.flags + a.size + a.perm + a.mtime);
		if (++n > r.count)
			abort(); /* more entries than announced */
	}
	if (rc != 0 && rc != PHSYNC_EPROTO)
		abort(); /* documented: 1, 0 or PHSYNC_EPROTO */
	free(body);
	return 0;
}
