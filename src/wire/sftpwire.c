/* SPDX-License-Identifier: ISC */
/* The SFTP v3 attribute codec both ends use. See sftpwire.h. */
#include <stddef.h>
#include <string.h>

#include "phsync/error.h"
#include "sftpwire.h"

int
ph_wire_get_attrs(struct ph_rd *r, struct ph_sftp_attrs *a)
{
	uint32_t n, i, l;
	const uint8_t *x;

	memset(a, 0, sizeof(*a));
	if (ph_rd_u32(r, &a->flags) != 0)
		return PHSYNC_EPROTO;
	if ((a->flags & PH_ATTR_SIZE) && ph_rd_u64(r, &a->size) != 0)
		return PHSYNC_EPROTO;
	if ((a->flags & PH_ATTR_UIDGID) &&
	    (ph_rd_u32(r, &a->uid) != 0 || ph_rd_u32(r, &a->gid) != 0))
		return PHSYNC_EPROTO;
	if ((a->flags & PH_ATTR_PERMISSIONS) && ph_rd_u32(r, &a->perm) != 0)
		return PHSYNC_EPROTO;
	if ((a->flags & PH_ATTR_ACMODTIME) &&
	    (ph_rd_u32(r, &a->atime) != 0 || ph_rd_u32(r, &a->mtime) != 0))
		return PHSYNC_EPROTO;
	if (a->flags & PH_ATTR_EXTENDED) {
		if (ph_rd_u32(r, &n) != 0)
			return PHSYNC_EPROTO;
		/* Each pair takes at least 8 bytes: a huge count cannot loop long. */
		for (i = 0; i < n; i++)
			if (ph_rd_str(r, &x, &l) != 0 || ph_rd_str(r, &x, &l) != 0)
				return PHSYNC_EPROTO;
	}
	return 0;
}

int
ph_wire_put_attrs(struct ph_buf *b, const struct ph_sftp_attrs *a)
{
	uint32_t flags = a ? a->flags & ~(uint32_t)PH_ATTR_EXTENDED : 0;
	int rc = ph_buf_put_u32(b, flags);

	if (rc == 0 && (flags & PH_ATTR_SIZE))
		rc = ph_buf_put_u64(b, a->size);
	if (rc == 0 && (flags & PH_ATTR_UIDGID)) {
		rc = ph_buf_put_u32(b, a->uid);
		if (rc == 0)
			rc = ph_buf_put_u32(b, a->gid);
	}
	if (rc == 0 && (flags & PH_ATTR_PERMISSIONS))
		rc = ph_buf_put_u32(b, a->perm);
	if (rc == 0 && (flags & PH_ATTR_ACMODTIME)) {
		rc = ph_buf_put_u32(b, a->atime);
		if (rc == 0)
			rc = ph_buf_put_u32(b, a->mtime);
	}
	return rc;
}
