/* SPDX-License-Identifier: ISC */
/* Sockets whose flags are spelled differently by OS: close-on-exec (and
 * non-blocking) from the start, and a send that raises no SIGPIPE. Linux
 * and the BSDs have SOCK_CLOEXEC, SOCK_NONBLOCK and MSG_NOSIGNAL; macOS
 * has none of them but SO_NOSIGPIPE. Each has a feature test (ph_config.h)
 * and a POSIX fallback beside it, which PHSYNC_PORTABLE forces. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ph_config.h"
#include "platform.h"

/* What socket() could not set by itself; 0 or -errno. */
static int
late_flags(int fd, unsigned flags)
{
	(void)fd;
	(void)flags;
#ifndef HAVE_SOCK_CLOEXEC
	/* A child another thread starts between socket() and here would
	 * inherit it; phsync's programs start their children from the
	 * thread that makes these sockets. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
		return -errno;
#endif
#ifndef HAVE_SOCK_NONBLOCK
	if (flags & PH_SOCK_NONBLOCK) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
			return -errno;
	}
#endif
#if !defined(HAVE_MSG_NOSIGNAL) && defined(HAVE_SO_NOSIGPIPE)
	{
		/* ph_send_nosigpipe's send then raises no SIGPIPE (macOS). */
		int one = 1;

		if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one)) != 0)
			return -errno;
	}
#endif
	return 0;
}

int
ph_socket(int domain, int type, int protocol, unsigned flags)
{
	int fd, rc;

#ifdef HAVE_SOCK_CLOEXEC
	type |= SOCK_CLOEXEC;
#endif
#ifdef HAVE_SOCK_NONBLOCK
	if (flags & PH_SOCK_NONBLOCK)
		type |= SOCK_NONBLOCK;
#endif
	if ((fd = socket(domain, type, protocol)) < 0)
		return -errno;
	if ((rc = late_flags(fd, flags)) != 0) {
		close(fd);
		return rc;
	}
	return fd;
}

ssize_t
ph_send_nosigpipe(int fd, const void *buf, size_t len)
{
#if defined(HAVE_MSG_NOSIGNAL)
	return send(fd, buf, len, MSG_NOSIGNAL);
#elif defined(HAVE_SO_NOSIGPIPE)
	return send(fd, buf, len, 0);   /* ph_socket set SO_NOSIGPIPE */
#else
	/* SIGPIPE blocked in this thread for the send; one it raised is
	 * taken off the pending set before the mask comes back, so it is
	 * never delivered. A SIGPIPE pending before the send stays. */
	sigset_t pipe_set, old, pending;
	ssize_t n;
	int e, before, sig;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if ((e = pthread_sigmask(SIG_BLOCK, &pipe_set, &old)) != 0) {
		errno = e;
		return -1;
	}
	before = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
	n = send(fd, buf, len, 0);
	e = errno;
	if (n < 0 && e == EPIPE && !before && sigpending(&pending) == 0 &&
	    sigismember(&pending, SIGPIPE) == 1)
		sigwait(&pipe_set, &sig);   /* pending: returns at once */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
#endif
}
