/* SPDX-License-Identifier: ISC */
/* The SFTP client against OpenSSH's real sftp-server over pipes, and
 * against scripted hostile replies over a socketpair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "ctx.h"
#include "sftp.h"
#include "ut_sftp.h"

#define SFTP_SERVER "/usr/lib/openssh/sftp-server"

/* OpenSSH's sftp-server on the other end of two pipes. */
struct pipes {
	struct ut_fds io;
	pid_t pid;
};

static struct pipes
spawn_server(void)
{
	int to[2], from[2];
	struct pipes pp;

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	pp.pid = fork();
	assert_true(pp.pid >= 0);
	if (pp.pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl(SFTP_SERVER, SFTP_SERVER, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	pp.io.rfd = from[0];
	pp.io.wfd = to[1];
	return pp;
}

static void
stop(struct pipes *pp)
{
	close(pp->io.wfd);
	close(pp->io.rfd);
	if (pp->pid > 0)
		waitpid(pp->pid, NULL, 0);
}

struct cb_state {
	int done, err;
	uint8_t type;
	uint32_t status;
	struct ph_sftp_handle h;
	struct ph_buf data;
	int names;
};

static void
cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct cb_state *st = arg;

	(void)s;
	st->done++;
	st->type = r->type;
	st->err = r->err;
	st->status = r->status;
	if (r->type == PH_FXP_HANDLE)
		(void)ph_sftp_handle_set(&st->h, r);
	if (r->type == PH_FXP_DATA)
		assert_int_equal(ph_buf_put(&st->data, r->data, r->len), 0);
	if (r->type == PH_FXP_NAME) {
		struct ph_sftp_names it;
		const uint8_t *n;
		uint32_t nl;
		struct ph_sftp_attrs a;

		ph_sftp_names_init(&it, r);
		while (ph_sftp_names_next(&it, &n, &nl, &a) == 1)
			st->names++;
	}
}

static void
wait_n(struct ph_sftp *s, struct cb_state *st, int n)
{
	while (st->done < n)
		assert_int_equal(ph_sftp_pump(s, 1000), 0);
}

/* One LSTAT of pump_set's test: the size it should get back. */
struct want_size {
	uint64_t size;
	int done, err;
	struct ph_sftp *on;
};

static void
size_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct want_size *w = arg;

	assert_ptr_equal(s, w->on); /* the reply came back on the client asked */
	w->done++;
	w->err = r->err;
	if (r->type == PH_FXP_ATTRS && r->attrs.size == w->size)
		w->done += 10;
}

/* Two clients, each on its own sftp-server (no wait_any: pipes), pumped
 * together: every request answered once on its own client, and nothing
 * left owed; one server killed: its client's requests fail, the pump says
 * so, and the other client's are still answered. */
