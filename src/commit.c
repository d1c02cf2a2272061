/* The commit thread; see commit.h. */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "phsync/error.h"
#include "commit.h"
#include "platform.h"

#define MAX_QUEUED 512         /* open temp files waiting (2 fds each) */
#define MAX_QUEUED_BYTES (1ull << 30)
#define MAX_BATCH 1024

struct ph_commit {
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* work for the thread, or stop */
	pthread_cond_t done_cv;  /* results for the caller, or room */
	struct ph_commit_item *in, *out, *batch;
	int *fds;
	size_t nin, nout, cap;
	uint64_t in_bytes;
	size_t busy;             /* items the thread holds */
	int durable, stop, started;
	pthread_t th;
};

static void
finish(struct ph_commit_item *it)
{
	if (it->err == 0 &&
	    renameat(it->dirfd, it->tmp, it->dirfd, it->final) != 0)
		it->err = -errno;
	if (it->err != 0)
		unlinkat(it->dirfd, it->tmp, 0);
	close(it->fd);
	it->fd = -1;
}

static void *
run(void *arg)
{
	struct ph_commit *c = arg;
	size_t n, i;
	int e;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->nin == 0 && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->nin == 0 && c->stop)
			break;
		n = c->nin < MAX_BATCH ? c->nin : MAX_BATCH;
		memcpy(c->batch, c->in, n * sizeof(*c->batch));
		memmove(c->in, c->in + n, (c->nin - n) * sizeof(*c->in));
		c->nin -= n;
		c->busy = n;
		pthread_mutex_unlock(&c->mu);

		for (i = 0; i < n; i++)
			c->fds[i] = c->batch[i].fd;
		e = ph_durable_sync(c->fds, n);
		for (i = 0; i < n; i++) {
			if (e != 0 && c->batch[i].err == 0)
				c->batch[i].err = e;
			finish(&c->batch[i]);
		}

		pthread_mutex_lock(&c->mu);
		memcpy(c->out + c->nout, c->batch, n * sizeof(*c->batch));
		for (i = 0; i < n; i++)
			c->in_bytes -= c->batch[i].size;
		c->nout += n;
		c->busy = 0;
		pthread_cond_broadcast(&c->done_cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int
ph_commit_new(int durable, struct ph_commit **out)
{
	struct ph_commit *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return PHSYNC_ENOMEM;
	c->cap = MAX_QUEUED + MAX_BATCH;
	c->in = calloc(c->cap, sizeof(*c->in));
	c->out = calloc(c->cap + MAX_BATCH, sizeof(*c->out));
	c->batch = calloc(MAX_BATCH, sizeof(*c->batch));
	c->fds = calloc(MAX_BATCH, sizeof(*c->fds));
	c->durable = durable;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	if (c->in == NULL || c->out == NULL || c->batch == NULL || c->fds == NULL) {
		ph_commit_free(c);
		return PHSYNC_ENOMEM;
	}
	if (durable) {
		if (pthread_create(&c->th, NULL, run, c) != 0) {
			ph_commit_free(c);
			return PHSYNC_ENOMEM;
		}
		c->started = 1;
	}
	*out = c;
	return 0;
}

int
ph_commit_push(struct ph_commit *c, struct ph_commit_item *it)
{
	if (!c->durable) {
		/* No durability asked: rename at once, in the caller's thread. */
		finish(it);
		if (c->nout >= c->cap)
			return PHSYNC_ENOMEM;
		c->out[c->nout++] = *it;
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	while (c->nin + c->nout + c->busy >= MAX_QUEUED ||
	       (c->in_bytes >= MAX_QUEUED_BYTES && c->nin > 0))
		pthread_cond_wait(&c->done_cv, &c->mu);
	c->in[c->nin++] = *it;
	c->in_bytes += it->size;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

size_t
ph_commit_pop(struct ph_commit *c, struct ph_commit_item *out, size_t max, int wait)
{
	size_t n;

	if (c->durable)
		pthread_mutex_lock(&c->mu);
	while (wait && c->durable && c->nout == 0 && (c->nin > 0 || c->busy > 0))
		pthread_cond_wait(&c->done_cv, &c->mu);
	n = c->nout < max ? c->nout : max;
	memcpy(out, c->out, n * sizeof(*out));
	memmove(c->out, c->out + n, (c->nout - n) * sizeof(*c->out));
	c->nout -= n;
	if (c->durable) {
		pthread_cond_broadcast(&c->done_cv);
		pthread_mutex_unlock(&c->mu);
	}
	return n;
}

size_t
ph_commit_pending(struct ph_commit *c)
{
	size_t n;

	if (c->durable)
		pthread_mutex_lock(&c->mu);
	n = c->nin + c->nout + c->busy;
	if (c->durable)
		pthread_mutex_unlock(&c->mu);
	return n;
}

void
ph_commit_free(struct ph_commit *c)
{
	size_t i;

	if (c == NULL)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->th, NULL);
	}
	for (i = 0; i < c->nout; i++) {
		close(c->out[i].dirfd);
		free(c->out[i].tmp);
		free(c->out[i].final);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->done_cv);
	free(c->in);
	free(c->out);
	free(c->batch);
	free(c->fds);
	free(c);
}
