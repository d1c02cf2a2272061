/* SPDX-License-Identifier: ISC */
/* Moves and renames: a new source file that the planner matched (size and
 * time) with a recorded file gone from the source whose copy is still at
 * the destination is confirmed by its whole content and then made from
 * that copy: renamed with --delete (the old path would go anyway), copied
 * locally otherwise. Anything unconfirmed is transferred as a new file, as
 * if never matched.
 *
 * Whole content, not samples: a file with the same size, time and ends
 * but other middle bytes (a RAW or uncompressed edit) confirmed by its
 * ends left the laptop with wrong bytes under the new name and the old
 * file's hash in its record, and a later --remove-source-files then took
 * the phone's only true copy (issue 22). So the first and last 64 KiB
 * only rule out a mismatch cheaply; then the local side is hashed whole
 * (cheap) and the remote side is read whole and hashed (the link's cost
 * of a transfer, without the write; a later offload trusts that read).
 * The record carries that hash, of the bytes both paths hold. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "job.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "tempname.h"
#include "whole.h"

/* The two probe ranges of a file of size n. */
static size_t
probe_ranges(uint64_t n, uint64_t off[2], uint32_t len[2])
{
	off[0] = 0;
	len[0] = (uint32_t)(n < PH_MOVE_PROBE ? n : PH_MOVE_PROBE);
	if (n <= PH_MOVE_PROBE)
		return 1;
	off[1] = n - PH_MOVE_PROBE > PH_MOVE_PROBE ? n - PH_MOVE_PROBE : PH_MOVE_PROBE;
	len[1] = (uint32_t)(n - off[1]);
	return 2;
}

static int
local_ranges(int root, const char *rel, const uint64_t *off, const uint32_t *len,
             uint8_t *const *buf, size_t n)
{
	const char *base;
	char *dir;
	int dfd, fd, rc;
	size_t i;

	if ((rc = ph_local_split(rel, &dir, &base)) != 0)
		return rc;
	rc = ph_local_opendir(root, dir, &dfd);
	free(dir);
	if (rc != 0)
		return rc;
	fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW, 0);
	ph_close(dfd);
	if (fd < 0)
		return ph_err_from_errno(-fd);
	for (i = 0; i < n && rc == 0; i++)
		if (ph_pread(fd, buf[i], len[i], off[i]) != (int64_t)len[i])
			rc = PHSYNC_EIO;
	ph_close(fd);
	return rc;
}

/* Does the source file (new path) hold the old copy's probe bytes? */
static int
ends_match(struct ph_job *j, const struct ph_entry *s, const struct ph_entry *old)
{
	uint64_t off[2];
	uint32_t len[2], got[2] = { 0, 0 };
	uint8_t *a[2], *b[2];
	size_t n = probe_ranges(s->size, off, len), i;
	int ok = 0, rc;
	char *rp;

	a[0] = malloc(4 * PH_MOVE_PROBE);
	if (a[0] == NULL)
		return 0;
	a[1] = a[0] + PH_MOVE_PROBE;
	b[0] = a[1] + PH_MOVE_PROBE;
	b[1] = b[0] + PH_MOVE_PROBE;
	/* The remote side: the source of a pull, the old copy of a push. */
	rp = ph_job_rpath(j, ph_entry_raw(j->dir == PHSYNC_PULL ? s : old));
	rc = rp ? ph_sftp_read_ranges_sync(j->sftp, rp, off, len, a, got, n) : PHSYNC_ENOMEM;
	free(rp);
	if (rc == 0)
		rc = local_ranges(j->lroot, ph_entry_raw(j->dir == PHSYNC_PULL ? old : s), off, len,
		                  b, n);
	if (rc == 0) {
		ok = 1;
		for (i = 0; i < n; i++)
			ok &= got[i] == len[i] && memcmp(a[i], b[i], len[i]) == 0;
	}
	free(a[0]);
	return ok;
}

/* Does the source file (new path) hold the old copy's whole content? h
 * gets its XXH3-128, read whole on both sides. */
static int
confirmed(struct ph_job *j, const struct ph_entry *s, const struct ph_entry *old,
          uint8_t h[16])
{
	const struct ph_entry *r = j->dir == PHSYNC_PULL ? s : old;
	const struct ph_entry *l = j->dir == PHSYNC_PULL ? old : s;
	uint8_t rh[16];
	uint64_t n = 0;

	if (!ends_match(j, s, old) || ph_whole_local(j, ph_entry_raw(l), h, &n) != 0 ||
	    n != s->size)
		return 0;
	/* The helper reads its file whole on the phone: only its block
	 * signature crosses the link. Else the file itself. */
	if (ph_whole_helper_same(j, ph_entry_raw(r), ph_entry_raw(l), s->size))
		return 1;
	return ph_whole_remote(j, ph_entry_raw(r), s->size, rh) == 0 && memcmp(h, rh, 16) == 0;
}

/* The folders of the old copy and of the new path, open beneath the root. */
struct two_dirs {
	char *odir, *ndir;
	const char *obase, *nbase;
	int odfd, ndfd;
};

static int
open_two(struct ph_job *j, const char *old, const char *rel, struct two_dirs *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	t->odfd = t->ndfd = -1;
	if ((rc = ph_local_split(old, &t->odir, &t->obase)) != 0 ||
	    (rc = ph_local_split(rel, &t->ndir, &t->nbase)) != 0 ||
	    (rc = ph_local_opendir(j->lroot, t->odir, &t->odfd)) != 0)
		return rc;
	return ph_local_opendir(j->lroot, t->ndir, &t->ndfd);
}

static void
close_two(struct two_dirs *t)
{
	if (t->odfd >= 0)
		ph_close(t->odfd);
	if (t->ndfd >= 0)
		ph_close(t->ndfd);
	free(t->odir);
	free(t->ndir);
}