static void
test_pump_set_two_servers(void **state)
{
	enum { N = 400 };
	struct pipes pp[2] = { spawn_server(), spawn_server() };
	struct ph_chan ch[2] = {
		{ ut_fd_write, ut_fd_read, &pp[0].io, 0, NULL, NULL, NULL },
		{ ut_fd_write, ut_fd_read, &pp[1].io, 0, NULL, NULL, NULL },
	};
	char dir[] = "/tmp/phsync-pumpset-XXXXXX", path[128];
	struct want_size *w = calloc(N, sizeof(*w));
	struct ph_sftp *s[2];
	phsync_ctx *ctx;
	int i, left, rc = 0;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_non_null(w);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_sftp_new(ctx, &ch[0], &s[0]), 0);
	assert_int_equal(ph_sftp_new(ctx, &ch[1], &s[1]), 0);
	for (i = 0; i < N; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		assert_non_null(f = fopen(path, "w"));
		assert_int_equal(fseek(f, 1000 + 3 * i, SEEK_SET), 0);
		assert_int_equal(fputc('x', f), 'x');
		fclose(f);
		w[i].size = 1001 + 3 * (uint64_t)i;
		w[i].on = s[i % 3 == 0];  /* a third on one, the rest on the other */
		assert_int_equal(ph_sftp_stat(w[i].on, PH_LSTAT, path, size_cb, &w[i]), 0);
	}
	do {
		assert_int_equal(ph_sftp_pump_set(s, 2, 1000), 0);
		for (left = 0, i = 0; i < N; i++)
			left += w[i].done == 0;
	} while (left > 0);
	for (i = 0; i < N; i++)
		assert_int_equal(w[i].done, 11);
	assert_int_equal(ph_sftp_inflight(s[0]) + ph_sftp_inflight(s[1]), 0);
	/* Nothing owed: the pump returns at once. */
	assert_int_equal(ph_sftp_pump_set(s, 2, -1), 0);

	/* The second server killed, then a round on both. */
	kill(pp[1].pid, SIGKILL);
	waitpid(pp[1].pid, NULL, 0);
	pp[1].pid = 0;
	for (i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		w[i].done = 0;
		assert_int_equal(ph_sftp_stat(w[i].on, PH_LSTAT, path, size_cb, &w[i]), 0);
	}
	for (left = N; left > 0 && rc == 0;) {
		rc = ph_sftp_pump_set(s, 2, 1000);
		for (left = 0, i = 0; i < N; i++)
			left += w[i].done == 0;
	}
	assert_int_equal(rc, PHSYNC_ECONNECT);
	assert_int_equal(ph_sftp_dead(s[1]), PHSYNC_ECONNECT);
	for (i = 0; i < N; i++)
		if (w[i].on == s[1])
			assert_true(w[i].done == 1 && w[i].err != 0);
	assert_int_equal(ph_sftp_dead(s[0]), 0);
	while (ph_sftp_inflight(s[0]) > 0)
		assert_int_equal(ph_sftp_pump(s[0], 1000), 0);
	for (i = 0; i < N; i++)
		if (w[i].on == s[0])
			assert_int_equal(w[i].done, 11);

	ph_sftp_free(s[0]);
	ph_sftp_free(s[1]);
	stop(&pp[0]);
	close(pp[1].io.wfd);
	close(pp[1].io.rfd);
	for (i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		unlink(path);
	}
	rmdir(dir);
	free(w);
	phsync_ctx_free(ctx);
}

