/* SPDX-License-Identifier: ISC */
/* --delete: removes (or moves to --trash) the destination files whose
 * source is gone since the last sync. sync.c decides whether the run may
 * delete at all (listings complete, source not empty, under --max-delete);
 * here each file is checked once more just before it goes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "job.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "psys.h"
#include "tempname.h"

static void
del_failed(struct ph_job *j, const char *path, int err, const char *msg)
{
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, path, "delete", 0, err, msg);
}

static void
del_done(struct ph_job *j, const struct ph_entry *d)
{
	int rc;

	j->st.files_deleted++;
	if (j->state != NULL && j->state_err == 0 &&
	    (rc = ph_state_file_forget(j->state, d->path)) != 0)
		j->state_err = rc;
	ph_job_event(j, PHSYNC_EV_DELETED, d->path, j->o->trash_dir ? "trash" : "delete",
	             d->size, 0, NULL);
}

/* Moves name (in dfd) to the trash folder's copy of rel's folder, under a
 * free name. */
static int
local_trash(struct ph_job *j, int dfd, const char *rel, const char *name)
{
	const char *t = j->o->trash_dir;
	const char *slash = strrchr(rel, '/');
	size_t need = strlen(j->local_dir) + strlen(t) + strlen(rel) + 3;
	char *path = malloc(need), alt[256];
	unsigned n;
	int tfd, rc;

	if (path == NULL)
		return PHSYNC_ENOMEM;
	if (ph_path_absolute(t))
		snprintf(path, need, "%s/%.*s", t, slash ? (int)(slash - rel) : 0, rel);
	else
		snprintf(path, need, "%s/%s/%.*s", j->local_dir, t, slash ? (int)(slash - rel) : 0,
		         rel);
	rc = ph_local_open_root(j->ctx, path, PH_ROOT_MAKE, &tfd);
	free(path);
	if (rc != 0)
		return rc;
	rc = ph_rename_noreplace(dfd, name, tfd, name);
	for (n = 1; rc == -EEXIST && n < 100; n++) {
		ph_conflict_name(alt, sizeof(alt), name, j->started, n);
		rc = ph_rename_noreplace(dfd, name, tfd, alt);
	}
	if (rc == 0 && j->o->fsync)
		ph_dir_sync(tfd);
	ph_close(tfd);
	if (rc == -EXDEV)
		return ph_err(j->ctx, PHSYNC_EIO, "the trash folder is on another file system");
	return rc ? ph_err_from_errno(-rc) : 0;
}

static void
delete_local(struct ph_job *j, const struct ph_entry *d)
{
	const char *base;
	char *dir;
	struct ph_stat st;
	int dfd, rc;

	if ((rc = ph_local_split(ph_entry_raw(d), &dir, &base)) != 0) {
		del_failed(j, d->path, rc, "out of memory");
		return;
	}
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	free(dir);
	if (rc != 0) {
		del_failed(j, d->path, rc, "cannot open its folder; not deleted");
		return;
	}
	/* Still what the state recorded and the listing showed? */
	if (ph_fstatat(dfd, base, &st) != 0 || st.type != PH_FT_REG || st.size != d->size ||
	    st.mtime_sec != d->mtime) {
		ph_job_event(j, PHSYNC_EV_SKIPPED, d->path, "kept", 0, 0,
		             "changed during the run; not deleted");
		ph_close(dfd);
		return;
	}
	if (j->o->trash_dir != NULL)
		rc = local_trash(j, dfd, ph_entry_raw(d), base);
	else
		rc = ph_err_from_errno(-ph_unlinkat(dfd, base, 0));
	if (rc == 0 && j->o->fsync)
		rc = ph_err_from_errno(-ph_dir_sync(dfd));
	ph_close(dfd);
	if (rc != 0) {
		del_failed(j, d->path, rc, j->o->trash_dir ? "cannot move it to the trash folder" :
		           "cannot delete it");
		return;
	}
	del_done(j, d);
}

/* mkdir -p of the remote trash folder for rel; returns its path or NULL. */
static char *
remote_trash_path(struct ph_job *j, const char *rel)
{
	const char *t = j->o->trash_dir;
	char *root = t[0] == '/' ? strdup(t) : ph_job_rpath(j, t);
	size_t n = root ? strlen(root) : 0, rl = strlen(rel), i;
	char *p;

	if (root == NULL || (p = malloc(n + rl + 2)) == NULL) {
		free(root);
		return NULL;
	}
	memcpy(p, root, n);
	free(root);
	p[n] = '\0';
	ph_sftp_mkdir_sync(j->sftp, p, 0700);
	p[n] = '/';
	memcpy(p + n + 1, rel, rl + 1);
	for (i = n + 1; p[i] != '\0'; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		ph_sftp_mkdir_sync(j->sftp, p, 0700); /* exists: fine */
		p[i] = '/';
	}
	return p;
}

