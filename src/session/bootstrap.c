/* SPDX-License-Identifier: ISC */
/* Bootstrap of the remote helper on a phone without phsync: the static
 * helper this phsync ships for the phone's architecture is uploaded over
 * SFTP into a cache folder there, and run only through the descriptor its
 * bytes were read and compared from, after its folders were checked to be
 * the login user's alone (docs/PROTOCOL.md, "Bootstrap"; bootcheck.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "bootcheck.h"
#include "bootstrap.h"
#include "ctx.h"
#include "pfs.h"
#include "platform.h"
#include "sftp.h"
#include "ssh.h"

#define MAX_HELPER (8u << 20)     /* a static helper is well under 1 MiB */
#define CACHE_DIR ".cache/phsync" /* in the login folder */

/* Whether path is a folder (a symlink to one too). */
static int
is_dir(const char *path)
{
	int fd = ph_openat(PH_AT_CWD, path, PH_O_RDONLY | PH_O_DIR, 0);

	if (fd < 0)
		return 0;
	ph_close(fd);
	return 1;
}

/* Where the static helpers lie: $PHSYNC_HELPER_DIR (empty: none, no
 * bootstrap), else helpers/ beside the running program (a build tree),
 * else ../libexec/phsync from it (installed under any prefix), else the
 * configured LIBEXECDIR/phsync. Returns 0 with dir filled, or -1. */
static int
helper_dir(char *dir, size_t n)
{
	const char *env = getenv("PHSYNC_HELPER_DIR");
	char exe[PATH_MAX];

	if (env != NULL) {
		if (env[0] == '\0')
			return -1;
		snprintf(dir, n, "%s", env);
		return 0;
	}
	if (ph_exe_path(exe, sizeof(exe)) == 0) {
		char *slash;

		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(dir, n, "%s/helpers", exe) < n && is_dir(dir))
				return 0;
#ifdef PHSYNC_HELPER_RELDIR
			/* Installed under any prefix: BINDIR/../libexec/phsync. */
			if ((size_t)snprintf(dir, n, "%s/%s", exe, PHSYNC_HELPER_RELDIR) < n &&
			    is_dir(dir))
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
	int fd = ph_openat(PH_AT_CWD, path, PH_O_RDONLY, 0);
	struct ph_stat st;
	size_t got = 0;

	if (fd < 0)
		return ph_err(ctx, PHSYNC_ENOENT, "no helper for this phone here (%s: %s)", path,
		              strerror(-fd));
	if (ph_fstat(fd, &st) != 0 || st.type != PH_FT_REG || st.size == 0 ||
	    st.size > MAX_HELPER || (*data = malloc((size_t)st.size)) == NULL) {
		ph_close(fd);
		return ph_err(ctx, PHSYNC_EIO, "%s: not a helper program", path);
	}
	while (got < (size_t)st.size) {
		int64_t r = ph_pread(fd, *data + got, (size_t)st.size - got, got);

		if (r == -EINTR)
			continue;
		if (r <= 0) {
			free(*data);
			ph_close(fd);
			return ph_err(ctx, PHSYNC_EIO, "%s: cannot read it", path);
		}
		got += (size_t)r;
	}
	ph_close(fd);
	*len = got;
	return 0;
}

/* Writes data to path through a temp file beside it (fsync'ed, mode 0700),
 * renamed over the old copy. */
