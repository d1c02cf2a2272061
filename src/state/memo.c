/* SPDX-License-Identifier: ISC */
/* The no-helper memo: DIR/nohelper-HASH, a plain file per phone and
 * login in the state folder, written whole (temp file + rename). See
 * memo.h. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "statedb.h"

/* The memo's path, DIR/nohelper-HASH (HASH of the login user and the
 * phone's host key: the same phone at a new address is the same host), and
 * in head its first two lines: the version and "USER HOSTKEY". Returns 0,
 * or -1 when there is no state folder. */
static int
nohelper_path(const char *dir, const char *user, const char *hostkey, int create, char *out,
              size_t len, char *head, size_t hlen)
{
	char sdir[PATH_MAX], ident[400];

	if (ph_statedb_dir(NULL, dir, sdir, sizeof(sdir), create) != 0)
		return -1;
	snprintf(ident, sizeof(ident), "%s %s", user, hostkey);
	snprintf(head, hlen, "phsync %s\n%s\n", PHSYNC_VERSION, ident);
	snprintf(out, len, "%s/nohelper-%016llx", sdir,
	         (unsigned long long)XXH3_64bits(ident, strlen(ident)));
	return 0;
}

int
ph_state_nohelper_get(const char *dir, const char *user, const char *hostkey)
{
	char path[PATH_MAX + 32], buf[512], want[512];
	struct stat st;
	time_t now = time(NULL);
	ssize_t n;
	int fd, fresh;

	if (nohelper_path(dir, user, hostkey, 0, path, sizeof(path), want, sizeof(want)) != 0 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	fresh = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime <= now &&
	        now - st.st_mtime < PH_NOHELPER_TTL_S;
	n = fresh ? read(fd, buf, sizeof(buf) - 1) : -1;
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The same version and the same host (not a hash collision). */
	return strncmp(buf, want, strlen(want)) == 0;
}

void
ph_state_nohelper_put(const char *dir, const char *user, const char *hostkey, const char *why)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48], head[512], buf[1024];
	int fd, n, ok;

	if (nohelper_path(dir, user, hostkey, 1, path, sizeof(path), head, sizeof(head)) != 0)
		return;
	n = snprintf(buf, sizeof(buf), "%s%s\n", head, why);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)strlen(buf);
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
}