/* Copies the local file old to rel through a temp file, durable, with t as
 * its time. */
static int
local_copy(struct ph_job *j, const char *old, const char *rel, int64_t t, uint32_t mode)
{
	struct ph_temp_owner self;
	struct two_dirs d;
	char tmp[256];
	int ofd = -1, fd = -1, rc;
	uint8_t *buf = NULL;
	ssize_t r;

	ph_temp_owner_self(&self);
	if ((rc = open_two(j, old, rel, &d)) != 0)
		goto out;
	if ((ofd = ph_openat(d.odfd, d.obase, PH_O_RDONLY | PH_O_NOFOLLOW, 0)) < 0) {
		rc = ph_err_from_errno(-ofd);
		goto out;
	}
	if (ph_temp_name(tmp, sizeof(tmp), d.nbase, PH_TEMP_NEW, &self) != 0) {
		rc = ph_err_from_errno(EINVAL);
		goto out;
	}
	if ((fd = ph_openat(d.ndfd, tmp, PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW,
	                    mode & 0666)) < 0) {
		rc = ph_err_from_errno(-fd);
		goto out;
	}
	if ((buf = malloc(1u << 18)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto fail;
	}
	while ((r = read(ofd, buf, 1u << 18)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || write(fd, buf, (size_t)r) != r) {
			rc = ph_err_from_errno(errno ? errno : EIO);
			goto fail;
		}
	}
	if ((rc = ph_set_times(fd, t, 0)) != 0 ||
	    (j->o->fsync && (rc = ph_durable_sync(&fd, 1)) != 0)) {
		rc = ph_err_from_errno(-rc);
		goto fail;
	}
	rc = ph_close(fd);
	fd = -1;
	if (rc != 0 || (rc = ph_rename_noreplace(d.ndfd, tmp, d.ndfd, d.nbase)) != 0) {
		rc = ph_err_from_errno(-rc);
		goto fail;
	}
	if (j->o->fsync)
		ph_dir_sync(d.ndfd);
	goto out;
fail:
	if (fd >= 0)
		ph_close(fd);
	ph_unlinkat(d.ndfd, tmp, 0);
out:
	free(buf);
	if (ofd >= 0)
		ph_close(ofd);
	close_two(&d);
	return rc;
}

static int
local_move(struct ph_job *j, const char *old, const char *rel)
{
	struct two_dirs d;
	int rc;

	if ((rc = open_two(j, old, rel, &d)) == 0) {
		rc = ph_rename_noreplace(d.odfd, d.obase, d.ndfd, d.nbase);
		rc = rc ? ph_err_from_errno(-rc) : 0;
		if (rc == 0 && j->o->fsync) {
			int e = ph_dir_sync(d.ndfd);

			rc = ph_err_from_errno(-(e != 0 ? e : ph_dir_sync(d.odfd)));
		}
	}
	close_two(&d);
	return rc;
}

/* Marks the delete candidate of old as gone (moved). */
static void
mark_moved(struct ph_job *j, int64_t old)
{
	size_t i;

	for (i = 0; i < j->plan.ndel; i++)
		if (j->plan.del[i].dst == old && j->plan.del[i].kept == 0) {
			j->plan.del[i].kept = 2;
			j->plan.ndel_go--;
			return;
		}
}

void
ph_move_run(struct ph_job *j)
{
	int pull = j->dir == PHSYNC_PULL;
	size_t i;

	for (i = 0; i < j->plan.n && !j->ctx->interrupted; i++) {
		struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *s = &j->src.v[a->src], *old;
		uint8_t h[16];
		int move, rc;
		char *rold, *rnew;

		if (a->kind != PH_A_NEW || a->how == PH_N_PLAIN)
			continue;
		old = &j->dst.v[a->dst];
		move = a->how == PH_N_MOVE;
		/* No server-side copy without copy-data: a push copies by upload. */
		if ((!move && !pull) || !confirmed(j, s, old, h)) {
			a->how = PH_N_PLAIN;
			a->dst = -1;
			continue;
		}
		if (pull) {
			rc = move ? local_move(j, ph_entry_raw(old), ph_entry_dpath(s)) :
			     local_copy(j, ph_entry_raw(old), ph_entry_dpath(s), s->mtime, s->mode);
		} else {
			rold = ph_job_rpath(j, ph_entry_raw(old));
			rnew = ph_job_rpath(j, ph_entry_dpath(s));
			rc = rold && rnew ? ph_sftp_rename_sync(j->sftp, rold, rnew) : PHSYNC_ENOMEM;
			free(rold);
			free(rnew);
		}
		if (rc != 0) {
			/* Not made: transferred as a new file instead. */
			a->how = PH_N_PLAIN;
			a->dst = -1;
			continue;
		}
		/* The hash of the bytes both paths hold, the remote's read whole. */
		if (pull)
			ph_job_record_as(j, s->path, s->size, move ? old->mtime : s->mtime, s->mtime,
			                 h, 1);
		else
			ph_job_record_as(j, s->path, s->size, s->mtime, old->mtime, h, 1);
		if (move) {
			mark_moved(j, a->dst);
			if (j->state != NULL && j->state_err == 0 &&
			    (rc = ph_state_file_forget(j->state, old->path)) != 0)
				j->state_err = rc;
		}
		a->kind = PH_A_MOVED;
		j->st.files_done++;
		j->st.bytes_todo -= s->size;
		j->st.bytes_committed += s->size;
		ph_job_touch_parent(j, s->path);
		if (move)
			ph_job_touch_parent(j, old->path);
		ph_job_event(j, PHSYNC_EV_FILE_DONE, s->path, move ? "moved" : "copied", s->size, 0,
		             old->path);
	}
}
