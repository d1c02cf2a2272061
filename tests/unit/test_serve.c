/* SPDX-License-Identifier: ISC */
/* The remote helper's SETSTAT against a symlink swapped in after its first
 * look at a name (issue 22, item 4), made deterministic: the test is linked
 * with -Wl,--wrap for fstatat and openat (tests/CMakeLists.txt), and the
 * wrappers rename a symlink to an outside file over the name right after
 * the helper's first call that looks at it, as a second session racing the
 * helper at its worst moment would. Whatever the helper checked by then,
 * the outside file's mode must not change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "serve.h"

static char dir[] = "/tmp/phsync-serve-XXXXXX";
static char root[64], outside[96], victim[96], swap[96];
static const char *armed;   /* the name whose first look triggers the swap */
static int swaps;

int __real_fstatat64(int dfd, const char *path, struct stat *st, int flags);
int __wrap_fstatat64(int dfd, const char *path, struct stat *st, int flags);
int __real_fstatat(int dfd, const char *path, struct stat *st, int flags);
int __wrap_fstatat(int dfd, const char *path, struct stat *st, int flags);
int __real_openat64(int dfd, const char *path, int flags, ...);
int __wrap_openat64(int dfd, const char *path, int flags, ...);
int __real_openat(int dfd, const char *path, int flags, ...);
int __wrap_openat(int dfd, const char *path, int flags, ...);

static void
looked_at(const char *path)
{
	int e = errno;

	if (armed != NULL && strcmp(path, armed) == 0) {
		armed = NULL;
		if (rename(swap, victim) == 0)
			swaps++;
	}
	errno = e;
}

int
__wrap_fstatat64(int dfd, const char *path, struct stat *st, int flags)
{
	int rc = __real_fstatat64(dfd, path, st, flags);

	looked_at(path);
	return rc;
}

int
__wrap_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	int rc = __real_fstatat(dfd, path, st, flags);

	looked_at(path);
	return rc;
}

int
__wrap_openat64(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int rc;

	va_start(ap, flags);
	mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
	va_end(ap);
	rc = __real_openat64(dfd, path, flags, mode);
	looked_at(path);
	return rc;
}

int
__wrap_openat(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int rc;

	va_start(ap, flags);
	mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
	va_end(ap);
	rc = __real_openat(dfd, path, flags, mode);
	looked_at(path);
	return rc;
}

static void
make_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "data\n", 5), 5);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static mode_t
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

/* Each test starts from an empty root, whatever the one before left. */
static void
clean(void)
{
	rmdir(victim);
	unlink(victim);
	unlink(swap);
	unlink(outside);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(outside, sizeof(outside), "%s/outside.txt", dir);
	snprintf(victim, sizeof(victim), "%s/victim", root);
	snprintf(swap, sizeof(swap), "%s/swap", root);
	return mkdir(root, 0700);
}

