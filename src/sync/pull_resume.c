/* SPDX-License-Identifier: ISC */
/* Cut downloads (pull_int.h): a large file cut by the link or a stop keeps
 * its good prefix under a partial name, recorded in the state database;
 * the next run with the source unchanged reads only the rest (RESUME). A
 * file that completes or fails on its own drops its record. */
#include <stdlib.h>
#include <string.h>

#include "pull_int.h"

#define PH_RESUME_MIN_FILE (16u << 20) /* smaller files start over when cut */

/* Cut last time with the source as it is now: goes on from the good
 * prefix (sync.c dropped partials whose source changed). Returns 1 when it
 * does (x->wf opens the partial file), 0 to start from byte 0. */
int
ph_pull_resume_try(struct xfer *x)
{
	struct pull *p = x->p;
	struct ph_partial *pa = ph_job_partial(p->j, x->e->path);

	if (pa == NULL || pa->size != x->e->size || pa->mtime != x->e->mtime ||
	    pa->have >= x->e->size || (x->wf->resume_name = strdup(pa->tmp)) == NULL)
		return 0;
	x->wf->resume_have = pa->have;
	x->r.next_off = x->r.got = x->r.hi = pa->have;
	p->j->st.bytes_todo -= pa->have;
	return 1;
}

/* Is the temp file of x, failing with err, kept for a later resume? Only a
 * large file cut by the link or a stop; one that failed on its own starts
 * over. */
int
ph_pull_resume_keep(const struct xfer *x, int err)
{
	return !x->e->nosize && x->e->size >= PH_RESUME_MIN_FILE &&
	       (x->quiet || x->p->stopping || err == PHSYNC_EINTR || err == PHSYNC_ECONNECT);
}

/* The I/O thread kept a prefix of f (source entry e): recorded for the
 * next run. */
void
ph_pull_resume_kept(struct ph_job *j, const struct ph_entry *e, struct ph_lio_file *f)
{
	struct ph_partial pa = { NULL, f->kept_name, e->size, f->kept, e->mtime, 0 };
	int rc;

	if (f->kept == 0 || j->state == NULL || j->state_err != 0)
		return;
	if ((rc = ph_state_partial_put(j->state, e->path, &pa)) != 0)
		j->state_err = rc;
}

/* A file that was resumed is complete, or failed (its temp removed with
 * it): its partial record goes, so the next run starts over. */
void
ph_pull_partial_done(struct ph_job *j, const char *path)
{
	struct ph_partial *pa = ph_job_partial(j, path);
	int rc;

	if (pa == NULL || j->state == NULL || j->state_err != 0)
		return;
	if ((rc = ph_state_partial_drop(j->state, path)) != 0)
		j->state_err = rc;
	free(pa->path);
	pa->path = NULL;
}
