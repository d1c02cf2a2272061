/* SPDX-License-Identifier: ISC */
/* The helper memos: DIR/nohelper-HASH and DIR/brought-HASH, plain files
 * per phone and login in the state folder, written whole (temp file +
 * rename). See memo.h. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "statedb.h"

/* A memo's path, DIR/KIND-HASH (HASH of the login user and the phone's
 * host key: the same phone at a new address is the same host), and in head
 * its first two lines: the version and "USER HOSTKEY". Returns 0, or -1
 * when there is no state folder. */
static int
memo_path(const char *kind, const char *dir, const char *user, const char *hostkey, int create,
          char *out, size_t len, char *head, size_t hlen)
{
	char sdir[PATH_MAX], ident[400];

	if (ph_statedb_dir(NULL, dir, sdir, sizeof(sdir), create) != 0)
		return -1;
	snprintf(ident, sizeof(ident), "%s %s", user, hostkey);
	snprintf(head, hlen, "phsync %s\n%s\n", PHSYNC_VERSION, ident);
	snprintf(out, len, "%s/%s-%016llx", sdir, kind,
	         (unsigned long long)XXH3_64bits(ident, strlen(ident)));
	return 0;
}

/* A fresh memo's third line (what it says) into body, or 0 when there is
 * none for this version and host. */
static int
memo_get(const char *kind, const char *dir, const char *user, const char *hostkey,
         char *body, size_t blen)
{
	char path[PATH_MAX + 32], buf[1024], want[512];
	struct stat st;
	time_t now = time(NULL);
	ssize_t n;
	size_t wl;
	int fd, fresh;

	if (memo_path(kind, dir, user, hostkey, 0, path, sizeof(path), want, sizeof(want)) != 0 ||
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
	wl = strlen(want);
	if (strncmp(buf, want, wl) != 0)
		return 0;
	snprintf(body, blen, "%.*s", (int)strcspn(buf + wl, "\n"), buf + wl);
	return 1;
}

static void
memo_put(const char *kind, const char *dir, const char *user, const char *hostkey,
         const char *body)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48], head[512], buf[1024];
	int fd, n, ok;

	if (memo_path(kind, dir, user, hostkey, 1, path, sizeof(path), head, sizeof(head)) != 0)
		return;
	n = snprintf(buf, sizeof(buf), "%s%s\n", head, body);
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

int
ph_state_nohelper_get(const char *dir, const char *user, const char *hostkey)
{
	char why[8];

	return memo_get("nohelper", dir, user, hostkey, why, sizeof(why));
}

void
ph_state_nohelper_put(const char *dir, const char *user, const char *hostkey, const char *why)
{
	memo_put("nohelper", dir, user, hostkey, why);
}

int
ph_state_brought_get(const char *dir, const char *user, const char *hostkey, char *arch,
                     size_t len)
{
	return memo_get("brought", dir, user, hostkey, arch, len) && arch[0] != '\0';
}

void
ph_state_brought_put(const char *dir, const char *user, const char *hostkey, const char *arch)
{
	memo_put("brought", dir, user, hostkey, arch);
}

void
ph_state_brought_drop(const char *dir, const char *user, const char *hostkey)
{
	char path[PATH_MAX + 32], head[512];

	if (memo_path("brought", dir, user, hostkey, 0, path, sizeof(path), head, sizeof(head)) == 0)
		unlink(path);
}
