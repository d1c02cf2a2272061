/* SPDX-License-Identifier: ISC */
/* strsort.h: a multikey quicksort of records by a string they point to.
 *
 * A part of the records whose strings agree on their first d bytes is
 * split three ways by byte d against a pivot byte (the median of three):
 * below, equal, above. The parts below and above are sorted the same way
 * at byte d; the equal part goes on at byte d + 1, unless the pivot was
 * the strings' end (then they are all the same string). Each split reads
 * one byte a record; a long shared prefix costs a pass of reads, never a
 * comparison per pair. Small parts are sorted by insertion with strcmp
 * from byte d. A part whose splits nest deeper than its budget (uneven
 * splits, which only chosen names make) is heap-sorted: n log n
 * comparisons at most, and the nesting, hence the stack, is bounded. */
#include <stdint.h>
#include <string.h>

#include "strsort.h"

/* Parts this small are sorted by insertion. */
#define SMALL 12

struct srt {
	size_t size, off;
};

#define REC(s, a, i) ((a) + (i) * (s)->size)

static inline const unsigned char *
key(const struct srt *s, const unsigned char *r)
{
	const char *p;

	memcpy(&p, r + s->off, sizeof(p));
	return (const unsigned char *)p;
}

static inline void
swap(const struct srt *s, unsigned char *x, unsigned char *y)
{
	unsigned char t[PH_STRSORT_MAX_SIZE];
	size_t i;

	/* Records of whole words (a pointer; rorder.c's 32 bytes): swapped a
	 * word at a time, inline, not by three calls of a run-time size. */
	if (s->size % sizeof(uint64_t) == 0) {
		for (i = 0; i < s->size; i += sizeof(uint64_t)) {
			uint64_t a, b;

			memcpy(&a, x + i, sizeof(a));
			memcpy(&b, y + i, sizeof(b));
			memcpy(x + i, &b, sizeof(b));
			memcpy(y + i, &a, sizeof(a));
		}
		return;
	}
	memcpy(t, x, s->size);
	memcpy(x, y, s->size);
	memcpy(y, t, s->size);
}

/* strcmp from byte d on (every record of a part has the same bytes before). */
static inline int
cmp_from(const struct srt *s, const unsigned char *x, const unsigned char *y, size_t d)
{
	return strcmp((const char *)key(s, x) + d, (const char *)key(s, y) + d);
}

static void
insertion(const struct srt *s, unsigned char *a, size_t n, size_t d)
{
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && cmp_from(s, REC(s, a, j - 1), REC(s, a, j), d) > 0; j--)
			swap(s, REC(s, a, j - 1), REC(s, a, j));
}

static void
sift(const struct srt *s, unsigned char *a, size_t i, size_t n, size_t d)
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && cmp_from(s, REC(s, a, c), REC(s, a, c + 1), d) < 0)
			c++;
		if (cmp_from(s, REC(s, a, i), REC(s, a, c), d) >= 0)
			return;
		swap(s, REC(s, a, i), REC(s, a, c));
		i = c;
	}
}

static void
heap_sort(const struct srt *s, unsigned char *a, size_t n, size_t d)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift(s, a, i, n, d);
	for (i = n; i-- > 1;) {
		swap(s, a, REC(s, a, i));
		sift(s, a, 0, i, d);
	}
}

static unsigned char
median3(unsigned char x, unsigned char y, unsigned char z)
{
	if (x < y)
		return y < z ? y : x < z ? z : x;
	return x < z ? x : y < z ? z : y;
}

static void
mkqs(const struct srt *s, unsigned char *a, size_t n, size_t d, unsigned budget)
{
	while (n > 1) {
		size_t lt = 0, i = 0, gt = n;
		unsigned char v;

		if (n < SMALL) {
			insertion(s, a, n, d);
			return;
		}
		if (budget == 0) {
			heap_sort(s, a, n, d);
			return;
		}
		/* One of the three: the equal part is never empty, so both
		 * others are smaller than n. */
		v = median3(key(s, a)[d], key(s, REC(s, a, n / 2))[d], key(s, REC(s, a, n - 1))[d]);
		while (i < gt) {
			unsigned char c = key(s, REC(s, a, i))[d];

			if (c < v)
				swap(s, REC(s, a, lt++), REC(s, a, i++));
			else if (c > v)
				swap(s, REC(s, a, i), REC(s, a, --gt));
			else
				i++;
		}
		mkqs(s, a, lt, d, budget - 1);
		mkqs(s, REC(s, a, gt), n - gt, d, budget - 1);
		if (v == 0)
			return;
		a = REC(s, a, lt);
		n = gt - lt;
		d++;
	}
}

/* How many bytes from d on all n strings share, each string read once
 * from its start: mkqs would pass over all of them once a byte (the
 * "file_000" of "file_0000123.dat", a camera's "IMG_2024"). */
static size_t
shared(const struct srt *s, const unsigned char *a, size_t n, size_t d)
{
	const unsigned char *f = key(s, a) + d;
	size_t l = strlen((const char *)f), i, j;

	for (i = 1; i < n && l > 0; i++) {
		const unsigned char *k = key(s, REC(s, a, i)) + d;

		for (j = 0; j < l && k[j] == f[j]; j++)
			;
		l = j;
	}
	return l;
}

static void
sort_from(void *base, size_t n, size_t size, size_t off, size_t skip, unsigned budget)
{
	struct srt s;

	/* Never so from a caller (each checks its record's size when built). */
	if (size == 0 || size > PH_STRSORT_MAX_SIZE || off + sizeof(char *) > size || n < 2)
		return;
	s.size = size;
	s.off = off;
	mkqs(&s, base, n, skip + shared(&s, base, n, skip), budget);
}

static unsigned
budget_of(size_t n)
{
	unsigned lg = 0;

	while ((n >> lg) > 1)
		lg++;
	return 2 * lg + 2;
}

void
ph_strsort_budget(void *base, size_t n, size_t size, size_t off, unsigned budget)
{
	sort_from(base, n, size, off, 0, budget);
}

void
ph_strsort_from(void *base, size_t n, size_t size, size_t off, size_t skip)
{
	sort_from(base, n, size, off, skip, budget_of(n));
}

void
ph_strsort(void *base, size_t n, size_t size, size_t off)
{
	sort_from(base, n, size, off, 0, budget_of(n));
}