static int
upload(phsync_ctx *ctx, struct ph_sftp *s, const char *path, const uint8_t *data, size_t len)
{
	char tmp[256];
	struct ph_sftp_attrs a;
	struct ph_sftp_handle h = { 0 };
	int rc;

	snprintf(tmp, sizeof(tmp), "%s/.upload-%ld", CACHE_DIR, (long)getpid());
	memset(&a, 0, sizeof(a));
	a.flags = PH_ATTR_PERMISSIONS;
	a.perm = 0700;
	if ((rc = ph_sftp_open_sync(s, tmp, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_TRUNC, &a,
	                            &h)) != 0)
		return ph_err(ctx, rc, "cannot write %s on the remote", tmp);
	rc = ph_sftp_write_sync(s, &h, 0, data, len);
	if (rc == 0 && (ph_sftp_exts(s) & PH_EXT_FSYNC))
		rc = ph_sftp_fsync_sync(s, &h);
	if (ph_sftp_close_sync(s, &h) != 0 && rc == 0)
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

/* A reader of the script's output: lines and counted bytes; what came in
 * past one ask is kept for the next. */
struct rd {
	phsync_ctx *ctx;
	const struct ph_chan *ch;
	int silence_ms;
	uint8_t buf[16384];
	size_t pos, end;
};

/* Reads more into r->buf, which the caller has used up. */
static int
rd_fill(struct rd *r)
{
	struct timespec t0, t;
	size_t got = 0;
	int rc;

	r->pos = r->end = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if ((rc = r->ch->read(r->ch->arg, r->buf + r->end, sizeof(r->buf) - r->end, 250,
		                      &got)) != 0)
			return rc;
		if (got > 0)
			break;
		if (r->ctx->interrupted)
			return PHSYNC_EINTR;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    r->silence_ms)
			return ph_err(r->ctx, PHSYNC_ECONNECT, "the phone's shell said nothing for %d s",
			              r->silence_ms / 1000);
	}
	r->end += got;
	return 0;
}

/* The next line, without its newline, into line (n bytes). */
static int
rd_line(struct rd *r, char *line, size_t n)
{
	size_t k = 0;
	int rc;

	for (;;) {
		while (r->pos < r->end) {
			uint8_t c = r->buf[r->pos++];

			if (c == '\n') {
				line[k] = '\0';
				return 0;
			}
			if (k + 1 >= n)
				return ph_err(r->ctx, PHSYNC_EPROTO, "the phone's shell printed a line "
				              "longer than %zu bytes", n - 1);
			line[k++] = (char)c;
		}
		if ((rc = rd_fill(r)) != 0)
			return rc;
	}
}

/* Reads len bytes and compares them with want: 1 when they are the same,
 * 0 at the first difference (the rest is left unread), or an error. */
static int
rd_same(struct rd *r, const uint8_t *want, size_t len)
{
	size_t off = 0;
	int rc;

	while (off < len) {
		size_t k;

		if (r->pos == r->end && (rc = rd_fill(r)) != 0)
			return rc;
		k = r->end - r->pos < len - off ? r->end - r->pos : len - off;
		if (memcmp(r->buf + r->pos, want + off, k) != 0)
			return 0;
		r->pos += k;
		off += k;
	}
	return 1;
}

/* After the open file's `ls` line: its identity line, then (unless it is
 * the one b remembers) its bytes compared with b's and the `ls` line again
 * (first: the one before). Returns 0 when the file may run, STALE, or an
 * error. */
#define STALE 1
static int
check_open_file(struct rd *r, struct ph_boot *b, const char *first)
{
	char line[4608], id[4608]; /* any line: a long one is just no identity */
	int rc;

	if ((rc = rd_line(r, id, sizeof(id))) != 0)
		return rc;
	/* The same file as at the last full check of this build: the bytes
	 * are not sent (the script compared the same line with $3). */
	if (b->known[0] != '\0' && ph_boot_ident_ok(id) && strcmp(id, b->known) == 0) {
		memcpy(b->seen, id, strlen(id) + 1); /* shorter than PH_BOOT_IDENT_MAX */
		return 0;
	}
	if ((rc = rd_same(r, b->data, b->len)) <= 0)
		return rc == 0 ? STALE : rc;
	/* The open file once more, after its bytes: the same (a file that
	 * grew or changed size while it was read shows here, its extra bytes
	 * before this line). */
	if ((rc = rd_line(r, line, sizeof(line))) != 0)
		return rc;
	if (strcmp(line, first) != 0)
		return ph_err(r->ctx, PHSYNC_EREMOTE, "the cached helper changed while it was read");
	/* Taken before the bytes were read: a change after it shows next
	 * time as another ctime. */
	if (ph_boot_ident_ok(id))
		memcpy(b->seen, id, strlen(id) + 1);
	return 0;
}

/* The one `ls -lnd` of the folders and the file, up to "end", into e (a
 * name without a line is missing). */
