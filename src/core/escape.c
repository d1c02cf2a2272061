/* SPDX-License-Identifier: ISC */
/* Escaping of untrusted text for terminals and logs; see escape.h. */
#include <stdio.h>
#include <string.h>

#include "phsync/phsync.h"
#include "escape.h"
#include "pfs.h"

/* Length of a valid UTF-8 sequence at p (max n bytes), 0 if invalid. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t need, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		need = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		need = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		need = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* C1 controls (U+0080..U+009F) can act as terminal escapes too. */
	if (cp >= 0x80 && cp <= 0x9f)
		return 0;
	return need;
}

void
phsync_escape(char *buf, size_t len, const char *s)
{
	ph_escape(buf, len, s);
}

void
ph_escape(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n = strlen(s);

	if (len == 0)
		return;
	while (*p && o + 5 < len) {
		size_t k = utf8_len(p, n);

		/* '\\' is escaped so that an escape cannot be faked, except
		 * where it separates a path's components (Windows): a path
		 * reads C:\Users\..., not C:\x5cUsers\x5c... */
		if (k == 1 && *p >= 0x20 && *p != 0x7f && (*p != '\\' || ph_path_sep('\\'))) {
			buf[o++] = (char)*p;
		} else if (k > 1) {
			if (o + k + 1 > len)
				break;
			memcpy(buf + o, p, k);
			o += k;
		} else {
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
			k = 1;
		}
		p += k;
		n -= k;
	}
	buf[o] = '\0';
}
