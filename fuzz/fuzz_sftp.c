/* SPDX-License-Identifier: ISC */
/* libFuzzer: arbitrary bytes as everything an SFTP server sends to the
 * client (src/transport/sftp.c). The input's first byte sets the size of the chunks the
 * channel hands over (so packets are split everywhere); the rest is the
 * server's byte stream: VERSION, then replies to what the client asks:
 *
 *   ph_sftp_new (INIT; limits@openssh.com when offered)
 *   STAT "file.jpg", LSTAT "dir"
 *   OPENDIR "dir", then READDIR (up to 4 times) iterating every NAME entry
 *     with ph_sftp_names_next, then CLOSE
 *   OPEN "file.jpg", then three pipelined READs of 512 bytes, FSTAT, CLOSE
 *
 * all pumped with ph_sftp_pump until nothing is in flight or the stream ends
 * (the channel then reports the peer gone). What the client writes is
 * dropped. Every byte the callbacks are handed is touched, so ASan sees
 * reads past what the parser validated.
 *
 * Built with -DFZ_RECORD instead (target sftp_seed_record, no fuzzer), the
 * same driver talks to a real sftp server over pipes and writes the bytes the
 * server sent, behind a chunk byte, to a file: the seed corpus
 * (fuzz/make-sftp-seeds.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sftp.h"

#define FZ_READ_LEN 512
#ifdef FZ_RECORD
#define FZ_PUMP_MS 1000 /* a real server takes its time */
#else
#define FZ_PUMP_MS 0
#endif

struct fz_chan {
	const uint8_t *d;
	size_t n, pos, chunk;
};

struct fz_run {
	struct ph_sftp *s;
	struct ph_sftp_handle h, dh;
	int readdirs;
	volatile unsigned sink;
};

/* Reads every byte of [p, p+n): out-of-bounds shows up under ASan. */
static void
touch(struct fz_run *z, const uint8_t *p, size_t n)
{
	unsigned x = 0;

	for (size_t i = 0; i < n; i++)
		x += p[i];
	z->sink += x;
}

static void
touch_reply(struct fz_run *z, const struct ph_sftp_reply *r)
{
	if (r->data != NULL)
		touch(z, r->data, r->len);
	if (r->msg != NULL)
		z->sink += (unsigned)strlen(r->msg);
	if (r->type == PH_FXP_HANDLE && (r->len == 0 || r->len > PH_SFTP_MAX_HANDLE))
		abort(); /* the client promises to check handle lengths */
}

static void
any_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	touch_reply(arg, r);
}

static void
stat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct fz_run *z = arg;

	(void)s;
	touch_reply(z, r);
	if (r->type == PH_FXP_ATTRS)
		z->sink += (unsigned)(r->attrs.size + r->attrs.perm + r->attrs.mtime);
}

static void
readdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct fz_run *z = arg;
	struct ph_sftp_names it;
	struct ph_sftp_attrs a;
	const uint8_t *name;
	uint32_t namelen, n = 0;
	int rc;

	touch_reply(z, r);
	if (r->type != PH_FXP_NAME) {
		ph_sftp_close(s, &z->dh, any_cb, z);
		return;
	}
	ph_sftp_names_init(&it, r);
	while ((rc = ph_sftp_names_next(&it, &name, &namelen, &a)) == 1) {
		if (namelen > r->len)
			abort();
		touch(z, name, namelen);
		z->sink += (unsigned)(a.size + a.perm);
		if (++n > r->count)
			abort(); /* more entries than the reply announced */
	}
	if (++z->readdirs < 4)
		ph_sftp_readdir(s, &z->dh, readdir_cb, z);
	else
		ph_sftp_close(s, &z->dh, any_cb, z);
}

static void
opendir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct fz_run *z = arg;

	touch_reply(z, r);
	if (r->type != PH_FXP_HANDLE)
		return;
	(void)ph_sftp_handle_set(&z->dh, r);
	ph_sftp_readdir(s, &z->dh, readdir_cb, z);
}

static void
read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	touch_reply(arg, r);
}

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct fz_run *z = arg;

	touch_reply(z, r);
	if (r->type != PH_FXP_HANDLE)
		return;
	(void)ph_sftp_handle_set(&z->h, r);
	for (int i = 0; i < 3; i++)
		ph_sftp_read(s, &z->h, (uint64_t)i * FZ_READ_LEN, FZ_READ_LEN, read_cb, z);
	ph_sftp_stat(s, 0, "file.jpg", stat_cb, z); /* an ordinary STAT among the reads */
	ph_sftp_close(s, &z->h, any_cb, z);
}

