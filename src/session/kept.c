/* SPDX-License-Identifier: ISC */
/* Kept connections (phsync_conn_*): a watcher's link to a phone, which
 * phsync_sync can run over (opts.conn), kept alive, and polled cheaply for
 * changes on the server (the poll itself: scan/rpoll.c). */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "kept.h"
#include "login.h"
#include "rpoll.h"
#include "spec.h"
#include "tree.h"

struct phsync_conn {
	phsync_ctx *ctx;
	struct ph_ssh *ssh;
	struct ph_sftp *sftp;
	char *user, *host;  /* as the remote spec named them */
	char *rroot;
	struct ph_rpoll *poll; /* the folders the poll knows (NULL: none yet) */
};

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
ph_kept_use(phsync_conn *c, const char *user, const char *host, const char *rroot,
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
ph_kept_drop(phsync_conn *c)
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
	if ((rc = ph_spec_remote(ctx, remote, &c->user, &c->host, &path, &c->rroot)) == 0)
		rc = ph_login_open(ctx, opts, c->user, c->host, c->rroot, &c->ssh, &c->sftp, NULL,
		                   0);
	free(path);
	if (rc != 0)
		phsync_conn_free(c);
	else
		*out = c;
	return rc;
}

void
phsync_conn_free(phsync_conn *c)
{
	if (c == NULL)
		return;
	ph_kept_drop(c);
	ph_rpoll_free(c->poll);
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
	if ((root = ph_rpath_join(c->rroot, "")) == NULL)
		return PHSYNC_ENOMEM;
	rc = ph_sftp_stat_sync(c->sftp, PH_STAT, root, &a);
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
	if (c == NULL)
		return PHSYNC_EINVAL;
	if (!phsync_conn_alive(c))
		return ph_err(c->ctx, PHSYNC_ECONNECT, "%s: the connection was lost", c->host);
	return ph_rpoll_run(&c->poll, c->ctx, c->sftp, c->host, c->rroot, full);
}
