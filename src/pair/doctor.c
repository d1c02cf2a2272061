/* SPDX-License-Identifier: ISC */
/* phsync_doctor(): what works on a pair, one check at a time; see
 * include/phsync/pair.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "phsync/pair.h"
#include "cfdelta.h"
#include "login.h"
#include "spec.h"
#include "ctx.h"
#include "home.h"
#include "sftp.h"
#include "ssh.h"
#include "state.h"
#include "str.h"

/* An odd second: a FAT file system, which keeps 2 s steps, cannot keep it. */
#define PROBE_MTIME 1500000001u
/* A channel window below this makes a push wait on the server's window
 * adjustments (Dropbear grants 24 KiB; OpenSSH 2 MiB, ProFTPD more). */
#define SMALL_WINDOW (256u << 10)

struct doctor {
	const struct phsync_doctor_options *o;
	int skipping;            /* a check failed: the rest are skipped */
	const char *why;         /* which one */
	int cf;                  /* check-file on the probe file: 1 answered, 0 not, -1 unknown */
	char cf_why[256];        /* why not */
	int helper;              /* the helper runs: 0 no, 1 the phone's phsync, 2 ours brought */
	char helper_why[1024];   /* why no helper */
	struct ph_ssh *hssh;     /* the helper's connection, while it runs */
	struct ph_sftp *hsftp;
	char uname[256];         /* who key_login logged in as, where */
	char hname[256];
	unsigned port;
};

static void
report(struct doctor *d, const char *name, enum phsync_check_status st, const char *value,
       const char *fmt, ...) PH_PRINTF(5, 6);

static void
report(struct doctor *d, const char *name, enum phsync_check_status st, const char *value,
       const char *fmt, ...)
{
	struct phsync_check c;
	char raw[1400], detail[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	phsync_escape(detail, sizeof(detail), raw);
	c.name = name;
	c.status = st;
	c.detail = detail;
	c.value = value ? value : "";
	if (st == PHSYNC_CHECK_FAIL && !d->skipping) {
		d->skipping = 1;
		d->why = name;
	}
	if (d->o->on_check != NULL)
		d->o->on_check(&c, d->o->check_arg);
}

static void
skip(struct doctor *d, const char *name)
{
	report(d, name, PHSYNC_CHECK_SKIP, "", "not checked (%s failed)", d->why);
}

/* The SFTP extensions a sync uses (the helper's when it runs, else the
 * server's), and what it does without each. */
static void
check_extensions(struct doctor *d, struct ph_sftp *s)
{
	const char *via = d->hsftp != NULL ? "the helper's: " : "";
	static const struct {
		uint32_t bit;
		const char *name, *without;
	} ext[] = {
		{ PH_EXT_POSIX_RENAME, "posix-rename", "replacing a file takes an aside copy" },
		{ PH_EXT_FSYNC, "fsync", "pushed files are not flushed to the phone's storage" },
		{ PH_EXT_COPY_DATA, "copy-data", "no server-side copy for delta pushes" },
		{ PH_EXT_LIMITS, "limits", "32 KiB requests" },
		{ PH_EXT_STATVFS, "statvfs", "free space unknown" },
		{ PH_EXT_HARDLINK, "hardlink", NULL },
	};
	uint32_t have = ph_sftp_exts(s);
	char list[256] = "", missing[512] = "";
	size_t i;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		char *dst = (have & ext[i].bit) ? list : missing;
		size_t cap = (have & ext[i].bit) ? sizeof(list) : sizeof(missing);

		if (!(have & ext[i].bit) && ext[i].without == NULL)
			continue;
		snprintf(dst + strlen(dst), cap - strlen(dst), "%s%s", dst[0] ? (dst == list ? "," : "; ") : "",
		         ext[i].name);
		if (!(have & ext[i].bit))
			snprintf(dst + strlen(dst), cap - strlen(dst), " (%s)", ext[i].without);
	}
	if (have & PH_EXT_LIMITS)
		report(d, "extensions", missing[0] ? PHSYNC_CHECK_WARN : PHSYNC_CHECK_OK, list,
		       "%s%s; reads %" PRIu32 " and writes %" PRIu32 " bytes a request%s%s",
		       via, list, ph_sftp_max_read(s), ph_sftp_max_write(s), missing[0] ? "; missing: " : "",
		       missing);
	else
		report(d, "extensions", missing[0] ? PHSYNC_CHECK_WARN : PHSYNC_CHECK_OK, list,
		       "%s%s%s%s", via, list[0] ? list : "none", missing[0] ? "; missing: " : "", missing);
}

