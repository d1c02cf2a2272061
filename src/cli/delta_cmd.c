/* SPDX-License-Identifier: ISC */
/* `phsync delta signature|diff|patch`: rdiff-style plumbing over the delta
 * engine (include/phsync/delta.h). Files are streamed through the engine's
 * state machines in 1 MiB chunks; "-" is stdin or stdout. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/phsync.h"
#include "phsync/delta.h"
#include "phsync/sys.h"
#include "cli.h"

#define IO_CHUNK (1u << 20)

static const char usage_text[] =
	"usage: phsync delta signature [-b BLOCK] OLD SIG\n"
	"       phsync delta diff SIG NEW DELTA\n"
	"       phsync delta patch OLD DELTA OUT\n"
	"\n"
	"  signature  write the block signature of OLD to SIG\n"
	"  diff       write to DELTA what turns the file behind SIG into NEW\n"
	"  patch      apply DELTA to OLD, writing OUT (verified by XXH3-128)\n"
	"\n"
	"  -b BLOCK   block length in bytes (default: about sqrt(size of OLD))\n"
	"  -          stands for stdin or stdout (OLD of patch must be a file)\n"
	"  -h, --help this text\n"
	"\n"
	"exit status: 0 ok, 1 error, 2 usage\n";

/* One open file of a command, with what is needed to report and undo. */
struct file {
	const char *name;
	int fd;
	int created;      /* an output written to tmp, renamed to name on success */
	char tmp[4096];
};

/* The engine step a command pumps data through. */
struct pump {
	int (*step)(void *obj, struct phsync_out *out, struct phsync_in *in,
	            int end, int *done);
	void *obj;
};

static int
usage_error(const char *msg)
{
	if (msg != NULL)
		fprintf(stderr, "phsync delta: %s\n", msg);
	fputs("Try 'phsync delta --help'.\n", stderr);
	return CLI_EXIT_USAGE;
}

static int
sys_error(const char *name, const char *what)
{
	fprintf(stderr, "phsync delta: %s: %s: %s\n", name, what, strerror(errno));
	return CLI_EXIT_ERROR;
}

static int
open_in(struct file *f, const char *name)
{
	f->name = strcmp(name, "-") == 0 ? "stdin" : name;
	f->created = 0;
	/* Standard input as bytes (Windows: out of text mode). */
	if (strcmp(name, "-") == 0 && phsync_fd_binary(STDIN_FILENO) != 0)
		return sys_error(name, "cannot read bytes");
	f->fd = strcmp(name, "-") == 0 ? STDIN_FILENO : phsync_file_open(name, PHSYNC_O_RDONLY, 0);
	if (f->fd < 0) {
		errno = -f->fd;
		return sys_error(name, "cannot open");
	}
	return 0;
}

/* A named output is written to a temp file beside it and renamed over it
 * only when the command succeeded: a bad delta or signature never destroys
 * an existing OUT. */
static int
open_out(struct file *f, const char *name)
{
	f->name = strcmp(name, "-") == 0 ? "stdout" : name;
	f->created = strcmp(name, "-") != 0;
	if (!f->created) {
		f->fd = STDOUT_FILENO;
		return phsync_fd_binary(STDOUT_FILENO) == 0 ? 0 : sys_error(name, "cannot write bytes");
	}
	if ((size_t)snprintf(f->tmp, sizeof(f->tmp), "%s.phsync-delta-XXXXXX", name) >=
	    sizeof(f->tmp)) {
		errno = ENAMETOOLONG;
		f->created = 0;
		return sys_error(name, "cannot create");
	}
	/* The mode open(0666) would give it. */
	if ((f->fd = phsync_file_temp(f->tmp, 0666)) < 0) {
		errno = -f->fd;
		f->created = 0;
		return sys_error(name, "cannot create");
	}
	return 0;
}

/* Closes f; a created output is renamed into place when nothing failed
 * (its close included), else removed. Returns 1 when anything failed. */
static int
close_file(struct file *f, int failed)
{
	int rc;

	if (f->fd > STDERR_FILENO && close(f->fd) != 0 && f->created && !failed) {
		sys_error(f->name, "write failed");
		failed = 1;
	}
	f->fd = -1;
	if (!f->created)
		return failed;
	f->created = 0;
	if (!failed && (rc = phsync_file_rename(f->tmp, f->name)) != 0) {
		errno = -rc;
		sys_error(f->name, "cannot rename into place");
		failed = 1;
	}
	if (failed)
		phsync_file_unlink(f->tmp);
	return failed;
}

