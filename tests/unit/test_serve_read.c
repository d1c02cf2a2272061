/* SPDX-License-Identifier: ISC */
/* The remote helper's READ with a sink (ph_serve_sink): where the OS can,
 * a READ's bytes are moved from the file to the sink without a copy
 * (splice). Whatever path a READ takes, the byte stream the client gets
 * must be exactly the one of the helper that copies every reply into its
 * buffer: the same requests (aligned and unaligned reads, a read cut by the
 * end of the file, reads at and past it, one longer than a reply holds, a
 * bad handle, an empty file; reads under SERVE_SPLICE_MIN are copied
 * either way) are answered by a server without a sink, one
 * with a pipe as its sink and one with a socket, and the streams compared
 * byte for byte. The test is linked with -Wl,--wrap=splice
 * (tests/CMakeLists.txt): it counts the moves, and makes them fail on
 * demand (a file system that cannot move pages, at the first move or after
 * some bytes of a reply were moved), where the READ must be answered by
 * copying, with the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ph_config.h"
#include "buf.h"
#include "serve.h"

#define FILE_SIZE 1000003u

static char dir[] = "/tmp/phsync-serve-read-XXXXXX";
static uint8_t *content;
static int splices;       /* moves made (splice calls that succeeded) */
static int fail_at = -1;  /* the move from a file (counting from 0) that fails, -1: none */
static int fail_errno;
static int fail_out;      /* the next move to the sink fails */

ssize_t __real_splice(int in, loff_t *inoff, int out, loff_t *outoff, size_t len,
                      unsigned flags);
ssize_t __wrap_splice(int in, loff_t *inoff, int out, loff_t *outoff, size_t len,
                      unsigned flags);

ssize_t
__wrap_splice(int in, loff_t *inoff, int out, loff_t *outoff, size_t len, unsigned flags)
{
	ssize_t n;

	if (inoff == NULL && fail_out) {
		fail_out = 0;
		errno = EPIPE;
		return -1;
	}
	if (inoff != NULL && fail_at == 0) {
		fail_at = -1;
		errno = fail_errno;
		return -1;
	}
	if (inoff != NULL && fail_at > 0)
		fail_at--;
	/* Moves of a file into the pipe come in pieces (as a file system that
	 * moves a page at a time would), so a failure can fall mid-reply. */
	if (inoff != NULL && len > 65536)
		len = 65536;
	n = __real_splice(in, inoff, out, outoff, len, flags);
	if (n > 0)
		splices++;
	return n;
}

