/* SPDX-License-Identifier: ISC */
/* The local I/O thread commits a batch on a second thread (src/sync/lio.c):
 * the batch's data made durable, its files renamed, its folders synced, and
 * only then handed back (the caller records a file in the state only once
 * it is handed back). Meanwhile the I/O thread goes on writing the next
 * files; when they are ready as a batch is placed, one sync makes the next
 * batch's data and the placed batch's renames durable. fsync and syncfs are
 * wrapped at link time (tests/CMakeLists.txt) so the committer can be held
 * inside them; futimens is wrapped to count the files the I/O thread
 * finished writing. Nothing here waits on time: only on those conditions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lio.h"

#define N 10   /* files a batch here: below MAX_BATCH, handed over when idle */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int hold_dirs;          /* a folder's fsync waits until released */
static int in_dir_fsync, released, dir_fsyncs, written;
static int gate = 1;           /* the first file's futimens waits until opened */

int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __real_futimens(int fd, const struct timespec ts[2]);
int __wrap_futimens(int fd, const struct timespec ts[2]);
int __real_syncfs(int fd);
int __wrap_syncfs(int fd);

/* Data syncs by the folder of the file they go through, a/ (0) or b/ (1):
 * a syncfs, or where there is none (the portable build) the fsync of each
 * regular file. One waits while its folder's hold is set. */
static int data_syncs[2], hold_data[2];
static int a_alone;            /* a/ itself was synced before any of b/'s data */

/* 0 for a path in a/, 1 in b/, 2 for the folder a itself, else -1. */
static int
folder_of(int fd)
{
	char link[64], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) < 0)
		return -1;
	path[n] = '\0';
	if (strstr(path, "/a/") != NULL)
		return 0;
	if (strstr(path, "/b/") != NULL)
		return 1;
	return n >= 2 && strcmp(path + n - 2, "/a") == 0 ? 2 : -1;
}

static void
data_sync(int fd)
{
	int k = folder_of(fd);

	if (k != 0 && k != 1)
		return;
	pthread_mutex_lock(&mu);
	data_syncs[k]++;
	pthread_cond_broadcast(&cv);
	while (hold_data[k])
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

int
__wrap_syncfs(int fd)
{
	data_sync(fd);
	return __real_syncfs(fd);
}

int
__wrap_fsync(int fd)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		data_sync(fd);
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		int k = folder_of(fd);

		pthread_mutex_lock(&mu);
		if (k == 2 && data_syncs[1] == 0)
			a_alone = 1;
		in_dir_fsync = 1;
		pthread_cond_broadcast(&cv);
		while (hold_dirs && !released)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		rc = __real_fsync(fd);
		pthread_mutex_lock(&mu);
		dir_fsyncs++;
		pthread_mutex_unlock(&mu);
		return rc;
	}
	return __real_fsync(fd);
}

int
__wrap_futimens(int fd, const struct timespec ts[2])
{
	int rc;

	pthread_mutex_lock(&mu);
	while (gate)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	rc = __real_futimens(fd, ts);
	pthread_mutex_lock(&mu);
	written++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return rc;
}

static void
queue_files(struct ph_lio *l, const char *dir, struct ph_lio_file **v, size_t base)
{
	char rel[64], data[96];
	size_t i;

	for (i = 0; i < N; i++) {
		snprintf(rel, sizeof(rel), "%s/f%zu", dir, i);
		snprintf(data, sizeof(data), "content of %s", rel);
		assert_non_null(v[i] = ph_lio_file_new(rel));
		v[i]->mode = 0644;
		v[i]->mtime = 1700000000;
		v[i]->expect = strlen(data);
		v[i]->cookie = base + i;
		assert_int_equal(ph_lio_write(l, v[i], 0, data, strlen(data)), 0);
		ph_lio_finish(l, v[i], PH_LIO_COMMIT);
	}
}

/* Is rel under its final name with the content queue_files wrote? */
static int
placed(int root, const char *rel)
{
	char want[96], got[96];
	ssize_t n;
	int fd = openat(root, rel, O_RDONLY | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, got, sizeof(got) - 1);
	close(fd);
	snprintf(want, sizeof(want), "content of %s", rel);
	return n == (ssize_t)strlen(want) && memcmp(got, want, (size_t)n) == 0;
}

