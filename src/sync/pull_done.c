/* SPDX-License-Identifier: ISC */
/* What the I/O thread finished (pull_int.h): each file committed, kept
 * beside a changed one, or failed is counted, recorded and reported here,
 * on the network thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pull_int.h"
#include "reap.h"

/* Keeps a copied file for --remove-source-files (a lost entry only means
 * the file stays on the phone). */
static void
offload_add(struct ph_job *j, uint32_t src, const uint8_t hash[16])
{
	if (j->noff == j->capoff) {
		size_t nc = j->capoff ? j->capoff * 2 : 64;
		struct ph_offload *nv = realloc(j->off, nc * sizeof(*nv));

		if (nv == NULL)
			return;
		j->off = nv;
		j->capoff = nc;
	}
	j->off[j->noff].src = src;
	memcpy(j->off[j->noff].hash, hash, 16);
	j->noff++;
}

/* A file the I/O thread could not commit. */
static void
failed(struct ph_job *j, const struct ph_entry *e, int err)
{
	int code = err == -EBADMSG ? PHSYNC_EREMOTE : ph_err_from_errno(-err);

	ph_pull_partial_done(j, e->path); /* its temp is gone: start over */
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, code,
	             err == -EBADMSG ? "the file built from the delta does not match the hash "
	             "of the source; not copied (retried next run)" :
	             code == PHSYNC_EUNSAFE ?
	             "a symlink on the local side is in the way; not written through" :
	             err == -EBUSY ? PH_HELD_MSG : strerror(-err));
}

/* A file committed: under its name, or beside a file that changed there. */
static void
committed(struct ph_job *j, const struct ph_action *a, const struct ph_entry *e,
          const struct ph_lio_file *f)
{
	ph_pull_partial_done(j, e->path);
	if (f->landed == PH_LIO_BESIDE) {
		ph_job_conflict(j, e->path, f->beside, f->size,
		                a->kind == PH_A_UPDATE && a->how == PH_U_FIRST);
		ph_job_record(j, e->path, f->size, f->dst_mtime, e->mtime, f->hash, 1);
		ph_job_touch_parent(j, e->path);
		return;
	}
	j->st.files_done++;
	j->st.bytes_committed += f->size;
	j->st.bytes_matched += f->matched;
	j->lid_st = f->has_st ? &f->st : NULL; /* the identity, taken on placing */
	ph_job_record(j, e->path, f->size, f->dst_mtime, e->mtime, f->hash, 0);
	j->lid_st = NULL;
	ph_job_touch_parent(j, e->path);
	if (j->o->remove_source)
		offload_add(j, a->src, f->hash);
	/* "resume": a cut run's prefix was kept, only the rest was read
	 * (bytes_done says how much). */
	ph_job_event(j, PHSYNC_EV_FILE_DONE, e->path,
	             f->landed == PH_LIO_SAME ? "same" :
	             f->resume_have > 0 ? "resume" :
	             a->kind == PH_A_NEW ? "new" : "update", f->size, 0, NULL);
}

/* Reports what the I/O thread finished; with wait, waits for the first. */
void
ph_pull_reap(struct pull *p, int wait)
{
	struct ph_lio_file *done[64];
	struct ph_job *j = p->j;
	size_t n, i;

	while ((n = ph_lio_pop(p->lio, done, 64, wait)) > 0) {
		for (i = 0; i < n; i++) {
			const struct ph_action *a = &j->plan.v[done[i]->cookie];
			const struct ph_entry *e = &j->src.v[a->src];

			if (done[i]->err == -ECANCELED || done[i]->commit == PH_LIO_ABORT)
				/* aborted by us (already reported, with a write
				 * error too); a kept prefix is recorded for the
				 * next run */
				ph_pull_resume_kept(j, e, done[i]);
			else if (done[i]->err != 0)
				failed(j, e, done[i]->err);
			else
				committed(j, a, e, done[i]);
			/* Its old copy (the delta's basis), replaced now: freeing
			 * its blocks is the reaper's (core/reap.c), not this
			 * thread's, 1.5-2 ms a photo here. */
			ph_reap_release(&j->reap, done[i]->basis);
			done[i]->basis = -1;
			ph_lio_file_free(done[i]);
		}
		wait = 0;
	}
	if (!p->fatal && ph_lio_error(p->lio) == -ENOSPC)
		p->fatal = ph_err(j->ctx, PHSYNC_ENOSPC,
		                  "no space left on the local disk; stopped (partial files "
		                  "were removed, existing files are intact)");
}

/* The one wait for the I/O thread: until every file handed to it is
 * reported. */
void
ph_pull_drain(struct pull *p)
{
	while (ph_lio_pending(p->lio) > 0)
		ph_pull_reap(p, 1);
}
