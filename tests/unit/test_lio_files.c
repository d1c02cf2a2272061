/* SPDX-License-Identifier: ISC */
/* What the pull's local I/O thread (src/sync/lio.c) leaves on disk, through
 * pfs.h only, so the same source runs on Linux (unit.test_lio_files) and
 * under Wine (win.unit.test_lio_files, lio.c compiled in): new files with
 * their bytes and time, a guarded file replaced or, when it changed, kept
 * with the new content beside it under a conflict name, a COPY from an old
 * copy, an abort and a wrong length that leave nothing, and a cut download
 * kept under a partial name and then resumed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lio.h"
#include "pfs.h"
#include "ut_fs.h"

#define MTIME 1700000000
#define BIG ((size_t)PH_RESUME_MIN_PREFIX + 4096)

static char dir[160];
static int root = -1;

static int
setup(void **state)
{
	(void)state;
	if (ut_scratch(dir, sizeof(dir), "phsync-liof") != 0)
		return -1;
	root = ph_dir_open_path(dir);
	return root >= 0 && ph_mkdirat(root, "a", 0755) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	ph_close(root);
	ut_rmtree(dir);
	return 0;
}

/* rel's whole content (malloc'ed, *n bytes), or NULL. */
static uint8_t *
slurp(const char *rel, size_t *n)
{
	struct ph_stat st;
	uint8_t *b;
	int fd = ph_openat(root, rel, PH_O_RDONLY | PH_O_NOFOLLOW, 0);

	if (fd < 0)
		return NULL;
	if (ph_fstat(fd, &st) != 0 || (b = malloc(st.size + 1)) == NULL ||
	    ph_pread(fd, b, st.size, 0) != (int64_t)st.size) {
		ph_close(fd);
		return NULL;
	}
	ph_close(fd);
	*n = st.size;
	return b;
}

static void
put(const char *rel, const char *text, int64_t mtime)
{
	int fd = ph_openat(root, rel, PH_O_WRONLY | PH_O_CREAT | PH_O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, text, strlen(text), 0), (int64_t)strlen(text));
	assert_int_equal(ph_set_times(fd, mtime, 0), 0);
	ph_close(fd);
}

/* Files in folder a/ (a temp left behind would show here). */
static size_t
count_in_a(void)
{
	struct ph_dir *d;
	struct ph_dirent e;
	size_t n = 0;
	int fd = ph_openat(root, "a", PH_O_DIR, 0);

	assert_true(fd >= 0);
	assert_int_equal(ph_dir_list(fd, &d), 0);
	while (ph_dir_read(d, &e) == 1)
		n++;
	ph_dir_end(d);
	ph_close(fd);
	return n;
}

static void
clear_a(void)
{
	char p[200];

	snprintf(p, sizeof(p), "%s/a", dir);
	ut_clear(p);
}

static struct ph_lio_file *
one(struct ph_lio *l, struct ph_lio_file *f, int how)
{
	struct ph_lio_file *done = NULL;

	ph_lio_finish(l, f, how);
	assert_int_equal(ph_lio_pop(l, &done, 1, 1), 1);
	assert_ptr_equal(done, f);
	return done;
}

static struct ph_lio_file *
file(const char *rel, uint64_t expect)
{
	struct ph_lio_file *f = ph_lio_file_new(rel);

	assert_non_null(f);
	f->mode = 0644;
	f->mtime = MTIME;
	f->expect = expect;
	return f;
}

/* A new file, its pieces out of order: its bytes, time and identity. */
static void
test_new_file(void **state)
{
	struct ph_lio *l;
	struct ph_lio_file *f;
	struct ph_stat st;
	uint8_t *b;
	size_t n = 0;

	(void)state;
	assert_int_equal(ph_lio_new(root, 1, &l), 0);
	f = file("a/new.txt", 11);
	assert_int_equal(ph_lio_write(l, f, 6, "world", 5), 0);
	assert_int_equal(ph_lio_write(l, f, 0, "hello ", 6), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, 0);
	assert_int_equal(f->landed, PH_LIO_PLACED);
	assert_int_equal(f->dst_mtime, MTIME);
	assert_non_null(b = slurp("a/new.txt", &n));
	assert_int_equal(n, 11);
	assert_memory_equal(b, "hello world", 11);
	free(b);
	assert_int_equal(ph_fstatat(root, "a/new.txt", &st), 0);
	assert_int_equal(st.mtime_sec, MTIME);
	assert_true(f->has_st);
	assert_int_equal(f->st.ino, st.ino);
	assert_int_equal(f->st.dev, st.dev);
	assert_int_equal(f->st.size, 11);
	ph_lio_file_free(f);
	ph_lio_free(l);
	assert_int_equal(count_in_a(), 1);
	clear_a();
}

/* A guarded file as the plan saw it is replaced; one that changed since
 * stays, the new content beside it. */
