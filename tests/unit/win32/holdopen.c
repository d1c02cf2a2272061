/* SPDX-License-Identifier: ISC */
/* Another program holding a file open, as Word, a photo viewer or a virus
 * scanner does on Windows: opens PATH with the access and share mode asked
 * for, says "held" on standard output, and keeps it open until standard
 * input ends (or a line arrives). Run under the same Wine prefix as
 * phsync.exe (wineserver enforces share modes between Wine processes), by
 * tests/unit/win32/held_loop.py.
 *
 *     holdopen.exe ACCESS SHARE PATH
 *
 * ACCESS: r, w or rw (GENERIC_READ / GENERIC_WRITE). SHARE: "-" for none, or
 * any of r, w, d (FILE_SHARE_READ, _WRITE, _DELETE). PATH is taken from the
 * wide command line, so any name works. Exits 0 after closing, 1 when the
 * open fails (with the Windows error), 2 on bad arguments. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <shellapi.h>
#include <stdio.h>
#include <string.h>

static int
flags_of(const wchar_t *s, const wchar_t *letters, const DWORD *bits, DWORD *out)
{
	*out = 0;
	if (wcscmp(s, L"-") == 0)
		return 0;
	for (; *s != L'\0'; s++) {
		const wchar_t *p = wcschr(letters, *s);

		if (p == NULL)
			return -1;
		*out |= bits[p - letters];
	}
	return 0;
}

int
main(void)
{
	static const DWORD access_bits[] = { GENERIC_READ, GENERIC_WRITE };
	static const DWORD share_bits[] = { FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_SHARE_DELETE };
	wchar_t **argv;
	int argc;
	DWORD access, share;
	HANDLE h;
	char line[64];

	argv = CommandLineToArgvW(GetCommandLineW(), &argc);
	if (argv == NULL || argc != 4 || flags_of(argv[1], L"rw", access_bits, &access) != 0 ||
	    access == 0 || flags_of(argv[2], L"rwd", share_bits, &share) != 0) {
		fputs("usage: holdopen ACCESS(r|w|rw) SHARE(-|[rwd]+) PATH\n", stderr);
		return 2;
	}
	h = CreateFileW(argv[3], access, share, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		fprintf(stderr, "holdopen: cannot open: Windows error %lu\n", GetLastError());
		return 1;
	}
	fputs("held\n", stdout);
	fflush(stdout);
	(void)fgets(line, sizeof(line), stdin);
	CloseHandle(h);
	LocalFree(argv);
	return 0;
}