static void
test_real_server_roundtrip(void **state)
{
	struct pipes pp = spawn_server();
	struct ph_chan ch = { ut_fd_write, ut_fd_read, &pp.io, 0, NULL, NULL, NULL };
	phsync_ctx *ctx;
	struct ph_sftp *s;
	struct cb_state st;
	struct ph_sftp_attrs a;
	char dir[] = "/tmp/phsync-sftp-XXXXXX", path[128], path2[128];
	uint8_t *blob;
	const size_t size = 3 * 1000 * 1000 + 17;
	size_t off;
	int n = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_sftp_new(ctx, &ch, &s), 0);
	assert_true(ph_sftp_exts(s) & PH_EXT_POSIX_RENAME);
	assert_true(ph_sftp_exts(s) & PH_EXT_FSYNC);
	assert_true(ph_sftp_max_read(s) >= 32768);
	blob = malloc(size);
	for (off = 0; off < size; off++)
		blob[off] = (uint8_t)(off * 2654435761u >> 13);

	/* Pipelined writes of a 3 MB file, then fsync, close, rename. */
	memset(&st, 0, sizeof(st));
	snprintf(path, sizeof(path), "%s/a.bin", dir);
	snprintf(path2, sizeof(path2), "%s/b.bin", dir);
	memset(&a, 0, sizeof(a));
	a.flags = PH_ATTR_PERMISSIONS;
	a.perm = 0600;
	assert_int_equal(ph_sftp_open(s, path, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_EXCL, &a, cb, &st), 0);
	wait_n(s, &st, ++n);
	assert_int_equal(st.type, PH_FXP_HANDLE);
	for (off = 0; off < size; off += ph_sftp_max_write(s)) {
		uint32_t len = size - off < ph_sftp_max_write(s) ? (uint32_t)(size - off) : ph_sftp_max_write(s);

		assert_int_equal(ph_sftp_write(s, &st.h, off, blob + off, len, cb, &st), 0);
		n++;
	}
	assert_true(ph_sftp_inflight(s) > 1); /* really pipelined */
	assert_int_equal(ph_sftp_fsync(s, &st.h, cb, &st), 0);
	assert_int_equal(ph_sftp_close(s, &st.h, cb, &st), 0);
	assert_int_equal(ph_sftp_rename(s, path, path2, 1, cb, &st), 0);
	n += 3;
	wait_n(s, &st, n);
	assert_int_equal(st.err, 0);
	assert_int_equal(ph_sftp_stat_sync(s, 0, path2, &a), 0);
	assert_int_equal(a.size, size);
	assert_int_equal(ph_sftp_stat_sync(s, 0, path, &a), PHSYNC_ENOENT);

	/* Pipelined reads back; a read past the end answers EOF. */
	memset(&st, 0, sizeof(st));
	n = 0;
	assert_int_equal(ph_sftp_open(s, path2, PH_FXF_READ, NULL, cb, &st), 0);
	wait_n(s, &st, ++n);
	for (off = 0; off < size; off += 65536) {
		assert_int_equal(ph_sftp_read(s, &st.h, off, 65536, cb, &st), 0);
		wait_n(s, &st, ++n); /* in order, so the buffer is the file */
	}
	assert_int_equal(st.data.len, size);
	assert_memory_equal(st.data.data, blob, size);
	assert_int_equal(ph_sftp_read(s, &st.h, size, 10, cb, &st), 0);
	wait_n(s, &st, ++n);
	assert_int_equal(st.type, PH_FXP_STATUS);
	assert_int_equal(st.status, PH_FX_EOF);

	/* mkdir, readdir, and errors translated. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(ph_sftp_mkdir_sync(s, path, 0755), 0);
	assert_int_equal(ph_sftp_mkdir_sync(s, path, 0755), PHSYNC_EREMOTE);
	ph_buf_free(&st.data);
	memset(&st, 0, sizeof(st));
	assert_int_equal(ph_sftp_opendir(s, dir, cb, &st), 0);
	wait_n(s, &st, 1);
	assert_int_equal(ph_sftp_readdir(s, &st.h, cb, &st), 0);
	wait_n(s, &st, 2);
	assert_int_equal(st.names, 4); /* ".", "..", "b.bin", "sub" */
	assert_int_equal(ph_sftp_stat_sync(s, 1, "/nonexistent/x", &a), PHSYNC_ENOENT);

	ph_buf_free(&st.data);
	free(blob);
	ph_sftp_free(s);
	phsync_ctx_free(ctx);
	stop(&pp);
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* A scripted server: answers INIT with VERSION, then sends `reply` raw
 * and closes its side for writing; the answer to a STAT, with the message. */
static int
hostile_stat(const uint8_t *reply, size_t rlen, char *msg, size_t msglen)
{
	struct ut_link l;
	struct ph_sftp_attrs a;
	int rc;

	ut_link_open(&l);
	if (rlen > 0)
		assert_int_equal(write(l.server, reply, rlen), (ssize_t)rlen);
	shutdown(l.server, SHUT_WR);
	rc = ph_sftp_stat_sync(l.s, 0, "/x", &a);
	snprintf(msg, msglen, "%s", phsync_ctx_error(l.ctx));
	ut_link_close(&l);
	return rc;
}

static void
test_hostile_replies(void **state)
{
	char msg[1024];
	/* request ids start at 1 */
	static const uint8_t huge[] = { 0x7f, 0xff, 0xff, 0xff, PH_FXP_ATTRS, 0, 0, 0, 1 };
	static const uint8_t wrong_id[] = { 0, 0, 0, 9, PH_FXP_ATTRS, 0, 0, 0, 77, 0, 0, 0, 0 };
	static const uint8_t short_attrs[] = { 0, 0, 0, 9, PH_FXP_ATTRS, 0, 0, 0, 1, 0, 0, 0, 1 };
	static const uint8_t bad_type[] = { 0, 0, 0, 5, 99, 0, 0, 0, 1 };
	static const uint8_t ok[] = { 0, 0, 0, 17, PH_FXP_ATTRS, 0, 0, 0, 1, 0, 0, 0, 1,
	                              0, 0, 0, 0, 0, 0, 0, 42 };

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(hostile_stat(huge, sizeof(huge), msg, sizeof(msg)), PHSYNC_EPROTO);
	assert_non_null(strstr(msg, "packet of"));
	assert_int_equal(hostile_stat(wrong_id, sizeof(wrong_id), msg, sizeof(msg)), PHSYNC_EPROTO);
	assert_non_null(strstr(msg, "not pending"));
	assert_int_equal(hostile_stat(short_attrs, sizeof(short_attrs), msg, sizeof(msg)), PHSYNC_EPROTO);
	assert_int_equal(hostile_stat(bad_type, sizeof(bad_type), msg, sizeof(msg)), PHSYNC_EPROTO);
	/* The link closing with a request pending is a connection error. */
	assert_int_equal(hostile_stat(NULL, 0, msg, sizeof(msg)), PHSYNC_ECONNECT);
	/* And a well-formed answer is accepted. */
	assert_int_equal(hostile_stat(ok, sizeof(ok), msg, sizeof(msg)), 0);
}

