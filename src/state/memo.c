/* SPDX-License-Identifier: ISC */
/* The helper memos: DIR/nohelper-HASH and DIR/brought-HASH, plain files
 * per phone and login in the state folder, written whole (temp file +
 * rename). See memo.h. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "pfs.h"
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

/* What a fresh memo says after its first two lines (one line or more,
 * each ended by a newline) into body, or 0 when there is none for this
 * version and host. */
static int
memo_get(const char *kind, const char *dir, const char *user, const char *hostkey,
         char *body, size_t blen)
{
	char path[PATH_MAX + 32], buf[1024], want[512];
	struct ph_stat st;
	int64_t now = (int64_t)time(NULL);
	int64_t n;
	size_t wl;
	int fd, fresh;

	if (memo_path(kind, dir, user, hostkey, 0, path, sizeof(path), want, sizeof(want)) != 0 ||
	    (fd = ph_openat(PH_AT_CWD, path, PH_O_RDONLY | PH_O_NOFOLLOW, 0)) < 0)
		return 0;
	fresh = ph_fstat(fd, &st) == 0 && st.type == PH_FT_REG && st.mtime_sec <= now &&
	        now - st.mtime_sec < PH_NOHELPER_TTL_S;
	n = fresh ? ph_pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	ph_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The same version and the same host (not a hash collision). */
	wl = strlen(want);
	if (strncmp(buf, want, wl) != 0)
		return 0;
	snprintf(body, blen, "%s", buf + wl);
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
	fd = ph_openat(PH_AT_CWD, tmp, PH_O_WRONLY | PH_O_CREAT | PH_O_TRUNC | PH_O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	ok = ph_pwrite(fd, buf, (size_t)n, 0) == n;
	ph_close(fd);
	/* pfs.h's rename replaces on every OS (msvcrt's rename() does not). */
	if (!ok || ph_renameat(PH_AT_CWD, tmp, PH_AT_CWD, path) != 0)
		ph_unlinkat(PH_AT_CWD, tmp, 0);
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

/* The brought memo's lines: the arch, then (after a full check) "BUILD
 * IDENT". Returns 1 with them in arch and tail ("" when there is none). */
static int
brought_lines(const char *dir, const char *user, const char *hostkey, char *arch, size_t alen,
              char *tail, size_t tlen)
{
	char body[1024];
	size_t k;

	if (!memo_get("brought", dir, user, hostkey, body, sizeof(body)))
		return 0;
	k = strcspn(body, "\n");
	snprintf(arch, alen, "%.*s", (int)k, body);
	tail[0] = '\0';
	if (body[k] == '\n')
		snprintf(tail, tlen, "%.*s", (int)strcspn(body + k + 1, "\n"), body + k + 1);
	return arch[0] != '\0';
}

int
ph_state_brought_get(const char *dir, const char *user, const char *hostkey, char *arch,
                     size_t len)
{
	char tail[512];

	return brought_lines(dir, user, hostkey, arch, len, tail, sizeof(tail));
}

int
ph_state_brought_ident(const char *dir, const char *user, const char *hostkey,
                       const char *build, char *ident, size_t len)
{
	char arch[64], tail[512];
	size_t bl = strlen(build);

	ident[0] = '\0';
	if (!brought_lines(dir, user, hostkey, arch, sizeof(arch), tail, sizeof(tail)) || bl == 0 ||
	    strncmp(tail, build, bl) != 0 || tail[bl] != ' ' || tail[bl + 1] == '\0')
		return 0;
	snprintf(ident, len, "%s", tail + bl + 1);
	return 1;
}

void
ph_state_brought_put(const char *dir, const char *user, const char *hostkey, const char *arch,
                     const char *build, const char *ident)
{
	char body[512];

	if (build != NULL && ident != NULL && build[0] != '\0' && ident[0] != '\0')
		snprintf(body, sizeof(body), "%s\n%s %s", arch, build, ident);
	else
		snprintf(body, sizeof(body), "%s", arch);
	memo_put("brought", dir, user, hostkey, body);
}

void
ph_state_brought_drop(const char *dir, const char *user, const char *hostkey)
{
	char path[PATH_MAX + 32], head[512];

	if (memo_path("brought", dir, user, hostkey, 0, path, sizeof(path), head, sizeof(head)) == 0)
		ph_unlinkat(PH_AT_CWD, path, 0);
}
