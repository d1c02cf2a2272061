/* SPDX-License-Identifier: ISC */
/* The pull's transfer states (src/sync/pull_state.c): the table allows
 * exactly the changes listed here (docs/ARCHITECTURE.md has the same
 * list), refuses every other one without moving the state, reaches every
 * state from OPEN, and every state reaches an end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "pull_state.h"

static const struct {
	int from, to;
} legal[] = {
	{ PH_XS_OPEN, PH_XS_WHOLE },
	{ PH_XS_OPEN, PH_XS_RESUME },
	{ PH_XS_OPEN, PH_XS_DELTA_SIGN },
	{ PH_XS_OPEN, PH_XS_CF_HOLD },
	{ PH_XS_OPEN, PH_XS_CF_ASK },
	{ PH_XS_OPEN, PH_XS_FAILED },
	{ PH_XS_WHOLE, PH_XS_DONE },
	{ PH_XS_WHOLE, PH_XS_FAILED },
	{ PH_XS_RESUME, PH_XS_DONE },
	{ PH_XS_RESUME, PH_XS_FAILED },
	{ PH_XS_DELTA_SIGN, PH_XS_DELTA_START },
	{ PH_XS_DELTA_SIGN, PH_XS_WHOLE },
	{ PH_XS_DELTA_SIGN, PH_XS_FAILED },
	{ PH_XS_DELTA_START, PH_XS_DELTA_READ },
	{ PH_XS_DELTA_START, PH_XS_WHOLE },
	{ PH_XS_DELTA_START, PH_XS_FAILED },
	{ PH_XS_DELTA_READ, PH_XS_DONE },
	{ PH_XS_DELTA_READ, PH_XS_FAILED },
	{ PH_XS_CF_HOLD, PH_XS_CF_ASK },
	{ PH_XS_CF_HOLD, PH_XS_WHOLE },
	{ PH_XS_CF_HOLD, PH_XS_FAILED },
	{ PH_XS_CF_ASK, PH_XS_CF_MATCH },
	{ PH_XS_CF_ASK, PH_XS_WHOLE },
	{ PH_XS_CF_ASK, PH_XS_FAILED },
	{ PH_XS_CF_MATCH, PH_XS_CF_READ },
	{ PH_XS_CF_MATCH, PH_XS_WHOLE },
	{ PH_XS_CF_MATCH, PH_XS_FAILED },
	{ PH_XS_CF_READ, PH_XS_DONE },
	{ PH_XS_CF_READ, PH_XS_FAILED },
};

static int
listed(int from, int to)
{
	size_t i;

	for (i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		if (legal[i].from == from && legal[i].to == to)
			return 1;
	return 0;
}

/* The table is exactly the list: each listed change allowed, every other
 * pair (a state to itself too) refused. */
static void
test_table_is_the_list(void **state)
{
	int from, to, n = 0;

	(void)state;
	for (from = 0; from < PH_XS_N; from++)
		for (to = 0; to < PH_XS_N; to++) {
			assert_int_equal(ph_xs_legal(from, to), listed(from, to));
			n += ph_xs_legal(from, to);
		}
	assert_int_equal(n, (int)(sizeof(legal) / sizeof(legal[0])));
}

/* An illegal change is refused and leaves the state as it was; a legal
 * one moves it. Out-of-range states are refused too. */