static int
teardown(void **state)
{
	char cmd[96];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Sends one request body (type, id, fields) and returns the STATUS code of
 * the one reply. */
static uint32_t
request(struct ph_serve *s, const struct ph_buf *req)
{
	struct ph_buf out = { NULL, 0, 0, 1u << 20 };
	uint32_t code;

	assert_int_equal(ph_serve_packet(s, req->data, req->len, &out), 0);
	assert_true(out.len >= 13);
	assert_int_equal(out.data[4], 101);   /* STATUS */
	code = ph_be32_get(out.data + 9);
	ph_buf_free(&out);
	return code;
}

static struct ph_serve *
start(void)
{
	static const uint8_t init[] = { 1, 0, 0, 0, 3 };
	struct ph_buf out = { NULL, 0, 0, 1u << 20 };
	struct ph_serve *s;

	assert_int_equal(ph_serve_new(root, &s), 0);
	assert_int_equal(ph_serve_packet(s, init, sizeof(init), &out), 0);
	ph_buf_free(&out);
	return s;
}

static uint32_t
setstat_mode(struct ph_serve *s, uint32_t id, const char *path, uint32_t mode)
{
	struct ph_buf b = { NULL, 0, 0, 1u << 20 };
	uint32_t code;

	assert_int_equal(ph_buf_put_u8(&b, 9), 0);              /* SETSTAT */
	assert_int_equal(ph_buf_put_u32(&b, id), 0);
	assert_int_equal(ph_buf_put_cstr(&b, path), 0);
	assert_int_equal(ph_buf_put_u32(&b, 4), 0);             /* PERMISSIONS */
	assert_int_equal(ph_buf_put_u32(&b, mode), 0);
	code = request(s, &b);
	ph_buf_free(&b);
	return code;
}

/* The symlink arrives right after the helper first looks at the name. */
static void
test_setstat_symlink_swapped_in_after_the_first_look(void **state)
{
	struct ph_serve *s = start();
	uint32_t code;

	(void)state;
	clean();
	make_file(outside, 0600);
	make_file(victim, 0600);
	assert_int_equal(symlink(outside, swap), 0);
	armed = "victim";
	swaps = 0;
	code = setstat_mode(s, 1, victim, 0646);
	armed = NULL;
	assert_int_equal(swaps, 1);                  /* the race did happen */
	assert_int_equal(mode_of(outside), 0600);    /* and reached nothing outside */
	(void)code;                                  /* OK (the file it opened) or refused */
	ph_serve_free(s);
	clean();
}

/* Every request that acts on a name, raced the same way: the outside file
 * keeps its bytes, size, mode and time whatever the helper answers. */
static void
test_every_request_raced(void **state)
{
	/* looks: the request looks at the name before it acts (MKDIR does not:
	 * mkdirat alone, no moment to race). */
	struct req { const char *what; uint8_t type; uint32_t pflags, aflags; int looks; };
	static const struct req reqs[] = {
		{ "SETSTAT size and mode", 9, 0, 1 | 4, 1 },
		{ "SETSTAT times", 9, 0, 8, 1 },
		{ "SETSTAT owner", 9, 0, 2, 1 },
		{ "OPEN to write, truncating", 3, 2 | 16, 0, 1 },
		{ "OPEN to create", 3, 2 | 8, 4, 1 },
		{ "REMOVE", 13, 0, 0, 1 },
		{ "MKDIR", 14, 0, 4, 0 },
		{ "statvfs", 200, 0, 0, 1 },
	};
	struct ph_serve *s = start();
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		struct ph_buf b = { NULL, 0, 0, 1u << 20 }, out = { NULL, 0, 0, 1u << 20 };
		const struct req *q = &reqs[i];
		struct stat st;

		clean();
		make_file(outside, 0600);
		make_file(victim, 0600);
		assert_int_equal(symlink(outside, swap), 0);
		assert_int_equal(ph_buf_put_u8(&b, q->type), 0);
		assert_int_equal(ph_buf_put_u32(&b, 10 + (uint32_t)i), 0);
		if (q->type == 200)
			assert_int_equal(ph_buf_put_cstr(&b, "statvfs@openssh.com"), 0);
		assert_int_equal(ph_buf_put_cstr(&b, victim), 0);
		if (q->type == 3)
			assert_int_equal(ph_buf_put_u32(&b, q->pflags), 0);
		if (q->type != 13 && q->type != 200) {
			assert_int_equal(ph_buf_put_u32(&b, q->aflags), 0);
			if (q->aflags & 1)
				assert_int_equal(ph_buf_put_u64(&b, 0), 0);
			if (q->aflags & 2) {
				assert_int_equal(ph_buf_put_u32(&b, 12345), 0);
				assert_int_equal(ph_buf_put_u32(&b, 12345), 0);
			}
			if (q->aflags & 4)
				assert_int_equal(ph_buf_put_u32(&b, 0646), 0);
			if (q->aflags & 8) {
				assert_int_equal(ph_buf_put_u32(&b, 1000), 0);
				assert_int_equal(ph_buf_put_u32(&b, 1000), 0);
			}
		}
		armed = "victim";
		swaps = 0;
		assert_int_equal(ph_serve_packet(s, b.data, b.len, &out), 0);
		armed = NULL;
		if (swaps != q->looks)
			fail_msg("%s: the race did not happen", q->what);
		assert_int_equal(lstat(outside, &st), 0);
		if ((st.st_mode & 07777) != 0600 || st.st_size != 5 || st.st_mtime < 100000 ||
		    st.st_uid == 12345)
			fail_msg("%s reached the outside file: mode %o, size %lld, mtime %lld", q->what,
			         (unsigned)(st.st_mode & 07777), (long long)st.st_size,
			         (long long)st.st_mtime);
		ph_buf_free(&b);
		ph_buf_free(&out);
		/* A handle the OPEN gave stays open: the next start() is fresh. */
	}
	ph_serve_free(s);
	clean();
	rmdir(victim);
}

/* The symlink is there before the request: refused, nothing changed. */
static void
test_setstat_symlink_in_place_refused(void **state)
{
	struct ph_serve *s = start();

	(void)state;
	clean();
	make_file(outside, 0600);
	assert_int_equal(symlink(outside, victim), 0);
	assert_int_equal(setstat_mode(s, 2, victim, 0646), 3);  /* PERMISSION_DENIED */
	assert_int_equal(mode_of(outside), 0600);
	ph_serve_free(s);
	clean();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setstat_symlink_swapped_in_after_the_first_look),
		cmocka_unit_test(test_every_request_raced),
		cmocka_unit_test(test_setstat_symlink_in_place_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
