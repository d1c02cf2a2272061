/* SPDX-License-Identifier: ISC */
/* A pull's folders (pull_int.h): made first, parents first; made durable
 * and given their source times last, deepest first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "pull_int.h"

/* Makes the folders the plan needs, parents first. */
void
ph_pull_make_dirs(struct pull *p)
{
	struct ph_job *j = p->j;
	size_t i;

	for (i = 0; i < j->plan.n; i++) {
		struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];
		char *dir;
		const char *base;
		int dfd, rc;

		if (a->kind != PH_A_MKDIR)
			continue;
		if (j->o->dry_run) {
			ph_job_dir_made(j, a->src);
			continue;
		}
		if ((rc = ph_local_split(ph_entry_dpath(e), &dir, &base)) == 0) {
			rc = ph_local_opendir(j->lroot, dir, &dfd);
			free(dir);
		}
		if (rc == 0) {
			/* The source's bits under the umask, as mkdir does; always
			 * writable by us, or its contents could not be made. */
			if ((rc = ph_mkdirat(dfd, base, (e->mode & 0777) | 0700)) == -EEXIST)
				rc = 0;
			rc = ph_err_from_errno(-rc);
			ph_close(dfd);
		}
		if (rc != 0) {
			size_t blocked = ph_plan_block_subtree(&j->plan, &j->src, i);

			j->st.files_failed++;
			ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "mkdir", 0, rc,
			             rc == PHSYNC_EUNSAFE ? "a symlink is in the way; not followed" :
			             "cannot create this folder");
			(void)blocked;
			continue;
		}
		ph_job_dir_made(j, a->src);
	}
}

static void
dir_failed(struct ph_job *j, const char *path, int err, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, path, NULL, 0, ph_err_from_errno(err), msg);
}

static void
dir_warn(struct ph_job *j, const char *path, int err, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	ph_job_event(j, PHSYNC_EV_WARNING, path, NULL, 0, ph_err_from_errno(err), msg);
}

/* Folders made durable together (one syncfs per file system where there
 * is one, as a batch of files is: platform/durable.c). */
#define DIRS_BATCH 64

struct dirsync {
	int fd[DIRS_BATCH];
	size_t src[DIRS_BATCH]; /* the entry of each; SIZE_MAX: the root */
	size_t n;
};

/* The folders of b durable, then closed; on a failure each on its own, so
 * an error marks only the folder it belongs to. */
static void
dirs_sync(struct ph_job *j, struct dirsync *b)
{
	size_t k;
	int all = j->o->fsync && ph_dir_sync_needed() ? ph_durable_sync(b->fd, b->n) : 0;

	for (k = 0; k < b->n; k++) {
		int rc = all != 0 ? ph_dir_sync(b->fd[k]) : 0;

		if (rc != 0 && b->src[k] == SIZE_MAX)
			dir_failed(j, ".", -rc, "cannot make the destination folder durable (fsync)");
		else if (rc != 0)
			dir_failed(j, j->src.v[b->src[k]].path, -rc,
			           "cannot make this folder durable (fsync)");
		if (b->src[k] != SIZE_MAX)
			ph_close(b->fd[k]);
	}
	b->n = 0;
}

/* Gives the renames in touched folders their source times and makes them
 * durable, deepest first; the files' own renames were made durable with
 * their batches (lio.c), this covers the folders made and their times.
 * Their modes are left as made (or as they were). A folder that cannot be
 * made durable is a failure (the files in it may not survive a power
 * cut); one whose time cannot be set is a warning. The times are set
 * before the sync, so they are durable too (before, each folder had an
 * fsync of its own, then its time: 503 fsyncs in a pull of 50,000 small
 * files where now 2 syncfs do). */
void
ph_pull_finish_dirs(struct pull *p)
{
	struct ph_job *j = p->j;
	struct dirsync b;
	size_t i = j->src.n;

	b.n = 0;
	while (i-- > 0) {
		const struct ph_entry *e = &j->src.v[i];
		int dfd, rc;

		if (e->type != PH_T_DIR || !j->dirty[i])
			continue;
		if ((rc = ph_local_opendir(j->lroot, ph_entry_dpath(e), &dfd)) != 0) {
			if (rc != PHSYNC_ENOENT) {
				j->st.files_failed++;
				ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, 0, rc,
				             "cannot open this folder to make it durable");
			}
			continue;
		}
		if ((rc = ph_set_atime_mtime(dfd, e->mtime, e->mtime)) != 0)
			dir_warn(j, e->path, -rc, "cannot set this folder's time");
		b.fd[b.n] = dfd;
		b.src[b.n++] = i;
		if (b.n == DIRS_BATCH)
			dirs_sync(j, &b);
	}
	if (j->root_dirty) {
		int rc;

		if ((rc = ph_set_atime_mtime(j->lroot, j->root_atime ? j->root_atime : j->root_mtime,
		                             j->root_mtime)) != 0)
			dir_warn(j, ".", -rc, "cannot set the destination folder's time");
		b.fd[b.n] = j->lroot;
		b.src[b.n++] = SIZE_MAX;
	}
	dirs_sync(j, &b);
}
