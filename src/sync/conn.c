/* SPDX-License-Identifier: ISC */
/* Kept connections and cheap remote polls (phsync_conn_*): a watcher's
 * link to a phone, which phsync_sync can run over. */
#include <limits.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "bootcheck.h"
#include "conn.h"
#include "ctx.h"
#include "sftpwire.h"
#include "state.h"
#include "tree.h"

#define MAX_DIRS 1000000u
#define MAX_DEPTH 256
#define MAX_PATH 4095
#define STAT_WINDOW 256

struct pdir {
	char *rel;          /* "" = the root */
	uint64_t digest;    /* sum of its entries' hashes */
	uint32_t mtime;
	uint8_t hot;        /* its mtime moved at the last poll: list again */
	uint8_t gone;
	uint32_t depth;
};

struct phsync_conn {
	phsync_ctx *ctx;
	struct ph_ssh *ssh;
	struct ph_sftp *sftp;
	char *user, *host;  /* as the remote spec named them */
	char *rroot;
	struct pdir *d;     /* the folders known, sorted by rel */
	size_t nd, capd;
	int listed;
};

/* The remote command that starts the helper for root: the program as the
 * user named it (a shell word: "~/bin/phsync" works), the root quoted. */
static char *
helper_cmd(const char *prog, const char *root)
{
	size_t n = strlen(prog) + 16 + 4 * strlen(root) + 4, k;
	char *c = malloc(n);

	if (c == NULL)
		return NULL;
	k = (size_t)snprintf(c, n, "%s serve ", prog);
	ph_boot_quote_root(c + k, root);
	return c;
}

/* Starts `phsync serve ROOT` over an exec channel and speaks SFTP with it
 * (boot non-NULL: prog is the helper phsync brought, run checked by
 * ph_helper_boot_exec). Returns 0 with *sftp set, or an error with the
 * message in ctx (the channel is then closed; the session stays for plain
 * SFTP). */
static int
start_helper(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
             const char *prog, const char *rroot, const struct ph_boot *boot,
             struct ph_sftp **sftp)
{
	char *cmd = helper_cmd(prog, rroot);
	struct ph_chan chan;
	char why[sizeof(ctx->err)], errout[256];
	unsigned timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	int rc;

	if (cmd == NULL)
		return PHSYNC_ENOMEM;
	memset(&chan, 0, sizeof(chan));
	if (boot != NULL)
		rc = ph_helper_boot_exec(ctx, ssh, boot, rroot, &chan);
	else
		rc = ph_ssh_open_exec(ssh, cmd, &chan);
	if (rc == 0) {
		/* A helper that starts answers at once; one that hangs (a shell
		 * waiting on something) must not cost the whole --timeout. */
		chan.silence_ms = (int)(timeout_s < 15 ? timeout_s : 15) * 1000;
		rc = ph_sftp_new_helper(ctx, &chan, PH_HELPER_PROTO_MAX, sftp);
	}
	if (rc == 0 && ph_sftp_helper(*sftp) == 0) {
		unsigned seen = ph_sftp_helper_seen(*sftp);

		if (seen == 0)
			rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "%s: `%s` answers plain SFTP, not the "
			            "phsync helper protocol", ph_ssh_host(ssh), cmd);
		else
			rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "%s: the helper `%s` speaks another "
			            "protocol version (%s%u); this phsync speaks %u: install the same "
			            "phsync version on both sides", ph_ssh_host(ssh), cmd,
			            seen == UINT_MAX ? "unreadable, " : "", seen == UINT_MAX ? 0 : seen,
			            PH_HELPER_PROTO_MAX);
		ph_sftp_free(*sftp);
		*sftp = NULL;
	} else if (rc != 0 && rc != PHSYNC_EINTR) {
		int status;

		snprintf(why, sizeof(why), "%s", ctx->err);
		/* The channel's end brings the command's exit status and the rest
		 * of what it wrote on standard error. */
		status = ph_ssh_close_channel(ssh);
		ph_ssh_channel_stderr(ssh, errout, sizeof(errout));
		errout[strcspn(errout, "\r\n")] = '\0';
		/* 127 and 126 are the shell's answers "no such command" and "cannot
		 * run it": definite. Without an exit status the channel or the
		 * session was dropped: transient (no_helper_answer). */
		if (status == 127 || status == 126)
			rc = PHSYNC_EUNSUPPORTED;
		if (status >= 0)
			rc = ph_err(ctx, rc, "%s: cannot start the helper `%s`: %s (exit %d)",
			            ph_ssh_host(ssh), cmd, errout[0] ? errout : why, status);
		else
			rc = ph_err(ctx, rc, "%s: cannot start the helper `%s`: %s%s", ph_ssh_host(ssh),
			            cmd, errout[0] ? errout : why, rc == PHSYNC_ECONNECT ?
			            " (the channel ended with no exit status: dropped, not refused)" : "");
	}
	if (rc == 0)
		ph_sftp_set_timeout(*sftp, (int)timeout_s * 1000);
	else
		ph_ssh_close_channel(ssh);
	free(cmd);
	return rc;
}