static void
test_names_reply_bounds(void **state)
{
	struct ph_sftp_reply r;
	struct ph_sftp_names it;
	const uint8_t *n;
	uint32_t nl;
	struct ph_sftp_attrs a;
	/* one entry claims a 1000-byte name in a 12-byte body */
	static const uint8_t body[] = { 0, 0, 3, 0xe8, 'a', 'b', 0, 0, 0, 0, 0, 0 };

	(void)state;
	memset(&r, 0, sizeof(r));
	r.type = PH_FXP_NAME;
	r.count = 1;
	r.data = body;
	r.len = sizeof(body);
	ph_sftp_names_init(&it, &r);
	assert_int_equal(ph_sftp_names_next(&it, &n, &nl, &a), PHSYNC_EPROTO);
}

static void
count_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	int *n = arg;

	(void)s;
	if (r->err == PHSYNC_EINTR)
		(*n)++;
}

/* The types of the packets in b from off on. */
static size_t
packet_types(const struct ph_buf *b, size_t off, uint8_t *types, size_t max)
{
	size_t n = 0;

	while (off + 5 <= b->len && n < max) {
		types[n++] = b->data[off + 4];
		off += 4 + ((size_t)b->data[off] << 24 | (size_t)b->data[off + 1] << 16 |
		            (size_t)b->data[off + 2] << 8 | b->data[off + 3]);
	}
	assert_int_equal(off, b->len); /* whole packets only */
	return n;
}

/* After Ctrl-C the WRITEs queued behind the one being sent are taken back
 * (their callbacks get PHSYNC_EINTR) and the CLOSE behind them goes out at
 * once; the WRITE the channel is in the middle of is sent whole (issue 22,
 * item 11). */
static void
test_stop_takes_back_unsent_writes(void **state)
{
	static const struct ph_sftp_handle h = { 4, { 'h', 'a', 'n', 'd' } };
	uint8_t data[1000], types[16];
	struct ut_mem f;
	struct ph_chan ch = ut_mem_chan(&f);
	struct ph_sftp *s;
	size_t init, k;
	int eintr = 0, closed = 0, i;

	(void)state;
	memset(&f, 0, sizeof(f));
	memset(data, 7, sizeof(data));
	assert_int_equal(phsync_ctx_new(&f.ctx), 0);
	f.window = 1u << 20;
	assert_int_equal(ph_sftp_new(f.ctx, &ch, &s), 0);
	init = f.sent.len;

	/* The stop comes while the window is shut half-way into the first WRITE. */
	f.window = 300;
	f.stop_at_wait = 1;
	for (i = 0; i < 3; i++)
		assert_int_equal(ph_sftp_write(s, &h, (uint64_t)i * 1000, data, 1000,
		                               count_cb, &eintr), 0);
	assert_int_equal(ph_sftp_close(s, &h, count_cb, &closed), 0);
	assert_int_equal(ph_sftp_flush(s), 0);
	assert_int_equal(eintr, 2);
	k = packet_types(&f.sent, init, types, 16);
	assert_int_equal(k, 2);
	assert_int_equal(types[0], PH_FXP_WRITE);
	assert_int_equal(types[1], PH_FXP_CLOSE);
	assert_int_equal(ph_sftp_inflight(s), 2); /* the first WRITE and the CLOSE */

	/* A server that takes nothing more after the stop is given up (2 s). */
	f.window = 0;
	f.stop_at_wait = -1;
	f.ctx->interrupted = 1;
	eintr = 0;
	assert_int_equal(ph_sftp_close(s, &h, count_cb, &closed), 0);
	assert_int_equal(ph_sftp_flush(s), PHSYNC_EINTR);
	assert_int_equal(ph_sftp_inflight(s), 0);
	/* Every pending callback ran, with the stop: the WRITE sent, both CLOSEs. */
	assert_int_equal(eintr, 1);
	assert_int_equal(closed, 2);
	assert_non_null(strstr(phsync_ctx_error(f.ctx), "given up"));

	ph_sftp_free(s);
	ph_buf_free(&f.sent);
	phsync_ctx_free(f.ctx);
}

