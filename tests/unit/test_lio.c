/* SPDX-License-Identifier: ISC */
/* The local I/O thread's queue (src/sync/lio.c) is bounded by what its ops
 * cost, not only by the data bytes they carry: a COPY op holds no data,
 * and a hostile helper's delta of one-byte COPY ops (17 wire bytes each)
 * once grew the queue without bound (issue 22, item 7). pread64 is wrapped
 * at link time (tests/CMakeLists.txt) so the I/O thread can be held inside
 * its first COPY; pthread_cond_wait is wrapped to see the producer wait for
 * room. Nothing here waits on time: only on those two conditions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lio.h"

#define OPS 400000u   /* 400,000 ops: far past any 4 MiB budget at >= 10 bytes each */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int hold_fd = -1;       /* pread of this fd waits until released */
static int in_pread, released, producer_waits, producer_done;
static pthread_t producer;
static int have_producer;
static unsigned queued;        /* ops the producer handed over */

ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

ssize_t
__wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
	if (fd >= 0 && fd == hold_fd) {
		pthread_mutex_lock(&mu);
		in_pread = 1;
		pthread_cond_broadcast(&cv);
		while (!released)
			__real_pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	return __real_pread64(fd, buf, n, off);
}

int
__wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	pthread_mutex_lock(&mu);
	if (have_producer && pthread_equal(pthread_self(), producer)) {
		producer_waits = 1;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return __real_pthread_cond_wait(c, m);
}

struct job {
	struct ph_lio *l;
	struct ph_lio_file *f;
};

static void *
produce(void *arg)
{
	struct job *jb = arg;
	unsigned i;

	for (i = 1; i < OPS; i++) {
		assert_int_equal(ph_lio_copy(jb->l, jb->f, i, 0, 1), 0);
		pthread_mutex_lock(&mu);
		queued = i;
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	producer_done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void
test_copy_ops_count_against_the_budget(void **state)
{
	char dir[] = "/tmp/phsync-lio-XXXXXX";
	struct ph_lio *l = NULL;
	struct ph_lio_file *f, *done[1];
	struct job jb;
	unsigned at_wait;
	int root, basis;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true((root = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	assert_true((basis = open("/dev/zero", O_RDONLY)) >= 0);
	assert_int_equal(ph_lio_new(root, 0, &l), 0);
	assert_non_null(f = ph_lio_file_new("out.bin"));
	f->mode = 0600;
	f->basis = basis;
	hold_fd = basis;
	/* The first COPY: the I/O thread takes it and is held in its pread. */
	assert_int_equal(ph_lio_copy(l, f, 0, 0, 1), 0);
	pthread_mutex_lock(&mu);
	while (!in_pread)
		__real_pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	/* Now nothing drains: the producer must come to wait for room long
	 * before it has queued every op. */
	jb.l = l;
	jb.f = f;
	pthread_mutex_lock(&mu);
	have_producer = 1;
	assert_int_equal(pthread_create(&producer, NULL, produce, &jb), 0);
	while (!producer_waits && !producer_done)
		__real_pthread_cond_wait(&cv, &mu);
	at_wait = queued;
	released = 1;                 /* let the I/O thread go on */
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_int_equal(pthread_join(producer, NULL), 0);
	assert_true(producer_waits);
	/* 4 MiB at no less than 40 bytes an op. */
	assert_true(at_wait < (4u << 20) / 40);
	ph_lio_finish(l, f, PH_LIO_ABORT);
	assert_int_equal(ph_lio_pop(l, done, 1, 1), 1);
	assert_ptr_equal(done[0], f);
	ph_lio_file_free(f);
	ph_lio_free(l);
	close(root);
	assert_int_equal(rmdir(dir), 0);   /* the aborted temp is gone */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_ops_count_against_the_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
