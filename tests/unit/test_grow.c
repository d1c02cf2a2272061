/* SPDX-License-Identifier: ISC */
/* ph_grow (src/core/buf.c), the one place every growing array grows: the
 * first capacity, doubling with the elements kept, and sizes whose bytes
 * would pass SIZE_MAX refused with the array as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "buf.h"

struct item {
	uint64_t a;
	char name[24];
};

static void
test_first_then_doubling_keeps_the_elements(void **state)
{
	struct item *v = NULL;
	size_t n = 0, cap = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		if (n == cap) {
			size_t was = cap;

			assert_int_equal(ph_grow(&v, &cap, sizeof(*v), 16), 0);
			assert_int_equal(cap, was == 0 ? 16 : was * 2);
		}
		v[n].a = i * 7;
		memset(v[n].name, 'a' + (int)(i % 26), sizeof(v[n].name));
		n++;
	}
	assert_int_equal(cap, 1024);
	for (i = 0; i < n; i++) {
		assert_int_equal(v[i].a, i * 7);
		assert_int_equal(v[i].name[23], 'a' + (int)(i % 26));
	}
	free(v);
}

/* Any object pointer: a pointer to pointers, as the name lists hold. */
static void
test_an_array_of_pointers(void **state)
{
	const char **v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(ph_grow(&v, &cap, sizeof(*v), 1), 0);
	v[0] = "one";
	assert_int_equal(ph_grow(&v, &cap, sizeof(*v), 1), 0);
	v[1] = "two";
	assert_int_equal(cap, 2);
	assert_string_equal(v[0], "one");
	assert_string_equal(v[1], "two");
	free(v);
}

static void
test_sizes_past_size_max_refused_array_kept(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(ph_grow(&v, &cap, sizeof(*v), 4), 0);
	v[3] = 42;
	/* As if the array held SIZE_MAX / 8 elements: its double has more
	 * bytes than a size_t counts. */
	cap = SIZE_MAX / 8;
	assert_int_equal(ph_grow(&v, &cap, sizeof(*v), 4), PHSYNC_ENOMEM);
	assert_int_equal(cap, SIZE_MAX / 8);
	cap = SIZE_MAX / 2 + 1;   /* the count itself cannot double */
	assert_int_equal(ph_grow(&v, &cap, 1, 4), PHSYNC_ENOMEM);
	assert_int_equal(cap, SIZE_MAX / 2 + 1);
	cap = 0;                  /* a first capacity too big for its bytes */
	assert_int_equal(ph_grow(&v, &cap, sizeof(*v), SIZE_MAX / 4), PHSYNC_ENOMEM);
	assert_int_equal(cap, 0);
	assert_non_null(v);       /* never freed or moved on a refusal */
	assert_int_equal(v[3], 42);
	free(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_then_doubling_keeps_the_elements),
		cmocka_unit_test(test_an_array_of_pointers),
		cmocka_unit_test(test_sizes_past_size_max_refused_array_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