static int
setup(void **state)
{
	char path[96];
	uint32_t x = 2463534242u;
	size_t i;
	int fd;

	(void)state;
	if (mkdtemp(dir) == NULL || (content = malloc(FILE_SIZE)) == NULL)
		return -1;
	for (i = 0; i < FILE_SIZE; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		content[i] = (uint8_t)x;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
	    write(fd, content, FILE_SIZE) != (ssize_t)FILE_SIZE || close(fd) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/empty", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 || close(fd) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	char cmd[96];

	(void)state;
	free(content);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
put_open(struct ph_buf *b, uint32_t id, const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%s", dir, name);   /* as the client names it */
	assert_int_equal(ph_buf_put_u8(b, 3), 0);    /* OPEN */
	assert_int_equal(ph_buf_put_u32(b, id), 0);
	assert_int_equal(ph_buf_put_cstr(b, path), 0);
	assert_int_equal(ph_buf_put_u32(b, 1), 0);   /* READ */
	assert_int_equal(ph_buf_put_u32(b, 0), 0);   /* no attributes */
}

static void
put_read(struct ph_buf *b, uint32_t id, const uint8_t *h, uint32_t hlen, uint64_t off,
         uint32_t len)
{
	assert_int_equal(ph_buf_put_u8(b, 5), 0);    /* READ */
	assert_int_equal(ph_buf_put_u32(b, id), 0);
	assert_int_equal(ph_buf_put_str(b, h, hlen), 0);
	assert_int_equal(ph_buf_put_u64(b, off), 0);
	assert_int_equal(ph_buf_put_u32(b, len), 0);
}

/* Runs one request through s, its reply (or replies) appended to out, or,
 * with a sink, written to it as ph_serve_run does. */
static void
one(struct ph_serve *s, struct ph_buf *req, struct ph_buf *out, int sink)
{
	assert_int_equal(ph_serve_packet(s, req->data, req->len, out), 0);
	req->len = 0;
	if (sink >= 0 && out->len > 0) {
		assert_int_equal(write(sink, out->data, out->len), (ssize_t)out->len);
		out->len = 0;
	}
}

/* The handle in the HANDLE reply that starts at p (its length, its bytes). */
static const uint8_t *
handle_of(const struct ph_buf *out, size_t p, uint32_t *hlen)
{
	assert_true(out->len >= p + 13);
	assert_int_equal(out->data[p + 4], 102);     /* HANDLE */
	*hlen = ph_be32_get(out->data + p + 9);
	assert_true(*hlen > 0 && *hlen <= 256 && out->len >= p + 13 + *hlen);
	return out->data + p + 13;
}

/* Opens name for reading: its handle into h (*hlen bytes), the OPEN's
 * reply appended to out (a HANDLE reply is never a READ's: the server puts
 * it in the buffer it is given, never to the sink). */
static void
open_handle(struct ph_serve *s, uint32_t id, const char *name, uint8_t *h, uint32_t *hlen,
            struct ph_buf *out)
{
	struct ph_buf req = { NULL, 0, 0, 1u << 20 }, hb = { NULL, 0, 0, 1u << 20 };
	const uint8_t *p;

	put_open(&req, id, name);
	one(s, &req, &hb, -1);
	p = handle_of(&hb, 0, hlen);
	memcpy(h, p, *hlen);
	assert_int_equal(ph_buf_put(out, hb.data, hb.len), 0);
	ph_buf_free(&req);
	ph_buf_free(&hb);
}

/* Sends the whole script; returns what went to out (nothing with a sink). */
static void
script(struct ph_serve *s, struct ph_buf *out, int sink)
{
	static const uint8_t init[] = { 1, 0, 0, 0, 3 };
	static const struct { uint64_t off; uint32_t len; } reads[] = {
		{ 0, 262144 }, { 262144, 262144 }, { 4097, 300000 }, { 999000, 262144 },
		{ FILE_SIZE - 1, 1 }, { FILE_SIZE, 10 }, { 1ull << 40, 10 }, { 77, 0 },
		{ 524288, 32768 }, { 131072 + 1, 262144 }, { FILE_SIZE, 65536 },
		{ FILE_SIZE + 5, 262144 },
	};
	struct ph_buf req = { NULL, 0, 0, 1u << 20 };
	uint8_t h[256], he[256];
	uint32_t hlen, helen, id = 10;
	size_t i;

	assert_int_equal(ph_serve_packet(s, init, sizeof(init), &req), 0);
	req.len = 0;
	open_handle(s, id++, "f", h, &hlen, out);
	open_handle(s, id++, "empty", he, &helen, out);
	if (sink >= 0) {
		assert_int_equal(write(sink, out->data, out->len), (ssize_t)out->len);
		out->len = 0;
	}
	for (i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		put_read(&req, id++, h, hlen, reads[i].off, reads[i].len);
		one(s, &req, out, sink);
	}
	put_read(&req, id++, he, helen, 0, 10);
	one(s, &req, out, sink);
	put_read(&req, id++, (const uint8_t *)"nohandle", 8, 0, 10);
	one(s, &req, out, sink);
	/* Two READs in one go: the first one's reply (a STATUS) is still in
	 * out when the second is moved, and must come before it. */
	put_read(&req, id++, (const uint8_t *)"gone", 4, 8192, 100);
	assert_int_equal(ph_serve_packet(s, req.data, req.len, out), 0);
	assert_true(out->len > 0);
	req.len = 0;
	put_read(&req, id++, h, hlen, 16384, 200000);
	one(s, &req, out, sink);
	ph_buf_free(&req);
}

struct drain {
	int fd;
	struct ph_buf got;
};

static void *
drain_run(void *arg)
{
	struct drain *d = arg;
	uint8_t buf[65536];
	ssize_t n;

	while ((n = read(d->fd, buf, sizeof(buf))) > 0)
		if (ph_buf_put(&d->got, buf, (size_t)n) != 0)
			break;
	return NULL;
}

/* The stream a server whose sink is one end of rfd/wfd sends. */
static void
through_sink(int rfd, int wfd, struct ph_buf *stream)
{
	struct ph_buf out = { NULL, 0, 0, 16u << 20 };
	struct drain d = { rfd, { NULL, 0, 0, 64u << 20 } };
	struct ph_serve *s;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, drain_run, &d), 0);
	assert_int_equal(ph_serve_new(dir, &s), 0);
	ph_serve_sink(s, wfd);
	script(s, &out, wfd);
	assert_int_equal(out.len, 0);
	ph_serve_free(s);
	close(wfd);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(rfd);
	ph_buf_free(&out);
	*stream = d.got;
}

static void
copied(struct ph_buf *stream)
{
	struct ph_serve *s;

	assert_int_equal(ph_serve_new(dir, &s), 0);
	script(s, stream, -1);
	ph_serve_free(s);
}

/* The DATA reply to READ id 14 (the third READ: 4097, asked 300,000) holds
 * the file's bytes from 4097, as many as a reply holds. */