static ssize_t
read_some(struct file *f, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(f->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		sys_error(f->name, "read failed");
	return n;
}

static int
write_all(struct file *f, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(f->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_error(f->name, "write failed");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
engine_error(phsync_ctx *ctx, int rc)
{
	const char *msg = phsync_ctx_error(ctx);

	fprintf(stderr, "phsync delta: %s\n", *msg ? msg : phsync_strerror(rc));
	return CLI_EXIT_ERROR;
}

/* A thread that does one side's I/O (reading ahead of the engine, or
 * writing behind it) through a ring of buffers, so the kernel's copies
 * run on the second core while the engine scans. */
#define RING 4

struct ring {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct file *f;
	int writer;              /* 1: writes buffers out; 0: reads them in */
	uint8_t *buf[RING];
	size_t len[RING];
	unsigned head, count;    /* head: next for the consumer; count: filled */
	int eof, err, stop;
	pthread_t th;
};

static void *
ring_run(void *arg)
{
	struct ring *r = arg;
	unsigned slot = 0;

	for (;;) {
		ssize_t n = 0;

		pthread_mutex_lock(&r->mu);
		if (r->writer) {
			while (r->count == 0 && !r->stop)
				pthread_cond_wait(&r->cv, &r->mu);
			if (r->count == 0) {
				pthread_mutex_unlock(&r->mu);
				break;
			}
			slot = r->head;
		} else {
			while (r->count == RING && !r->stop)
				pthread_cond_wait(&r->cv, &r->mu);
			if (r->stop) {
				pthread_mutex_unlock(&r->mu);
				break;
			}
		}
		pthread_mutex_unlock(&r->mu);
		if (r->writer) {
			if (!r->err && write_all(r->f, r->buf[slot], r->len[slot]) != 0)
				r->err = 1;
		} else {
			n = read_some(r->f, r->buf[slot], IO_CHUNK);
		}
		pthread_mutex_lock(&r->mu);
		if (r->writer) {
			r->head = (r->head + 1) % RING;
			r->count--;
		} else {
			if (n < 0)
				r->err = 1;
			r->len[slot] = n > 0 ? (size_t)n : 0;
			r->count++;
			if (n <= 0)
				r->eof = 1;
		}
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		slot = (slot + 1) % RING;
		if (!r->writer && n <= 0)
			break;
	}
	return NULL;
}

static int
ring_start(struct ring *r, struct file *f, int writer)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->f = f;
	r->writer = writer;
	for (i = 0; i < RING; i++)
		if ((r->buf[i] = malloc(IO_CHUNK)) == NULL)
			return -1;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->th, NULL, ring_run, r) != 0) {
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		return -1;
	}
	return 0;
}

