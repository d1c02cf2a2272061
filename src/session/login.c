/* SPDX-License-Identifier: ISC */
/* Logging in: the SSH session (ssh_config, host key, auth) and SFTP on it,
 * through the remote helper (`phsync serve ROOT`: the phone's phsync, or
 * the static helper phsync brings, bootstrap.c) where it runs, else the
 * server's SFTP subsystem; the no-helper memo (state.h) keeps --helper
 * auto from asking a host without one again within a day. What every
 * sync, backup, kept connection and the doctor reach a phone through. */
#include <limits.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bootcheck.h"
#include "bootstrap.h"
#include "ctx.h"
#include "emit.h"
#include "login.h"
#include "sftpwire.h"
#include "state.h"


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

/* How the helper on the session's channel was started (the session's
 * note, ph_ssh_set_note), for a listing's second one (ph_login_more). */
struct helper_how {
	char *prog;         /* `prog serve ROOT`; NULL: the copy phsync brought */
	char *rroot;        /* the ROOT it serves */
	char arch[16];      /* the brought copy's machine, */
	char seen[PH_BOOT_IDENT_MAX]; /* and the identity its start relied on */
};

static void
how_free(void *p)
{
	struct helper_how *h = p;

	if (h != NULL) {
		free(h->prog);
		free(h->rroot);
		free(h);
	}
}

/* Notes on ssh that its helper serving rroot was started as `prog serve`
 * (prog non-NULL) or is boot's brought copy. Without memory, no note: a
 * listing then keeps to its one helper. */
static void
note_helper(struct ph_ssh *ssh, const char *prog, const struct ph_boot *boot, const char *rroot)
{
	struct helper_how *h = calloc(1, sizeof(*h));

	if (h == NULL || (h->rroot = strdup(rroot)) == NULL ||
	    (prog != NULL && (h->prog = strdup(prog)) == NULL)) {
		how_free(h);
		return;
	}
	if (prog == NULL) {
		snprintf(h->arch, sizeof(h->arch), "%s", boot->arch);
		snprintf(h->seen, sizeof(h->seen), "%s", boot->seen);
	}
	ph_ssh_set_note(ssh, h, how_free);
}

/* Speaks SFTP with the helper that cmd (as the error names it) started on
 * chan, when rc (its start) is 0. Returns 0 with *sftp set, or an error
 * with the message in ctx (the channel is then closed: its exit status and
 * standard error go into the message; the session stays for plain SFTP). */
