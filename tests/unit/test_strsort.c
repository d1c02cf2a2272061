/* SPDX-License-Identifier: ISC */
/* ph_strsort (core/strsort.c): the order qsort with strcmp gives, on
 * pointers and on larger records that carry their other bytes along;
 * names with shared prefixes, high bytes (unsigned order), empty names,
 * one name the prefix of another, many equal; the heap sort it falls back
 * on past its budget (every budget from 0) the same; sorted, reversed and
 * organ-pipe inputs of 200,000 names sorted; a shared prefix skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "strsort.h"
#include "ut_rand.h"

static uint64_t rng = 88172645463325252ull;

static uint32_t
next(void)
{
	return (uint32_t)(ut_xorshift64(&rng) >> 32);
}

/* n names: a shared prefix now and then, bytes from a small alphabet with
 * high bytes in it, lengths 0 to 11. */
static char **
names(size_t n)
{
	static const char alpha[] = "aAb_0.\x80\xff\xc3z";
	char **v = malloc((n ? n : 1) * sizeof(*v));
	size_t i, k;

	assert_non_null(v);
	for (i = 0; i < n; i++) {
		char buf[32];
		size_t len = 0, l = next() % 12;

		if (next() % 3 == 0) {
			memcpy(buf, "IMG_2024", 8);
			len = 8;
		}
		for (k = 0; k < l; k++)
			buf[len++] = alpha[next() % (sizeof(alpha) - 1)];
		buf[len] = '\0';
		v[i] = strdup(buf);
		assert_non_null(v[i]);
	}
	return v;
}

static int
ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
free_names(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* v sorted as qsort sorts ref (equal strings are interchangeable). */
static void
check_as_qsort(char **v, char **ref, size_t n)
{
	size_t i;

	qsort(ref, n, sizeof(*ref), ptr_cmp);
	for (i = 0; i < n; i++)
		assert_string_equal(v[i], ref[i]);
}

static void
test_pointers_like_qsort(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 5, 11, 12, 13, 40, 500, 5000, 60000 };
	size_t t, rep;

	(void)state;
	for (t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++)
		for (rep = 0; rep < 3; rep++) {
			size_t n = sizes[t];
			char **v = names(n), **ref = malloc((n ? n : 1) * sizeof(*ref));

			assert_non_null(ref);
			if (n > 0)
				memcpy(ref, v, n * sizeof(*v));
			ph_strsort(v, n, sizeof(*v), 0);
			check_as_qsort(v, ref, n);
			free(ref);
			free_names(v, n);
		}
}

static void
test_edges(void **state)
{
	const char *in[] = { "ab", "", "a", "abc", "a", "\xff", "\x7f", "ab", "", "b",
	                     "\x80", "a\xff", "a\x01", "abc", "aa", "a", "", "ba", "b" };
	const char *want[] = { "", "", "", "a", "a", "a", "a\x01", "aa", "ab", "ab", "abc",
	                       "abc", "a\xff", "b", "b", "ba", "\x7f", "\x80", "\xff" };
	const char *v[sizeof(in) / sizeof(in[0])];
	size_t i, rep;

	(void)state;
	/* Below SMALL and above it (the same names three times over). */
	memcpy(v, in, sizeof(in));
	ph_strsort(v, 10, sizeof(*v), 0);
	for (i = 1; i < 10; i++)
		assert_true(strcmp(v[i - 1], v[i]) <= 0);
	for (rep = 0; rep < 2; rep++) {
		memcpy(v, in, sizeof(in));
		ph_strsort_budget(v, sizeof(in) / sizeof(in[0]), sizeof(*v), 0, rep ? 40 : 0);
		for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
			assert_string_equal(v[i], want[i]);
	}
}