static void
check_exec(struct doctor *d, struct ph_ssh *ssh)
{
	char out[1024], *nl, path[1024] = "";
	int status = -1, rc;

	rc = ph_ssh_exec(ssh, "echo phsync-doctor-exec; command -v phsync", out, sizeof(out), &status);
	if (rc != 0 || strncmp(out, "phsync-doctor-exec\n", 19) != 0) {
		report(d, "exec", PHSYNC_CHECK_WARN, "", "the server runs no commands (%s): SFTP only",
		       rc != 0 ? phsync_strerror(rc) : "a command gave no answer");
		return;
	}
	snprintf(path, sizeof(path), "%s", out + 19);
	if ((nl = strchr(path, '\n')) != NULL)
		*nl = '\0';
	if (path[0] == '/')
		report(d, "exec", PHSYNC_CHECK_OK, path, "commands run; phsync is on the remote's "
		       "PATH (%s)", path);
	else
		report(d, "exec", PHSYNC_CHECK_OK, "", "commands run; no phsync on the remote's PATH");
}

/* The helper as a sync's --helper auto gets it, by the sync's own
 * ph_login_open on a second connection: first the remote's `phsync
 * serve` (helper_path "phsync": nothing brought), then, as auto does when
 * that fails, this phsync's static helper for the remote's CPU, uploaded to
 * .cache/phsync in the login folder (ph_helper_boot_first) and run. Keeps
 * the helper's connection (d->hssh, d->hsftp) for the extensions. A
 * helper that runs does not count while auto's memo of a host without one
 * (state.h, made by an earlier sync for this login and host key) says a
 * sync will not try it. */
static void
check_helper(struct doctor *d, const char *user, const char *host, const char *dir,
             const char *config, const char *who, const char *where, unsigned port)
{
	struct phsync_options opts;
	struct ph_ssh *ssh = NULL;
	struct ph_sftp *sftp = NULL;
	phsync_ctx *hctx = NULL;
	char *rroot = ph_remote_root(dir);
	char mk[PH_SSH_HOST_KEY_MAX];
	int rc;

	if (rroot == NULL || phsync_ctx_new(&hctx) != 0) {
		report(d, "helper", PHSYNC_CHECK_WARN, "none", "cannot tell (out of memory)");
		snprintf(d->helper_why, sizeof(d->helper_why), "out of memory");
		goto out;
	}
	phsync_options_init(&opts);
	opts.ssh_config = config;
	opts.ssh_verbosity = d->o->ssh_verbosity;
	opts.timeout_s = d->o->timeout_s;
	opts.helper = PHSYNC_HELPER_ALWAYS;
	opts.helper_path = "phsync";
	rc = ph_login_open(hctx, &opts, user, host, rroot, &ssh, &sftp, NULL, 0);
	if (rc == 0) {
		d->helper = 1;
	} else {
		/* Its error says the first try's failure too. */
		opts.helper_path = NULL;
		rc = ph_login_open(hctx, &opts, user, host, rroot, &ssh, &sftp, NULL, 0);
		if (rc == 0)
			d->helper = 2;
	}
	/* The memo is keyed by the login and the phone's host key, as the
	 * sync's own (src/session/login.c). */
	if (rc == 0 && ph_sftp_helper(sftp) >= 1 && ph_ssh_host_key(ssh, mk, sizeof(mk)) == 0 &&
	    ph_state_nohelper_get(NULL, who, mk)) {
		d->helper = 0;
		snprintf(d->helper_why, sizeof(d->helper_why), "remembered");
		report(d, "helper", PHSYNC_CHECK_WARN, "none", "the helper runs now, but an earlier "
		       "sync found none here and phsync remembers that for a day (nohelper-* in the "
		       "state folder): until then syncs use the server's SFTP (remove that file to "
		       "use the helper at once)");
		goto out;
	}
	if (rc == 0 && ph_sftp_helper(sftp) >= 1) {
		d->hssh = ssh;
		d->hsftp = sftp;
		ssh = NULL;
		sftp = NULL;
		if (d->helper == 1)
			report(d, "helper", PHSYNC_CHECK_OK, "remote", "the remote's phsync runs as the "
			       "helper (phsync serve)");
		else
			report(d, "helper", PHSYNC_CHECK_OK, "brought", "phsync brings its own static "
			       "helper for the remote's CPU (kept in .cache/phsync in the login folder) "
			       "and runs it");
		goto out;
	}
	d->helper = 0;
	snprintf(d->helper_why, sizeof(d->helper_why), "%s",
	         rc != 0 ? phsync_ctx_error(hctx) : "the helper did not answer");
	report(d, "helper", PHSYNC_CHECK_WARN, "none", "no helper: %s; syncs use the server's "
	       "SFTP", d->helper_why);
out:
	ph_sftp_free(sftp);
	ph_ssh_free(ssh);
	phsync_ctx_free(hctx);
	free(rroot);
}

