/* SPDX-License-Identifier: ISC */
/* The archive's output (aout.h): the caller fills a ring of NBUF buffers,
 * one writer thread empties them into the file. Measured on the camera
 * corpus, the file system's write path was a quarter of a backup's CPU and
 * zstd's own worker threads most of its memory (19 MB with two workers):
 * here zstd compresses on the writer thread alone (3.5 MB at level 3), and
 * both run beside the SFTP reads. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "aout.h"
#include "pfs.h"
#include "phsync/phsync.h"
#include "platform.h"

#define NBUF 4
#define BUFSZ (512u << 10)
#define RAW_BLOCK (128u << 10)   /* zstd's largest block */
#define NIOV (2 * (BUFSZ / RAW_BLOCK) + 2)
#define ZOUT (256u << 10)
#define WB_STEP (8u << 20)       /* write-back started each time this much is new */

struct abuf {
	uint8_t *p;
	size_t n;
	int store;
	int mark;                   /* a way back starts before these bytes */
};

struct ph_aout {
	int fd, zlevel, durable;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* any change below, either side */
	struct abuf buf[NBUF];
	unsigned mpos;              /* the caller's buffer: (wpos + nq) % NBUF */
	unsigned wpos, nq;          /* the queue: nq buffers from wpos */
	int want_end, ended, stop, failed;
	int want_undo;              /* under mu: back to the mark, then 0 */
	int mark_pending, discard;  /* the caller's */
	int err;                    /* under mu */
	const char *zmsg;
	uint64_t bytes;             /* under mu */
	/* The writer's alone: */
	uint64_t wbytes, wb_off, mark_off;
	ZSTD_CCtx *cc;
	uint8_t *zout;
	XXH64_state_t *rawsum;
	int in_cframe, in_rframe;
};

/* Writes the iovecs whole (a short write is continued). 0 or an errno. */
static int
writev_all(struct ph_aout *o, struct ph_iov *iov, int cnt)
{
	while (cnt > 0) {
		int64_t w = ph_writev(o->fd, iov, cnt);

		if (w == -EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? (int)-w : EIO;
		o->wbytes += (uint64_t)w;
		while (cnt > 0 && (uint64_t)w >= iov->len) {
			w -= (int64_t)iov->len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->base = (const uint8_t *)iov->base + w;
			iov->len -= (size_t)w;
		}
	}
	if (o->durable && o->wbytes - o->wb_off >= WB_STEP) {
		/* A hint; the caller's fsync is what makes the archive durable. */
		(void)ph_writeback_hint(o->fd, o->wb_off, o->wbytes - o->wb_off);
		o->wb_off = o->wbytes;
	}
	return 0;
}

static int
write_all(struct ph_aout *o, const void *p, size_t n)
{
	struct ph_iov iov = { p, n };

	return n > 0 ? writev_all(o, &iov, 1) : 0;
}

static int
zfail(struct ph_aout *o, size_t r)
{
	o->zmsg = ZSTD_getErrorName(r);
	return EIO;
}

/* Feeds zstd (e: ZSTD_e_continue or ZSTD_e_end) and writes what it gives. */
static int
zstream(struct ph_aout *o, const void *p, size_t n, ZSTD_EndDirective e)
{
	ZSTD_inBuffer in = { p, n, 0 };
	size_t r;
	int rc;

	do {
		ZSTD_outBuffer out = { o->zout, ZOUT, 0 };

		r = ZSTD_compressStream2(o->cc, &out, &in, e);
		if (ZSTD_isError(r))
			return zfail(o, r);
		if ((rc = write_all(o, o->zout, out.pos)) != 0)
			return rc;
	} while (e == ZSTD_e_end ? r != 0 : in.pos < in.size);
	return 0;
}

/* Ends the compressed frame in progress, if any. */
static int
zend_cframe(struct ph_aout *o)
{
	if (!o->in_cframe)
		return 0;
	o->in_cframe = 0;
	return zstream(o, NULL, 0, ZSTD_e_end);
}

static void
le24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
}

/* Ends the raw frame in progress: an empty last block, then the content
 * checksum (low 32 bits of XXH64, as zstd's own frames carry). */
static int
zend_rframe(struct ph_aout *o)
{
	uint8_t t[7];
	uint32_t sum;

	if (!o->in_rframe)
		return 0;
	o->in_rframe = 0;
	le24(t, 1u);
	sum = (uint32_t)XXH64_digest(o->rawsum);
	t[3] = (uint8_t)sum;
	t[4] = (uint8_t)(sum >> 8);
	t[5] = (uint8_t)(sum >> 16);
	t[6] = (uint8_t)(sum >> 24);
	return write_all(o, t, sizeof(t));
}

/* Stored bytes: zstd frames of raw blocks (RFC 8878: magic, a frame
 * header with a 128 KiB window and the checksum flag, blocks of at most
 * 128 KiB, checksum). Any zstd decoder reads them; no CPU is spent on
 * trying to compress a JPEG or an MP4. Each buffer goes out as its own
 * blocks, their headers between its bytes in one writev: no copy. */
