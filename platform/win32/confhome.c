/* SPDX-License-Identifier: ISC */
/* ph_config_path (psys.h), the Windows side: %APPDATA%\phsync, the roaming
 * application data, as SHGetKnownFolderPath names it (the APPDATA variable
 * may be stale or missing in a task's environment). The POSIX side is
 * platform/confhome.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>
#include <knownfolders.h>
#include <shlobj.h>

#include "psys.h"
#include "win32.h"

int
ph_config_path(const char *name, char *out, size_t len)
{
	PWSTR w = NULL;
	char *u = NULL;
	int n, rc;

	if (SHGetKnownFolderPath(&FOLDERID_RoamingAppData, KF_FLAG_DONT_VERIFY, NULL, &w) != S_OK ||
	    w == NULL) {
		CoTaskMemFree(w);
		return -ENOENT;
	}
	rc = ph_win_narrow(w, &u);
	CoTaskMemFree(w);
	if (rc != 0)
		return rc;
	if (u[0] == '\0')
		rc = -ENOENT;
	else if ((n = snprintf(out, len, "%s\\phsync\\%s", u, name)) < 0 || (size_t)n >= len)
		rc = -ENAMETOOLONG;
	free(u);
	return rc;
}
