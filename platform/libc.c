/* SPDX-License-Identifier: ISC */
/* platform.h's C library pieces, POSIX side: localtime_r, gethostname,
 * kill(pid, 0), sysconf, fstatvfs, realpath, writev, a thread with every
 * signal blocked. The Windows side is
 * platform/win32/libc.c. */
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"

int
ph_localtime(time_t t, struct tm *tm)
{
	return localtime_r(&t, tm) != NULL ? 0 : -EINVAL;
}

void
ph_hostname(char *buf, size_t n)
{
	if (n == 0)
		return;
	if (gethostname(buf, n) != 0)
		buf[0] = '\0';
	buf[n - 1] = '\0';
}

int
ph_pid_alive(uint32_t pid)
{
	/* EPERM: alive, someone else's. */
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? 0 : 1;
}

int
ph_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (n > 4096 ? 4096 : (int)n) : 1;
}

int
ph_free_space(int fd, uint64_t *bytes)
{
	struct statvfs vs;

	if (fstatvfs(fd, &vs) != 0)
		return -errno;
	*bytes = (uint64_t)vs.f_bavail * vs.f_frsize;
	return 0;
}

int
ph_realpath(const char *path, char *out, size_t n)
{
	char *r = realpath(path, NULL);
	size_t len;

	if (r == NULL)
		return -errno;
	len = strlen(r);
	if (len >= n) {
		free(r);
		return -ENAMETOOLONG;
	}
	memcpy(out, r, len + 1);
	free(r);
	return 0;
}

/* ph_writev's pieces per writev call (a caller giving more has a short
 * write, which it continues). */
#define IOV_CHUNK 64

int64_t
ph_writev(int fd, const struct ph_iov *iov, int cnt)
{
	struct iovec v[IOV_CHUNK];
	ssize_t w;
	int i;

	if (cnt > IOV_CHUNK)
		cnt = IOV_CHUNK;
	for (i = 0; i < cnt; i++) {
		v[i].iov_base = (void *)iov[i].base;
		v[i].iov_len = iov[i].len;
	}
	w = writev(fd, v, cnt);
	return w < 0 ? -errno : (int64_t)w;
}

int
ph_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void *
ph_utf8_ctype_new(void)
{
	locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);

	return l != (locale_t)0 ? (void *)l : NULL;
}

void *
ph_utf8_ctype_use(void *ctype)
{
	locale_t old;

	if (ctype == NULL)
		return NULL;
	old = uselocale((locale_t)ctype);
	return old != (locale_t)0 ? (void *)old : NULL;
}

void
ph_utf8_ctype_free(void *ctype)
{
	if (ctype != NULL)
		freelocale((locale_t)ctype);
}

int
ph_wide_name(const char *utf8, wchar_t **out)
{
	(void)utf8;
	*out = NULL;
	return -ENOSYS;
}

int
ph_narrow_name(const wchar_t *wide, char **out)
{
	(void)wide;
	*out = NULL;
	return -ENOSYS;
}