/* A channel over descriptors that counts its writes. */
struct counted {
	struct ut_fds io;
	int writes;
};

static int
counted_write(void *arg, const void *p, size_t n)
{
	struct counted *c = arg;

	c->writes++;
	return ut_fd_write(&c->io, p, n);
}

static int
counted_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	return ut_fd_read(&((struct counted *)arg)->io, p, n, timeout_ms, got);
}

struct chain {
	struct ph_sftp *s;
	const struct ph_sftp_handle *h;
	int asked, answered, total;
};

/* Each reply asks the next read while any are left: a pull's pattern. */
static void
chain_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct chain *c = arg;

	(void)s;
	assert_int_equal(r->type, PH_FXP_DATA);
	c->answered++;
	if (c->asked < c->total) {
		assert_int_equal(ph_sftp_read(c->s, c->h, (uint64_t)(c->asked % 40) * 100, 100,
		                              chain_cb, c), 0);
		c->asked++;
	}
}

/* Requests queued by callbacks go out in batches while the server still
 * owes replies (issue 24: every packet costs a phone's sshd and server a
 * wakeup), and a chain of them never stalls: all 2,000 reads of a chain
 * kept 40 deep are answered, in far fewer writes than reads. */
static void
test_requests_go_in_batches(void **state)
{
	struct pipes pp = spawn_server();
	struct counted c = { pp.io, 0 };
	struct ph_chan ch = { counted_write, counted_read, &c, 0, NULL, NULL, NULL };
	char dir[] = "/tmp/phsync-sftp-XXXXXX", path[128];
	phsync_ctx *ctx;
	struct ph_sftp *s;
	struct cb_state st;
	struct chain chn;
	uint8_t blob[4000];
	int fd, writes;

	(void)state;
	memset(&st, 0, sizeof(st));
	memset(blob, 'b', sizeof(blob));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	assert_int_equal(write(fd, blob, sizeof(blob)), (ssize_t)sizeof(blob));
	close(fd);
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(ph_sftp_new(ctx, &ch, &s), 0);
	assert_int_equal(ph_sftp_open(s, path, PH_FXF_READ, NULL, cb, &st), 0);
	wait_n(s, &st, 1);
	assert_int_equal(st.type, PH_FXP_HANDLE);
	chn = (struct chain){ s, &st.h, 0, 0, 2000 };
	writes = c.writes;
	for (; chn.asked < 40; chn.asked++)
		assert_int_equal(ph_sftp_read(s, &st.h, (uint64_t)chn.asked * 100, 100, chain_cb,
		                              &chn), 0);
	while (chn.answered < chn.total)
		assert_int_equal(ph_sftp_pump(s, 1000), 0);
	assert_int_equal(ph_sftp_inflight(s), 0);
	writes = c.writes - writes;
	assert_true(writes >= 1);
	assert_true(writes * 10 <= chn.total);
	assert_int_equal(ph_sftp_close_sync(s, &st.h), 0);
	ph_sftp_free(s);
	phsync_ctx_free(ctx);
	stop(&pp);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_server_roundtrip),
		cmocka_unit_test(test_pump_set_two_servers),
		cmocka_unit_test(test_hostile_replies),
		cmocka_unit_test(test_names_reply_bounds),
		cmocka_unit_test(test_stop_takes_back_unsent_writes),
		cmocka_unit_test(test_requests_go_in_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
