/* SPDX-License-Identifier: ISC */
/* A single file as the source of a pull or push: see single.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "login.h"
#include "ctx.h"
#include "pfs.h"
#include "psys.h"
#include "single.h"
#include "ssh.h"
#include "str.h"

/* The local folder part of p, up to its last separator s (malloc'ed): the
 * separator is kept only where the folder is a root without it ("/", and on
 * Windows "C:\", as "C:" alone is the drive's current folder). */
static char *
local_dir(const char *p, const char *s)
{
	size_t n = (size_t)(s - p);
	char *d = ph_strndup(p, n + 1);
	int root;

	if (d == NULL)
		return NULL;
	root = ph_path_absolute(d);
	d[n] = '\0';
	if (root && (n == 0 || !ph_path_absolute(d)))
		d[n] = *s;
	return d;
}

/* Splits p at its last separator ('/'; for a local path on Windows also
 * '\\') into a folder and a name (malloc'ed); the remote's "" is "/" and
 * "." the login folder (ph_remote_root), the local's "/" and ".". */
static int
split(const char *p, int remote, char **dir, char **name)
{
	const char *s = NULL, *c;

	for (c = p; *c != '\0'; c++)
		if (remote ? *c == '/' : ph_path_sep((unsigned char)*c))
			s = c;
	*dir = s == NULL ? strdup(".") : remote && s == p ? strdup("") :
	       remote ? ph_strndup(p, (size_t)(s - p)) : local_dir(p, s);
	*name = strdup(s ? s + 1 : p);
	if (*dir == NULL || *name == NULL) {
		free(*dir);
		free(*name);
		*dir = *name = NULL;
		return PHSYNC_ENOMEM;
	}
	return 0;
}

/* What path names, a symlink followed (as stat): 1 a folder, 0 another
 * file, -1 nothing (or it cannot be told). */
static int
is_folder(const char *path)
{
	struct ph_stat st;
	int fd;

	if (ph_fstatat(PH_AT_CWD, path, &st) != 0)
		return -1;
	if (st.type != PH_FT_LNK)
		return st.type == PH_FT_DIR;
	if ((fd = ph_dir_open_path(path)) >= 0) {
		ph_close(fd);
		return 1;
	}
	return fd == -ENOTDIR ? 0 : -1;
}

int
ph_single_local(struct ph_job *j, const char *path, char **dir, char **name)
{
	struct ph_stat st;
	int rc;

	*dir = *name = NULL;
	if (ph_fstatat(PH_AT_CWD, path, &st) != 0)
		return 0;
	if (st.type == PH_FT_LNK) {
		/* A symlink to a folder is the folder, as it always was for a
		 * root; to a file it would be followed: refused. */
		if (is_folder(path) == 1)
			return 0;
		return ph_err(j->ctx, PHSYNC_EUNSAFE, "%s is a symlink: phsync never follows "
		              "one to a file (name the file it points to); nothing was sent", path);
	}
	if (st.type != PH_FT_REG)
		return 0;
	if ((rc = split(path, 0, dir, name)) != 0)
		return rc;
	if (!ph_name_safe((const uint8_t *)*name, strlen(*name))) {
		rc = ph_err(j->ctx, PHSYNC_EUNSAFE, "%s: an unsafe name (with '\\' or control "
		            "characters); not sent", path);
		free(*dir);
		free(*name);
		*dir = *name = NULL;
	}
	return rc;
}

int
ph_single_pull_dest(struct ph_job *j, const char *path)
{
	if (is_folder(path) != 0)
		return 0;
	return ph_err(j->ctx, PHSYNC_ENOTDIR, "%s is a file, not a folder: a pull's "
	              "destination is a folder the files land in (as `scp x DIR/`); a file "
	              "named as the destination is never overwritten", path);
}

int
ph_single_remote(struct ph_job *j, struct ph_ssh *ssh, const char *host, const char *rpath,
                 int kept_conn, char **name)
{
	struct ph_sftp_attrs la;
	char *dir = NULL, *p = NULL;
	int rc;

	*name = NULL;
	if ((rc = split(j->rroot, 1, &dir, name)) != 0)
		return rc;
	if ((*name)[0] == '\0' || strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0 ||
	    !ph_name_safe((const uint8_t *)*name, strlen(*name))) {
		rc = ph_err(j->ctx, PHSYNC_EUNSAFE, "%s:%s: a file name phsync does not take",
		            host, rpath);
		goto out;
	}
	free(j->rroot);
	j->rroot = dir;
	dir = NULL;
	/* A helper serves the one root it was started for: the file's
	 * folder needs its own (the server's own SFTP serves every path). */
	if (ph_sftp_helper(j->sftp) != 0 && kept_conn) {
		rc = ph_err(j->ctx, PHSYNC_EINVAL, "%s:%s is a file: the kept connection's "
		            "helper serves it alone, not its folder", host, rpath);
		goto out;
	}
	if (ph_sftp_helper(j->sftp) != 0 &&
	    (rc = ph_login_reroot(j->ctx, j->o, ssh, j->rroot, &j->sftp)) != 0)
		goto out;
	/* Beneath its folder, not followed: a symlink is never the source. */
	if ((p = ph_job_rpath(j, *name)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	rc = ph_sftp_stat_sync(j->sftp, PH_LSTAT, p, &la);
	if (rc != 0) {
		rc = ph_err(j->ctx, rc, "%s:%s: %s", host, rpath, phsync_strerror(rc));
		goto out;
	}
	if (!(la.flags & PH_ATTR_PERMISSIONS) || (la.perm & 0170000) != 0100000) {
		rc = ph_err(j->ctx, PHSYNC_EUNSAFE, "%s:%s is %s: phsync never follows one; "
		            "nothing was copied", host, rpath,
		            (la.flags & PH_ATTR_PERMISSIONS) && (la.perm & 0170000) == 0120000 ?
		            "a symlink" : "not a regular file");
		goto out;
	}
out:
	if (rc != 0) {
		free(*name);
		*name = NULL;
	}
	free(dir);
	free(p);
	return rc;
}

int
ph_single_options(struct ph_job *j, const char *shown)
{
	if (j->o->delete_missing)
		return ph_err(j->ctx, PHSYNC_EINVAL, "--delete with a single file (%s): nothing "
		              "else is synced, so nothing can be gone; nothing was done", shown);
	return 0;
}
