/* SPDX-License-Identifier: ISC */
/* Scripted SFTP servers for unit tests (ut_sftp.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "ut_sftp.h"

/* VERSION 3, no extensions. */
static const uint8_t version[] = { 0, 0, 0, 5, PH_FXP_VERSION, 0, 0, 0, 3 };

int
ut_fd_write(void *arg, const void *p, size_t n)
{
	const struct ut_fds *f = arg;
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(f->wfd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return PHSYNC_ECONNECT;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int
ut_fd_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	const struct ut_fds *f = arg;
	struct pollfd pfd = { f->rfd, POLLIN, 0 };
	ssize_t r;

	*got = 0;
	if (poll(&pfd, 1, timeout_ms) == 0)
		return 0;
	r = read(f->rfd, p, n);
	if (r <= 0)
		return PHSYNC_ECONNECT;
	*got = (size_t)r;
	return 0;
}

void
ut_link_open(struct ut_link *l)
{
	int sv[2];
	struct ph_chan ch = { ut_fd_write, ut_fd_read, &l->fds, 0, NULL, NULL, NULL };

	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	l->fds.rfd = l->fds.wfd = sv[0];
	l->server = sv[1];
	assert_int_equal(write(l->server, version, sizeof(version)), (ssize_t)sizeof(version));
	assert_int_equal(phsync_ctx_new(&l->ctx), 0);
	assert_int_equal(ph_sftp_new(l->ctx, &ch, &l->s), 0);
}

void
ut_link_close(struct ut_link *l)
{
	ph_sftp_free(l->s);
	phsync_ctx_free(l->ctx);
	close(l->fds.rfd);
	if (l->server >= 0)
		close(l->server);
}

void
ut_answer_ok(struct ut_link *l, uint32_t id)
{
	uint8_t p[] = { 0, 0, 0, 9, PH_FXP_STATUS, 0, 0, 0, 0, 0, 0, 0, PH_FX_OK };

	p[5] = (uint8_t)(id >> 24);
	p[6] = (uint8_t)(id >> 16);
	p[7] = (uint8_t)(id >> 8);
	p[8] = (uint8_t)id;
	assert_int_equal(write(l->server, p, sizeof(p)), (ssize_t)sizeof(p));
}

static int
m_write(void *arg, const void *p, size_t n)
{
	struct ut_mem *m = arg;

	return ph_buf_put(&m->sent, p, n);
}

static int
m_write_some(void *arg, const void *p, size_t n, size_t *put)
{
	struct ut_mem *m = arg;

	*put = n < m->window ? n : m->window;
	m->window -= *put;
	return ph_buf_put(&m->sent, p, *put);
}

static int
m_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	struct ut_mem *m = arg;

	(void)timeout_ms;
	*got = 0;
	if (!m->gave_version && n >= sizeof(version)) {
		memcpy(p, version, sizeof(version));
		*got = sizeof(version);
		m->gave_version = 1;
	}
	return 0;
}

static int
m_wait(void *arg, int timeout_ms)
{
	struct ut_mem *m = arg;

	(void)timeout_ms;
	if (++m->waits == m->stop_at_wait) {
		m->ctx->interrupted = 1;
		m->window = 1u << 20;
	}
	poll(NULL, 0, 5);
	return 0;
}

struct ph_chan
ut_mem_chan(struct ut_mem *m)
{
	struct ph_chan ch = { m_write, m_read, m, 0, m_write_some, m_wait, NULL };

	return ch;
}