static void
check_baseline(const struct ph_buf *a)
{
	size_t p = 0;

	while (p + 9 <= a->len) {
		uint32_t plen = ph_be32_get(a->data + p);

		if (a->data[p + 4] == 103 && ph_be32_get(a->data + p + 5) == 14) {
			assert_int_equal(ph_be32_get(a->data + p + 9), PH_SERVE_MAX_IO);
			assert_memory_equal(a->data + p + 13, content + 4097, PH_SERVE_MAX_IO);
			return;
		}
		p += 4 + (size_t)plen;
	}
	fail_msg("no DATA reply to the unaligned READ");
}

static void
same_stream(int use_socket)
{
	struct ph_buf a = { NULL, 0, 0, 64u << 20 }, b;
	int fds[2];

	copied(&a);
	check_baseline(&a);
	if (use_socket)
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	else
		assert_int_equal(pipe(fds), 0);
	through_sink(fds[use_socket ? 1 : 0], fds[use_socket ? 0 : 1], &b);
	assert_int_equal(b.len, a.len);
	assert_memory_equal(b.data, a.data, a.len);
	ph_buf_free(&a);
	ph_buf_free(&b);
}

static void
test_pipe_sink_sends_the_copied_stream(void **state)
{
	(void)state;
	splices = 0;
	same_stream(0);
#ifdef HAVE_SPLICE
	assert_true(splices > 20);   /* the pages moved, not copied */
#else
	assert_int_equal(splices, 0);
#endif
}

static void
test_socket_sink_sends_the_copied_stream(void **state)
{
	(void)state;
	splices = 0;
	same_stream(1);
#ifdef HAVE_SPLICE
	assert_true(splices > 20);
#endif
}

/* The streams compared with move number at (from a file, counting from 0)
 * failing with err; where the OS moves pages, that move was tried. */
static void
with_failing_move(int at, int err, int use_socket)
{
	fail_errno = err;
	fail_at = at;
	same_stream(use_socket);
#ifdef HAVE_SPLICE
	assert_int_equal(fail_at, -1);
#endif
	fail_at = -1;
}

/* A file system that moves no pages: the first move fails with EINVAL. */
static void
test_a_file_that_cannot_be_moved_is_copied(void **state)
{
	(void)state;
	with_failing_move(0, EINVAL, 0);
}

/* A move fails after some of a reply's bytes were moved into the helper's
 * pipe: they are dropped, and the READ answered by copying. */
static void
test_a_move_failing_mid_reply_is_copied(void **state)
{
	(void)state;
	with_failing_move(2, EIO, 0);     /* the first READ's third piece */
	with_failing_move(9, ENOMEM, 1);  /* the third READ's second piece */
}

/* Once a reply's header is out, its bytes must follow: a sink that takes
 * no more ends the stream (the session closes; the client hears the end of
 * the channel, never a reply with other bytes). */
#ifdef HAVE_SPLICE
static void
test_a_sink_that_takes_no_more_ends_the_stream(void **state)
{
	static const uint8_t init[] = { 1, 0, 0, 0, 3 };
	struct ph_buf out = { NULL, 0, 0, 1u << 20 }, req = { NULL, 0, 0, 1u << 20 };
	struct ph_serve *s;
	uint8_t h[256], reply[64];
	uint32_t hlen;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(ph_serve_new(dir, &s), 0);
	ph_serve_sink(s, fds[1]);
	assert_int_equal(ph_serve_packet(s, init, sizeof(init), &out), 0);
	out.len = 0;
	open_handle(s, 1, "f", h, &hlen, &out);
	put_read(&req, 2, h, hlen, 0, 262144);
	out.len = 0;
	fail_out = 1;
	assert_int_equal(ph_serve_packet(s, req.data, req.len, &out), -1);
	assert_int_equal(fail_out, 0);
	/* What did go out is the header alone. */
	assert_int_equal(read(fds[0], reply, sizeof(reply)), 13);
	assert_int_equal(reply[4], 103);   /* DATA */
	assert_int_equal(ph_be32_get(reply + 9), 262144);
	ph_serve_free(s);
	ph_buf_free(&out);
	ph_buf_free(&req);
	close(fds[0]);
	close(fds[1]);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipe_sink_sends_the_copied_stream),
		cmocka_unit_test(test_socket_sink_sends_the_copied_stream),
		cmocka_unit_test(test_a_file_that_cannot_be_moved_is_copied),
		cmocka_unit_test(test_a_move_failing_mid_reply_is_copied),
#ifdef HAVE_SPLICE  /* without moves, every reply is copied (the tests above) */
		cmocka_unit_test(test_a_sink_that_takes_no_more_ends_the_stream),
#endif
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