static int
read_ls(struct rd *r, const char *path, struct ph_boot_ent e[PH_BOOT_NDIRS + 1])
{
	static const char *const dirs[PH_BOOT_NDIRS] = { ".", ".cache", ".cache/phsync" };
	char line[4608]; /* ls of a symlink: up to PATH_MAX of target */
	int rc, next = 0, j;

	memset(e, 0, (PH_BOOT_NDIRS + 1) * sizeof(*e));
	for (;;) {
		if ((rc = rd_line(r, line, sizeof(line))) != 0)
			return rc;
		if (strcmp(line, PH_BOOT_END) == 0)
			return 0;
		/* In the order asked (ls sorts them so): the next name it is. */
		for (j = next; j <= PH_BOOT_NDIRS; j++)
			if (ph_boot_ls_is(line, j < PH_BOOT_NDIRS ? dirs[j] : path))
				break;
		if (j > PH_BOOT_NDIRS || ph_boot_parse_ls(line, &e[j]) != 0 || !e[j].present)
			return ph_err(r->ctx, PHSYNC_EUNSUPPORTED, "cannot read the phone's `ls -lnd` "
			              "line '%.100s'", line);
		next = j + 1;
	}
}

/* Runs the script of bootcheck.c for b's cached copy over an exec channel
 * (chan) and judges its report. Returns 0 when the checked open file was
 * told to run (chan then carries the helper), STALE when the copy must be
 * (re)placed (*missing: bit i set for a missing folder i of
 * ph_boot_dir_names), or an error (PHSYNC_EUNSAFE: a folder refused). */
static int
run_checked(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b, const char *cmd,
            struct ph_chan *chan, unsigned *missing)
{
	struct rd *r = calloc(1, sizeof(*r));
	struct ph_boot_ent e[PH_BOOT_NDIRS + 1], fd;
	unsigned long long uid;
	char line[4608]; /* ls of a symlink: up to PATH_MAX of target */
	int rc, i, junk = 0;

	*missing = 0;
	if (r == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = ph_ssh_open_exec(ssh, cmd, chan)) != 0)
		goto out;
	r->ctx = ctx;
	r->ch = chan;
	r->silence_ms = b->silence_ms;
	/* A login shell's start-up files may print lines first. */
	do {
		if ((rc = rd_line(r, line, sizeof(line))) != 0)
			goto out;
	} while (ph_boot_parse_hello(line, &uid) != 0 && ++junk < 32);
	if (junk == 32) {
		rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "the phone's shell did not run phsync's "
		            "start-up script (POSIX sh)");
		goto out;
	}
	if ((rc = read_ls(r, b->path, e)) != 0)
		goto out;
	/* Every folder from the login folder down: ours, no symlink, written
	 * by nobody else; else no helper is run (nor written) there. */
	for (i = 0; i < PH_BOOT_NDIRS; i++) {
		if ((rc = ph_boot_check_dir(ctx, ph_boot_dir_names[i], &e[i], uid)) != 0)
			goto out;
		if (!e[i].present)
			*missing |= 1u << i;
	}
	if (!e[0].present) {
		rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "the phone's shell cannot list its login folder");
		goto out;
	}
	if (*missing != 0 || !ph_boot_file_ok(&e[PH_BOOT_NDIRS], uid, b->len)) {
		rc = STALE;
		goto out;
	}
	/* The file that is open, whatever its name says now. */
	if ((rc = rd_line(r, line, sizeof(line))) != 0)
		goto out;
	if (ph_boot_parse_ls(line, &fd) != 0 || !fd.present) {
		rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "the phone cannot show the helper it opened "
		            "(/proc/PID/fd): phsync runs it only through that descriptor");
		goto out;
	}
	if (!ph_boot_file_ok(&fd, uid, b->len)) {
		rc = STALE;
		goto out;
	}
	if ((rc = check_open_file(r, b, line)) != 0)
		goto out;
	if ((rc = chan->write(chan->arg, "run\n", 4)) != 0 || (rc = rd_line(r, line, 8)) != 0)
		goto out;
	if (strcmp(line, "go") != 0 || r->pos != r->end)
		rc = ph_err(ctx, PHSYNC_EPROTO, "the phone's shell answered '%.8s' to run", line);
out:
	free(r);
	return rc;
}

/* Makes the missing folders (0700) and writes b's helper to its cache path
 * over SFTP. */