/* Whether a failure to start or bring the helper is the host's definite
 * answer (no phsync there, no helper for its machine, another protocol,
 * uploads refused), worth the no-helper memo, rather than a dropped
 * channel or session, a stop or a local shortage, which the next run may
 * not meet (issue 22: a memo written on Dropbear's dropped channels kept
 * the helper off for a day). */
static int
no_helper_answer(int rc)
{
	return rc != PHSYNC_ECONNECT && rc != PHSYNC_EINTR && rc != PHSYNC_ENOMEM &&
	       rc != PHSYNC_EIO;
}

/* SFTP on the logged-in session ssh: the helper serving rroot, or the
 * server's subsystem (ph_conn_connect, and its why). *sftp is NULL on
 * failure. */
static int
session(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh **ssh,
        const char *rroot, struct ph_sftp **sftp, char *why, size_t whylen)
{
	struct ph_chan chan;
	char mu[128], mh[256];    /* who we reached, for the no-helper memo */
	char mk[PH_SSH_HOST_KEY_MAX];
	char hwhy[sizeof(ctx->err)] = ""; /* a helper start that met no answer */
	unsigned mport = 0, timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	int rc = 0, memo = 0, definite = 0;

	*sftp = NULL;
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	/* auto, on a host that ran no helper a moment ago: straight to SFTP
	 * (state.h, "hosts without a helper"). */
	if (rroot != NULL && opts->helper == PHSYNC_HELPER_AUTO && opts->helper_path == NULL) {
		ph_ssh_identity(*ssh, mu, sizeof(mu), mh, sizeof(mh), &mport);
		memo = ph_ssh_host_key(*ssh, mk, sizeof(mk)) == 0;
		if (memo && ph_state_nohelper_get(opts->state_dir, mu, mk)) {
			if (why != NULL)
				snprintf(why, whylen, "an earlier run found no helper on this phone and "
				         "that is remembered for a day (nohelper-* in the state folder; "
				         "--helper always tries again)");
			goto plain;
		}
	}
	if (rroot != NULL && opts->helper != PHSYNC_HELPER_NEVER) {
		rc = start_helper(ctx, opts, *ssh, opts->helper_path ? opts->helper_path : "phsync",
		                  rroot, NULL, sftp);
		definite = no_helper_answer(rc);
		if (rc != 0 && rc != PHSYNC_EINTR && rc != PHSYNC_ENOMEM && opts->helper_path == NULL) {
			/* No phsync there (or another version): bring ours, the static
			 * helper for the phone's architecture, and run that. */
			char first[sizeof(ctx->err)], how[sizeof(ctx->err)];
			struct ph_boot boot;

			snprintf(first, sizeof(first), "%s", ctx->err);
			rc = ph_helper_bootstrap(ctx, *ssh, opts, &boot);
			if (rc == 0)
				rc = start_helper(ctx, opts, *ssh, boot.path, rroot, &boot, sftp);
			ph_helper_boot_free(&boot);
			if (rc != 0 && rc != PHSYNC_EINTR) {
				snprintf(how, sizeof(how), "%s", ctx->err);
				rc = ph_err(ctx, rc, "%.500s; and none could be brought: %.400s", first,
				            how);
			}
			/* Both must be answers: a dropped first try says nothing of
			 * the host, whatever the bootstrap then met. */
			definite = definite && no_helper_answer(rc);
		}
		/* auto: a remote without the helper is the usual case; plain
		 * SFTP then, quietly. */
		if (rc == 0 || rc == PHSYNC_EINTR || rc == PHSYNC_ENOMEM)
			goto out;
		if (opts->helper == PHSYNC_HELPER_ALWAYS) {
			rc = PHSYNC_ECONNECT; /* the remote cannot be reached as asked: exit 3 */
			goto out;
		}
		if (memo && definite)
			ph_state_nohelper_put(opts->state_dir, mu, mk, ctx->err);
		if (!definite)
			snprintf(hwhy, sizeof(hwhy), "%s", ctx->err);
		if (why != NULL)
			snprintf(why, whylen, "%s", ctx->err);
	}
plain:
	if ((rc = ph_ssh_open_sftp(*ssh, &chan)) != 0) {
		/* A session dropped while the helper started: say so first. */
		if (hwhy[0] != '\0') {
			char sftp_why[sizeof(ctx->err)];

			snprintf(sftp_why, sizeof(sftp_why), "%s", ctx->err);
			rc = ph_err(ctx, rc, "%.500s; then plain SFTP: %.400s", hwhy, sftp_why);
		}
		goto out;
	}
	chan.silence_ms = (int)timeout_s * 1000;
	rc = ph_sftp_new(ctx, &chan, sftp);
out:
	if (rc != 0) {
		ph_sftp_free(*sftp);
		*sftp = NULL;
	}
	return rc;
}