struct cfprobe {
	struct ph_cf *cf;
	int done, ok;
	uint32_t status;
	uint8_t type;
};

static void
cfprobe_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct cfprobe *p = arg;

	(void)s;
	p->type = r->type;
	p->status = r->status;
	p->ok = r->type != 0 && ph_cf_take(p->cf, r) == 0;
	p->done = 1;
}

/* Does the server answer check-file-handle as a pull asks it (cfdelta.h:
 * the same request, the same reply parser), on the probe file of size
 * bytes at name? Sets d->cf and d->cf_why. */
static void
probe_check_file(struct doctor *d, struct ph_sftp *s, const char *name, uint64_t size)
{
	struct cfprobe p;
	struct ph_sftp_handle h = { 0 };
	uint32_t block;
	uint64_t len;
	int rc;

	memset(&p, 0, sizeof(p));
	if (!ph_cf_available()) {
		d->cf = 0;
		snprintf(d->cf_why, sizeof(d->cf_why), "this phsync was built without libcrypto, "
		         "so it never asks for check-file");
		return;
	}
	if ((rc = ph_cf_new(size, &p.cf)) != 0 ||
	    (rc = ph_sftp_open_sync(s, name, PH_FXF_READ, NULL, &h)) != 0) {
		snprintf(d->cf_why, sizeof(d->cf_why), "cannot tell (%s)", phsync_strerror(rc));
		ph_cf_free(p.cf);
		return;
	}
	ph_cf_request(p.cf, &len, &block);
	rc = ph_sftp_check_file(s, &h, PH_CF_ALGS, 0, len, block, cfprobe_cb, &p);
	if (rc == 0 && (rc = ph_sftp_wait(s, &p.done)) != 0 && !p.done)
		ph_sftp_abort(s, rc);      /* the callback must not run later */
	if (rc == 0)
		(void)ph_sftp_close_sync(s, &h);
	ph_cf_free(p.cf);
	if (rc != 0) {
		snprintf(d->cf_why, sizeof(d->cf_why), "cannot tell (%s)", phsync_strerror(rc));
		return;
	}
	d->cf = p.ok;
	if (!p.ok && p.type == PH_FXP_STATUS && p.status == PH_FX_OP_UNSUPPORTED)
		snprintf(d->cf_why, sizeof(d->cf_why), "the server does not offer check-file");
	else if (!p.ok)
		snprintf(d->cf_why, sizeof(d->cf_why), "the server answers check-file in a form "
		         "phsync does not take");
}

