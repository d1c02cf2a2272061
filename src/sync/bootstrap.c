/* Bootstrap of the remote helper on a phone without phsync: the static
 * helper this phsync ships for the phone's architecture is uploaded over
 * SFTP into a cache folder there, checked against its XXH3-128 before every
 * use, replaced when it differs (docs/PROTOCOL.md, "Bootstrap"). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "conn.h"
#include "ctx.h"
#include "sftp.h"
#include "ssh.h"

#define MAX_HELPER (8u << 20)     /* a static helper is well under 1 MiB */
#define CACHE_DIR ".cache/phsync" /* in the login folder */

/* Where the static helpers lie: $PHSYNC_HELPER_DIR (empty: none, no
 * bootstrap), else helpers/ beside the running program (a build tree),
 * else ../libexec/phsync from it (installed under any prefix), else the
 * configured LIBEXECDIR/phsync. Returns 0 with dir filled, or -1. */
static int
helper_dir(char *dir, size_t n)
{
	const char *env = getenv("PHSYNC_HELPER_DIR");
	char exe[PATH_MAX];
	ssize_t k;
	struct stat st;

	if (env != NULL) {
		if (env[0] == '\0')
			return -1;
		snprintf(dir, n, "%s", env);
		return 0;
	}
	if ((k = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		char *slash;

		exe[k] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(dir, n, "%s/helpers", exe) < n && stat(dir, &st) == 0 &&
			    S_ISDIR(st.st_mode))
				return 0;
#ifdef PHSYNC_HELPER_RELDIR
			/* Installed under any prefix: BINDIR/../libexec/phsync. */
			if ((size_t)snprintf(dir, n, "%s/%s", exe, PHSYNC_HELPER_RELDIR) < n &&
			    stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
				return 0;
#endif
		}
	}
#ifdef PHSYNC_HELPER_DIR
	snprintf(dir, n, "%s", PHSYNC_HELPER_DIR);
	return 0;
#else
	return -1;
#endif
}

/* The helper's architecture for what `uname -m` says, or NULL. */
static const char *
arch_of(const char *m)
{
	if (strcmp(m, "aarch64") == 0 || strcmp(m, "arm64") == 0 || strcmp(m, "armv8b") == 0)
		return "aarch64";
	/* A 32-bit userland on a 64-bit kernel says armv8l. */
	if (strncmp(m, "armv7", 5) == 0 || strcmp(m, "armv8l") == 0)
		return "armv7";
	if (strcmp(m, "x86_64") == 0 || strcmp(m, "amd64") == 0)
		return "x86_64";
	return NULL;
}

