/* SPDX-License-Identifier: ISC */
/* The remote side of a job: HOST:PATH parsed, the SSH login and the SFTP
 * session; and the include/exclude filter every scan applies. Shared by
 * phsync_sync and the backup (src/backup/), so both reach a phone the
 * same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "ctx.h"
#include "job.h"
#include "ssh.h"

const char *const phsync_default_excludes[] = {
	".thumbnails/",   /* Android's thumbnail cache folder (DCIM/.thumbnails) */
	".thumbdata*",    /* its cache files */
	".trashed-*",     /* in the gallery's bin: deleted by the user */
	".pending-*",     /* being written by the camera or a download */
	NULL
};

int
ph_job_filter(struct ph_job *j, const char ***pat, uint8_t **incl)
{
	const struct phsync_options *o = j->o;
	size_t ndef = 0, n, k = 0, i;

	if (!o->no_default_excludes)
		while (phsync_default_excludes[ndef] != NULL)
			ndef++;
	n = o->n_excludes + o->n_includes + ndef;
	*pat = NULL;
	*incl = NULL;
	if (n == 0)
		return 0;
	*pat = calloc(n, sizeof(**pat));
	*incl = calloc(n, 1);
	if (*pat == NULL || *incl == NULL)
		return PHSYNC_ENOMEM;
	/* Includes first: an include re-admits what an exclude would drop,
	 * the default excludes included. */
	for (i = 0; i < o->n_includes; i++, k++) {
		(*pat)[k] = o->includes[i];
		(*incl)[k] = 1;
	}
	for (i = 0; i < o->n_excludes; i++, k++)
		(*pat)[k] = o->excludes[i];
	for (i = 0; i < ndef; i++, k++)
		(*pat)[k] = phsync_default_excludes[i];
	j->filter.pat = *pat;
	j->filter.incl = *incl;
	j->filter.n = n;
	return 0;
}


int
ph_job_parse_remote(struct ph_job *j, const char *remote, char **user, char **host,
                    char **rpath)
{
	if (phsync_parse_remote(remote, user, host, rpath) != 0)
		return ph_err(j->ctx, PHSYNC_EINVAL, "'%s' is not HOST:PATH", remote);
	if ((j->rroot = ph_remote_root(*rpath)) == NULL)
		return PHSYNC_ENOMEM;
	return 0;
}

int
ph_job_connect(struct ph_job *j, const char *user, const char *host, struct ph_ssh **ssh)
{
	char why[600];
	int rc = ph_conn_connect(j->ctx, j->o, user, host, j->rroot, ssh, &j->sftp, why,
	                         sizeof(why));

	/* auto on plain SFTP is the usual case, said only to -v: why. */
	if (rc == 0 && why[0] != '\0') {
		char msg[700];

		snprintf(msg, sizeof(msg), "no helper, plain SFTP: %s", why);
		ph_job_event(j, PHSYNC_EV_INFO, NULL, NULL, 0, 0, msg);
	}
	return rc;
}