/* What a pull and a push will move for a changed file, from the helper
 * check, the check-file probe and the copy-data extension of the SFTP the
 * sync uses: ph_pull_delta_wanted (pull_delta.c), ph_pull_cf_wanted (pull_cf.c)
 * and push.c's delta_prepare. */
static void
check_deltas(struct doctor *d, uint32_t exts)
{
	if (d->helper)
		report(d, "pull_deltas", PHSYNC_CHECK_OK, "helper", "a pull moves only the changed "
		       "blocks of a file (the helper compares them on the remote)");
	else if (d->cf == 1)
		report(d, "pull_deltas", PHSYNC_CHECK_OK, "check-file", "a pull moves only the changed "
		       "blocks of files up to %llu MB (from the server's block digests, check-file); "
		       "larger files come whole", (unsigned long long)(PH_CF_MAX_SIZE >> 20));
	else
		report(d, "pull_deltas", PHSYNC_CHECK_WARN, "whole", "a pull copies a changed file "
		       "whole: no helper, and %s", d->cf_why[0] ? d->cf_why : "no check-file");
	if (!(exts & PH_EXT_COPY_DATA))
		report(d, "push_deltas", PHSYNC_CHECK_WARN, "whole", "a push copies a changed file "
		       "whole: the %s offers no copy-data", d->helper ? "helper" : "server");
	else if (d->helper)
		report(d, "push_deltas", PHSYNC_CHECK_OK, "helper", "a push sends only the changed "
		       "blocks of a file (the helper signs the remote copy; copy-data reuses the rest)");
	else
		report(d, "push_deltas", PHSYNC_CHECK_OK, "saved", "a push sends only the changed "
		       "blocks of a file phsync pushed there before and nobody changed since (from "
		       "the signature it kept; copy-data reuses the rest); other files go whole");
}

/* The SSH channel window the server granted (measured as the SFTP channel
 * opened). */
static void
check_window(struct doctor *d, uint32_t win)
{
	char v[16];

	snprintf(v, sizeof(v), "%" PRIu32, win);
	if (win < SMALL_WINDOW)
		report(d, "window", PHSYNC_CHECK_WARN, v, "the server's SSH channel window is small "
		       "(%" PRIu32 " KiB): a push waits for it to reopen, so pushes can be slower than "
		       "the link", win >> 10);
	else
		report(d, "window", PHSYNC_CHECK_OK, v, "the server's SSH channel window is %" PRIu32
		       " KiB", win >> 10);
}