static int
zraw(struct ph_aout *o, const uint8_t *p, size_t n)
{
	static const uint8_t hdr[6] = { 0x28, 0xb5, 0x2f, 0xfd, 0x04, (17 - 10) << 3 };
	uint8_t bh[NIOV / 2][3];
	struct ph_iov iov[NIOV];
	int cnt = 0, k = 0;

	if (!o->in_rframe) {
		iov[cnt].base = hdr;
		iov[cnt++].len = sizeof(hdr);
		XXH64_reset(o->rawsum, 0);
		o->in_rframe = 1;
	}
	XXH64_update(o->rawsum, p, n);
	while (n > 0) {
		size_t b = n < RAW_BLOCK ? n : RAW_BLOCK;

		le24(bh[k], (uint32_t)(b << 3));    /* not last, raw */
		iov[cnt].base = bh[k++];
		iov[cnt++].len = 3;
		iov[cnt].base = p;
		iov[cnt++].len = b;
		p += b;
		n -= b;
	}
	return writev_all(o, iov, cnt);
}

/* One buffer into the file. 0 or an errno. */
static int
put(struct ph_aout *o, const struct abuf *b)
{
	int rc;

	if (b->mark) {
		/* The way back is a frame boundary: nothing after it depends
		 * on what came before. */
		if ((rc = zend_cframe(o)) != 0 || (rc = zend_rframe(o)) != 0)
			return rc;
		o->mark_off = o->wbytes;
	}
	if (o->zlevel == 0)
		return write_all(o, b->p, b->n);
	if (b->store)
		return (rc = zend_cframe(o)) != 0 ? rc : zraw(o, b->p, b->n);
	if ((rc = zend_rframe(o)) != 0)
		return rc;
	o->in_cframe = 1;
	return zstream(o, b->p, b->n, ZSTD_e_continue);
}

/* Cuts the file back to the mark and forgets the frame in progress. */
static int
back_to_mark(struct ph_aout *o)
{
	int e = ph_ftruncate(o->fd, o->mark_off);

	if (e != 0)
		return -e;
	if (lseek(o->fd, (off_t)o->mark_off, SEEK_SET) < 0)
		return errno;
	o->wbytes = o->mark_off;
	if (o->wb_off > o->mark_off)
		o->wb_off = o->mark_off;
	if (o->in_cframe)
		ZSTD_CCtx_reset(o->cc, ZSTD_reset_session_only);
	o->in_cframe = o->in_rframe = 0;
	return 0;
}