/* Reader side: the next filled buffer (len 0 at the end); -1 on error. */
static int
ring_take(struct ring *r, uint8_t **buf, size_t *len)
{
	int rc = 0;

	pthread_mutex_lock(&r->mu);
	while (r->count == 0 && !r->eof)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->count == 0) {
		*len = 0;
		rc = r->err ? -1 : 0;
	} else {
		*buf = r->buf[r->head];
		*len = r->len[r->head];
		if (*len == 0 && r->err)
			rc = -1;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* Reader side: the buffer from ring_take is consumed. */
static void
ring_release(struct ring *r)
{
	pthread_mutex_lock(&r->mu);
	r->head = (r->head + 1) % RING;
	r->count--;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Writer side: a free buffer to fill (waits while all are queued). */
static uint8_t *
ring_free_buf(struct ring *r)
{
	uint8_t *b;

	pthread_mutex_lock(&r->mu);
	while (r->count == RING)
		pthread_cond_wait(&r->cv, &r->mu);
	b = r->buf[(r->head + r->count) % RING];
	pthread_mutex_unlock(&r->mu);
	return b;
}

/* Writer side: queues the buffer from ring_free_buf with len bytes. */
static int
ring_put(struct ring *r, size_t len)
{
	int err;

	pthread_mutex_lock(&r->mu);
	r->len[(r->head + r->count) % RING] = len;
	r->count++;
	err = r->err;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return err ? -1 : 0;
}

/* Stops the thread (a writer first writes what is queued); returns -1
 * when its I/O failed. */
static int
ring_stop(struct ring *r)
{
	unsigned i;
	int err;

	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	err = r->err;
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	for (i = 0; i < RING; i++)
		free(r->buf[i]);
	return err ? -1 : 0;
}

/* Streams src through the step into dst until the engine is done and src
 * is at its end; reading and writing run on threads of their own. */
static int
run_pump(phsync_ctx *ctx, const struct pump *pp, struct file *src, struct file *dst)
{
	struct ring rin, wout;
	struct phsync_in in = { NULL, 0, 0 };
	int eof = 0, done = 0, ret = CLI_EXIT_ERROR, have_in = 0, rstarted, wstarted;

	rstarted = ring_start(&rin, src, 0) == 0;
	wstarted = rstarted && ring_start(&wout, dst, 1) == 0;
	if (!rstarted || !wstarted) {
		fprintf(stderr, "phsync delta: out of memory\n");
		goto out;
	}
	while (!(done && eof && in.pos == in.size)) {
		struct phsync_out o = { ring_free_buf(&wout), IO_CHUNK, 0 };
		int rc;

		if (in.pos == in.size && !eof) {
			uint8_t *b = NULL;
			size_t n;

			if (have_in)
				ring_release(&rin);
			have_in = 0;
			if (ring_take(&rin, &b, &n) != 0)
				goto out;
			eof = n == 0;
			have_in = !eof;
			in.ptr = b;
			in.size = n;
			in.pos = 0;
		}
		rc = pp->step(pp->obj, &o, &in, eof, &done);
		if (rc < 0) {
			ret = engine_error(ctx, rc);
			goto out;
		}
		if (o.pos > 0 && ring_put(&wout, o.pos) != 0)
			goto out;
		if (eof && in.pos == in.size && o.pos == 0 && !done) {
			fprintf(stderr, "phsync delta: internal error: no progress\n");
			goto out;
		}
	}
	ret = CLI_EXIT_OK;
out:
	if (rstarted) {
		if (have_in)
			ring_release(&rin);
		ring_stop(&rin);
	}
	if (wstarted && ring_stop(&wout) != 0)
		ret = CLI_EXIT_ERROR;
	return ret;
}

static int
step_sig(void *obj, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_sig_gen_stream(obj, out, in, end, done);
}

static int
step_diff(void *obj, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_diff_stream(obj, out, in, end, done);
}

static int
step_patch(void *obj, struct phsync_out *out, struct phsync_in *in, int end, int *done)
{
	return phsync_patch_stream(obj, out, in, end, done);
}

static int
basis_pread(void *arg, uint64_t off, void *buf, size_t len, size_t *got)
{
	const struct file *f = arg;
	int64_t n;

	do
		n = phsync_file_pread(f->fd, buf, len, off);
	while (n == -EINTR);
	if (n < 0) {
		errno = (int)-n;
		sys_error(f->name, "read failed");
		return PHSYNC_EIO;
	}
	*got = (size_t)n;
	return 0;
}

static int
parse_block(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < PHSYNC_SIG_MIN_BLOCK ||
	    v > PHSYNC_SIG_MAX_BLOCK)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
cmd_signature(phsync_ctx *ctx, int argc, char **argv)
{
	struct file old = { .fd = -1 }, sig = { .fd = -1 };
	phsync_sig_gen *g = NULL;
	uint32_t block = 0;
	uint64_t len = PHSYNC_LEN_UNKNOWN;
	struct phsync_fstat st;
	struct pump pp;
	int ret, i = 1;

	if (i < argc && strcmp(argv[i], "-b") == 0) {
		if (i + 1 >= argc || parse_block(argv[i + 1], &block) != 0)
			return usage_error("-b needs a block length in bytes (16 to 1048576)");
		i += 2;
	}
	if (argc - i != 2)
		return usage_error("signature takes OLD and SIG");
	ret = open_in(&old, argv[i]);
	if (ret != 0)
		return ret;
	if (phsync_file_fstat(old.fd, &st) == 0 && st.type == PHSYNC_FT_REG)
		len = st.size;
	if (phsync_sig_gen_new(ctx, len, block, 0, &g) < 0) {
		ret = engine_error(ctx, PHSYNC_EINVAL);
		goto out;
	}
	ret = open_out(&sig, argv[i + 1]);
	if (ret != 0)
		goto out;
	pp.step = step_sig;
	pp.obj = g;
	ret = run_pump(ctx, &pp, &old, &sig);
out:
	phsync_sig_gen_free(g);
	close_file(&old, 0);
	if (close_file(&sig, ret != CLI_EXIT_OK) && ret == CLI_EXIT_OK)
		ret = CLI_EXIT_ERROR;
	return ret;
}

/* Reads a whole signature file into a complete phsync_sig. */
static int
load_sig(phsync_ctx *ctx, const char *name, phsync_sig **out)
{
	struct file f = { .fd = -1 };
	phsync_sig *sig = NULL;
	uint8_t *buf = NULL;
	int ret, eof = 0;

	ret = open_in(&f, name);
	if (ret != 0)
		return ret;
	ret = CLI_EXIT_ERROR;
	buf = malloc(IO_CHUNK);
	if (buf == NULL || phsync_sig_new(ctx, &sig) < 0)
		goto out;
	while (!eof) {
		ssize_t n = read_some(&f, buf, IO_CHUNK);
		struct phsync_in in;
		int rc;

		if (n < 0)
			goto out;
		eof = n == 0;
		in.ptr = buf;
		in.size = (size_t)n;
		in.pos = 0;
		rc = phsync_sig_load(sig, &in, eof);
		if (rc < 0) {
			fprintf(stderr, "phsync delta: %s: ", f.name);
			engine_error(ctx, rc);
			goto out;
		}
	}
	*out = sig;
	sig = NULL;
	ret = CLI_EXIT_OK;
out:
	free(buf);
	phsync_sig_free(sig);
	close_file(&f, 0);
	return ret;
}

static int
cmd_diff(phsync_ctx *ctx, int argc, char **argv)
{
	struct file nf = { .fd = -1 }, df = { .fd = -1 };
	phsync_sig *sig = NULL;
	phsync_diff *d = NULL;
	struct pump pp;
	int ret;

	if (argc != 4)
		return usage_error("diff takes SIG, NEW and DELTA");
	ret = load_sig(ctx, argv[1], &sig);
	if (ret != 0)
		return ret;
	if (phsync_diff_new(ctx, sig, &d) < 0) {
		ret = engine_error(ctx, PHSYNC_ENOMEM);
		goto out;
	}
	ret = open_in(&nf, argv[2]);
	if (ret != 0)
		goto out;
	ret = open_out(&df, argv[3]);
	if (ret != 0)
		goto out;
	pp.step = step_diff;
	pp.obj = d;
	ret = run_pump(ctx, &pp, &nf, &df);
out:
	phsync_diff_free(d);
	phsync_sig_free(sig);
	close_file(&nf, 0);
	if (close_file(&df, ret != CLI_EXIT_OK) && ret == CLI_EXIT_OK)
		ret = CLI_EXIT_ERROR;
	return ret;
}

static int
cmd_patch(phsync_ctx *ctx, int argc, char **argv)
{
	struct file old = { .fd = -1 }, delta = { .fd = -1 }, res = { .fd = -1 };
	phsync_patch *p = NULL;
	struct phsync_fstat so, sr;
	struct pump pp;
	int ret;

	if (argc != 4)
		return usage_error("patch takes OLD, DELTA and OUT");
	if (strcmp(argv[1], "-") == 0)
		return usage_error("OLD of patch must be a file (it is read at random)");
	ret = open_in(&old, argv[1]);
	if (ret != 0)
		return ret;
	if (phsync_file_fstat(old.fd, &so) != 0 || so.type != PHSYNC_FT_REG) {
		fprintf(stderr, "phsync delta: %s: not a regular file\n", old.name);
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	if (phsync_file_stat(argv[3], &sr) == 0 && sr.dev == so.dev && sr.ino == so.ino) {
		fprintf(stderr, "phsync delta: OUT must not be OLD\n");
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	if (phsync_patch_new(ctx, so.size, basis_pread, &old, &p) < 0) {
		ret = engine_error(ctx, PHSYNC_ENOMEM);
		goto out;
	}
	ret = open_in(&delta, argv[2]);
	if (ret != 0)
		goto out;
	ret = open_out(&res, argv[3]);
	if (ret != 0)
		goto out;
	pp.step = step_patch;
	pp.obj = p;
	ret = run_pump(ctx, &pp, &delta, &res);
out:
	phsync_patch_free(p);
	close_file(&old, 0);
	close_file(&delta, 0);
	if (close_file(&res, ret != CLI_EXIT_OK) && ret == CLI_EXIT_OK)
		ret = CLI_EXIT_ERROR;
	return ret;
}

int
cli_delta_main(int argc, char **argv)
{
	phsync_ctx *ctx = NULL;
	int ret;

	if (argc < 2)
		return usage_error(NULL);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return CLI_EXIT_OK;
		}
	}
	if (phsync_ctx_new(&ctx) < 0) {
		fprintf(stderr, "phsync delta: out of memory\n");
		return CLI_EXIT_ERROR;
	}
	if (strcmp(argv[1], "signature") == 0)
		ret = cmd_signature(ctx, argc - 1, argv + 1);
	else if (strcmp(argv[1], "diff") == 0)
		ret = cmd_diff(ctx, argc - 1, argv + 1);
	else if (strcmp(argv[1], "patch") == 0)
		ret = cmd_patch(ctx, argc - 1, argv + 1);
	else
		ret = usage_error("unknown delta command");
	phsync_ctx_free(ctx);
	return ret;
}
