/* SPDX-License-Identifier: ISC */
/* psys.h's pieces for pairing and the doctor, the POSIX side (Windows:
 * platform/win32/pairsys.c): the home ssh expands "~" to, the null
 * device, whether a file is there, and TCP to a host by name for the port
 * probe. */
#include <errno.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform.h"
#include "psys.h"

int
ph_account_home(char *out, size_t len)
{
	struct passwd *pw = getpwuid(getuid());
	int n;

	if (pw == NULL || pw->pw_dir == NULL || pw->pw_dir[0] != '/')
		return -ENOENT;
	n = snprintf(out, len, "%s", pw->pw_dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *
ph_null_path(void)
{
	return "/dev/null";
}

int
ph_path_access(const char *path, int readable)
{
	return access(path, readable ? R_OK : F_OK) == 0 ? 0 : -errno;
}

int
ph_tcp_each(const char *host, unsigned port, int (*fn)(int sock, void *arg), void *arg)
{
	struct addrinfo hints, *ai = NULL, *a;
	char ps[16];
	int rc = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(host, ps, &hints, &ai) != 0)
		return -ENOENT;
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
	freeaddrinfo(ai);
	return rc;
}

int64_t
ph_sock_recv(int sock, void *buf, size_t len)
{
	ssize_t r;

	do
		r = recv(sock, buf, len, 0);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : (int64_t)r;
}