static void *
writer(void *arg)
{
	struct ph_aout *o = arg;
	int rc;

	pthread_mutex_lock(&o->mu);
	for (;;) {
		while (!o->stop && o->nq == 0 && !(o->want_end && !o->ended) && !o->want_undo)
			pthread_cond_wait(&o->cv, &o->mu);
		if (o->stop)
			break;
		if (o->want_undo && o->nq == 0) {
			pthread_mutex_unlock(&o->mu);
			rc = back_to_mark(o);
			pthread_mutex_lock(&o->mu);
			o->want_undo = 0;
		} else if (o->nq > 0) {
			struct abuf *b = &o->buf[o->wpos];
			int failed = o->err != 0;

			pthread_mutex_unlock(&o->mu);
			rc = failed ? 0 : put(o, b);   /* after a failure: drop, never block */
			pthread_mutex_lock(&o->mu);
			b->n = 0;
			o->wpos = (o->wpos + 1) % NBUF;
			o->nq--;
		} else {
			int failed = o->err != 0;

			pthread_mutex_unlock(&o->mu);
			rc = failed ? 0 : o->zlevel ? zend_cframe(o) : 0;
			if (rc == 0 && !failed && o->zlevel)
				rc = zend_rframe(o);
			pthread_mutex_lock(&o->mu);
			o->ended = 1;
		}
		if (rc != 0 && o->err == 0)
			o->err = rc;
		o->bytes = o->wbytes;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

int
ph_aout_open(int fd, int zlevel, int durable, struct ph_aout **out)
{
	struct ph_aout *o = calloc(1, sizeof(*o));
	unsigned i;

	*out = NULL;
	if (o == NULL)
		return PHSYNC_ENOMEM;
	o->fd = fd;
	o->zlevel = zlevel;
	o->durable = durable;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	for (i = 0; i < NBUF; i++)
		if ((o->buf[i].p = malloc(BUFSZ)) == NULL)
			goto fail;
	if (zlevel != 0) {
		o->cc = ZSTD_createCCtx();
		o->zout = malloc(ZOUT);
		o->rawsum = XXH64_createState();
		if (o->cc == NULL || o->zout == NULL || o->rawsum == NULL)
			goto fail;
		/* No worker threads: this thread is the one beside the reads,
		 * and each worker would cost its own window and job buffers. */
		ZSTD_CCtx_setParameter(o->cc, ZSTD_c_compressionLevel, zlevel);
		ZSTD_CCtx_setParameter(o->cc, ZSTD_c_checksumFlag, 1);
	}
	/* Signals (Ctrl-C) go to the caller's thread, never to the writer. */
	if (ph_thread_start(&o->th, writer, o) != 0)
		goto fail;
	o->started = 1;
	*out = o;
	return 0;
fail:
	ph_aout_free(o);
	return PHSYNC_ENOMEM;
}

/* Queues the caller's buffer (when it holds anything) and waits for a
 * free one. 0, or -1 when the output failed. */
static int
submit(struct ph_aout *o)
{
	int err;

	pthread_mutex_lock(&o->mu);
	if (o->buf[o->mpos].n > 0) {
		o->nq++;
		o->mpos = (o->mpos + 1) % NBUF;
		pthread_cond_broadcast(&o->cv);
	}
	while (o->nq == NBUF && o->err == 0)
		pthread_cond_wait(&o->cv, &o->mu);
	err = o->err;
	pthread_mutex_unlock(&o->mu);
	if (err != 0)
		o->failed = 1;
	return err != 0 ? -1 : 0;
}

int
ph_aout_write(struct ph_aout *o, const void *p, size_t n, int store)
{
	const uint8_t *s = p;

	store = o->zlevel != 0 && store;
	while (n > 0) {
		struct abuf *b = &o->buf[o->mpos];
		size_t k;

		if (o->failed || o->want_end)
			return -1;
		if (o->discard)
			return 0;
		if (b->n > 0 && b->store != store) {
			if (submit(o) != 0)
				return -1;
			continue;
		}
		b->store = store;
		if (b->n == 0) {
			b->mark = o->mark_pending;
			o->mark_pending = 0;
		}
		k = BUFSZ - b->n < n ? BUFSZ - b->n : n;
		memcpy(b->p + b->n, s, k);
		b->n += k;
		s += k;
		n -= k;
		if (b->n == BUFSZ && submit(o) != 0)
			return -1;
	}
	return 0;
}

int
ph_aout_drain(struct ph_aout *o, int end)
{
	int err;

	if (o->failed)
		return -1;
	pthread_mutex_lock(&o->mu);
	if (o->buf[o->mpos].n > 0 && o->nq < NBUF) {
		o->nq++;
		o->mpos = (o->mpos + 1) % NBUF;
	}
	if (end)
		o->want_end = 1;
	pthread_cond_broadcast(&o->cv);
	while (o->err == 0 && (o->nq > 0 || (end && !o->ended)))
		pthread_cond_wait(&o->cv, &o->mu);
	err = o->err;
	pthread_mutex_unlock(&o->mu);
	if (err != 0)
		o->failed = 1;
	return err != 0 ? -1 : 0;
}

int
ph_aout_error(struct ph_aout *o, const char **zmsg)
{
	int err;

	pthread_mutex_lock(&o->mu);
	err = o->err;
	*zmsg = err == EIO ? o->zmsg : NULL;
	pthread_mutex_unlock(&o->mu);
	return err;
}

uint64_t
ph_aout_bytes(struct ph_aout *o)
{
	uint64_t b;

	pthread_mutex_lock(&o->mu);
	b = o->bytes;
	pthread_mutex_unlock(&o->mu);
	return b;
}

void
ph_aout_free(struct ph_aout *o)
{
	unsigned i;

	if (o == NULL)
		return;
	if (o->started) {
		pthread_mutex_lock(&o->mu);
		o->stop = 1;
		pthread_cond_broadcast(&o->cv);
		pthread_mutex_unlock(&o->mu);
		pthread_join(o->th, NULL);
	}
	for (i = 0; i < NBUF; i++)
		free(o->buf[i].p);
	ZSTD_freeCCtx(o->cc);
	free(o->zout);
	if (o->rawsum != NULL)
		XXH64_freeState(o->rawsum);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o);
}

int
ph_aout_mark(struct ph_aout *o)
{
	if (o->failed)
		return -1;
	if (o->buf[o->mpos].n > 0 && submit(o) != 0)
		return -1;
	o->mark_pending = 1;
	return 0;
}

void
ph_aout_discard(struct ph_aout *o)
{
	o->discard = 1;
}

int
ph_aout_undo(struct ph_aout *o)
{
	int err;

	o->discard = 0;
	if (o->mark_pending) {
		o->mark_pending = 0;    /* nothing was written after it */
		return 0;
	}
	if (ph_aout_drain(o, 0) != 0)
		return -1;
	pthread_mutex_lock(&o->mu);
	o->want_undo = 1;
	pthread_cond_broadcast(&o->cv);
	while (o->want_undo && o->err == 0)
		pthread_cond_wait(&o->cv, &o->mu);
	err = o->err;
	pthread_mutex_unlock(&o->mu);
	if (err != 0)
		o->failed = 1;
	return err != 0 ? -1 : 0;
}