static void
test_guarded_replace(void **state)
{
	struct ph_lio *l;
	struct ph_lio_file *f;
	uint8_t *b;
	size_t n = 0;

	(void)state;
	put("a/x.txt", "old", 1600000000);
	put("a/y.txt", "edited here", 1600000000);
	assert_int_equal(ph_lio_new(root, 1, &l), 0);
	f = file("a/x.txt", 3);
	f->guard = 1;
	f->guard_size = 3;
	f->guard_mtime = 1600000000;
	assert_int_equal(ph_lio_write(l, f, 0, "new", 3), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, 0);
	assert_int_equal(f->landed, PH_LIO_PLACED);
	ph_lio_file_free(f);
	assert_non_null(b = slurp("a/x.txt", &n));
	assert_int_equal(n, 3);
	assert_memory_equal(b, "new", 3);
	free(b);
	f = file("a/y.txt", 3);
	f->guard = 1;
	f->guard_size = 3;   /* the plan saw 3 bytes there: it changed */
	f->guard_mtime = 1600000000;
	f->conflict_time = MTIME;
	assert_int_equal(ph_lio_write(l, f, 0, "new", 3), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, 0);
	assert_int_equal(f->landed, PH_LIO_BESIDE);
	assert_non_null(f->beside);
	assert_non_null(b = slurp("a/y.txt", &n));
	assert_int_equal(n, 11);
	assert_memory_equal(b, "edited here", 11);
	free(b);
	{
		char rel[300];

		snprintf(rel, sizeof(rel), "a/%s", f->beside);
		assert_non_null(b = slurp(rel, &n));
		assert_int_equal(n, 3);
		assert_memory_equal(b, "new", 3);
		free(b);
	}
	ph_lio_file_free(f);
	ph_lio_free(l);
	assert_int_equal(count_in_a(), 3);
	clear_a();
}

/* A delta's COPY reads the old copy; an abort and a commit of another
 * length than expected leave nothing behind. */
static void
test_copy_abort_short(void **state)
{
	struct ph_lio *l;
	struct ph_lio_file *f;
	uint8_t *b;
	size_t n = 0;

	(void)state;
	put("a/basis", "0123456789", 1600000000);
	assert_int_equal(ph_lio_new(root, 0, &l), 0);
	f = file("a/c.txt", 8);
	f->basis = ph_openat(root, "a/basis", PH_O_RDONLY | PH_O_NOFOLLOW, 0);
	assert_true(f->basis >= 0);
	assert_int_equal(ph_lio_copy(l, f, 0, 6, 4), 0);
	assert_int_equal(ph_lio_write(l, f, 4, "-", 1), 0);
	assert_int_equal(ph_lio_copy(l, f, 5, 0, 3), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, 0);
	ph_lio_file_free(f);
	assert_non_null(b = slurp("a/c.txt", &n));
	assert_int_equal(n, 8);
	assert_memory_equal(b, "6789-012", 8);
	free(b);
	f = file("a/gone.txt", 4);
	assert_int_equal(ph_lio_write(l, f, 0, "abcd", 4), 0);
	f = one(l, f, PH_LIO_ABORT);
	assert_int_not_equal(f->err, 0);
	ph_lio_file_free(f);
	f = file("a/short.txt", 5);
	assert_int_equal(ph_lio_write(l, f, 0, "abcd", 4), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, -EIO);
	ph_lio_file_free(f);
	ph_lio_free(l);
	assert_int_equal(count_in_a(), 2);   /* basis and c.txt */
	clear_a();
}

/* A cut download keeps its good prefix under a partial name; the next
 * run resumes from it and the file comes out whole. */
static void
test_keep_and_resume(void **state)
{
	struct ph_lio *l;
	struct ph_lio_file *f;
	uint8_t *src = malloc(BIG), *b;
	char kept[256];
	uint64_t have;
	size_t i, n = 0;

	(void)state;
	assert_non_null(src);
	for (i = 0; i < BIG; i++)
		src[i] = (uint8_t)(i * 7 + i / 251);
	assert_int_equal(ph_lio_new(root, 1, &l), 0);
	f = file("a/big.bin", BIG);
	assert_int_equal(ph_lio_write(l, f, 0, src, PH_RESUME_MIN_PREFIX + 100), 0);
	f = one(l, f, PH_LIO_KEEP);
	assert_int_equal(f->kept, PH_RESUME_MIN_PREFIX + 100);
	snprintf(kept, sizeof(kept), "%s", f->kept_name);
	have = f->kept;
	ph_lio_file_free(f);
	assert_int_equal(count_in_a(), 1);
	f = file("a/big.bin", BIG);
	assert_non_null(f->resume_name = strdup(kept));
	f->resume_have = have;
	assert_int_equal(ph_lio_write(l, f, have, src + have, BIG - (size_t)have), 0);
	f = one(l, f, PH_LIO_COMMIT);
	assert_int_equal(f->err, 0);
	ph_lio_file_free(f);
	ph_lio_free(l);
	assert_non_null(b = slurp("a/big.bin", &n));
	assert_int_equal(n, BIG);
	assert_memory_equal(b, src, BIG);
	free(b);
	free(src);
	assert_int_equal(count_in_a(), 1);   /* the partial became the file */
	clear_a();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_file),
		cmocka_unit_test(test_guarded_replace),
		cmocka_unit_test(test_copy_abort_short),
		cmocka_unit_test(test_keep_and_resume),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
