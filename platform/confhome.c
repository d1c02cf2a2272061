/* SPDX-License-Identifier: ISC */
/* ph_config_path (psys.h), the POSIX side: the XDG config folder. The
 * Windows side is platform/win32/confhome.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "psys.h"

int
ph_config_path(const char *name, char *out, size_t len)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	char home[4096];
	int n, rc;

	if (x != NULL && x[0] == '/') {
		n = snprintf(out, len, "%s/phsync/%s", x, name);
	} else {
		if ((rc = ph_home_dir(home, sizeof(home))) != 0)
			return rc;
		n = snprintf(out, len, "%s/.config/phsync/%s", home, name);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