/* The driver: returns when nothing is in flight or the link failed. */
static void
fz_drive(const struct ph_chan *chan)
{
	struct fz_run z = { 0 };
	int rc, rounds = 0;

	if (ph_sftp_new(NULL, chan, &z.s) != 0)
		return;
	z.sink += ph_sftp_exts(z.s) + ph_sftp_max_read(z.s) + ph_sftp_max_write(z.s) +
	          (unsigned)ph_sftp_max_handles(z.s);
	rc = ph_sftp_stat(z.s, 0, "file.jpg", stat_cb, &z);
	if (rc == 0)
		rc = ph_sftp_stat(z.s, 1, "dir", stat_cb, &z);
	if (rc == 0)
		rc = ph_sftp_opendir(z.s, "dir", opendir_cb, &z);
	if (rc == 0)
		rc = ph_sftp_open(z.s, "file.jpg", PH_FXF_READ, NULL, open_cb, &z);
	while (rc == 0 && ph_sftp_inflight(z.s) > 0 && rounds++ < 10000)
		rc = ph_sftp_pump(z.s, FZ_PUMP_MS);
	ph_sftp_free(z.s);
}

#ifndef FZ_RECORD

static int
fz_write(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

static int
fz_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	struct fz_chan *c = arg;
	size_t k = c->n - c->pos;

	(void)timeout_ms;
	*got = 0;
	if (k == 0)
		return PHSYNC_ECONNECT; /* the server is gone */
	if (k > c->chunk)
		k = c->chunk;
	if (k > n)
		k = n;
	memcpy(p, c->d + c->pos, k);
	c->pos += k;
	*got = k;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_chan c;
	struct ph_chan chan = { fz_write, fz_read, &c, 1000, NULL, NULL };

	if (size < 1)
		return 0;
	/* chunk sizes 1..128, then multiples of 64 up to 8192 */
	c.chunk = data[0] < 128 ? (size_t)data[0] + 1 : ((size_t)data[0] - 127) * 64;
	c.d = data + 1;
	c.n = size - 1;
	c.pos = 0;
	fz_drive(&chan);
	return 0;
}

#else /* FZ_RECORD: sftp_seed_record SERVER DIR OUT */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

struct rec {
	int to, from;
	uint8_t *buf;
	size_t len, cap;
};

static int
rec_write(void *arg, const void *p, size_t n)
{
	struct rec *r = arg;
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = write(r->to, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return PHSYNC_ECONNECT;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
rec_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	struct rec *r = arg;
	struct pollfd pf = { r->from, POLLIN, 0 };
	ssize_t k;

	*got = 0;
	if (poll(&pf, 1, timeout_ms < 0 ? 5000 : timeout_ms) <= 0)
		return 0;
	k = read(r->from, p, n);
	if (k <= 0)
		return PHSYNC_ECONNECT;
	if (r->len + (size_t)k > r->cap) {
		r->cap = (r->len + (size_t)k) * 2;
		if ((r->buf = realloc(r->buf, r->cap)) == NULL)
			abort();
	}
	memcpy(r->buf + r->len, p, (size_t)k);
	r->len += (size_t)k;
	*got = (size_t)k;
	return 0;
}

int
main(int argc, char **argv)
{
	int in[2], out[2], st;
	struct rec r = { 0 };
	struct ph_chan chan = { rec_write, rec_read, &r, 5000, NULL, NULL };
	const uint8_t chunk = 0xff;
	pid_t pid;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: sftp_seed_record SFTP_SERVER DIR OUT\n");
		return 2;
	}
	if (pipe(in) != 0 || pipe(out) != 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	if ((pid = fork()) == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (chdir(argv[2]) != 0)
			_exit(126);
		execl(argv[1], argv[1], (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	r.to = in[1];
	r.from = out[0];
	if (chdir(argv[2]) != 0)
		return 1;
	fz_drive(&chan);
	close(r.to);
	waitpid(pid, &st, 0);
	if ((f = fopen(argv[3], "wb")) == NULL || fwrite(&chunk, 1, 1, f) != 1 ||
	    fwrite(r.buf, 1, r.len, f) != r.len || fclose(f) != 0)
		return 1;
	fprintf(stderr, "%s: %zu bytes from %s\n", argv[3], r.len, argv[1]);
	return 0;
}

#endif
