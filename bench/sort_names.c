/* SPDX-License-Identifier: ISC */
/* The sorts of a scan's names alone: a million names in 2,000 folders of
 * 500, each folder's in a shuffled order (as ext4 lists them: by hash),
 * sorted folder by folder with qsort and strcmp (what local.c and rorder.c
 * did) and with src/core/strsort.c; names alone ("file_0000123.dat", as the
 * local walk sorts them) or whole paths ("dir_0000/file_0000123.dat", as a
 * listed folder's entries), these from the first byte and from past the
 * folder's path; and whole paths held in 32-byte records (a listed
 * folder's entries as rorder.c holds them), past the folder's path.
 * Prints each one's time; checks every result is sorted.
 * docs/PERFORMANCE.md ("The names sorted by byte", session 41).
 *
 *   cc -O2 -Isrc/core -o sort_names bench/sort_names.c src/core/strsort.c
 *   ./sort_names
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strsort.h"

#define FOLDERS 2000
#define PER 500

static int
by_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A held entry of rorder.c: 32 bytes, the path first. */
struct rec {
	const char *path;
	uint64_t size, bits;
	void *child;
};

static void
run_records(char **s, size_t n)
{
	struct rec *r = malloc(n * sizeof(*r));
	double t0, t1;
	size_t i, f;

	if (r == NULL)
		exit(1);
	for (i = 0; i < n; i++) {
		r[i].path = s[i];
		r[i].size = i;
		r[i].bits = ~(uint64_t)i;
		r[i].child = NULL;
	}
	t0 = now();
	for (f = 0; f < FOLDERS; f++)
		ph_strsort_from(r + f * PER, PER, sizeof(*r), 0, strlen("dir_0000/"));
	t1 = now();
	for (i = 1; i < n; i++)
		if (strcmp(r[i - 1].path, r[i].path) > 0 || r[i].bits != ~r[i].size) {
			fprintf(stderr, "records not sorted at %zu\n", i);
			exit(1);
		}
	printf("%-6s %-28s %.3f s\n", "paths", "32-byte records (folder)", t1 - t0);
	free(r);
}

static void
run(int paths)
{
	size_t n = (size_t)FOLDERS * PER, i, f;
	char **s = malloc(n * sizeof(*s)), **w = malloc(n * sizeof(*w));
	unsigned long r = 1;
	int how;

	if (s == NULL || w == NULL)
		exit(1);
	for (i = 0; i < n; i++) {
		char b[64];

		if (paths)
			snprintf(b, sizeof(b), "dir_%04zu/file_%07zu.dat", i / PER, i);
		else
			snprintf(b, sizeof(b), "file_%07zu.dat", i);
		if ((s[i] = strdup(b)) == NULL)
			exit(1);
	}
	for (f = 0; f < FOLDERS; f++)
		for (i = PER - 1; i > 0; i--) {
			size_t j;
			char *t;

			r = r * 6364136223846793005ul + 1442695040888963407ul;
			j = (size_t)(r >> 33) % (i + 1);
			t = s[f * PER + i];
			s[f * PER + i] = s[f * PER + j];
			s[f * PER + j] = t;
		}
	for (how = 0; how < (paths ? 3 : 2); how++) {
		double t0, t1;

		memcpy(w, s, n * sizeof(*s));
		t0 = now();
		for (f = 0; f < FOLDERS; f++) {
			char **v = w + f * PER;

			if (how == 0)
				qsort(v, PER, sizeof(*v), by_strcmp);
			else if (how == 1)
				ph_strsort(v, PER, sizeof(*v), 0);
			else
				ph_strsort_from(v, PER, sizeof(*v), 0, strlen("dir_0000/"));
		}
		t1 = now();
		for (i = 1; i < n; i++)
			if (strcmp(w[i - 1], w[i]) > 0) {
				fprintf(stderr, "not sorted at %zu\n", i);
				exit(1);
			}
		printf("%-6s %-28s %.3f s\n", paths ? "paths" : "names",
		       how == 0 ? "qsort + strcmp" : how == 1 ? "ph_strsort" :
		       "ph_strsort_from (folder)", t1 - t0);
	}
	if (paths)
		run_records(s, n);
	for (i = 0; i < n; i++)
		free(s[i]);
	free(s);
	free(w);
}

int
main(void)
{
	run(0);
	run(1);
	return 0;
}