static void
test_illegal_change_is_caught(void **state)
{
	static const int bad[][2] = {
		{ PH_XS_DONE, PH_XS_WHOLE },        /* nothing leaves the ends */
		{ PH_XS_FAILED, PH_XS_FAILED },     /* failing twice */
		{ PH_XS_DONE, PH_XS_FAILED },       /* failing a committed file */
		{ PH_XS_OPEN, PH_XS_DONE },         /* done without reading */
		{ PH_XS_OPEN, PH_XS_DELTA_READ },   /* delta without a signature */
		{ PH_XS_WHOLE, PH_XS_DELTA_START }, /* whole never turns delta */
		{ PH_XS_DELTA_START, PH_XS_DONE },  /* done before the helper answered */
		{ PH_XS_CF_ASK, PH_XS_CF_READ },    /* copying before matching */
		{ PH_XS_CF_HOLD, PH_XS_CF_MATCH },  /* matching without digests */
		{ PH_XS_RESUME, PH_XS_WHOLE },      /* a kept prefix is not dropped */
		{ PH_XS_DELTA_READ, PH_XS_WHOLE },  /* no fallback once the delta runs */
		{ PH_XS_OPEN, PH_XS_N },
		{ PH_XS_OPEN, -1 },
	};
	size_t i;
	uint8_t s;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = (uint8_t)bad[i][0];
		assert_int_equal(ph_xs_step(&s, bad[i][1]), PHSYNC_EINVAL);
		assert_int_equal(s, bad[i][0]);
	}
	s = PH_XS_OPEN;
	assert_int_equal(ph_xs_step(&s, PH_XS_DELTA_SIGN), 0);
	assert_int_equal(s, PH_XS_DELTA_SIGN);
	assert_int_equal(ph_xs_step(&s, PH_XS_DELTA_START), 0);
	assert_int_equal(ph_xs_step(&s, PH_XS_WHOLE), 0);    /* the helper refused */
	assert_int_equal(ph_xs_step(&s, PH_XS_DONE), 0);
	assert_int_equal(s, PH_XS_DONE);
	assert_int_equal(ph_xs_step(&s, PH_XS_FAILED), PHSYNC_EINVAL);
	assert_int_equal(s, PH_XS_DONE);
}

/* Every state is reached from OPEN, and from every state both ends are
 * reachable but from the ends, which lead nowhere. */
static void
test_every_state_reachable(void **state)
{
	int seen[PH_XS_N], reach[PH_XS_N][PH_XS_N];
	int s, t, k, grew;

	(void)state;
	memset(reach, 0, sizeof(reach));
	for (s = 0; s < PH_XS_N; s++)
		for (t = 0; t < PH_XS_N; t++)
			reach[s][t] = ph_xs_legal(s, t);
	do {   /* transitive closure */
		grew = 0;
		for (s = 0; s < PH_XS_N; s++)
			for (k = 0; k < PH_XS_N; k++)
				for (t = 0; reach[s][k] && t < PH_XS_N; t++)
					if (reach[k][t] && !reach[s][t])
						reach[s][t] = grew = 1;
	} while (grew);
	for (t = 0; t < PH_XS_N; t++)
		seen[t] = t == PH_XS_OPEN || reach[PH_XS_OPEN][t];
	for (t = 0; t < PH_XS_N; t++)
		assert_true(seen[t]);
	for (s = 0; s < PH_XS_N; s++) {
		if (s == PH_XS_DONE || s == PH_XS_FAILED) {
			for (t = 0; t < PH_XS_N; t++)
				assert_false(ph_xs_legal(s, t));
			continue;
		}
		assert_true(reach[s][PH_XS_DONE]);
		assert_true(ph_xs_legal(s, PH_XS_FAILED));
	}
	assert_false(reach[PH_XS_WHOLE][PH_XS_DELTA_READ]);
}

/* Only the three states that wait for the main loop are parked, and each
 * state has its own name for the trace. */
static void
test_parked_and_names(void **state)
{
	int s, t;

	(void)state;
	for (s = 0; s < PH_XS_N; s++) {
		assert_int_equal(ph_xs_parked(s), s == PH_XS_DELTA_SIGN || s == PH_XS_CF_HOLD ||
		                                  s == PH_XS_CF_MATCH);
		assert_string_not_equal(ph_xs_name(s), "?");
		for (t = 0; t < s; t++)
			assert_string_not_equal(ph_xs_name(s), ph_xs_name(t));
	}
	assert_string_equal(ph_xs_name(PH_XS_DELTA_READ), "DELTA_READ");
	assert_string_equal(ph_xs_name(PH_XS_N), "?");
	assert_string_equal(ph_xs_name(-1), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_the_list),
		cmocka_unit_test(test_illegal_change_is_caught),
		cmocka_unit_test(test_every_state_reachable),
		cmocka_unit_test(test_parked_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