int
ph_conn_connect(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
                const char *host, const char *rroot, struct ph_ssh **ssh,
                struct ph_sftp **sftp, char *why, size_t whylen)
{
	struct ph_ssh_params sp;
	int rc;

	*ssh = NULL;
	*sftp = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.user = user;
	sp.host = host;
	sp.config = opts->ssh_config;
	sp.prompt = opts->prompt;
	sp.prompt_arg = opts->prompt_arg;
	sp.verbosity = opts->ssh_verbosity;
	sp.timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	if ((rc = ph_ssh_connect(ctx, &sp, ssh)) == 0)
		rc = session(ctx, opts, ssh, rroot, sftp, why, whylen);
	if (rc != 0) {
		ph_ssh_free(*ssh);
		*ssh = NULL;
	}
	return rc;
}

int
ph_conn_reroot(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
               const char *rroot, struct ph_sftp **sftp)
{
	ph_sftp_free(*sftp);
	*sftp = NULL;
	return session(ctx, opts, &ssh, rroot, sftp, NULL, 0);
}

char *
ph_remote_root(const char *path)
{
	size_t n = strlen(path);

	if (n == 0)
		return strdup(".");
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 1 && path[0] == '/')
		return strdup("");
	return strndup(path, n);
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
ph_conn_use(phsync_conn *c, const char *user, const char *host, const char *rroot,
            struct ph_ssh **ssh, struct ph_sftp **sftp)
{
	if (!same_str(c->user, user) || !same_str(c->host, host))
		return ph_err(c->ctx, PHSYNC_EINVAL, "the kept connection reaches another host");
	/* A helper serves one folder: another one needs its own connection. */
	if (c->sftp != NULL && ph_sftp_helper(c->sftp) != 0 && !same_str(c->rroot, rroot))
		return ph_err(c->ctx, PHSYNC_EINVAL, "the kept connection's helper serves "
		              "another folder");
	if (!phsync_conn_alive(c))
		return ph_err(c->ctx, PHSYNC_ECONNECT, "%s: the connection was lost", c->host);
	*ssh = c->ssh;
	*sftp = c->sftp;
	return 0;
}

void
ph_conn_drop(phsync_conn *c)
{
	ph_sftp_free(c->sftp);
	ph_ssh_free(c->ssh);
	c->sftp = NULL;
	c->ssh = NULL;
}

