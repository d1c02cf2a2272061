/* SPDX-License-Identifier: ISC */
/* platform.h's sockets on Windows (the POSIX side: platform/sock.c) and
 * psys.h's socket calls: Winsock, started once (ph_net_init), sockets made
 * not inheritable from the start and non-blocking by FIONBIO, WSAPoll to
 * wait. Windows sockets raise no SIGPIPE, so a send needs no flag. */
#include <errno.h>
#include <limits.h>
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include "platform.h"
#include "psys.h"
#include "win32.h"

/* A Winsock error as the nearest negative errno (the rest: ph_win_errno). */
static int
wsa_errno(int err)
{
	switch (err) {
	case WSAEWOULDBLOCK:
		return -EWOULDBLOCK;
	case WSAEINPROGRESS:
		return -EINPROGRESS;
	case WSAEINTR:
		return -EINTR;
	case WSAECONNREFUSED:
		return -ECONNREFUSED;
	case WSAECONNRESET:
	case WSAECONNABORTED:
	case WSAESHUTDOWN:
		return -EPIPE;
	case WSAETIMEDOUT:
		return -ETIMEDOUT;
	case WSAEHOSTUNREACH:
		return -EHOSTUNREACH;
	case WSAENETUNREACH:
	case WSAENETDOWN:
		return -ENETUNREACH;
	case WSAEADDRINUSE:
		return -EADDRINUSE;
	case WSAEADDRNOTAVAIL:
		return -EADDRNOTAVAIL;
	case WSAENOTSOCK:
		return -ENOTSOCK;
	case WSAEAFNOSUPPORT:
		return -EAFNOSUPPORT;
	case WSAEMFILE:
		return -EMFILE;
	case WSAENOBUFS:
		return -ENOBUFS;
	case WSANOTINITIALISED:
		return -EINVAL;
	default:
		return ph_win_errno((unsigned long)err);
	}
}

static BOOL CALLBACK
start_once(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
	WSADATA d;
	int *rc = param;

	(void)once;
	(void)ctx;
	*rc = WSAStartup(MAKEWORD(2, 2), &d);
	return TRUE;
}

int
ph_net_init(void)
{
	static INIT_ONCE once = INIT_ONCE_STATIC_INIT;
	static int started = -1;

	/* Winsock counts WSAStartup calls: one for the whole process, never
	 * undone (the process's end lets go of it). */
	InitOnceExecuteOnce(&once, start_once, &started, NULL);
	return started == 0 ? 0 : wsa_errno(started);
}

int
ph_socket(int domain, int type, int protocol, unsigned flags)
{
	SOCKET s;
	u_long on = 1;
	int rc;

	if ((rc = ph_net_init()) != 0)
		return rc;
	/* Not inherited by a child from the start (SOCK_CLOEXEC's part). */
	s = WSASocketW(domain, type, protocol, NULL, 0,
	               WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
	if (s == INVALID_SOCKET)
		return wsa_errno(WSAGetLastError());
	if ((flags & PH_SOCK_NONBLOCK) && ioctlsocket(s, FIONBIO, &on) != 0) {
		rc = wsa_errno(WSAGetLastError());
		closesocket(s);
		return rc;
	}
	/* A SOCKET is a kernel handle value, kept below 2^31 by Windows (as
	 * libssh's socket_t is used). */
	if ((UINT_PTR)s > (UINT_PTR)INT_MAX) {
		closesocket(s);
		return -EMFILE;
	}
	return (int)s;
}

ssize_t
ph_send_nosigpipe(int fd, const void *buf, size_t len)
{
	int n;

	/* No SIGPIPE on Windows: a peer gone is WSAECONNRESET (EPIPE here). */
	if (len > INT_MAX)
		len = INT_MAX;
	n = send((SOCKET)fd, buf, (int)len, 0);
	if (n == SOCKET_ERROR) {
		errno = -wsa_errno(WSAGetLastError());
		return -1;
	}
	return n;
}

int
ph_poll_sock(int sock, unsigned events, int timeout_ms)
{
	WSAPOLLFD p;
	unsigned got = 0;
	int r;

	p.fd = (SOCKET)sock;
	p.events = 0;
	p.revents = 0;
	if (events & PH_POLL_IN)
		p.events |= POLLRDNORM;
	if (events & PH_POLL_OUT)
		p.events |= POLLWRNORM;
	if ((r = WSAPoll(&p, 1, timeout_ms)) == SOCKET_ERROR)
		return wsa_errno(WSAGetLastError());
	if (r == 0)
		return 0;
	if (p.revents & (POLLRDNORM | POLLRDBAND))
		got |= PH_POLL_IN;
	if (p.revents & POLLWRNORM)
		got |= PH_POLL_OUT;
	/* A hang-up is readable too (recv then says the end), as on POSIX. */
	if (p.revents & POLLHUP)
		got |= PH_POLL_ERR | (events & PH_POLL_IN);
	if (p.revents & (POLLERR | POLLNVAL))
		got |= PH_POLL_ERR;
	return (int)got;
}

int
ph_sock_pace(int sock, unsigned bytes)
{
	(void)sock;
	(void)bytes;
	return -ENOSYS; /* no TCP_NOTSENT_LOWAT in Winsock */
}

int
ph_sock_connect(int sock, const struct sockaddr *addr, size_t len)
{
	int e;

	if (connect((SOCKET)sock, addr, (int)len) == 0)
		return 0;
	e = WSAGetLastError();
	/* A non-blocking socket's connect under way. */
	return e == WSAEWOULDBLOCK ? -EINPROGRESS : wsa_errno(e);
}

int
ph_sock_connect_error(int sock)
{
	int err = 0, n = sizeof(err);

	if (getsockopt((SOCKET)sock, SOL_SOCKET, SO_ERROR, (char *)&err, &n) != 0)
		return wsa_errno(WSAGetLastError());
	return err == 0 ? 0 : wsa_errno(err);
}

void
ph_sock_close(int sock)
{
	if (sock >= 0)
		closesocket((SOCKET)sock);
}