static void
test_many_equal(void **state)
{
	size_t n = 50000, i, jpg = 0, jp = 0;
	const char **v = malloc(n * sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (i = 0; i < n; i++) {
		v[i] = i % 7 == 0 ? "DCIM/Camera/IMG_0001.jpg" : i % 7 == 1 ? "DCIM/Camera/IMG_0001.jp" :
		       "DCIM/Camera/IMG_0001.jpg~";
		jpg += i % 7 == 0;
		jp += i % 7 == 1;
	}
	ph_strsort(v, n, sizeof(*v), 0);
	for (i = 0; i < n; i++)
		assert_string_equal(v[i], i < jp ? "DCIM/Camera/IMG_0001.jp" :
		                          i < jp + jpg ? "DCIM/Camera/IMG_0001.jpg" :
		                          "DCIM/Camera/IMG_0001.jpg~");
	free(v);
}

/* A record of 32 bytes, its key at byte 8: the other bytes travel with it. */
struct rec {
	uint64_t tag;
	const char *key;
	uint64_t check[2];
};

static void
test_records_carry_their_bytes(void **state)
{
	size_t n = 7000, i;
	unsigned budget;

	(void)state;
	for (budget = 0; budget < 6; budget++) {
		char **s = names(n), **ref = malloc(n * sizeof(*ref));
		struct rec *r = malloc(n * sizeof(*r));

		assert_non_null(ref);
		assert_non_null(r);
		for (i = 0; i < n; i++) {
			r[i].tag = i;
			r[i].key = s[i];
			r[i].check[0] = i * 31 + 7;
			r[i].check[1] = ~(uint64_t)i;
		}
		memcpy(ref, s, n * sizeof(*s));
		if (budget == 5)
			ph_strsort(r, n, sizeof(*r), offsetof(struct rec, key));
		else
			ph_strsort_budget(r, n, sizeof(*r), offsetof(struct rec, key), budget);
		qsort(ref, n, sizeof(*ref), ptr_cmp);
		for (i = 0; i < n; i++) {
			assert_string_equal(r[i].key, ref[i]);
			assert_ptr_equal(r[i].key, s[r[i].tag]);
			assert_int_equal(r[i].check[0], r[i].tag * 31 + 7);
			assert_int_equal(r[i].check[1], ~r[i].tag);
		}
		free(r);
		free(ref);
		free_names(s, n);
	}
}

/* A record of 21 bytes (not whole words: swapped byte by byte), its key
 * at byte 5, unaligned: the other bytes travel with it. */
static void
test_odd_records_carry_their_bytes(void **state)
{
	enum { SZ = 21, OFF = 5 };
	size_t n = 5000, i;
	char **s = names(n), **ref = malloc(n * sizeof(*ref));
	unsigned char *r = malloc(n * SZ);

	(void)state;
	assert_non_null(ref);
	assert_non_null(r);
	for (i = 0; i < n; i++) {
		uint32_t tag = (uint32_t)i;

		memset(r + i * SZ, (int)(i % 251), SZ);
		memcpy(r + i * SZ, &tag, sizeof(tag));
		memcpy(r + i * SZ + OFF, &s[i], sizeof(s[i]));
	}
	memcpy(ref, s, n * sizeof(*s));
	ph_strsort(r, n, SZ, OFF);
	qsort(ref, n, sizeof(*ref), ptr_cmp);
	for (i = 0; i < n; i++) {
		uint32_t tag;
		const char *key;
		size_t k;

		memcpy(&tag, r + i * SZ, sizeof(tag));
		memcpy(&key, r + i * SZ + OFF, sizeof(key));
		assert_string_equal(key, ref[i]);
		assert_ptr_equal(key, s[tag]);
		for (k = OFF + sizeof(key); k < SZ; k++)
			assert_int_equal(r[i * SZ + k], tag % 251);
	}
	free(r);
	free(ref);
	free_names(s, n);
}

/* ph_strsort_from: strings sharing their first bytes (a folder's path and
 * '/'), sorted from there as qsort sorts them whole. */
static void
test_shared_prefix_skipped(void **state)
{
	size_t n = 3000, i;
	char **s = names(n), **v = malloc(n * sizeof(*v)), **ref = malloc(n * sizeof(*ref));

	(void)state;
	assert_non_null(v);
	assert_non_null(ref);
	for (i = 0; i < n; i++) {
		size_t l = strlen(s[i]);

		v[i] = malloc(l + 10);
		assert_non_null(v[i]);
		memcpy(v[i], "DCIM/Cam/", 9);
		memcpy(v[i] + 9, s[i], l + 1);
	}
	memcpy(ref, v, n * sizeof(*v));
	ph_strsort_from(v, n, sizeof(*v), 0, 9);
	check_as_qsort(v, ref, n);
	free(ref);
	free_names(v, n);
	free_names(s, n);
}

/* Every name begins with the same bytes (the sort reads them once a name,
 * not once a pass), one name is those bytes alone, some go one byte past
 * them: sorted as qsort sorts them, from the start and past a folder. */
static void
test_all_share_a_prefix(void **state)
{
	size_t n = 2000, i, skip;
	char **s = names(n);

	(void)state;
	for (skip = 0; skip <= 5; skip += 5) {
		char **v = malloc(n * sizeof(*v)), **ref = malloc(n * sizeof(*ref));

		assert_non_null(v);
		assert_non_null(ref);
		for (i = 0; i < n; i++) {
			size_t l = strlen(s[i]);

			v[i] = malloc(15 + l + 1);   /* exact: a read past one shows */
			assert_non_null(v[i]);
			memcpy(v[i], "DCIM/IMG_2024_0", 15);
			memcpy(v[i] + 15, i == n / 2 ? "" : s[i], i == n / 2 ? 1 : l + 1);
		}
		memcpy(ref, v, n * sizeof(*v));
		ph_strsort_from(v, n, sizeof(*v), 0, skip);
		check_as_qsort(v, ref, n);
		assert_string_equal(v[0], "DCIM/IMG_2024_0");
		free(ref);
		free_names(v, n);
	}
	free_names(s, n);
}

/* Orders a careless pivot choice handles badly: all end sorted. */
static void
test_sorted_reversed_organ_pipe(void **state)
{
	size_t n = 200000, i, kind;
	char **v = malloc(n * sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (i = 0; i < n; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "file_%07zu.dat", i);
		v[i] = strdup(buf);
		assert_non_null(v[i]);
	}
	for (kind = 0; kind < 3; kind++) {
		char **w = malloc(n * sizeof(*w));

		assert_non_null(w);
		for (i = 0; i < n; i++)
			w[i] = kind == 0 ? v[i] : kind == 1 ? v[n - 1 - i] :
			       i < n / 2 ? v[2 * i] : v[2 * (n - 1 - i) + 1];
		ph_strsort(w, n, sizeof(*w), 0);
		for (i = 0; i < n; i++)
			assert_ptr_equal(w[i], v[i]);
		free(w);
	}
	free_names(v, n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pointers_like_qsort),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_many_equal),
		cmocka_unit_test(test_records_carry_their_bytes),
		cmocka_unit_test(test_odd_records_carry_their_bytes),
		cmocka_unit_test(test_sorted_reversed_organ_pipe),
		cmocka_unit_test(test_shared_prefix_skipped),
		cmocka_unit_test(test_all_share_a_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