int
phsync_conn_open(phsync_ctx *ctx, const char *remote, const struct phsync_options *opts,
                 phsync_conn **out)
{
	struct phsync_options defaults;
	phsync_conn *c;
	char *path = NULL;
	int rc;

	*out = NULL;
	if (opts == NULL) {
		phsync_options_init(&defaults);
		opts = &defaults;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return PHSYNC_ENOMEM;
	c->ctx = ctx;
	if (phsync_parse_remote(remote, &c->user, &c->host, &path) != 0) {
		rc = ph_err(ctx, PHSYNC_EINVAL, "'%s' is not HOST:PATH", remote);
		goto out;
	}
	if ((c->rroot = ph_remote_root(path)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	rc = ph_conn_connect(ctx, opts, c->user, c->host, c->rroot, &c->ssh, &c->sftp, NULL, 0);
out:
	free(path);
	if (rc != 0)
		phsync_conn_free(c);
	else
		*out = c;
	return rc;
}

static void
free_dirs(struct pdir *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(d[i].rel);
	free(d);
}

void
phsync_conn_free(phsync_conn *c)
{
	if (c == NULL)
		return;
	ph_conn_drop(c);
	free_dirs(c->d, c->nd);
	free(c->user);
	free(c->host);
	free(c->rroot);
	free(c);
}

int
phsync_conn_alive(const phsync_conn *c)
{
	return c != NULL && c->sftp != NULL && ph_sftp_dead(c->sftp) == 0;
}

/* The server's path of rel ("" = the root). */
static char *
rpath(const phsync_conn *c, const char *rel)
{
	return ph_rpath_join(c->rroot, rel);
}

/* -- listing one folder ------------------------------------------------ */

struct lwait {
	int done, err;
	uint8_t h[PH_SFTP_MAX_HANDLE];
	uint32_t hlen;
	int eof;
	uint64_t digest;
	char **sub;         /* folder names met (malloc'ed) */
	uint32_t *submt;    /* and their mtimes */
	size_t nsub, capsub;
};

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lwait *w = arg;

	(void)s;
	w->done = 1;
	if (r->err != 0)
		w->err = r->err;
	else if (r->type != PH_FXP_HANDLE || r->len == 0 || r->len > PH_SFTP_MAX_HANDLE)
		w->err = PHSYNC_EPROTO;
	else {
		memcpy(w->h, r->data, r->len);
		w->hlen = r->len;
	}
}

static void
readdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lwait *w = arg;
	struct ph_sftp_names it;
	struct ph_sftp_attrs a;
	const uint8_t *name;
	uint32_t nl;
	int k;

	(void)s;
	w->done = 1;
	if (r->err == PHSYNC_ENOENT || (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF)) {
		w->eof = 1;
		return;
	}
	if (r->err != 0) {
		w->err = r->err;
		return;
	}
	if (r->type != PH_FXP_NAME) {
		w->err = PHSYNC_EPROTO;
		return;
	}
	ph_sftp_names_init(&it, r);
	while ((k = ph_sftp_names_next(&it, &name, &nl, &a)) == 1) {
		char tmp[256];
		uint64_t seed;
		uint32_t type = (a.flags & PH_ATTR_PERMISSIONS) ? a.perm & 0170000 : 0;

		/* The scanners' own rule: a name a sync refuses is no change. */
		if (!ph_name_safe(name, nl))
			continue;
		memcpy(tmp, name, nl);
		tmp[nl] = '\0';
		if (phsync_is_temp_name(tmp))
			continue;
		seed = ((a.flags & PH_ATTR_SIZE) ? a.size : 0) * 0x9E3779B97F4A7C15ull ^
		       ((uint64_t)((a.flags & PH_ATTR_ACMODTIME) ? a.mtime : 0) << 20) ^ type;
		w->digest += XXH3_64bits_withSeed(name, nl, seed);
		if (type == 0040000) {
			if (w->nsub == w->capsub) {
				size_t nc = w->capsub ? w->capsub * 2 : 16;
				char **v = realloc(w->sub, nc * sizeof(*v));
				uint32_t *m;

				if (v != NULL)
					w->sub = v;
				m = v ? realloc(w->submt, nc * sizeof(*m)) : NULL;
				if (m == NULL) {
					w->err = PHSYNC_ENOMEM;
					return;
				}
				w->submt = m;
				w->capsub = nc;
			}
			w->submt[w->nsub] = (a.flags & PH_ATTR_ACMODTIME) ? a.mtime : 0;
			if ((w->sub[w->nsub] = strdup(tmp)) == NULL) {
				w->err = PHSYNC_ENOMEM;
				return;
			}
			w->nsub++;
		}
	}
	if (k < 0)
		w->err = k;
}

static void
close_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	((struct lwait *)arg)->done = 1;
}

