/* SPDX-License-Identifier: ISC */
/* libFuzzer: the remote helper's request handling (src/helper/serve*.c) on
 * arbitrary packets, as a hostile client would send them. Each input is a
 * sequence of packets ([u16 length][bytes], after a fixed INIT offering
 * helper protocol 1), handled in a fresh server whose root is a scratch
 * folder rebuilt for every input (a file, a folder, and a symlink leading
 * out of it). File sizes are capped with RLIMIT_FSIZE so copy-data and
 * SETSTAT cannot grow the scratch folder without bound. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[256];

static void
rm_tree(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			fchmodat(dirfd(d), de->d_name, 0700, 0);
			if (sub >= 0)
				rm_tree(sub);
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
}

static void
reset_root(void)
{
	int fd, dfd;

	if (root[0] == '\0') {
		struct rlimit rl = { 1u << 20, 1u << 20 };

		/* A fixed path: the seeds (fuzz/make-serve-seeds.py) name it. */
		snprintf(root, sizeof(root), "/tmp/phsync-fuzz-serve");
		mkdir(root, 0700);
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	chmod(root, 0700);
	if ((fd = open(root, O_RDONLY | O_DIRECTORY)) >= 0)
		rm_tree(fd);
	mkdir(root, 0700);
	if ((dfd = open(root, O_RDONLY | O_DIRECTORY)) < 0)
		abort();
	if ((fd = openat(dfd, "a", O_WRONLY | O_CREAT, 0600)) >= 0) {
		static const char text[] = "0123456789abcdef0123456789abcdef";

		for (int i = 0; i < 64; i++)
			if (write(fd, text, sizeof(text) - 1) < 0)
				break;
		close(fd);
	}
	close(dfd);
	{
		char p[300];

		snprintf(p, sizeof(p), "%s/d", root);
		mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/out", root);
		symlink("/", p);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t init[] = { 1, 0, 0, 0, 3, 0, 0, 0, 17, 'p', 'h', 's', 'y', 'n', 'c',
		'@', 'p', 'h', 's', 'y', 'n', 'c', '.', 'o', 'r', 'g', 0, 0, 0, 1, '1' };
	struct ph_serve *s = NULL;
	struct ph_buf out = { NULL, 0, 0, 16u << 20 };
	size_t pos = 0;

	reset_root();
	if (ph_serve_new(root, &s) != 0)
		return 0;
	if (ph_serve_packet(s, init, sizeof(init), &out) != 0)
		abort();
	while (pos + 2 <= size) {
		size_t n = (size_t)data[pos] << 8 | data[pos + 1];

		pos += 2;
		if (n > size - pos)
			n = size - pos;
		out.len = 0;
		/* Every reply is framed whole: the length it claims is what follows. */
		if (ph_serve_packet(s, data + pos, n, &out) != 0)
			break;
		if (out.len < 4 || ph_be32_get(out.data) != out.len - 4)
			abort();
		pos += n;
	}
	ph_serve_free(s);
	ph_buf_free(&out);
	return 0;
}
