/* SPDX-License-Identifier: ISC */
/* SFTP request groups (sftp.h): the client counts a group's requests in
 * when queued and out once their callback has returned, however they end
 * (a reply, an abort, the link's death, a write taken back after a stop),
 * runs the group's idle hook when the count falls to 0, and lets a
 * refused request's group go. Driven against a scripted server over a
 * socketpair, and a channel in memory for the stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctx.h"
#include "sftp.h"

static int
s_write(void *arg, const void *p, size_t n)
{
	int fd = *(int *)arg;
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return PHSYNC_ECONNECT;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
s_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	int fd = *(int *)arg;
	struct pollfd pfd = { fd, POLLIN, 0 };
	ssize_t r;

	*got = 0;
	if (poll(&pfd, 1, timeout_ms) == 0)
		return 0;
	r = read(fd, p, n);
	if (r <= 0)
		return PHSYNC_ECONNECT;
	*got = (size_t)r;
	return 0;
}

/* The scripted server's end: VERSION 3 with no extensions (so no fsync,
 * and request ids start at 1). */
struct link {
	int fd, server;
	phsync_ctx *ctx;
	struct ph_sftp *s;
};

static void
link_open(struct link *l)
{
	static const uint8_t version[] = { 0, 0, 0, 5, PH_FXP_VERSION, 0, 0, 0, 3 };
	int sv[2];
	struct ph_chan ch = { s_write, s_read, &l->fd, 0, NULL, NULL };

	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	l->fd = sv[0];
	l->server = sv[1];
	assert_int_equal(write(l->server, version, sizeof(version)), (ssize_t)sizeof(version));
	assert_int_equal(phsync_ctx_new(&l->ctx), 0);
	assert_int_equal(ph_sftp_new(l->ctx, &ch, &l->s), 0);
}

static void
link_close(struct link *l)
{
	ph_sftp_free(l->s);
	phsync_ctx_free(l->ctx);
	close(l->fd);
	if (l->server >= 0)
		close(l->server);
}

/* The server answers request id with STATUS OK. */
static void
answer_ok(struct link *l, uint32_t id)
{
	uint8_t p[] = { 0, 0, 0, 9, PH_FXP_STATUS, 0, 0, 0, 0, 0, 0, 0, PH_FX_OK };

	p[5] = (uint8_t)(id >> 24);
	p[6] = (uint8_t)(id >> 16);
	p[7] = (uint8_t)(id >> 8);
	p[8] = (uint8_t)id;
	assert_int_equal(write(l->server, p, sizeof(p)), (ssize_t)sizeof(p));
}

/* An owner of requests, as push's files are: freed by its idle hook. */
struct owner {
	struct ph_sftp_group g;
	int *idles;        /* outlives the owner */
	int *calls;
	unsigned seen[4];  /* g.inflight as each callback saw it */
	uint8_t types[4];
};

static void
owner_idle(void *arg)
{
	struct owner *o = arg;

	(*o->idles)++;
	free(o);           /* ASan: the client must not touch g afterwards */
}

static void
owner_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct owner *o = arg;
	int i = (*o->calls)++;

	(void)s;
	if (i < 4) {
		o->seen[i] = o->g.inflight;
		o->types[i] = r->type;
	}
}

static struct owner *
owner_new(int *idles, int *calls)
{
	struct owner *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	o->g.idle = owner_idle;
	o->g.arg = o;
	o->idles = idles;
	o->calls = calls;
	return o;
}

static void
plain_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	(*(int *)arg)++;
}

/* Counted in when queued, out after each callback returned (so a callback
 * sees its own request still counted); requests outside the group are not
 * counted in it; idle runs once, when the last one's callback returned. */