/* Waits for w; a wait cut short (stop asked, link lost) ends the link so
 * no callback can outlive w. */
static int
wait_for(struct ph_sftp *s, int *done)
{
	int rc = ph_sftp_wait(s, done);

	if (rc != 0 && !*done)
		ph_sftp_abort(s, rc);
	return rc;
}

static void
lwait_free(struct lwait *w)
{
	size_t i;

	for (i = 0; i < w->nsub; i++)
		free(w->sub[i]);
	free(w->sub);
	free(w->submt);
}

/* A folder changed this recently may change again within its mtime's
 * second after we listed it: it is listed again at the next poll. (The
 * phone's clock may differ from ours; a miss then waits for a full poll.) */
static int
recent(uint32_t mtime)
{
	return (int64_t)mtime + 10 >= (int64_t)time(NULL);
}

/* Lists rel: the sum of its entries' hashes and its subfolders' names.
 * PHSYNC_ENOENT when it is gone. */
static int
list_dir(phsync_conn *c, const char *rel, struct lwait *w)
{
	char *p = rpath(c, rel);
	int rc;

	memset(w, 0, sizeof(*w));
	if (p == NULL)
		return PHSYNC_ENOMEM;
	rc = ph_sftp_opendir(c->sftp, p, open_cb, w);
	free(p);
	if (rc != 0 || (rc = wait_for(c->sftp, &w->done)) != 0)
		return rc;
	if (w->err != 0)
		return w->err;
	while (!w->eof && w->err == 0) {
		w->done = 0;
		if ((rc = ph_sftp_readdir(c->sftp, w->h, w->hlen, readdir_cb, w)) != 0 ||
		    (rc = wait_for(c->sftp, &w->done)) != 0)
			return rc;
	}
	w->done = 0;
	if ((rc = ph_sftp_close(c->sftp, w->h, w->hlen, close_cb, w)) != 0 ||
	    (rc = wait_for(c->sftp, &w->done)) != 0)
		return rc;
	return w->err;
}

/* -- the known folders --------------------------------------------------- */

static int
pdir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pdir *)a)->rel, ((const struct pdir *)b)->rel);
}

static struct pdir *
find_dir(struct pdir *d, size_t n, const char *rel)
{
	struct pdir key;

	key.rel = (char *)rel;
	return n ? bsearch(&key, d, n, sizeof(*d), pdir_cmp) : NULL;
}

static int
add_dir(struct pdir **d, size_t *n, size_t *cap, const char *parent, const char *name,
        uint32_t depth, uint32_t mtime)
{
	size_t pl = strlen(parent), nl = strlen(name);
	struct pdir *e;

	if (*n >= MAX_DIRS || depth > MAX_DEPTH || pl + nl + 1 > MAX_PATH)
		return 0; /* beyond the caps: not watched (a full sync still lists it) */
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct pdir *v = realloc(*d, nc * sizeof(*v));

		if (v == NULL)
			return PHSYNC_ENOMEM;
		*d = v;
		*cap = nc;
	}
	e = &(*d)[*n];
	memset(e, 0, sizeof(*e));
	if ((e->rel = malloc(pl + nl + 2)) == NULL)
		return PHSYNC_ENOMEM;
	if (pl) {
		memcpy(e->rel, parent, pl);
		e->rel[pl] = '/';
		memcpy(e->rel + pl + 1, name, nl + 1);
	} else {
		memcpy(e->rel, name, nl + 1);
	}
	e->depth = depth;
	e->mtime = mtime;
	(*n)++;
	return 0;
}

