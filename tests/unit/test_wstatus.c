/* SPDX-License-Identifier: ISC */
/* The watcher's status records (src/watch/wstatus.c): a record read back as
 * written (escaped values included), one keeper per pair, a killed keeper's
 * record told apart by its free lock, a clean close removing it, and files
 * that are not records ignored. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "wstatus.h"

struct seen {
	int n;
	int live[8];
	char name[8][128], local[8][256], state[8][32], error[8][256];
	int64_t since[8];
	uint64_t keepalives[8];
	int connected[8];
};

static void
collect(const struct ph_wst_rec *r, int live, void *arg)
{
	struct seen *s = arg;

	if (s->n >= 8)
		return;
	s->live[s->n] = live;
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", r->name);
	snprintf(s->local[s->n], sizeof(s->local[0]), "%s", r->local);
	snprintf(s->state[s->n], sizeof(s->state[0]), "%s", r->state);
	snprintf(s->error[s->n], sizeof(s->error[0]), "%s", r->error);
	s->since[s->n] = r->since;
	s->keepalives[s->n] = r->keepalives;
	s->connected[s->n] = r->connected;
	s->n++;
}

static char *
tmpdir(void)
{
	char tmpl[] = "/tmp/phsync-wstatus-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void
rmtree(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void
rec_init(struct ph_wst_rec *r, const char *name, const char *local)
{
	memset(r, 0, sizeof(*r));
	r->pid = (long)getpid();
	r->name = name;
	r->direction = "push";
	r->remote = "phone:/sdcard/DCIM";
	r->local = local;
	r->config = "";
	r->state = "watching";
	r->since = 1700000000;
	r->error = "";
	r->note = "";
}

static void
test_roundtrip_and_close(void **state)
{
	char *dir = tmpdir();
	struct ph_wst *w = NULL, *w2 = NULL;
	struct ph_wst_rec r;
	struct seen s = { 0 };
	/* Values that would break a line format unescaped. */
	const char *odd = "/home/u/a\nname=x\\y\x01z";

	(void)state;
	assert_int_equal(ph_wst_list(dir, collect, &s), 0); /* no folder yet */
	assert_int_equal(s.n, 0);
	assert_int_equal(ph_wst_open(dir, "push", "phone:/sdcard/DCIM", odd, &w), 0);
	rec_init(&r, "pics", odd);
	r.keepalives = 7;
	r.connected = 1;
	r.error = "line one\nline two";
	assert_int_equal(ph_wst_write(w, &r), 0);
	assert_int_equal(ph_wst_list(dir, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.live[0], 1);
	assert_string_equal(s.name[0], "pics");
	assert_string_equal(s.local[0], odd);
	assert_string_equal(s.state[0], "watching");
	assert_string_equal(s.error[0], "line one\nline two");
	assert_int_equal(s.since[0], 1700000000);
	assert_int_equal(s.keepalives[0], 7);
	assert_int_equal(s.connected[0], 1);
	/* One keeper per pair: a second one is told, and writes nothing. */
	assert_int_equal(ph_wst_open(dir, "push", "phone:/sdcard/DCIM", odd, &w2), -EBUSY);
	assert_null(w2);
	/* A rewrite replaces the record whole. */
	r.state = "syncing";
	assert_int_equal(ph_wst_write(w, &r), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(ph_wst_list(dir, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.state[0], "syncing");
	/* A clean close removes it; the pair is free again. */
	ph_wst_close(w);
	memset(&s, 0, sizeof(s));
	assert_int_equal(ph_wst_list(dir, collect, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(ph_wst_open(dir, "push", "phone:/sdcard/DCIM", odd, &w2), 0);
	ph_wst_close(w2);
	ph_wst_close(NULL);
	assert_int_equal(ph_wst_write(NULL, &r), 0);
	rmtree(dir);
	free(dir);
}

static void
test_killed_keeper_is_not_live(void **state)
{
	char *dir = tmpdir(), path[512];
	struct seen s = { 0 };
	pid_t pid;
	int st, fd;

	(void)state;
	/* A child keeps a record and dies without closing it (as SIGKILL). */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ph_wst *w;
		struct ph_wst_rec r;

		rec_init(&r, "gone", "/tmp/x");
		if (ph_wst_open(dir, "pull", "phone:/x", "/tmp/x", &w) != 0 || ph_wst_write(w, &r) != 0)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* And a file that is not a record, which is ignored. */
	snprintf(path, sizeof(path), "%s/watch/0000000000000000.status", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	close(fd);
	assert_int_equal(ph_wst_list(dir, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.name[0], "gone");
	assert_int_equal(s.live[0], 0);
	rmtree(dir);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_and_close),
		cmocka_unit_test(test_killed_keeper_is_not_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
