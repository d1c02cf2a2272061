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
		char *slash = NULL, *c;

		/* The program's folder: the last separator (Windows: '\\' too). */
		for (c = exe; *c != '\0'; c++)
			if (ph_path_sep((unsigned char)*c))
				slash = c;
		if (slash != NULL) {
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

/* The script's report (bootcheck.c), read as a state machine: each state
 * reads its part from the phone and names the next state; bst_next says
 * which may follow which, and the run refuses any other change. The last
 * three are where a run ends. */
enum bst {
	BS_HELLO,   /* login-shell junk, then "phsync-boot UID" */
	BS_ORIGIN,  /* first contact: "own", "arch NAME" or "machine M" */
	BS_FOLDERS, /* the `ls -lnd` lines of the folders and the file, "end" */
	BS_OPENED,  /* the open file: ls, identity, bytes unless remembered, ls */
	BS_RUN,     /* "run" sent, "go" awaited */
	BS_OWN,     /* the phone's own phsync serves on the channel */
	BS_CACHED,  /* the checked open file serves on the channel */
	BS_STALE,   /* the copy must be (re)placed */
	BS_N
};

static const char *const bst_names[BS_N] = {
	"HELLO", "ORIGIN", "FOLDERS", "OPENED", "RUN", "OWN", "CACHED", "STALE",
};

#define B(s) (1u << BS_##s)
static const unsigned bst_next[BS_N] = {
	[BS_HELLO] = B(ORIGIN) | B(FOLDERS),
	[BS_ORIGIN] = B(OWN) | B(FOLDERS),
	[BS_FOLDERS] = B(OPENED) | B(STALE),
	[BS_OPENED] = B(RUN) | B(STALE),
	[BS_RUN] = B(CACHED),
};
#undef B

/* One run of the script over an exec channel. */
struct brun {
	phsync_ctx *ctx;
	const struct phsync_options *opts; /* first contact: to load the helper named */
	struct ph_boot *b;
	struct ph_chan *chan;
	unsigned offer;  /* first contact: the helpers offered (bit i: ph_boot_arches[i]) */
	int own;         /* first contact: the phone's own phsync may answer */
	int more;        /* on a channel beside the session's (a second helper) */
	unsigned long long uid;
	unsigned missing; /* bit i: folder i of ph_boot_dir_names is missing */
	char line[4608];  /* ls of a symlink: up to PATH_MAX of target */
	struct rd r;
};

/* A line from the phone, for a message: printable ASCII only. */
static const char *
shown(char *s)
{
	char *p;

	for (p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return s;
}

static int
st_hello(struct brun *x)
{
	int rc, junk = 0;

	/* A login shell's start-up files may print lines first. */
	do {
		if ((rc = rd_line(&x->r, x->line, sizeof(x->line))) != 0)
			return rc;
	} while (ph_boot_parse_hello(x->line, &x->uid) != 0 && ++junk < 32);
	if (junk == 32)
		return ph_err(x->ctx, PHSYNC_EUNSUPPORTED, "the phone's shell did not run phsync's "
		              "start-up script (POSIX sh)");
	return x->offer != 0 ? BS_ORIGIN : BS_FOLDERS;
}

/* The helper for ph_boot_arches[i] into b: kept with its remembered
 * identity when it is the one b holds already. */
static int
load_arch(struct brun *x, int i)
{
	struct ph_boot *b = x->b;

	if (b->data != NULL && strcmp(b->arch, ph_boot_arches[i].name) == 0)
		return 0;
	ph_helper_boot_free(b);
	return ph_helper_boot_arch(x->ctx, x->opts, ph_boot_arches[i].name, b);
}

static int
st_origin(struct brun *x)
{
	int rc, kind, i;

	if ((rc = rd_line(&x->r, x->line, sizeof(x->line))) != 0)
		return rc;
	kind = ph_boot_parse_origin(x->line, x->offer, x->own, &i);
	x->b->named = kind == PH_BOOT_O_ARCH || kind == PH_BOOT_O_MACHINE;
	if (kind == PH_BOOT_O_OWN) {
		/* Nothing may come before the helper's answer to phsync's INIT. */
		if (x->r.pos != x->r.end)
			return ph_err(x->ctx, PHSYNC_EPROTO, "the phone's shell printed more after "
			              "starting its phsync");
		return BS_OWN;
	}
	if (kind == PH_BOOT_O_ARCH) {
		if ((rc = load_arch(x, i)) != 0)
			return rc;
		x->b->named = 1; /* ph_helper_boot_arch zeroes b */
		return BS_FOLDERS;
	}
	if (kind == PH_BOOT_O_MACHINE && i >= 0)
		return ph_err(x->ctx, PHSYNC_ENOENT, "no helper for this phone here (no "
		              "phsync-helper-%s here)", ph_boot_arches[i].name);
	if (kind == PH_BOOT_O_MACHINE)
		return ph_err(x->ctx, PHSYNC_EUNSUPPORTED, "no helper for a remote machine '%.40s'",
		              shown(x->line + strlen(PH_BOOT_MACHINE)));
	return ph_err(x->ctx, PHSYNC_EPROTO, "the phone's shell answered '%.60s' where phsync's "
	              "start-up script names the phone's machine", shown(x->line));
}

static int
st_folders(struct brun *x)
{
	struct ph_boot_ent e[PH_BOOT_NDIRS + 1];
	int rc, i;

	if ((rc = read_ls(&x->r, x->b->path, e)) != 0)
		return rc;
	/* Every folder from the login folder down: ours, no symlink, written
	 * by nobody else; else no helper is run (nor written) there. */
	for (i = 0; i < PH_BOOT_NDIRS; i++) {
		if ((rc = ph_boot_check_dir(x->ctx, ph_boot_dir_names[i], &e[i], x->uid)) != 0)
			return rc;
		if (!e[i].present)
			x->missing |= 1u << i;
	}
	if (!e[0].present)
		return ph_err(x->ctx, PHSYNC_EUNSUPPORTED, "the phone's shell cannot list its login "
		              "folder");
	if (x->missing != 0 || !ph_boot_file_ok(&e[PH_BOOT_NDIRS], x->uid, x->b->len))
		return BS_STALE;
	return BS_OPENED;
}

static int
st_opened(struct brun *x)
{
	struct ph_boot_ent fd;
	int rc;

	/* The file that is open, whatever its name says now. */
	if ((rc = rd_line(&x->r, x->line, sizeof(x->line))) != 0)
		return rc;
	if (ph_boot_parse_ls(x->line, &fd) != 0 || !fd.present)
		return ph_err(x->ctx, PHSYNC_EUNSUPPORTED, "the phone cannot show the helper it "
		              "opened (/proc/PID/fd): phsync runs it only through that descriptor");
	if (!ph_boot_file_ok(&fd, x->uid, x->b->len))
		return BS_STALE;
	rc = check_open_file(&x->r, x->b, x->line);
	return rc == STALE ? BS_STALE : rc != 0 ? rc : BS_RUN;
}

static int
st_run(struct brun *x)
{
	int rc;

	if ((rc = x->chan->write(x->chan->arg, "run\n", 4)) != 0 ||
	    (rc = rd_line(&x->r, x->line, 8)) != 0)
		return rc;
	if (strcmp(x->line, "go") != 0 || x->r.pos != x->r.end)
		return ph_err(x->ctx, PHSYNC_EPROTO, "the phone's shell answered '%.8s' to run",
		              shown(x->line));
	return BS_CACHED;
}

static int (*const bst_step[BS_N])(struct brun *) = {
	[BS_HELLO] = st_hello, [BS_ORIGIN] = st_origin, [BS_FOLDERS] = st_folders,
	[BS_OPENED] = st_opened, [BS_RUN] = st_run,
};

/* Runs cmd (a script of bootcheck.c) over an exec channel (x->chan) and
 * judges its report. Returns BS_CACHED (the checked open file was told to
 * run: the channel carries the helper), BS_OWN (the phone's phsync runs
 * there), BS_STALE (x->missing says the missing folders), or an error
 * (PHSYNC_EUNSAFE: a folder refused). The channel is left to the caller. */
static int
run_script(struct brun *x, struct ph_ssh *ssh, const char *cmd)
{
	int rc, st = BS_HELLO, next;

	x->missing = 0;
	x->r.ctx = x->ctx;
	x->r.ch = x->chan;
	x->r.silence_ms = x->b->silence_ms;
	x->r.pos = x->r.end = 0;
	if ((rc = x->more ? ph_ssh_open_exec_more(ssh, cmd, x->chan) :
	     ph_ssh_open_exec(ssh, cmd, x->chan)) != 0)
		return rc;
	while (bst_step[st] != NULL) {
		if ((next = bst_step[st](x)) < 0)
			return next;
		if (next >= BS_N || !((bst_next[st] >> next) & 1u))
			return ph_err(x->ctx, PHSYNC_EPROTO, "internal error: the helper's start may "
			              "not go from %s to %s", bst_names[st],
			              next < BS_N ? bst_names[next] : "?");
		st = next;
	}
	return st;
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

/* The silences b's start waits out, from opts. */
static void
boot_times(struct ph_boot *b, const struct phsync_options *opts)
{
	b->timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	/* As for a helper found on the phone: one that hangs must not cost the
	 * whole --timeout. */
	b->silence_ms = (int)(b->timeout_s < 15 ? b->timeout_s : 15) * 1000;
}

int
ph_helper_boot_arch(phsync_ctx *ctx, const struct phsync_options *opts, const char *arch,
                    struct ph_boot *b)
{
	char dir[PATH_MAX], local[PATH_MAX + 64];
	int rc;

	memset(b, 0, sizeof(*b));
	boot_times(b, opts);
	/* One of the helpers' names (a memo is read back from a file). */
	if (ph_boot_arch_index(arch) < 0)
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
ph_helper_boot_offer(phsync_ctx *ctx, unsigned *offer)
{
	char dir[PATH_MAX], local[PATH_MAX + 64];
	struct ph_stat st;
	int i, fd;

	*offer = 0;
	if (helper_dir(dir, sizeof(dir)) != 0)
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "no static helpers to upload");
	for (i = 0; i < PH_BOOT_NARCH; i++) {
		snprintf(local, sizeof(local), "%s/phsync-helper-%s", dir, ph_boot_arches[i].name);
		if ((fd = ph_openat(PH_AT_CWD, local, PH_O_RDONLY, 0)) < 0)
			continue;
		if (ph_fstat(fd, &st) == 0 && st.type == PH_FT_REG && st.size > 0)
			*offer |= 1u << i;
		ph_close(fd);
	}
	if (*offer == 0)
		return ph_err(ctx, PHSYNC_ENOENT, "no helper for this phone here (no "
		              "phsync-helper-* in %s)", dir);
	return 0;
}

/* The known-copy start of b's helper (the script of ph_boot_command) on
 * chan (more: a channel beside the session's): BS_CACHED, BS_STALE or an
 * error. */
static int
run_known(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b, const char *rroot,
          struct ph_chan *chan, unsigned *missing, int more)
{
	struct brun *x = calloc(1, sizeof(*x));
	char *cmd = ph_boot_command(b->path, rroot, b->known);
	int rc;

	if (x == NULL || cmd == NULL) {
		rc = ph_err(ctx, PHSYNC_ENOMEM, "cannot build the helper's start-up command");
		goto out;
	}
	x->ctx = ctx;
	x->b = b;
	x->chan = chan;
	x->more = more;
	rc = run_script(x, ssh, cmd);
	*missing = x->missing;
out:
	free(cmd);
	free(x);
	return rc;
}

/* After a report of a missing or stale copy (its channel still open): the
 * copy replaced over SFTP, and the new one checked in full as any before it
 * runs. 0 (the helper runs on chan) or an error. */
static int
replace_and_run(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b, const char *rroot,
                struct ph_chan *chan, unsigned missing)
{
	int rc;

	b->known[0] = '\0';
	ph_ssh_close_channel(ssh);
	if ((rc = put_helper(ctx, ssh, b, missing)) != 0)
		return rc;
	rc = run_known(ctx, ssh, b, rroot, chan, &missing, 0);
	if (rc == BS_STALE) {
		ph_ssh_close_channel(ssh);
		return ph_err(ctx, PHSYNC_EREMOTE, "the helper uploaded to ~/%s does not read back "
		              "as sent", b->path);
	}
	return rc == BS_CACHED ? 0 : rc;
}

int
ph_helper_boot_exec(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b, const char *rroot,
                    struct ph_chan *chan)
{
	unsigned missing = 0;
	int rc;

	b->seen[0] = '\0';
	/* A copy that is missing or not exactly ours is replaced once, and the
	 * new one checked the same way (in full: a new file) before it runs. */
	rc = run_known(ctx, ssh, b, rroot, chan, &missing, 0);
	if (rc == BS_STALE)
		rc = replace_and_run(ctx, ssh, b, rroot, chan, missing);
	else if (rc == BS_CACHED)
		rc = 0;
	if (rc != 0)
		b->seen[0] = '\0';
	return rc;
}

int
ph_helper_boot_exec_more(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b,
                         const char *rroot, struct ph_chan *chan)
{
	unsigned missing = 0;
	int rc;

	b->seen[0] = '\0';
	rc = run_known(ctx, ssh, b, rroot, chan, &missing, 1);
	if (rc == BS_STALE)
		rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "the helper's copy on the phone is no longer "
		            "the one this run started");
	else if (rc == BS_CACHED)
		rc = 0;
	if (rc != 0)
		b->seen[0] = '\0';
	return rc;
}

int
ph_helper_boot_first(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                     const char *rroot, int own, struct ph_boot *b, struct ph_chan *chan)
{
	struct brun *x = NULL;
	char *cmd = NULL;
	unsigned offer;
	int rc;

	b->seen[0] = '\0';
	b->named = 0;
	if (b->data == NULL)
		boot_times(b, opts);
	if ((rc = ph_helper_boot_offer(ctx, &offer)) != 0)
		return rc;
	cmd = ph_boot_command_first(CACHE_DIR "/phsync-helper-" PHSYNC_VERSION "-", rroot, offer,
	                            own, b->data != NULL ? b->arch : NULL,
	                            b->data != NULL ? b->known : NULL);
	if (cmd == NULL || (x = calloc(1, sizeof(*x))) == NULL) {
		rc = ph_err(ctx, PHSYNC_ENOMEM, "cannot build the helper's start-up command");
		goto out;
	}
	x->ctx = ctx;
	x->opts = opts;
	x->b = b;
	x->chan = chan;
	x->offer = offer;
	x->own = own;
	rc = run_script(x, ssh, cmd);
	if (rc == BS_STALE)
		rc = replace_and_run(ctx, ssh, b, rroot, chan, x->missing);
	else if (rc == BS_CACHED)
		rc = 0;
	else if (rc == BS_OWN)
		rc = PH_BOOT_OWN;
out:
	if (rc != 0)
		b->seen[0] = '\0';
	free(cmd);
	free(x);
	return rc;
}

void
ph_helper_boot_free(struct ph_boot *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}