/* Lists d[i] (whose mtime is mtime) and appends its subfolders not yet in
 * d (they are listed when the caller's walk reaches them; d[0..nsorted) is
 * sorted, the rest is looked through; SIZE_MAX: a fresh walk, every
 * subfolder is new). Sets *changed when its entries differ from the last
 * listing. */
static int
relist(phsync_conn *c, struct pdir **d, size_t *n, size_t *cap, size_t nsorted, size_t i,
       uint32_t mtime, int *changed)
{
	struct lwait w;
	size_t k;
	int rc = list_dir(c, (*d)[i].rel, &w);

	if (rc == PHSYNC_ENOENT || rc == PHSYNC_ENOTDIR) {
		(*d)[i].gone = 1;
		*changed = 1;
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	if (w.digest != (*d)[i].digest)
		*changed = 1;
	(*d)[i].hot = (*d)[i].mtime != mtime || recent(mtime);
	(*d)[i].digest = w.digest;
	(*d)[i].mtime = mtime;
	for (k = 0; k < w.nsub; k++) {
		char *rel = (*d)[i].rel;
		size_t pl = strlen(rel), m, known = 0;
		char path[MAX_PATH + 2];

		if (pl + strlen(w.sub[k]) + 1 > MAX_PATH)
			continue;
		snprintf(path, sizeof(path), pl ? "%s/%s" : "%s%s", rel, w.sub[k]);
		if (nsorted != SIZE_MAX) {
			known = find_dir(*d, nsorted, path) != NULL;
			for (m = nsorted; m < *n && !known; m++)
				known = strcmp((*d)[m].rel, path) == 0;
		}
		if (!known) {
			*changed = 1;
			if ((rc = add_dir(d, n, cap, rel, w.sub[k], (*d)[i].depth + 1,
			                  w.submt[k])) != 0)
				goto out;
		}
	}
out:
	lwait_free(&w);
	return rc;
}

struct swait {
	int *pending_zero;
	size_t *pending;
	int err;
	uint32_t mtime;
	int isdir;
};

static void
stat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct swait *w = arg;

	(void)s;
	if (r->err != 0)
		w->err = r->err;
	else if (r->type != PH_FXP_ATTRS)
		w->err = PHSYNC_EPROTO;
	else {
		w->mtime = r->attrs.mtime;
		w->isdir = !(r->attrs.flags & PH_ATTR_PERMISSIONS) ||
		           (r->attrs.perm & 0170000) == 0040000;
	}
	if (--*w->pending == 0)
		*w->pending_zero = 1;
}

/* The mtimes of d[0..n) in sw[], STAT_WINDOW requests in flight. */
static int
stat_all(phsync_conn *c, const struct pdir *d, size_t n, struct swait *sw)
{
	size_t i = 0, pending = 0;
	int zero = 0, rc;

	while (i < n) {
		size_t end = i + STAT_WINDOW < n ? i + STAT_WINDOW : n;

		zero = 0;
		for (; i < end; i++) {
			char *p = rpath(c, d[i].rel);

			sw[i].pending_zero = &zero;
			sw[i].pending = &pending;
			sw[i].err = 0;
			rc = p ? ph_sftp_stat(c->sftp, 0, p, stat_cb, &sw[i]) : PHSYNC_ENOMEM;
			free(p);
			if (rc != 0) {
				if (pending > 0)
					ph_sftp_abort(c->sftp, rc);
				return rc;
			}
			pending++;
		}
		if ((rc = wait_for(c->sftp, &zero)) != 0)
			return rc;
	}
	return 0;
}

/* Lists the whole tree afresh; *changed when any folder's entries or the
 * set of folders differ from what was known. */