static int
helper_on(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
          const char *cmd, struct ph_chan *chan, int rc, struct ph_sftp **sftp)
{
	char why[sizeof(ctx->err)], errout[256];
	unsigned timeout_s = opts->timeout_s ? opts->timeout_s : 60;
	int judged = rc != 0; /* refused before any helper ran: our reason first */

	if (rc == 0) {
		/* A helper that starts answers at once; one that hangs (a shell
		 * waiting on something) must not cost the whole --timeout. */
		chan->silence_ms = (int)(timeout_s < 15 ? timeout_s : 15) * 1000;
		rc = ph_sftp_new_helper(ctx, chan, PH_HELPER_PROTO_MAX, sftp);
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
		/* What the start-up script was refused for, not what a shell that
		 * lied printed beside it. */
		if (judged && errout[0] != '\0') {
			size_t k = strlen(why);

			snprintf(why + k, sizeof(why) - k, " (its standard error: %.200s)", errout);
			errout[0] = '\0';
		}
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
	return rc;
}

/* Starts `phsync serve ROOT` over an exec channel and speaks SFTP with it
 * (boot non-NULL: prog is the helper phsync brought, run checked by
 * ph_helper_boot_exec). As helper_on. */
static int
start_helper(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
             const char *prog, const char *rroot, struct ph_boot *boot,
             struct ph_sftp **sftp)
{
	char *cmd = helper_cmd(prog, rroot);
	struct ph_chan chan;
	int rc;

	if (cmd == NULL)
		return PHSYNC_ENOMEM;
	memset(&chan, 0, sizeof(chan));
	if (boot != NULL)
		rc = ph_helper_boot_exec(ctx, ssh, boot, rroot, &chan);
	else
		rc = ph_ssh_open_exec(ssh, cmd, &chan);
	rc = helper_on(ctx, opts, ssh, cmd, &chan, rc, sftp);
	if (rc == 0)
		note_helper(ssh, boot != NULL ? NULL : prog, boot, rroot);
	free(cmd);
	return rc;
}

/* Whether a failure to start or bring the helper is the host's definite
 * answer (no phsync there, no helper for its machine, another protocol,
 * uploads refused), worth the no-helper memo, rather than a dropped
 * channel or session, a stop or a local shortage, which the next run may
 * not meet (issue 22: a memo written on Dropbear's dropped channels kept
 * the helper off for a day). */
/* A phone whose memo says it ran the helper phsync brought (memo.h):
 * that one started at once, with no `phsync serve` tried first and no
 * `uname -m`. Returns 0 (started), a fatal error, or 1: no memo, or the
 * start failed (the memo is dropped; the caller goes the whole way). */
static int
start_brought(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
              const char *rroot, const char *mu, const char *mk, struct ph_sftp **sftp)
{
	struct ph_boot boot;
	char arch[16];
	int rc;

	if (!ph_state_brought_get(opts->state_dir, mu, mk, arch, sizeof(arch)))
		return 1;
	rc = ph_helper_boot_arch(ctx, opts, arch, &boot);
	if (rc == 0) {
		(void)ph_state_brought_ident(opts->state_dir, mu, mk, boot.build, boot.known,
		                             sizeof(boot.known));
		rc = start_helper(ctx, opts, ssh, boot.path, rroot, &boot, sftp);
	}
	/* A new identity (a full check of a new or changed copy): remembered. */
	if (rc == 0 && strcmp(boot.seen, boot.known) != 0)
		ph_state_brought_put(opts->state_dir, mu, mk, arch, boot.build, boot.seen);
	ph_helper_boot_free(&boot);
	if (rc == 0 || rc == PHSYNC_EINTR || rc == PHSYNC_ENOMEM)
		return rc;
	ph_state_brought_drop(opts->state_dir, mu, mk);
	ph_sftp_free(*sftp);
	*sftp = NULL;
	ctx->err[0] = '\0';
	return 1;
}

static int
no_helper_answer(int rc)
{
	return rc != PHSYNC_ECONNECT && rc != PHSYNC_EINTR && rc != PHSYNC_ENOMEM &&
	       rc != PHSYNC_EIO;
}

/* Without static helpers here: the phone's own `phsync serve` alone, one
 * exec (how: why none can be brought, rc its code). As start_first. */
static int
start_own_only(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
               const char *rroot, int how_rc, const char *how, struct ph_sftp **sftp,
               int *definite)
{
	char first[sizeof(ctx->err)];
	int rc = start_helper(ctx, opts, ssh, "phsync", rroot, NULL, sftp);

	if (rc == 0 || rc == PHSYNC_EINTR || rc == PHSYNC_ENOMEM)
		return rc;
	/* Both must be answers: a dropped first try says nothing of the host. */
	*definite = no_helper_answer(rc) && no_helper_answer(how_rc);
	snprintf(first, sizeof(first), "%s", ctx->err);
	return ph_err(ctx, how_rc, "%.500s; and none could be brought: %.400s", first, how);
}

/* The helper on a phone phsync has no memo of (docs/PROTOCOL.md,
 * "Bootstrap"): one exec channel tries the phone's own phsync, else names
 * its machine and checks and runs the cached copy of the helper phsync
 * brings for it (ph_helper_boot_first). A phone's phsync that speaks
 * another protocol costs a second start without it; a missing or stale
 * copy, an upload and a second checked start. mu NULL: no memo (the host
 * key is unknown); else the brought memo gives the identity remembered for
 * its copy (--helper always) and is written after a start. Returns 0 with
 * *sftp set, or an error with the message in ctx and *definite: whether
 * every try failed on the host's answer (no_helper_answer). */
static int
start_first(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
            const char *rroot, const char *mu, const char *mk, struct ph_sftp **sftp,
            int *definite)
{
	char first[sizeof(ctx->err)] = "", how[sizeof(ctx->err)], arch[16];
	char *cmd = NULL, *own_cmd = helper_cmd("phsync", rroot);
	struct ph_boot boot;
	struct ph_chan chan;
	unsigned offer;
	int rc, own = 1;

	*definite = 1;
	memset(&boot, 0, sizeof(boot));
	if (own_cmd == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = ph_helper_boot_offer(ctx, &offer)) != 0) {
		snprintf(how, sizeof(how), "%s", ctx->err);
		rc = start_own_only(ctx, opts, ssh, rroot, rc, how, sftp, definite);
		goto out;
	}
	/* A copy checked before, for this phone's machine: its identity. */
	if (mu != NULL && ph_state_brought_get(opts->state_dir, mu, mk, arch, sizeof(arch))) {
		if (ph_helper_boot_arch(ctx, opts, arch, &boot) == 0) {
			(void)ph_state_brought_ident(opts->state_dir, mu, mk, boot.build, boot.known,
			                             sizeof(boot.known));
		} else {
			ph_helper_boot_free(&boot);
			memset(&boot, 0, sizeof(boot));
			ctx->err[0] = '\0';
		}
	}
	for (;;) {
		memset(&chan, 0, sizeof(chan));
		rc = ph_helper_boot_first(ctx, ssh, opts, rroot, own, &boot, &chan);
		if (rc != PH_BOOT_OWN)
			break;
		if ((rc = helper_on(ctx, opts, ssh, own_cmd, &chan, 0, sftp)) == 0)
			note_helper(ssh, "phsync", NULL, rroot);
		if (rc == 0 || rc == PHSYNC_EINTR || rc == PHSYNC_ENOMEM)
			goto out;
		/* Another version's phsync (or one that does not run): ours. */
		snprintf(first, sizeof(first), "%s", ctx->err);
		*definite = no_helper_answer(rc);
		own = 0;
	}
	/* The helper as the messages name it (its machine unknown: the script). */
	if ((cmd = helper_cmd(boot.named && boot.data != NULL ? boot.path : "phsync-boot",
	                      rroot)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	rc = helper_on(ctx, opts, ssh, cmd, &chan, rc, sftp);
	if (rc == 0)
		note_helper(ssh, NULL, &boot, rroot);
	if (rc == 0 && mu != NULL)
		ph_state_brought_put(opts->state_dir, mu, mk, boot.arch, boot.build, boot.seen);
	if (rc != 0 && rc != PHSYNC_EINTR) {
		snprintf(how, sizeof(how), "%s", ctx->err);
		if (first[0] != '\0')
			rc = ph_err(ctx, rc, "%.500s; and none could be brought: %.400s", first, how);
		else if (boot.named)
			rc = ph_err(ctx, rc, "%s: no phsync on the phone's PATH; and none could be "
			            "brought: %.400s", ph_ssh_host(ssh), how);
	}
	*definite = *definite && no_helper_answer(rc);
out:
	ph_helper_boot_free(&boot);
	free(own_cmd);
	free(cmd);
	return rc;
}

/* SFTP on the logged-in session ssh: the helper serving rroot, or the
 * server's subsystem (ph_login_open, and its why). *sftp is NULL on
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
	ph_ssh_set_note(*ssh, NULL, NULL); /* no helper on the channel yet */
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	/* auto, on a host that ran no helper a moment ago: straight to SFTP
	 * (state.h, "hosts without a helper"). */
	if (rroot != NULL && opts->helper != PHSYNC_HELPER_NEVER && opts->helper_path == NULL) {
		ph_ssh_identity(*ssh, mu, sizeof(mu), mh, sizeof(mh), &mport);
		memo = ph_ssh_host_key(*ssh, mk, sizeof(mk)) == 0;
	}
	if (rroot != NULL && opts->helper == PHSYNC_HELPER_AUTO && opts->helper_path == NULL) {
		if (memo && ph_state_nohelper_get(opts->state_dir, mu, mk)) {
			if (why != NULL)
				snprintf(why, whylen, "an earlier run found no helper on this phone and "
				         "that is remembered for a day (nohelper-* in the state folder; "
				         "--helper always tries again)");
			goto plain;
		}
		/* ... or ran the one phsync brought: that one at once. */
		if (memo && (rc = start_brought(ctx, opts, *ssh, rroot, mu, mk, sftp)) <= 0)
			goto out;
	}
	if (rroot != NULL && opts->helper != PHSYNC_HELPER_NEVER) {
		if (opts->helper_path != NULL) {
			rc = start_helper(ctx, opts, *ssh, opts->helper_path, rroot, NULL, sftp);
			definite = no_helper_answer(rc);
		} else {
			rc = start_first(ctx, opts, *ssh, rroot, memo ? mu : NULL, mk, sftp, &definite);
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
ph_login_open(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
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
ph_login_reroot(phsync_ctx *ctx, const struct phsync_options *opts, struct ph_ssh *ssh,
                const char *rroot, struct ph_sftp **sftp)
{
	ph_sftp_free(*sftp);
	*sftp = NULL;
	return session(ctx, opts, &ssh, rroot, sftp, NULL, 0);
}

int
ph_login_run(phsync_ctx *ctx, const struct phsync_options *opts, const char *user,
             const char *host, const char *rroot, struct ph_emit *ev, struct ph_ssh **ssh,
             struct ph_sftp **sftp)
{
	char why[600];
	int rc = ph_login_open(ctx, opts, user, host, rroot, ssh, sftp, why, sizeof(why));

	/* auto on plain SFTP is the usual case, said only to -v: why. */
	if (rc == 0 && why[0] != '\0') {
		char msg[700];

		snprintf(msg, sizeof(msg), "no helper, plain SFTP: %s", why);
		ph_emit(ev, PHSYNC_EV_INFO, NULL, NULL, 0, 0, msg);
	}
	return rc;
}

/* One more helper beside the session's, started as that one was (h),
 * on a channel of its own: the phone's phsync or --helper-path as a
 * command, the brought copy checked as at its first start (never
 * replaced). It must speak the first one's protocol version. 0 with *out
 * set, or an error with the message in ctx. */
static int
more_helper(const struct ph_login_more *m, const struct helper_how *h, struct ph_sftp **out)
{
	phsync_ctx *ctx = m->ctx;
	unsigned timeout_s = m->opts->timeout_s ? m->opts->timeout_s : 60;
	struct ph_chan chan;
	struct ph_boot boot;
	char *cmd = NULL;
	int rc;

	*out = NULL;
	memset(&chan, 0, sizeof(chan));
	memset(&boot, 0, sizeof(boot));
	if (h->prog != NULL) {
		if ((cmd = helper_cmd(h->prog, h->rroot)) == NULL)
			return ph_err(ctx, PHSYNC_ENOMEM, "out of memory");
		if ((rc = ph_ssh_open_exec_more(m->ssh, cmd, &chan)) != 0)
			rc = ph_err(ctx, rc, rc == PHSYNC_ECONNECT ? "the connection was lost" :
			            "the server refused another command channel");
		free(cmd);
	} else if ((rc = ph_helper_boot_arch(ctx, m->opts, h->arch, &boot)) == 0) {
		snprintf(boot.known, sizeof(boot.known), "%s", h->seen);
		rc = ph_helper_boot_exec_more(ctx, m->ssh, &boot, h->rroot, &chan);
	}
	ph_helper_boot_free(&boot);
	if (rc != 0)
		return rc;
	/* As the first: one that hangs must not cost the whole --timeout. */
	chan.silence_ms = (int)(timeout_s < 15 ? timeout_s : 15) * 1000;
	if ((rc = ph_sftp_new_helper(ctx, &chan, PH_HELPER_PROTO_MAX, out)) != 0)
		return rc;
	if (ph_sftp_helper(*out) != ph_sftp_helper(m->sftp)) {
		unsigned seen = ph_sftp_helper_seen(*out);

		ph_sftp_free(*out);
		*out = NULL;
		if (seen == 0)
			return ph_err(ctx, PHSYNC_EUNSUPPORTED, "it answers plain SFTP, not the phsync "
			              "helper protocol");
		return ph_err(ctx, PHSYNC_EUNSUPPORTED, "it speaks another protocol version (%s%u) "
		              "than the first (%u)", seen == UINT_MAX ? "unreadable, " : "",
		              seen == UINT_MAX ? 0 : seen, ph_sftp_helper(m->sftp));
	}
	ph_sftp_set_timeout(*out, (int)timeout_s * 1000);
	return 0;
}

size_t
ph_login_more(void *arg, struct ph_sftp **out, size_t max)
{
	const struct ph_login_more *m = arg;
	phsync_ctx *ctx = m->ctx;
	const struct helper_how *h = NULL;
	const char *what = "SFTP channels";
	unsigned timeout_s = m->opts->timeout_s ? m->opts->timeout_s : 60;
	char why[sizeof(ctx->err) + 100], err[sizeof(ctx->err)];
	size_t n = 0;
	int rc = 0;

	if (m->ssh == NULL)
		return 0;
	/* A helper: more of the same helper, each walking its folders with
	 * its own process (a phone's other cores). */
	if (ph_sftp_helper(m->sftp) != 0) {
		if ((h = ph_ssh_note(m->ssh)) == NULL)
			return 0;
		what = "helpers";
	}
	/* Only OpenSSH is known to hold several channels at once in every
	 * version a phone runs (MaxSessions, 10 by default); Dropbear 2022.83
	 * asserts with several half-closed ones (issue 22), and the others
	 * are not tested so. */
	if (!ph_ssh_server_openssh(m->ssh)) {
		snprintf(why, sizeof(why), "one %s: the server is not OpenSSH",
		         h != NULL ? "helper" : "SFTP channel");
		ph_emit(m->ev, PHSYNC_EV_INFO, NULL, NULL, 0, 0, why);
		return 0;
	}
	/* (A failure here is not the run's: the run's message stays.) */
	memcpy(err, ctx->err, sizeof(err));
	while (n < max) {
		struct ph_chan chan;

		if (h != NULL) {
			rc = more_helper(m, h, &out[n]);
		} else {
			memset(&chan, 0, sizeof(chan));
			if ((rc = ph_ssh_open_sftp_more(m->ssh, &chan)) != 0) {
				rc = ph_err(ctx, rc, "the server refused another (%s)",
				            phsync_strerror(rc));
				break;
			}
			chan.silence_ms = (int)timeout_s * 1000;
			rc = ph_sftp_new(ctx, &chan, &out[n]);
		}
		if (rc != 0) {
			/* (The channel opened is ended with the others; with none
			 * to give back, now.) */
			if (n == 0)
				ph_ssh_close_more(m->ssh);
			break;
		}
		n++;
	}
	if (rc != 0 && n == 0)
		snprintf(why, sizeof(why), "one %s: %s", h != NULL ?
		         "helper: another could not start" : "SFTP channel", ctx->err);
	else
		snprintf(why, sizeof(why), "listing over %zu %s", n + 1, what);
	memcpy(ctx->err, err, sizeof(err));
	ph_emit(m->ev, PHSYNC_EV_INFO, NULL, NULL, 0, 0, why);
	return n;
}

void
ph_login_end_more(void *arg, struct ph_sftp **v, size_t n)
{
	const struct ph_login_more *m = arg;
	size_t i;

	for (i = 0; i < n; i++)
		ph_sftp_free(v[i]);
	ph_ssh_close_more(m->ssh);
}