static void
delete_remote(struct ph_job *j, const struct ph_entry *d)
{
	struct ph_sftp_attrs a;
	char *rp = ph_job_rpath(j, ph_entry_raw(d)), *tp = NULL;
	int rc;

	if (rp == NULL) {
		del_failed(j, d->path, PHSYNC_ENOMEM, "out of memory");
		return;
	}
	rc = ph_sftp_stat_sync(j->sftp, PH_LSTAT, rp, &a);
	if (rc != 0 || !(a.flags & PH_ATTR_SIZE) || a.size != d->size ||
	    !(a.flags & PH_ATTR_ACMODTIME) || (int64_t)a.mtime != d->mtime) {
		if (rc == 0 || rc == PHSYNC_ENOENT)
			ph_job_event(j, PHSYNC_EV_SKIPPED, d->path, "kept", 0, 0,
			             "changed during the run; not deleted");
		else
			del_failed(j, d->path, rc, "cannot check it on the server; not deleted");
		free(rp);
		return;
	}
	if (j->o->trash_dir != NULL) {
		if ((tp = remote_trash_path(j, ph_entry_raw(d))) == NULL)
			rc = PHSYNC_ENOMEM;
		else
			rc = ph_sftp_rename_sync(j->sftp, rp, tp); /* never replaces */
	} else {
		rc = ph_sftp_remove_sync(j->sftp, rp);
	}
	free(rp);
	free(tp);
	if (rc != 0) {
		del_failed(j, d->path, rc, j->o->trash_dir ?
		           "the server would not move it to the trash folder (a file of that "
		           "name there already?)" : "the server would not delete it");
		return;
	}
	del_done(j, d);
}

int
ph_delete_run(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->plan.ndel; i++) {
		const struct ph_del *dl = &j->plan.del[i];
		const struct ph_entry *d = &j->dst.v[dl->dst];

		if (j->ctx->interrupted)
			return PHSYNC_EINTR;
		if (dl->kept)
			continue;
		if (j->o->dry_run) {
			j->st.files_deleted++;
			ph_job_event(j, PHSYNC_EV_DELETED, d->path, j->o->trash_dir ? "trash" : "delete",
			             d->size, 0, NULL);
			continue;
		}
		if (j->dir == PHSYNC_PULL)
			delete_local(j, d);
		else
			delete_remote(j, d);
	}
	return 0;
}

/* --max-delete-percent (50 in a two-way run unless given, as rclone
 * bisync's --max-delete): more than that share of the destination's files
 * would go, so none goes. */
static int
over_percent(struct ph_job *j)
{
	unsigned pct = j->o->max_delete_percent ? j->o->max_delete_percent :
	               j->twoway ? 50 : 100;
	uint64_t files = 0;
	size_t i;

	if (pct >= 100)
		return 0;
	for (i = 0; i < j->dst.n; i++)
		files += j->dst.v[i].type == PH_T_FILE;
	if ((uint64_t)j->plan.ndel_go * 100 <= (uint64_t)pct * files)
		return 0;
	return ph_err(j->ctx, PHSYNC_EREFUSED, "%zu deletion(s) refused: more than %u%% of "
	              "the %llu file(s) %s; nothing was deleted (--max-delete-percent to "
	              "allow more)", j->plan.ndel_go, pct, (unsigned long long)files,
	              j->dir == PHSYNC_PULL ? "here" : "on the phone");
}

/* What went from the source since the last sync: records of files gone
 * from both sides are forgotten, and with --delete the destination's
 * copies go, unless a listing was incomplete, the source listed empty or
 * more would go than --max-delete allows: then none goes. */
int
ph_delete_gone(struct ph_job *j, uint64_t scan_failed, uint64_t del_failed)
{
	const struct phsync_options *o = j->o;
	int64_t max = o->max_delete < 0 ? PHSYNC_MAX_DELETE_DEFAULT : o->max_delete;
	size_t i;
	int rc;

	for (i = 0; i < j->plan.ndel && (o->delete_missing || j->twoway); i++)
		if (j->plan.del[i].kept == 1)
			ph_job_event(j, PHSYNC_EV_SKIPPED, j->dst.v[j->plan.del[i].dst].path, "kept", 0, 0,
			             "deleted at the source since the last sync, but changed here "
			             "since: kept");
	if (scan_failed == 0 && j->state != NULL)
		for (i = 0; i < j->plan.nforget; i++)
			if ((rc = ph_state_file_forget(j->state, j->plan.forget[i])) != 0)
				return rc;
	if (j->plan.ndel_go == 0)
		return 0;
	if (del_failed > 0)
		return ph_err(j->ctx, PHSYNC_EREFUSED, "%zu deletion(s) refused: %llu listing "
		              "error(s) this run, so a missing file may only be unlisted; nothing "
		              "was deleted", j->plan.ndel_go, (unsigned long long)del_failed);
	/* (Two-way: a side that lists no file at all, folders or not.) */
	if (j->plan.files_total == 0 && (j->src.n == 0 || j->twoway))
		return ph_err(j->ctx, PHSYNC_EREFUSED, "%zu deletion(s) refused: the %s "
		              "listed empty (an unmounted card or a revoked permission looks the "
		              "same); nothing was deleted", j->plan.ndel_go, !j->twoway ?
		              "source" : j->dir == PHSYNC_PULL ? "phone" : "laptop");
	if ((int64_t)j->plan.ndel_go > max)
		return ph_err(j->ctx, PHSYNC_EREFUSED, "%zu deletion(s) refused: more than "
		              "--max-delete %lld; nothing was deleted (raise --max-delete if this "
		              "is what you want)", j->plan.ndel_go, (long long)max);
	if ((rc = over_percent(j)) != 0)
		return rc;
	return ph_delete_run(j);
}