static int
list_all(phsync_conn *c, int *changed)
{
	struct pdir *d = NULL, *old;
	size_t n = 0, cap = 0, i;
	struct swait root;
	size_t pending = 1;
	int zero = 0, rc;
	char *p = rpath(c, "");

	if (p == NULL)
		return PHSYNC_ENOMEM;
	memset(&root, 0, sizeof(root));
	root.pending = &pending;
	root.pending_zero = &zero;
	rc = ph_sftp_stat(c->sftp, 0, p, stat_cb, &root);
	free(p);
	if (rc != 0 || (rc = wait_for(c->sftp, &zero)) != 0)
		return rc;
	if (root.err != 0)
		return root.err;
	if ((rc = add_dir(&d, &n, &cap, "", "", 0, root.mtime)) != 0)
		goto out;
	d[0].rel[0] = '\0';
	d[0].mtime = root.mtime;
	for (i = 0; i < n; i++) {
		uint32_t mt = d[i].mtime;

		d[i].digest = 0;
		/* Subfolders are appended unsorted: no lookup among them is
		 * needed, each is met once. */
		if ((rc = relist(c, &d, &n, &cap, SIZE_MAX, i, mt, changed)) != 0)
			goto out;
	}
	qsort(d, n, sizeof(*d), pdir_cmp);
	*changed = !c->listed || n != c->nd;
	for (i = 0; i < n && !*changed; i++) {
		old = find_dir(c->d, c->nd, d[i].rel);
		if (old == NULL || old->digest != d[i].digest || d[i].gone)
			*changed = 1;
	}
	free_dirs(c->d, c->nd);
	c->d = d;
	c->nd = n;
	c->capd = cap;
	d = NULL;
	n = 0;
out:
	free_dirs(d, n);
	return rc;
}

int
phsync_conn_keepalive(phsync_conn *c)
{
	struct ph_sftp_attrs a;
	char *root;
	int rc;

	if (c == NULL)
		return PHSYNC_EINVAL;
	if (!phsync_conn_alive(c))
		return ph_err(c->ctx, PHSYNC_ECONNECT, "%s: the connection was lost", c->host);
	if ((root = rpath(c, "")) == NULL)
		return PHSYNC_ENOMEM;
	rc = ph_sftp_stat_sync(c->sftp, 0, root, &a);
	free(root);
	if (rc == PHSYNC_EINTR)
		return rc;
	if (!phsync_conn_alive(c))
		return ph_err(c->ctx, PHSYNC_ECONNECT, "%s: the connection was lost (a keepalive "
		              "went unanswered)", c->host);
	/* An error reply (the folder gone meanwhile) is an answer too. */
	return 0;
}

int
phsync_conn_poll(phsync_conn *c, int full)
{
	struct swait *sw = NULL;
	size_t n, i, k;
	int rc, changed = 0;

	if (c == NULL)
		return PHSYNC_EINVAL;
	if (!phsync_conn_alive(c))
		return ph_err(c->ctx, PHSYNC_ECONNECT, "%s: the connection was lost", c->host);
	if (!c->listed || full) {
		rc = list_all(c, &changed);
		if (rc == 0)
			c->listed = 1;
		goto out;
	}
	n = c->nd;
	if ((sw = calloc(n ? n : 1, sizeof(*sw))) == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = stat_all(c, c->d, n, sw)) != 0)
		goto out;
	if (find_dir(c->d, n, "") == &c->d[0] && sw[0].err != 0) {
		rc = ph_err(c->ctx, sw[0].err, "%s:%s: %s", c->host, c->rroot,
		            sw[0].err == PHSYNC_ENOENT ? "no such folder on the server" :
		            phsync_strerror(sw[0].err));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (sw[i].err != 0 || !sw[i].isdir) {
			c->d[i].gone = 1;
			changed = 1;
		} else if (sw[i].mtime != c->d[i].mtime || c->d[i].hot) {
			if ((rc = relist(c, &c->d, &c->nd, &c->capd, n, i, sw[i].mtime, &changed)) != 0)
				goto out;
		}
	}
	/* New folders (appended by relist): list each, and what they hold. */
	for (i = n; i < c->nd; i++) {
		if ((rc = relist(c, &c->d, &c->nd, &c->capd, n, i, c->d[i].mtime, &changed)) != 0)
			goto out;
	}
	for (i = k = 0; i < c->nd; i++) {
		if (c->d[i].gone)
			free(c->d[i].rel);
		else
			c->d[k++] = c->d[i];
	}
	c->nd = k;
	qsort(c->d, c->nd, sizeof(*c->d), pdir_cmp);
out:
	free(sw);
	if (rc != 0)
		return rc;
	return changed;
}
