/* SPDX-License-Identifier: ISC */
/* ph_ansi_path (psys.h), the Windows side: a UTF-8 path spelled for the C
 * runtime's narrow calls (fopen, access), which take names in the ANSI code
 * page, as libssh does for the ssh folder, the config, known_hosts and keys.
 * The POSIX side is platform/ansipath.c. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>

#include "psys.h"
#include "win32.h"

/* w in the ANSI code page into out, when every character is in it (no
 * best-fit stand-ins: "ł" never becomes "l"). 0, or -EILSEQ. */
static int
to_ansi(const wchar_t *w, char *out, size_t n)
{
	BOOL lossy = FALSE;
	int k;

	if (n > INT_MAX)
		n = INT_MAX;
	k = WideCharToMultiByte(CP_ACP, WC_NO_BEST_FIT_CHARS, w, -1, out, (int)n, NULL, &lossy);
	if (k <= 0)
		return GetLastError() == ERROR_INSUFFICIENT_BUFFER ? -ENAMETOOLONG : -EILSEQ;
	return lossy ? -EILSEQ : 0;
}

static int
copy_as_is(const char *path, char *out, size_t n)
{
	size_t len = strlen(path);

	if (len >= n)
		return -ENAMETOOLONG;
	memcpy(out, path, len + 1);
	return 0;
}

/* The 8.3 short name of w (which must exist), newly allocated, or NULL. */
static wchar_t *
short_name(const wchar_t *w)
{
	DWORD k = GetShortPathNameW(w, NULL, 0);
	wchar_t *s;

	if (k == 0 || (s = malloc(k * sizeof(*s))) == NULL)
		return NULL;
	if (GetShortPathNameW(w, s, k) == 0 || wcslen(s) >= k) {
		free(s);
		return NULL;
	}
	return s;
}

/* Where the ANSI code page lacks a character of the path, the 8.3 short
 * name stands in (ASCII, where the volume keeps short names: the system
 * drive does by default); a file not made yet (known_hosts) keeps its own
 * name in its folder's short name. Else -EILSEQ: no narrow name reaches it. */
int
ph_ansi_path(const char *path, char *out, size_t n)
{
	wchar_t *w = NULL, *s = NULL, *joined = NULL, *sep;
	int rc;

	if (GetACP() == CP_UTF8) /* "Use Unicode UTF-8 for worldwide language support" */
		return copy_as_is(path, out, n);
	if ((rc = ph_win_widen(path, &w)) != 0)
		return rc;
	if ((rc = to_ansi(w, out, n)) != -EILSEQ)
		goto out;
	if ((s = short_name(w)) != NULL) {
		rc = to_ansi(s, out, n);
		goto out;
	}
	sep = wcsrchr(w, L'\\');
	if (wcsrchr(w, L'/') > sep)
		sep = wcsrchr(w, L'/');
	if (sep == NULL || sep == w)
		goto out;
	*sep = L'\0';
	if ((s = short_name(w)) == NULL)
		goto out;
	if ((joined = malloc((wcslen(s) + wcslen(sep + 1) + 2) * sizeof(*joined))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	wcscpy(joined, s);
	wcscat(joined, L"\\");
	wcscat(joined, sep + 1);
	rc = to_ansi(joined, out, n);
out:
	free(joined);
	free(s);
	free(w);
	return rc;
}
