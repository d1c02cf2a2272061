/* SPDX-License-Identifier: ISC */
/* --remove-source-files ("offload"): frees the phone of what is safely on
 * this computer. A phone file is removed only when its copy here is
 * durable (fsync'ed and renamed, which a commit means), reads back from
 * disk with the XXH3-128 of the bytes that were read from the phone, is
 * recorded in the state (committed first), and the phone still lists it
 * with the size and time the run saw (not changed during the run).
 *
 * "Read from the phone" means that path's whole bytes (DESIGN rule 8): a
 * record whose hash came from elsewhere (a push's local file, a state
 * from before hread was kept) is checked by reading the phone's file
 * whole first; if that read does not give the recorded hash, the file
 * stays on the phone and the next pull sees the difference. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "job.h"
#include "lio.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "whole.h"

/* Does the local copy of e read back with hash? */
static int
local_matches(struct ph_job *j, const struct ph_entry *e, const uint8_t hash[16])
{
	const char *base;
	char *dir;
	uint8_t h[16];
	uint64_t n = 0;
	int dfd, rc;

	if (ph_local_split(ph_entry_dpath(e), &dir, &base) != 0)
		return 0;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	free(dir);
	if (rc != 0)
		return 0;
	{
		/* Read what the disk holds, not what the page cache kept
		 * (where the OS can drop it: platform.h). */
		int fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW, 0);

		if (fd >= 0) {
			(void)ph_drop_cache(fd);
			ph_close(fd);
		}
	}
	rc = ph_whole_hash_at(dfd, base, h, &n);
	ph_close(dfd);
	return rc == 0 && n == e->size && memcmp(h, hash, 16) == 0;
}

/* Does the phone's file e read whole as hash? Says so when not. */
static int
read_whole(struct ph_job *j, const struct ph_entry *e, const uint8_t hash[16])
{
	uint8_t rh[16];
	int rc;

	/* Through the helper the phone reads it and signs it; the local copy
	 * signs the same (and reads back as hash in offload_one). */
	if (ph_whole_helper_same(j, ph_entry_raw(e), ph_entry_dpath(e), e->size))
		return 1;
	if ((rc = ph_whole_remote(j, ph_entry_raw(e), e->size, rh)) == 0 &&
	    memcmp(rh, hash, 16) == 0)
		return 1;
	if (rc == 0 || rc == PHSYNC_ECORRUPT)
		ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "unverified", 0, 0,
		             "the server's file does not read as the copy recorded here; "
		             "left on the server");
	else if (rc != PHSYNC_EINTR) {
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "offload", e->size, rc,
		             "could not read the server's file whole to check it; left there");
	}
	return 0;
}

static void
offload_one(struct ph_job *j, const struct ph_entry *e, const uint8_t hash[16])
{
	struct ph_sftp_attrs a;
	char *rp;
	int rc;

	if (j->o->dry_run) {
		j->st.files_offloaded++;
		j->st.bytes_freed += e->size;
		ph_job_event(j, PHSYNC_EV_DELETED, e->path, "offload", e->size, 0, NULL);
		return;
	}
	if (!local_matches(j, e, hash)) {
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "offload", e->size, PHSYNC_ECORRUPT,
		             "the copy here does not read back as what was read from the "
		             "server; left on the server");
		return;
	}
	if ((rp = ph_job_rpath(j, ph_entry_raw(e))) == NULL)
		return;
	rc = ph_sftp_stat_sync(j->sftp, PH_LSTAT, rp, &a);
	if (rc == 0 && (!(a.flags & PH_ATTR_SIZE) || a.size != e->size ||
	                !(a.flags & PH_ATTR_ACMODTIME) || (int64_t)a.mtime != e->mtime)) {
		ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "changed", 0, 0,
		             "changed on the server during the run; left there");
	} else if (rc == 0 && (rc = ph_sftp_remove_sync(j->sftp, rp)) == 0) {
		j->st.files_offloaded++;
		j->st.bytes_freed += e->size;
		if (j->state != NULL && j->state_err == 0 &&
		    (rc = ph_state_file_forget(j->state, e->path)) != 0)
			j->state_err = rc;
		ph_job_event(j, PHSYNC_EV_DELETED, e->path, "offload", e->size, 0, NULL);
	} else if (rc != 0) {
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "offload", e->size, rc,
		             "the server would not remove it");
	}
	free(rp);
}

int
ph_offload_run(struct ph_job *j)
{
	uint8_t *touched = calloc(j->src.n ? j->src.n : 1, 1);
	size_t i;
	int rc = 0;

	if (touched == NULL)
		return PHSYNC_ENOMEM;
	/* The records of what was copied are committed before anything goes. */
	if (j->state != NULL && (rc = ph_state_flush(j->state)) != 0)
		goto out;
	for (i = 0; i < j->plan.n; i++)
		touched[j->plan.v[i].src] = 1;
	if (j->o->dry_run) {
		static const uint8_t none[16];

		for (i = 0; i < j->plan.n; i++) {
			const struct ph_action *a = &j->plan.v[i];

			if (a->kind == PH_A_NEW || (a->kind == PH_A_UPDATE && a->how != PH_U_CONFLICT))
				offload_one(j, &j->src.v[a->src], none);
		}
	}
	for (i = 0; i < j->noff && !j->ctx->interrupted; i++)
		offload_one(j, &j->src.v[j->off[i].src], j->off[i].hash);
	/* Unchanged files synced by an earlier run: the hash recorded then,
	 * and the phone's side as recorded. */
	for (i = 0; i < j->src.n && j->state != NULL && !j->ctx->interrupted; i++) {
		const struct ph_entry *e = &j->src.v[i];
		struct ph_state_file f;
		uint8_t h[16];

		if (touched[i] || e->type != PH_T_FILE || e->nosize)
			continue;
		if ((rc = ph_state_file_get(j->state, e->path, &f, h)) < 0)
			goto out;
		rc = 0;
		if (f.hash == NULL || f.rsize != e->size || f.rmtime != e->mtime ||
		    f.lsize != e->size)
			continue;
		if (!f.hread && !j->o->dry_run && !read_whole(j, e, h))
			continue;
		offload_one(j, e, h);
	}
	if (j->ctx->interrupted)
		rc = PHSYNC_EINTR;
out:
	free(touched);
	return rc;
}
