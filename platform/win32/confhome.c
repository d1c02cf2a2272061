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
	char tail[512];
	int n = snprintf(tail, sizeof(tail), "\\phsync\\%s", name);

	if (n < 0 || (size_t)n >= sizeof(tail))
		return -ENAMETOOLONG;
	return ph_win_known_folder(&FOLDERID_RoamingAppData, tail, out, len);
}
