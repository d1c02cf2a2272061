/* SPDX-License-Identifier: ISC */
/* The push executor's state tables (src/sync/push_fsm.c): the paths a
 * file really takes are legal, an illegal change is refused and leaves the
 * state as it was, the ends are ends, and every state has a name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "push_fsm.h"

/* Walks m through path (n states from path[0]); every step must be legal. */
static void
walk(const struct ph_push_fsm *m, const unsigned *path, size_t n)
{
	uint8_t s = (uint8_t)path[0];
	size_t i;

	for (i = 1; i < n; i++) {
		assert_int_equal(ph_push_fsm_set(m, &s, path[i], "walk"), 0);
		assert_int_equal(s, path[i]);
	}
}

static void
test_file_paths(void **state)
{
	static const unsigned whole[] = { PF_OPENING, PF_WRITING, PF_FINISHING, PF_CLOSING,
	                                  PF_COMMIT, PF_DONE };
	static const unsigned same[] = { PF_OLD, PF_DONE };
	static const unsigned delta[] = { PF_OLD, PF_OPENING, PF_WRITING, PF_FAILED };
	static const unsigned cut[] = { PF_OPENING, PF_WRITING, PF_FAILED };

	(void)state;
	walk(&ph_push_fsm_file, whole, 6);
	walk(&ph_push_fsm_file, same, 2);
	walk(&ph_push_fsm_file, delta, 4);
	walk(&ph_push_fsm_file, cut, 3);
}

static void
test_illegal_refused(void **state)
{
	uint8_t s = PF_WRITING;

	(void)state;
	/* Backwards, skipping the close, and out of an end. */
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_OPENING, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, PF_WRITING);
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_COMMIT, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, PF_WRITING);
	s = PF_DONE;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_FAILED, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, PF_DONE);
	s = PF_FAILED;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_WRITING, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, PF_FAILED);
	/* Out of range either way. */
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_NSTATES, "x"), PHSYNC_EINVAL);
	s = 200;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_file, &s, PF_FAILED, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, 200);

	/* The compare: a verdict is final. */
	s = CMP_DIFFER;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_cmp, &s, CMP_SETTIME, "x"), PHSYNC_EINVAL);
	s = CMP_OPEN;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_cmp, &s, CMP_SETTIME, "x"), PHSYNC_EINVAL);
	/* A delta never goes back to whole once its pieces may go. */
	s = DL_READY;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_delta, &s, DL_WHOLE, "x"), PHSYNC_EINVAL);
	s = DL_CHECK;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_delta, &s, DL_PLAN, "x"), PHSYNC_EINVAL);
	/* The commit: no second guard, no rename onto the name after the
	 * conflict copy was chosen, no clash check but after a rename. */
	s = CM_GUARD;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_commit, &s, CM_GUARD, "x"), PHSYNC_EINVAL);
	s = CM_CLASH;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_commit, &s, CM_RENAME, "x"), PHSYNC_EINVAL);
	s = CM_ASIDE;
	assert_int_equal(ph_push_fsm_set(&ph_push_fsm_commit, &s, CM_CLASH, "x"), PHSYNC_EINVAL);
	assert_int_equal(s, CM_ASIDE);
}

static void
test_mode_paths(void **state)
{
	static const unsigned cmp_same[] = { CMP_OPEN, CMP_READ, CMP_SETTIME };
	static const unsigned cmp_differ[] = { CMP_OPEN, CMP_READ, CMP_DIFFER };
	static const unsigned cmp_unreadable[] = { CMP_OPEN, CMP_DIFFER };
	static const unsigned dl_state[] = { DL_OPEN, DL_CHECK, DL_READY };
	static const unsigned dl_stale[] = { DL_OPEN, DL_CHECK, DL_WHOLE };
	static const unsigned dl_helper[] = { DL_OPEN, DL_SIG, DL_PLAN, DL_READY };
	static const unsigned dl_helper_refused[] = { DL_OPEN, DL_SIG, DL_PLAN, DL_WHOLE };
	static const unsigned cm_replace[] = { CM_START, CM_GUARD, CM_RENAME };
	static const unsigned cm_aside[] = { CM_START, CM_GUARD, CM_ASIDE, CM_RENAME };
	static const unsigned cm_changed[] = { CM_START, CM_GUARD, CM_BESIDE };
	static const unsigned cm_clash[] = { CM_START, CM_RENAME, CM_CLASH, CM_BESIDE };

	(void)state;
	walk(&ph_push_fsm_cmp, cmp_same, 3);
	walk(&ph_push_fsm_cmp, cmp_differ, 3);
	walk(&ph_push_fsm_cmp, cmp_unreadable, 2);
	walk(&ph_push_fsm_delta, dl_state, 3);
	walk(&ph_push_fsm_delta, dl_stale, 3);
	walk(&ph_push_fsm_delta, dl_helper, 4);
	walk(&ph_push_fsm_delta, dl_helper_refused, 4);
	walk(&ph_push_fsm_commit, cm_replace, 3);
	walk(&ph_push_fsm_commit, cm_aside, 4);
	walk(&ph_push_fsm_commit, cm_changed, 3);
	walk(&ph_push_fsm_commit, cm_clash, 4);
}

/* Every state is named (the trace and the error say which), and the ends
 * lead nowhere. */
static void
test_tables_complete(void **state)
{
	const struct ph_push_fsm *m[] = { &ph_push_fsm_file, &ph_push_fsm_cmp,
	                                  &ph_push_fsm_delta, &ph_push_fsm_commit };
	size_t i;
	unsigned s, t;

	(void)state;
	for (i = 0; i < 4; i++) {
		assert_true(m[i]->n <= 32);
		for (s = 0; s < m[i]->n; s++) {
			assert_non_null(m[i]->names[s]);
			assert_true(strlen(m[i]->names[s]) > 0);
			assert_int_equal(ph_push_fsm_legal(m[i], s, s), 0); /* no self-loop */
			for (t = m[i]->n; t < 32; t++)
				assert_int_equal((m[i]->to[s] >> t) & 1, 0);
		}
	}
	for (t = 0; t < PF_NSTATES; t++) {
		assert_int_equal(ph_push_fsm_legal(&ph_push_fsm_file, PF_DONE, t), 0);
		assert_int_equal(ph_push_fsm_legal(&ph_push_fsm_file, PF_FAILED, t), 0);
	}
	/* Every live state may fail. */
	for (s = 0; s < PF_DONE; s++)
		assert_int_equal(ph_push_fsm_legal(&ph_push_fsm_file, s, PF_FAILED), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_paths),
		cmocka_unit_test(test_illegal_refused),
		cmocka_unit_test(test_mode_paths),
		cmocka_unit_test(test_tables_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