static int
put_helper(phsync_ctx *ctx, struct ph_ssh *ssh, const struct ph_boot *b, unsigned missing)
{
	struct ph_chan chan;
	struct ph_sftp *s = NULL;
	int rc;

	memset(&chan, 0, sizeof(chan));
	if ((rc = ph_ssh_open_sftp(ssh, &chan)) != 0)
		goto out;
	chan.silence_ms = (int)b->timeout_s * 1000;
	if ((rc = ph_sftp_new(ctx, &chan, &s)) != 0)
		goto out;
	/* Made in a folder checked to be the user's alone; the script checks
	 * them again before anything runs from them. */
	if (missing & 2u)
		(void)ph_sftp_mkdir_sync(s, ".cache", 0700);
	if (missing & 4u)
		(void)ph_sftp_mkdir_sync(s, CACHE_DIR, 0700);
	rc = upload(ctx, s, b->path, b->data, b->len);
out:
	ph_sftp_free(s);
	ph_ssh_close_channel(ssh);
	return rc;
}

int
ph_helper_boot_arch(phsync_ctx *ctx, const struct phsync_options *opts, const char *arch,
                    struct ph_boot *b)
{
	char dir[PATH_MAX], local[PATH_MAX + 64];
	int rc;

	memset(b, 0, sizeof(*b));
	b->timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	/* As for a helper found on the phone: one that hangs must not cost the
	 * whole --timeout. */
	b->silence_ms = (int)(b->timeout_s < 15 ? b->timeout_s : 15) * 1000;
	/* One of the names arch_of gives (a memo is read back from a file). */
	if (arch_of(arch) == NULL || strcmp(arch_of(arch), arch) != 0)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no helper for a remote machine '%s'", arch);
	if (helper_dir(dir, sizeof(dir)) != 0)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no static helpers to upload");
	snprintf(b->arch, sizeof(b->arch), "%s", arch);
	snprintf(local, sizeof(local), "%s/phsync-helper-%s", dir, arch);
	if ((rc = read_local(ctx, local, &b->data, &b->len)) != 0)
		return rc;
	snprintf(b->path, sizeof(b->path), "%s/phsync-helper-%s-%s", CACHE_DIR, PHSYNC_VERSION,
	         arch);
	snprintf(b->build, sizeof(b->build), "%016llx",
	         (unsigned long long)XXH3_64bits(b->data, b->len));
	return 0;
}

int
ph_helper_bootstrap(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                    struct ph_boot *b)
{
	char dir[PATH_MAX], m[64];
	const char *arch;
	int rc, status;

	memset(b, 0, sizeof(*b));
	if (helper_dir(dir, sizeof(dir)) != 0)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no static helpers to upload");
	/* The phone must run commands at all, and say what it is. */
	if ((rc = ph_ssh_exec(ssh, "uname -m", m, sizeof(m), &status)) != 0)
		return rc;
	m[strcspn(m, "\r\n")] = '\0';
	if (status != 0 || (arch = arch_of(m)) == NULL)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no helper for a remote machine '%s'", m);
	return ph_helper_boot_arch(ctx, opts, arch, b);
}

int
ph_helper_boot_exec(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b, const char *rroot,
                    struct ph_chan *chan)
{
	unsigned missing;
	int rc, tries = 0;
	char *cmd;

	b->seen[0] = '\0';
	/* A copy that is missing or not exactly ours is replaced once, and the
	 * new one checked the same way (in full: a new file) before it runs. */
	for (;;) {
		if ((cmd = ph_boot_command(b->path, rroot, b->known)) == NULL)
			return ph_err(ctx, PHSYNC_ENOMEM, "cannot build the helper's start-up command");
		rc = run_checked(ctx, ssh, b, cmd, chan, &missing);
		free(cmd);
		if (rc != STALE)
			break;
		b->known[0] = '\0';
		ph_ssh_close_channel(ssh);
		if (tries++ > 0) {
			rc = ph_err(ctx, PHSYNC_EREMOTE, "the helper uploaded to ~/%s does not read "
			            "back as sent", b->path);
			break;
		}
		if ((rc = put_helper(ctx, ssh, b, missing)) != 0)
			break;
	}
	if (rc != 0)
		b->seen[0] = '\0';
	return rc;
}

void
ph_helper_boot_free(struct ph_boot *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}