/* Times, case and a file written: one temp file in dir, removed after. */
static void
check_folder_probe(struct doctor *d, struct ph_sftp *s, const char *dir)
{
	char name[1200], other[1200], rnd[9];
	struct ph_sftp_attrs a = { .flags = PH_ATTR_PERMISSIONS, .perm = 0600 }, got;
	struct ph_sftp_handle h = { 0 };
	unsigned v = (unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u;
	size_t i, base;
	int rc, created;

	for (i = 0; i < 8; i++, v >>= 4)
		rnd[i] = "0123456789abcdef"[v & 15];
	rnd[8] = '\0';
	snprintf(name, sizeof(name), "%s%s.phsync-doctor-%s.Case", dir,
	         dir[strlen(dir) - 1] == '/' ? "" : "/", rnd);
	rc = ph_sftp_open_sync(s, name, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_EXCL, &a, &h);
	created = rc == 0;
	if (rc == 0) {
		rc = ph_sftp_write_sync(s, &h, 0, "phsync doctor\n", 14);
		if (ph_sftp_close_sync(s, &h) != 0 && rc == 0)
			rc = PHSYNC_EREMOTE;
	}
	if (rc != 0) {
		report(d, "times", PHSYNC_CHECK_WARN, "", "cannot tell: cannot write a file in %s (%s): "
		       "pushes there will fail", dir, phsync_strerror(rc));
		report(d, "case", PHSYNC_CHECK_WARN, "", "cannot tell (no file could be written)");
		if (created)
			ph_sftp_remove_sync(s, name);
		return;
	}
	probe_check_file(d, s, name, 14);
	a.flags = PH_ATTR_ACMODTIME;
	a.atime = a.mtime = PROBE_MTIME;
	rc = ph_sftp_setstat_sync(s, name, &a);
	if (rc != 0)
		report(d, "times", PHSYNC_CHECK_WARN, "refused", "the server refuses to set times "
		       "(%s): phsync records the times the phone keeps instead", phsync_strerror(rc));
	else if (ph_sftp_stat_sync(s, PH_LSTAT, name, &got) != 0 || !(got.flags & PH_ATTR_ACMODTIME))
		report(d, "times", PHSYNC_CHECK_WARN, "ignored", "times were set but cannot be read "
		       "back");
	else if (got.mtime == PROBE_MTIME)
		report(d, "times", PHSYNC_CHECK_OK, "exact", "times can be set (to the second)");
	else if (got.mtime + 1 == PROBE_MTIME || got.mtime == PROBE_MTIME + 1)
		report(d, "times", PHSYNC_CHECK_WARN, "2s", "times are kept in 2-second steps "
		       "(FAT/exFAT storage): use --modify-window 2");
	else
		report(d, "times", PHSYNC_CHECK_WARN, "ignored", "a time set is not kept (asked %u, "
		       "kept %" PRIu32 "): phsync records the times the phone keeps",
		       PROBE_MTIME, got.mtime);

	/* The same name in the other case: found means the folder ignores case. */
	snprintf(other, sizeof(other), "%s", name);
	base = strlen(name) - strlen(rnd) - strlen(".phsync-doctor-.Case");
	for (i = base; other[i]; i++) {
		char c = other[i];

		if (c >= 'a' && c <= 'z')
			other[i] = (char)(c - 'a' + 'A');
		else if (c >= 'A' && c <= 'Z')
			other[i] = (char)(c - 'A' + 'a');
	}
	rc = ph_sftp_stat_sync(s, PH_LSTAT, other, &got);
	if (rc == 0 && (got.flags & PH_ATTR_SIZE) && got.size == 14)
		report(d, "case", PHSYNC_CHECK_OK, "insensitive", "%s ignores case (names differing "
		       "only by case are kept apart as NAME (N).EXT)", dir);
	else if (rc == PHSYNC_ENOENT || rc == 0)
		report(d, "case", PHSYNC_CHECK_OK, "sensitive", "%s is case-sensitive", dir);
	else
		report(d, "case", PHSYNC_CHECK_WARN, "", "cannot tell (%s)", phsync_strerror(rc));
	if ((rc = ph_sftp_remove_sync(s, name)) != 0)
		report(d, "cleanup", PHSYNC_CHECK_WARN, "", "cannot remove the test file %s (%s)", name,
		       phsync_strerror(rc));
}

static void
check_space(struct doctor *d, struct ph_sftp *s, const char *dir)
{
	struct ph_sftp_statvfs st;
	char v[32];
	int rc = ph_sftp_statvfs_sync(s, dir, &st);

	if (rc == PHSYNC_EUNSUPPORTED) {
		report(d, "free_space", PHSYNC_CHECK_WARN, "", "unknown: the server does not offer "
		       "statvfs@openssh.com");
		return;
	}
	if (rc != 0) {
		report(d, "free_space", PHSYNC_CHECK_WARN, "", "unknown (%s)", phsync_strerror(rc));
		return;
	}
	snprintf(v, sizeof(v), "%" PRIu64, st.bavail * st.frsize);
	report(d, "free_space", PHSYNC_CHECK_OK, v, "%.1f GB free of %.1f GB in %s",
	       (double)st.bavail * (double)st.frsize / 1e9,
	       (double)st.blocks * (double)st.frsize / 1e9, dir);
}

/* HOST, USER@HOST or [USER@]HOST:DIR into its parts (DIR "." when none). */
static int
parse_target(phsync_ctx *ctx, const char *remote, char **user, char **host, char **dir)
{
	if (strchr(remote, ':') != NULL && remote[0] != '[') {
		if (phsync_parse_remote(remote, user, host, dir) != 0)
			return ph_err(ctx, PHSYNC_EINVAL, "'%s' is not HOST or HOST:DIR", remote);
	} else {
		const char *at = strchr(remote, '@');

		*user = at ? ph_strndup(remote, (size_t)(at - remote)) : NULL;
		*host = strdup(at ? at + 1 : remote);
		*dir = strdup(".");
		if (*host == NULL || *dir == NULL || (at && *user == NULL))
			return PHSYNC_ENOMEM;
	}
	if ((*dir)[0] == '\0') {
		free(*dir);
		if ((*dir = strdup(".")) == NULL)
			return PHSYNC_ENOMEM;
	}
	return 0;
}

/* The checks "reachable", "host_key" and "key_login": a login as a sync
 * makes it, by key alone, into *ssh (who logged in into d). */
static int
check_login(struct doctor *d, phsync_ctx *ctx, const char *user, const char *host,
            const char *config, struct ph_ssh **ssh)
{
	const struct phsync_doctor_options *o = d->o;
	struct ph_ssh_params sp;
	struct ph_ssh_info info;
	char hostport[300];
	int rc;

	memset(&sp, 0, sizeof(sp));
	memset(&info, 0, sizeof(info));
	sp.user = user;
	sp.host = host;
	sp.config = config;
	sp.verbosity = o->ssh_verbosity;
	sp.timeout_s = o->timeout_s ? o->timeout_s : 60;
	sp.info = &info;
	rc = ph_ssh_connect(ctx, &sp, ssh);
	if (rc == PHSYNC_ECONNECT || rc == PHSYNC_EINVAL) {
		report(d, "reachable", PHSYNC_CHECK_FAIL, "", "%s", phsync_ctx_error(ctx));
	} else {
		snprintf(hostport, sizeof(hostport), "%s", host);
		report(d, "reachable", PHSYNC_CHECK_OK, hostport, "%s answers: %s", host, info.banner);
		if (rc == PHSYNC_EHOSTKEY || rc == PHSYNC_EHOSTUNKNOWN)
			report(d, "host_key", PHSYNC_CHECK_FAIL, info.fp, "%s", phsync_ctx_error(ctx));
		else if (info.key_alias[0] != '\0')
			report(d, "host_key", PHSYNC_CHECK_OK, info.fp, "%s %s is in known_hosts as "
			       "'%s' (HostKeyAlias: known at any address)", info.key_type, info.fp,
			       info.key_alias);
		else
			report(d, "host_key", PHSYNC_CHECK_OK, info.fp, "%s %s is in known_hosts, by "
			       "the phone's address (at a new one it is asked about again; "
			       "'HostKeyAlias NAME' in its Host block keeps it known, as phsync pair "
			       "writes it)", info.key_type, info.fp);
	}
	if (d->skipping && strcmp(d->why, "reachable") == 0)
		skip(d, "host_key");
	if (rc == PHSYNC_EAUTH)
		report(d, "key_login", PHSYNC_CHECK_FAIL, "", "%s (a sync cannot ask for a "
		       "password: run phsync pair)", phsync_ctx_error(ctx));
	else if (rc != 0)
		skip(d, "key_login");
	else {
		ph_ssh_identity(*ssh, d->uname, sizeof(d->uname), d->hname, sizeof(d->hname),
		                &d->port);
		report(d, "key_login", PHSYNC_CHECK_OK, d->uname, "logged in as %s on %s port %u "
		       "without a password", d->uname, d->hname, d->port);
	}
	return rc;
}

/* The check "sftp": an SFTP session on the login, into *sftp; *win gets
 * the channel's window. */
static int
check_sftp(struct doctor *d, phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_sftp **sftp,
           uint32_t *win)
{
	struct ph_chan chan;
	int rc;

	rc = ph_ssh_open_sftp(ssh, &chan);
	if (rc == 0) {
		*win = ph_ssh_window(ssh);
		chan.silence_ms = (int)(d->o->timeout_s ? d->o->timeout_s : 60) * 1000;
		rc = ph_sftp_new(ctx, &chan, sftp);
	}
	if (rc != 0)
		report(d, "sftp", PHSYNC_CHECK_FAIL, "", "%s", phsync_ctx_error(ctx));
	else
		report(d, "sftp", PHSYNC_CHECK_OK, "3", "SFTP version 3");
	return rc;
}

/* The checks after the login, skipped when it failed; from "window" on
 * when the "sftp" check was reported. */
static void
skip_rest(struct doctor *d, int sftp_reported)
{
	static const char *const rest[] = { "sftp", "window", "exec", "helper", "extensions",
	                                    "folder", "times", "case", "free_space",
	                                    "pull_deltas", "push_deltas" };
	size_t i;

	for (i = sftp_reported ? 1 : 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		skip(d, rest[i]);
}

/* The check "folder": dir is one (the checks on it skipped when not). */
static int
check_folder(struct doctor *d, phsync_ctx *ctx, struct ph_sftp *sftp, const char *dir)
{
	struct ph_sftp_attrs a;
	int rc;

	rc = ph_sftp_stat_sync(sftp, PH_STAT, dir, &a);
	if (rc == 0 && (a.flags & PH_ATTR_PERMISSIONS) && (a.perm & 0170000) != 0040000)
		rc = PHSYNC_ENOTDIR;
	if (rc != 0) {
		report(d, "folder", PHSYNC_CHECK_FAIL, dir, "%s: %s", dir, phsync_strerror(rc));
		skip(d, "times");
		skip(d, "case");
		skip(d, "free_space");
		skip(d, "pull_deltas");
		skip(d, "push_deltas");
		return ph_err(ctx, rc, "%s: %s", dir, phsync_strerror(rc));
	}
	report(d, "folder", PHSYNC_CHECK_OK, dir, "%s is a folder", dir);
	return 0;
}

int
phsync_doctor(phsync_ctx *ctx, const char *remote, const struct phsync_doctor_options *o)
{
	struct doctor d;
	struct ph_ssh *ssh = NULL;
	struct ph_sftp *sftp = NULL;
	char *user = NULL, *host = NULL, *dir = NULL, defconf[1100];
	const char *config = o->ssh_config;
	uint32_t win = 0;
	int rc;

	memset(&d, 0, sizeof(d));
	d.o = o;
	d.why = "";
	d.cf = -1;
	ctx->err[0] = '\0';
	if ((rc = parse_target(ctx, remote, &user, &host, &dir)) != 0)
		goto out;
	if (config == NULL) {
		ph_pair_default_config(defconf, sizeof(defconf));
		config = defconf;
	}
	rc = check_login(&d, ctx, user, host, config, &ssh);
	if (rc == 0)
		rc = check_sftp(&d, ctx, ssh, &sftp, &win);
	if (rc != 0) {
		skip_rest(&d, ssh != NULL);
		goto out;
	}
	check_window(&d, win);
	check_exec(&d, ssh);
	check_helper(&d, user, host, dir, config, d.uname, d.hname, d.port);
	check_extensions(&d, d.hsftp != NULL ? d.hsftp : sftp);
	if ((rc = check_folder(&d, ctx, sftp, dir)) != 0)
		goto out;
	check_folder_probe(&d, sftp, dir);
	check_space(&d, sftp, dir);
	check_deltas(&d, ph_sftp_exts(d.hsftp != NULL ? d.hsftp : sftp));
out:
	ph_sftp_free(d.hsftp);
	ph_ssh_free(d.hssh);
	ph_sftp_free(sftp);
	ph_ssh_free(ssh);
	free(user);
	free(host);
	free(dir);
	return rc;
}
