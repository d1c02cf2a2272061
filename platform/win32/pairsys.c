/* SPDX-License-Identifier: ISC */
/* psys.h's pieces for pairing and the doctor, the Windows side (POSIX:
 * platform/pairsys.c): OpenSSH for Windows expands "~" to the profile
 * folder, the null device is NUL, files are looked at by their UTF-16
 * names, and host names resolve through Winsock. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include "platform.h"
#include "psys.h"
#include "win32.h"

int
ph_account_home(char *out, size_t len)
{
	return ph_home_dir(out, len);
}

const char *
ph_null_path(void)
{
	return "NUL";
}

int
ph_path_access(const char *path, int readable)
{
	wchar_t *w = NULL;
	HANDLE h;
	int rc;

	if ((rc = ph_win_long_path(path, &w)) != 0)
		return rc;
	/* BACKUP_SEMANTICS: a folder is there too, as access says. */
	h = CreateFileW(w, readable ? GENERIC_READ : FILE_READ_ATTRIBUTES,
	                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
	                FILE_FLAG_BACKUP_SEMANTICS, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return ph_win_errno(GetLastError());
	CloseHandle(h);
	return 0;
}

int
ph_tcp_each(const char *host, unsigned port, int (*fn)(int sock, void *arg), void *arg)
{
	ADDRINFOW hints, *ai = NULL, *a;
	wchar_t *wh = NULL, ps[16];
	int rc = 0;

	if ((rc = ph_net_init()) != 0 || (rc = ph_win_widen(host, &wh)) != 0)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	_snwprintf(ps, sizeof(ps) / sizeof(ps[0]), L"%u", port);
	if (GetAddrInfoW(wh, ps, &hints, &ai) != 0) {
		free(wh);
		return -ENOENT;
	}
	free(wh);
	for (a = ai; a != NULL && rc == 0; a = a->ai_next) {
		int fd = ph_socket(a->ai_family, a->ai_socktype, a->ai_protocol, PH_SOCK_NONBLOCK);
		int c;

		if (fd < 0)
			continue;
		c = ph_sock_connect(fd, a->ai_addr, a->ai_addrlen);
		if (c == 0 || c == -EINPROGRESS)
			rc = fn(fd, arg);
		ph_sock_close(fd);
	}
	FreeAddrInfoW(ai);
	return rc;
}

int64_t
ph_sock_recv(int sock, void *buf, size_t len)
{
	int r = recv((SOCKET)sock, buf, len > INT_MAX ? INT_MAX : (int)len, 0);

	if (r != SOCKET_ERROR)
		return r;
	switch (WSAGetLastError()) {
	case WSAEWOULDBLOCK:
		return -EWOULDBLOCK;
	case WSAEINTR:
		return -EINTR;
	case WSAECONNRESET:
	case WSAECONNABORTED:
		return -ECONNRESET;
	case WSAENOTCONN:
		return -ENOTCONN;
	default:
		return -EIO;
	}
}
