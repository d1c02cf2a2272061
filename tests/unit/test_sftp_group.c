/* SPDX-License-Identifier: ISC */
/* SFTP request groups (sftp.h): the client counts a group's requests in
 * when queued and out once their callback has returned, however they end
 * (a reply, an abort, the link's death, a write taken back after a stop),
 * runs the group's idle hook when the count falls to 0, and lets a
 * refused request's group go. Driven against a scripted server over a
 * socketpair, and a channel in memory for the stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctx.h"
#include "sftp.h"
#include "ut_sftp.h"

/* An owner of requests, as push's files are: freed by its idle hook. */
struct owner {
	struct ph_sftp_group g;
	int *idles;        /* outlives the owner */
	int *calls;
	unsigned seen[4];  /* g.inflight as each callback saw it */
	uint8_t types[4];
};

static void
owner_idle(void *arg)
{
	struct owner *o = arg;

	(*o->idles)++;
	free(o);           /* ASan: the client must not touch g afterwards */
}

static void
owner_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct owner *o = arg;
	int i = (*o->calls)++;

	(void)s;
	if (i < 4) {
		o->seen[i] = o->g.inflight;
		o->types[i] = r->type;
	}
}

static struct owner *
owner_new(int *idles, int *calls)
{
	struct owner *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	o->g.idle = owner_idle;
	o->g.arg = o;
	o->idles = idles;
	o->calls = calls;
	return o;
}

static void
plain_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	(*(int *)arg)++;
}

/* Counted in when queued, out after each callback returned (so a callback
 * sees its own request still counted); requests outside the group are not
 * counted in it; idle runs once, when the last one's callback returned. */
static void
test_group_counts_replies(void **state)
{
	struct ut_link l;
	struct owner *o;
	int idles = 0, calls = 0, others = 0;

	(void)state;
	ut_link_open(&l);
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_remove(l.s, "/b", plain_cb, &others), 0);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/c", owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 2);
	assert_int_equal(ph_sftp_inflight(l.s), 3);

	ut_answer_ok(&l, 1);
	ut_answer_ok(&l, 2);
	while (others == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(o->seen[0], 2);   /* its own request still counted */
	assert_int_equal(o->types[0], PH_FXP_STATUS);
	assert_int_equal(o->g.inflight, 1);
	assert_int_equal(idles, 0);

	ut_answer_ok(&l, 3);
	while (idles == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	/* o is freed now: only the counters outside it are read. */
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	assert_int_equal(ph_sftp_inflight(l.s), 0);
	ut_link_close(&l);
}

/* A request refused before it is queued is not counted, and its group
 * does not stick to the next request. */
static void
test_group_refused_request(void **state)
{
	static const struct ph_sftp_handle h = { 4, { 'h', 'a', 'n', 'd' } };
	struct ut_link l;
	struct ph_sftp_group g = { 0, NULL, NULL };
	int others = 0;

	(void)state;
	ut_link_open(&l);
	/* No fsync@openssh.com in VERSION: refused. */
	assert_int_equal(ph_sftp_fsync(ph_sftp_in_group(l.s, &g), &h, plain_cb, &others),
	                 PHSYNC_EUNSUPPORTED);
	assert_int_equal(g.inflight, 0);
	/* A length of 0 is refused too. */
	assert_int_equal(ph_sftp_check_file(ph_sftp_in_group(l.s, &g), &h, "md5", 0, 0,
	                                    256, plain_cb, &others), PHSYNC_EINVAL);
	assert_int_equal(g.inflight, 0);
	assert_int_equal(ph_sftp_remove(l.s, "/x", plain_cb, &others), 0);
	assert_int_equal(g.inflight, 0);
	assert_int_equal(ph_sftp_inflight(l.s), 1);
	ut_answer_ok(&l, 1);
	while (others == 0)
		assert_int_equal(ph_sftp_pump(l.s, 1000), 0);
	assert_int_equal(g.inflight, 0);
	ut_link_close(&l);
}

/* ph_sftp_abort and a link that dies settle the group's requests too
 * (callbacks with type 0), and idle runs once. */
static void
test_group_abort_and_dead_link(void **state)
{
	struct ut_link l;
	struct owner *o;
	int idles = 0, calls = 0;

	(void)state;
	ut_link_open(&l);
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_stat(ph_sftp_in_group(l.s, &o->g), 1, "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_stat(ph_sftp_in_group(l.s, &o->g), 1, "/b", owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 2);
	ph_sftp_abort(l.s, PHSYNC_EINTR);
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	assert_int_equal(ph_sftp_inflight(l.s), 0);
	/* Later requests fail: never counted. */
	{
		struct ph_sftp_group g = { 0, NULL, NULL };

		assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &g), "/c", NULL, NULL),
		                 PHSYNC_EINTR);
		assert_int_equal(g.inflight, 0);
	}
	ut_link_close(&l);

	/* The server goes away with two requests of the group pending. */
	ut_link_open(&l);
	idles = calls = 0;
	o = owner_new(&idles, &calls);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/a", owner_cb, o), 0);
	assert_int_equal(ph_sftp_remove(ph_sftp_in_group(l.s, &o->g), "/b", owner_cb, o), 0);
	ut_answer_ok(&l, 1);
	close(l.server);
	l.server = -1;
	while (idles == 0)
		if (ph_sftp_pump(l.s, 1000) != 0)
			break;
	assert_int_equal(ph_sftp_dead(l.s), PHSYNC_ECONNECT);
	assert_int_equal(calls, 2);
	assert_int_equal(idles, 1);
	ut_link_close(&l);
}

/* Writes taken back after a stop are settled in their group too: their
 * callbacks run (PHSYNC_EINTR) and the count goes down; the one sent
 * stays counted until its reply (here: the abort). */
static void
test_group_writes_taken_back(void **state)
{
	static const struct ph_sftp_handle h = { 4, { 'h', 'a', 'n', 'd' } };
	uint8_t data[1000];
	struct ut_mem m;
	struct ph_chan ch = ut_mem_chan(&m);
	struct ph_sftp *s;
	struct owner *o;
	int idles = 0, calls = 0, i;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.stop_at_wait = 1;   /* the window shut half-way into the first WRITE */
	memset(data, 7, sizeof(data));
	assert_int_equal(phsync_ctx_new(&m.ctx), 0);
	m.window = 1u << 20;
	assert_int_equal(ph_sftp_new(m.ctx, &ch, &s), 0);
	o = owner_new(&idles, &calls);
	m.window = 300;
	for (i = 0; i < 3; i++)
		assert_int_equal(ph_sftp_write(ph_sftp_in_group(s, &o->g), &h,
		                               (uint64_t)i * 1000, data, 1000, owner_cb, o), 0);
	assert_int_equal(o->g.inflight, 3);
	assert_int_equal(ph_sftp_flush(s), 0);
	assert_int_equal(calls, 2);                /* two taken back */
	assert_int_equal(o->types[0], PH_FXP_STATUS);
	assert_int_equal(o->g.inflight, 1);        /* the one on the wire */
	assert_int_equal(idles, 0);
	ph_sftp_abort(s, PHSYNC_EINTR);
	assert_int_equal(calls, 3);
	assert_int_equal(idles, 1);
	ph_sftp_free(s);
	ph_buf_free(&m.sent);
	phsync_ctx_free(m.ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_counts_replies),
		cmocka_unit_test(test_group_refused_request),
		cmocka_unit_test(test_group_abort_and_dead_link),
		cmocka_unit_test(test_group_writes_taken_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
