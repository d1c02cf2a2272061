/* SPDX-License-Identifier: ISC */
/* The floor under a no-change run's local walk: a tree walked the way
 * src/scan/local.c walks it (each folder's names read whole, then one
 * fstatat or statx each, folders entered by openat), doing nothing else.
 * Prints the entries seen; time it with /usr/bin/time. docs/PERFORMANCE.md
 * section 7 ("The pool's cache misses, the receive window").
 *
 *   cc -O2 -o walk_floor bench/walk_floor.c
 *   /usr/bin/time -f "%e s %U user %S sys" ./walk_floor DIR [statx]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long seen;

static void
walk(int dfd, int use_statx)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0, i;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((names = realloc(names, cap * sizeof(*names))) == NULL)
				exit(1);
		}
		if ((names[n++] = strdup(de->d_name)) == NULL)
			exit(1);
	}
	closedir(d);
	for (i = 0; i < n; i++) {
		mode_t mode;

		if (use_statx) {
			struct statx sx;

			if (statx(dfd, names[i], AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
			          STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_INO |
			          STATX_CTIME, &sx) != 0)
				goto next;
			mode = sx.stx_mode;
		} else {
			struct stat st;

			if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
				goto next;
			mode = st.st_mode;
		}
		seen++;
		if (S_ISDIR(mode)) {
			int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (sub >= 0) {
				walk(sub, use_statx);
				close(sub);
			}
		}
next:
		free(names[i]);
	}
	free(names);
}

int
main(int argc, char **argv)
{
	int fd;

	if (argc < 2 || (fd = open(argv[1], O_RDONLY | O_DIRECTORY)) < 0) {
		fprintf(stderr, "usage: walk_floor DIR [statx]\n");
		return 2;
	}
	walk(fd, argc > 2 && strcmp(argv[2], "statx") == 0);
	printf("%ld\n", seen);
	return 0;
}
