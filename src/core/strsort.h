/* SPDX-License-Identifier: ISC */
/* Sorting records by a C string they point to, in byte order (as strcmp
 * orders them): a folder's names in the local walk, a listed folder's
 * entries. Core: plain C. */
#ifndef PH_STRSORT_H
#define PH_STRSORT_H

#include <stddef.h>

/* The largest record ph_strsort moves. */
#define PH_STRSORT_MAX_SIZE 64

/* Sorts the n records of size bytes (at most PH_STRSORT_MAX_SIZE) at base
 * by the string whose pointer (const char *) sits at byte off of each, as
 * qsort with strcmp on those strings would; equal strings in any order.
 *
 * A multikey quicksort (Bentley and Sedgewick, 1997): records are split by
 * one byte of their strings at a time, so a prefix the names share (a
 * camera's "IMG_2024", a folder's path) is read once a record, not once a
 * comparison (the bytes all of them share are measured first, one read of
 * each string, and skipped), and no comparison goes through a function
 * pointer (a million names in folders of 500, shuffled: 0.11 s against
 * qsort's 0.16 s, bench/sort_names.c; an 8-byte-at-a-time variant was
 * slower). Its time is bounded whatever the names (they come from a
 * phone): past about 2 log2(n) uneven splits a part is heap-sorted
 * instead. Stack: that many frames at most. */
void ph_strsort(void *base, size_t n, size_t size, size_t off);
/* The same for strings that all begin with the same skip bytes (the
 * caller has checked: none is shorter), which are not read again. */
void ph_strsort_from(void *base, size_t n, size_t size, size_t off, size_t skip);
/* The same with the number of uneven splits allowed before a part is
 * heap-sorted given (ph_strsort's is 2 log2(n) + 2): for the tests. */
void ph_strsort_budget(void *base, size_t n, size_t size, size_t off, unsigned budget);

#endif