/* A scratch folder (dir, a mkdtemp template) with a/ and b/: its fd. */
static int
scratch_root(char *dir)
{
	int root;

	assert_non_null(mkdtemp(dir));
	assert_true((root = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	assert_int_equal(mkdirat(root, "a", 0755), 0);
	assert_int_equal(mkdirat(root, "b", 0755), 0);
	return root;
}

/* Its end: a/ and b/ empty (no temp file left beside the files the test
 * removed), then gone. */
static void
scratch_end(int root, const char *dir)
{
	assert_int_equal(unlinkat(root, "a", AT_REMOVEDIR), 0);
	assert_int_equal(unlinkat(root, "b", AT_REMOVEDIR), 0);
	close(root);
	assert_int_equal(rmdir(dir), 0);
}

static void
wait_for(int *flag, int at_least)
{
	pthread_mutex_lock(&mu);
	while (*flag < at_least)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void
test_handed_back_after_the_folders_sync(void **state)
{
	char dir[] = "/tmp/phsync-liob-XXXXXX", rel[64];
	struct ph_lio *l = NULL;
	struct ph_lio_file *a[N], *b[N], *done[2 * N];
	size_t got = 0, i;
	struct stat st;
	int root;

	(void)state;
	root = scratch_root(dir);
	hold_dirs = 1;
	assert_int_equal(ph_lio_new(root, 1, &l), 0);
	/* The I/O thread waits in the first file's end until all N are
	 * queued: they then make one batch. */
	queue_files(l, "a", a, 0);
	pthread_mutex_lock(&mu);
	gate = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	/* The first batch goes to the committer once the I/O thread is idle;
	 * it syncs the data, renames, and is held in the folder's fsync. */
	wait_for(&in_dir_fsync, 1);
	for (i = 0; i < N; i++) {
		snprintf(rel, sizeof(rel), "a/f%zu", i);
		assert_true(placed(root, rel));     /* renamed already ... */
	}
	assert_int_equal(ph_lio_pop(l, done, 2 * N, 0), 0);   /* ... but none handed back */
	/* The I/O thread is not held: it writes the next files meanwhile. */
	queue_files(l, "b", b, N);
	wait_for(&written, 2 * N);
	assert_int_equal(ph_lio_pop(l, done, 2 * N, 0), 0);
	for (i = 0; i < N; i++) {
		snprintf(rel, sizeof(rel), "b/f%zu", i);
		assert_false(placed(root, rel));    /* the next batch waits its turn */
	}
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	while (got < 2 * N)
		got += ph_lio_pop(l, done + got, 2 * N - got, 1);
	pthread_mutex_lock(&mu);
	assert_true(dir_fsyncs >= 2);           /* a/ and b/, each before its files came back */
	pthread_mutex_unlock(&mu);
	for (i = 0; i < 2 * N; i++) {
		struct ph_lio_file *f = done[i];

		/* In order: the first batch's files before the next one's. */
		assert_int_equal(f->cookie, i);
		assert_int_equal(f->err, 0);
		assert_int_equal(f->landed, PH_LIO_PLACED);
		assert_true(placed(root, f->rel));
		/* The identity taken on placing is the file's under its name. */
		assert_true(f->has_st);
		assert_int_equal(fstatat(root, f->rel, &st, AT_SYMLINK_NOFOLLOW), 0);
		assert_int_equal(f->st.ino, st.st_ino);
		assert_int_equal(f->st.dev, st.st_dev);
		assert_int_equal(f->st.ctime_ns,
		                 (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
		assert_int_equal(f->st.mtime_sec, 1700000000);
		assert_int_equal(f->st.type, PH_FT_REG);
		/* Handed back, it holds no fd: the batches' count of fds
		 * against the open-file limit relies on it (files not yet
		 * taken once held their folder's and failed others with
		 * EMFILE). */
		assert_true(f->fd < 0);
		assert_true(f->dirfd < 0);
		assert_int_equal(unlinkat(root, f->rel, 0), 0);
		ph_lio_file_free(f);
	}
	ph_lio_free(l);
	scratch_end(root, dir);
}

static void
set(int *flag, int v)
{
	pthread_mutex_lock(&mu);
	*flag = v;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Batches back to back: the second batch's data sync also makes the first
 * one's renames durable (its folder is never synced on its own before it),
 * and the first is handed back only after that sync: one sync a batch. */
static void
test_placed_batch_rides_the_next_sync(void **state)
{
	char dir[] = "/tmp/phsync-liob-XXXXXX", rel[64];
	struct ph_lio *l = NULL;
	struct ph_lio_file *a[N], *b[N], *done[2 * N];
	size_t got = 0, i;
	int root;

	(void)state;
	pthread_mutex_lock(&mu);
	gate = 1;
	hold_dirs = 0;
	written = dir_fsyncs = a_alone = 0;
	data_syncs[0] = data_syncs[1] = 0;
	hold_data[0] = hold_data[1] = 1;
	pthread_mutex_unlock(&mu);
	root = scratch_root(dir);
	assert_int_equal(ph_lio_new(root, 1, &l), 0);
	queue_files(l, "a", a, 0);
	set(&gate, 0);
	/* The committer is held in batch a's data sync ... */
	wait_for(&data_syncs[0], 1);
	/* ... while the I/O thread writes batch b. */
	queue_files(l, "b", b, N);
	wait_for(&written, 2 * N);
	set(&hold_data[0], 0);
	/* b's data sync carries a's renames: a is placed but not handed back
	 * until it returns, and a/ was not synced on its own before it. */
	wait_for(&data_syncs[1], 1);
	for (i = 0; i < N; i++) {
		snprintf(rel, sizeof(rel), "a/f%zu", i);
		assert_true(placed(root, rel));
		snprintf(rel, sizeof(rel), "b/f%zu", i);
		assert_false(placed(root, rel));
	}
	assert_int_equal(ph_lio_pop(l, done, 2 * N, 0), 0);
	set(&hold_data[1], 0);
	while (got < 2 * N)
		got += ph_lio_pop(l, done + got, 2 * N - got, 1);
	pthread_mutex_lock(&mu);
	assert_int_equal(a_alone, 0);
	pthread_mutex_unlock(&mu);
	for (i = 0; i < 2 * N; i++) {
		assert_int_equal(done[i]->cookie, i);
		assert_int_equal(done[i]->err, 0);
		assert_true(placed(root, done[i]->rel));
		assert_int_equal(unlinkat(root, done[i]->rel, 0), 0);
		ph_lio_file_free(done[i]);
	}
	ph_lio_free(l);
	scratch_end(root, dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handed_back_after_the_folders_sync),
		cmocka_unit_test(test_placed_batch_rides_the_next_sync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