static int
read_local(phsync_ctx *ctx, const char *path, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return ph_err(ctx, PHSYNC_ENOENT, "no helper for this phone here (%s: %s)", path,
		              strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > MAX_HELPER || (*data = malloc((size_t)st.st_size)) == NULL) {
		close(fd);
		return ph_err(ctx, PHSYNC_EIO, "%s: not a helper program", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *data + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(*data);
			close(fd);
			return ph_err(ctx, PHSYNC_EIO, "%s: cannot read it", path);
		}
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return 0;
}

/* Does the cached copy at path hold exactly want (len bytes, XXH3-128
 * hash)? The whole file is read back and hashed: 1 on a match. */
static int
cached_ok(struct ph_sftp *s, const char *path, size_t len, XXH128_hash_t want)
{
	struct ph_sftp_attrs a;
	uint32_t max = ph_sftp_max_read(s);
	uint8_t *buf;
	size_t off = 0;
	int ok = 0;

	if (ph_sftp_stat_sync(s, 1, path, &a) != 0 || !(a.flags & PH_ATTR_SIZE) || a.size != len ||
	    !(a.flags & PH_ATTR_PERMISSIONS) || (a.perm & 0170000) != 0100000 ||
	    (a.perm & 0022) != 0 || (buf = malloc(len)) == NULL)
		return 0;
	while (off < len) {
		uint64_t offs[4];
		uint32_t lens[4], got[4];
		uint8_t *bufs[4];
		size_t n = 0, i;

		for (; n < 4 && off < len; n++) {
			offs[n] = off;
			lens[n] = len - off < max ? (uint32_t)(len - off) : max;
			bufs[n] = buf + off;
			off += lens[n];
		}
		if (ph_sftp_read_ranges_sync(s, path, offs, lens, bufs, got, n) != 0)
			goto out;
		for (i = 0; i < n; i++)
			if (got[i] != lens[i])
				goto out;
	}
	ok = XXH128_isEqual(XXH3_128bits(buf, len), want);
out:
	free(buf);
	return ok;
}

/* Writes data to path through a temp file beside it (fsync'ed, mode 0700),
 * renamed over the old copy. */
static int
upload(phsync_ctx *ctx, struct ph_sftp *s, const char *path, const uint8_t *data, size_t len)
{
	char tmp[256];
	struct ph_sftp_attrs a;
	uint8_t h[PH_SFTP_MAX_HANDLE];
	uint32_t hlen = 0;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s/.upload-%ld", CACHE_DIR, (long)getpid());
	memset(&a, 0, sizeof(a));
	a.flags = PH_ATTR_PERMISSIONS;
	a.perm = 0700;
	if ((rc = ph_sftp_open_sync(s, tmp, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_TRUNC, &a, h,
	                            &hlen)) != 0)
		return ph_err(ctx, rc, "cannot write %s on the remote", tmp);
	rc = ph_sftp_write_sync(s, h, hlen, 0, data, len);
	if (rc == 0 && (ph_sftp_exts(s) & PH_EXT_FSYNC))
		rc = ph_sftp_fsync_sync(s, h, hlen);
	if (ph_sftp_close_sync(s, h, hlen) != 0 && rc == 0)
		rc = PHSYNC_EREMOTE;
	/* The umask may have taken bits at creation: say them again. */
	if (rc == 0)
		rc = ph_sftp_setstat_sync(s, tmp, &a);
	if (rc == 0) {
		if (ph_sftp_exts(s) & PH_EXT_POSIX_RENAME) {
			rc = ph_sftp_posix_rename_sync(s, tmp, path);
		} else {
			(void)ph_sftp_remove_sync(s, path);
			rc = ph_sftp_rename_sync(s, tmp, path);
		}
	}
	if (rc != 0) {
		(void)ph_sftp_remove_sync(s, tmp);
		return ph_err(ctx, rc, "cannot upload the helper to %s on the remote", path);
	}
	return 0;
}

int
ph_helper_bootstrap(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                    char *path, size_t pathlen)
{
	char dir[PATH_MAX], local[PATH_MAX + 64], m[64];
	const char *arch;
	uint8_t *data = NULL;
	size_t len = 0;
	struct ph_chan chan;
	struct ph_sftp *s = NULL;
	XXH128_hash_t want;
	int rc, status;

	if (helper_dir(dir, sizeof(dir)) != 0)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no static helpers to upload");
	/* The phone must run commands at all, and say what it is. */
	if ((rc = ph_ssh_exec(ssh, "uname -m", m, sizeof(m), &status)) != 0)
		return rc;
	m[strcspn(m, "\r\n")] = '\0';
	if (status != 0 || (arch = arch_of(m)) == NULL)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no helper for a remote machine '%s'", m);
	snprintf(local, sizeof(local), "%s/phsync-helper-%s", dir, arch);
	if ((rc = read_local(ctx, local, &data, &len)) != 0)
		return rc;
	want = XXH3_128bits(data, len);
	snprintf(path, pathlen, "%s/phsync-helper-%s-%s", CACHE_DIR, PHSYNC_VERSION, arch);
	memset(&chan, 0, sizeof(chan));
	if ((rc = ph_ssh_open_sftp(ssh, &chan)) != 0)
		goto out;
	chan.silence_ms = (int)(opts->timeout_s ? opts->timeout_s : 60) * 1000;
	if ((rc = ph_sftp_new(ctx, &chan, &s)) != 0)
		goto out;
	if (!cached_ok(s, path, len, want)) {
		(void)ph_sftp_mkdir_sync(s, ".cache", 0700);
		(void)ph_sftp_mkdir_sync(s, CACHE_DIR, 0700);
		if ((rc = upload(ctx, s, path, data, len)) != 0)
			goto out;
		/* Read back what landed: a server that mangles it is not run. */
		if (!cached_ok(s, path, len, want))
			rc = ph_err(ctx, PHSYNC_EREMOTE, "the helper uploaded to %s does not read back "
			            "as sent", path);
	}
out:
	ph_sftp_free(s);
	ph_ssh_close_channel(ssh);
	free(data);
	return rc;
}
