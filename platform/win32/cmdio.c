/* SPDX-License-Identifier: ISC */
/* cmdio.h's Windows side: the command line from GetCommandLineW, split by
 * CommandLineToArgvW (the rules msvcrt splits argv by) and narrowed to
 * UTF-8; _setmode(_O_BINARY) for a stream. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <windows.h>
#include <shellapi.h>

#include "cmdio.h"
#include "win32.h"

int
ph_args_utf8(int *argc, char ***argv)
{
	wchar_t **w;
	char **v;
	int n, i, rc = 0;

	if ((w = CommandLineToArgvW(GetCommandLineW(), &n)) == NULL)
		return ph_win_errno(GetLastError());
	if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL) {
		LocalFree(w);
		return -ENOMEM;
	}
	for (i = 0; i < n && rc == 0; i++)
		rc = ph_win_narrow(w[i], &v[i]);
	LocalFree(w);
	if (rc != 0) {
		for (i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	*argc = n;
	*argv = v; /* kept: argv lives as long as the process */
	return 0;
}

int
ph_fd_binary(int fd)
{
	return _setmode(fd, _O_BINARY) == -1 ? -errno : 0;
}