static void
test_group_counts_replies(void **state)
{
	struct link l;
	struct owner *o;
	int idles = 0, calls = 0, others = 0;

	(void)state;
	link_open(&l);
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_remove(l.s, "/b", plain_cb, &others), 0);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/c", owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 2);
	assert_int_equal(ph_sftp_inflight(l.s), 3);

	answer_ok(&l, 1);
	answer_ok(&l, 2);
	while (others == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(o->seen[0], 2);   /* its own request still counted */
	assert_int_equal(o->types[0], PH_FXP_STATUS);
	assert_int_equal(o->g.inflight, 1);
	assert_int_equal(idles, 0);

	answer_ok(&l, 3);
	while (idles == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	/* o is freed now: only the counters outside it are read. */
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	assert_int_equal(ph_sftp_inflight(l.s), 0);
	link_close(&l);
}

/* A request refused before it is queued is not counted, and its group
 * does not stick to the next request. */
static void
test_group_refused_request(void **state)
{
	static const struct ph_sftp_handle h = { 4, { 'h', 'a', 'n', 'd' } };
	struct link l;
	struct ph_sftp_group g = { 0, NULL, NULL };
	int others = 0;

	(void)state;
	link_open(&l);
	/* No fsync@openssh.com in VERSION: refused. */
	assert_int_equal(ph_sftp_fsync(ph_sftp_in_group(l.s, &g), &h, plain_cb, &others),
	                 PHSYNC_EUNSUPPORTED);
	assert_int_equal(g.inflight, 0);
	/* A length of 0 is refused too. */
	assert_int_equal(ph_sftp_check_file(ph_sftp_in_group(l.s, &g), &h, "md5", 0, 0,
	                                    256, plain_cb, &others), PHSYNC_EINVAL);
	assert_int_equal(g.inflight, 0);
	assert_int_equal(ph_sftp_remove(l.s, "/x", plain_cb, &others), 0);
	assert_int_equal(g.inflight, 0);
	assert_int_equal(ph_sftp_inflight(l.s), 1);
	answer_ok(&l, 1);
	while (others == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	assert_int_equal(g.inflight, 0);
	link_close(&l);
}

/* ph_sftp_abort and a link that dies settle the group's requests too
 * (callbacks with type 0), and idle runs once. */
static void
test_group_abort_and_dead_link(void **state)
{
	struct link l;
	struct owner *o;
	int idles = 0, calls = 0;

	(void)state;
	link_open(&l);
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_stat(ph_sftp_in_group(l.s, &o->g), 1, "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_stat(ph_sftp_in_group(l.s, &o->g), 1, "/b", owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 2);
	ph_sftp_abort(l.s, PHSYNC_EINTR);
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	assert_int_equal(ph_sftp_inflight(l.s), 0);
	/* Later requests fail: never counted. */
	{
		struct ph_sftp_group g = { 0, NULL, NULL };

		assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &g), "/c", NULL, NULL),
		                 PHSYNC_EINTR);
		assert_int_equal(g.inflight, 0);
	}
	link_close(&l);

	/* The server goes away with two requests of the group pending. */
	link_open(&l);
	idles = calls = 0;
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/b", owner_cb, o), 0);
	answer_ok(&l, 1);
	close(l.server);
	l.server = -1;
	while (idles == 0)
		if (ph_sftp_pump(l.s, 1000) != 0)
			break;
	assert_int_equal(ph_sftp_dead(l.s), PHSYNC_ECONNECT);
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	link_close(&l);
}

/* A channel in memory whose window is shut half-way into the first WRITE
 * when Ctrl-C comes: the WRITEs behind it are taken back unsent. */
struct shut {
	size_t window;
	int waits, version_given;
	phsync_ctx *ctx;
};

static int
m_write(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

static int
m_write_some(void *arg, const void *p, size_t n, size_t *put)
{
	struct shut *m = arg;

	(void)p;
	*put = n < m->window ? n : m->window;
	m->window -= *put;
	return 0;
}

static int
m_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	static const uint8_t version[] = { 0, 0, 0, 5, PH_FXP_VERSION, 0, 0, 0, 3 };
	struct shut *m = arg;

	(void)timeout_ms;
	*got = 0;
	if (!m->version_given && n >= sizeof(version)) {
		memcpy(p, version, sizeof(version));
		*got = sizeof(version);
		m->version_given = 1;
	}
	return 0;
}

static int
m_wait(void *arg, int timeout_ms)
{
	struct shut *m = arg;

	(void)timeout_ms;
	if (++m->waits == 1) {
		m->ctx->interrupted = 1;
		m->window = 1u << 20;
	}
	return 0;
}

/* Writes taken back after a stop are settled in their group too: their
 * callbacks run (PHSYNC_EINTR) and the count goes down; the one sent
 * stays counted until its reply (here: the abort). */
static void
test_group_writes_taken_back(void **state)
{
	static const struct ph_sftp_handle h = { 4, { 'h', 'a', 'n', 'd' } };
	uint8_t data[1000];
	struct shut m;
	struct ph_chan ch = { m_write, m_read, &m, 0, m_write_some, m_wait };
	struct ph_sftp *s;
	struct owner *o;
	int idles = 0, calls = 0, i;

	(void)state;
	memset(&m, 0, sizeof(m));
	memset(data, 7, sizeof(data));
	assert_int_equal(phsync_ctx_new(&m.ctx), 0);
	m.window = 1u << 20;
	assert_int_equal(ph_sftp_new(m.ctx, &ch, &s), 0);
	o = owner_new(&idles, &calls);
	m.window = 300;
	for (i = 0; i < 3; i++)
		assert_int_equal(ph_sftp_write(ph_sftp_in_group(s, &o->g), &h,
		                               (uint64_t)i * 1000, data, 1000, owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 3);
	assert_int_equal(ph_sftp_flush(s), 0);
	assert_int_equal(calls, 2);                /* two taken back */
	assert_int_equal(o->types[0], PH_FXP_STATUS);
	assert_int_equal(o->g.inflight, 1);        /* the one on the wire */
	assert_int_equal(idles, 0);
	ph_sftp_abort(s, PHSYNC_EINTR);
	assert_int_equal(calls, 3);
	assert_int_equal(idles, 1);
	ph_sftp_free(s);
	phsync_ctx_free(m.ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_counts_replies),
		cmocka_unit_test(test_group_refused_request),
		cmocka_unit_test(test_group_abort_and_dead_link),
		cmocka_unit_test(test_group_writes_taken_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
