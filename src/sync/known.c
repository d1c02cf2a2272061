/* SPDX-License-Identifier: ISC */
/* The pair's records as the planner needs them (known.h): one ordered
 * read of the state merged with both trees, for one orientation or, in a
 * two-way run, for both at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ident.h"
#include "known.h"
#include "staterow.h"

/* A record whose names phsync could not have written (staterow.h) is
 * never used: said, and dropped with its row. */
void
ph_bad_row(struct ph_job *j, const char *path, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "the sync state holds %s with a name phsync never writes "
	         "(outside the folder, or not its own temp name): ignored and dropped", what);
	ph_job_event(j, PHSYNC_EV_WARNING, path, NULL, 0, PHSYNC_EUNSAFE, msg);
}

/* The state's records as the planner needs them, read in one ordered pass
 * merged with both trees (same order): a file exactly as recorded on both
 * sides only gets flags on its source entry and is counted (at a million
 * unchanged files, nothing more is held); the other records (changed
 * since on a side, or gone from one) are kept, oriented as the plan sees
 * them (the remote is the source of a pull). */
struct kmerge {
	struct ph_job *j;
	int pull;
	size_t si, di;
	struct ph_known *v;
	size_t n, cap;
	uint64_t asrec;
	char **bad;                /* rows with names phsync never writes */
	size_t nbad, capbad;
	struct kmerge *mirror;     /* a two-way run: the other orientation's,
	                              filled from the same rows and checks */
};

/* A record kept for the plan: s its source entry, or none (gone from the
 * source: its path is kept in the job's known_paths). */
static int
kmerge_keep(struct kmerge *m, const struct ph_entry *s, const char *path, struct ph_known *kn)
{
	if (s != NULL) {
		kn->path = s->path;
	} else {
		struct ph_entry e = { 0 };

		if (ph_tree_add(&m->j->known_paths, path, strlen(path), &e) != 0)
			return PHSYNC_ENOMEM;
		kn->path = m->j->known_paths.v[m->j->known_paths.n - 1].path;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 256;
		struct ph_known *nv = realloc(m->v, nc * sizeof(*nv));

		if (nv == NULL)
			return PHSYNC_ENOMEM;
		m->v = nv;
		m->cap = nc;
	}
	m->v[m->n++] = *kn;
	return 0;
}

/* The other orientation's record: the same row, its sides swapped. */
static int
kmerge_mirror(struct kmerge *m, struct ph_entry *d, const char *path, const struct ph_known *kn)
{
	struct ph_known k;

	k.ssize = kn->dsize;
	k.smtime = kn->dmtime;
	k.dsize = kn->ssize;
	k.dmtime = kn->smtime;
	k.touched = kn->touched == PH_KNOWN_DST ? PH_KNOWN_SRC :
	            kn->touched == PH_KNOWN_SRC ? PH_KNOWN_DST : 0;
	return kmerge_keep(m, d, path, &k);
}

static int
kmerge_row(void *arg, const char *path, const struct ph_state_file *f)
{
	struct kmerge *m = arg;
	struct ph_tree *src = &m->j->src;
	const struct ph_tree *dst = &m->j->dst;
	struct ph_entry *s = NULL;
	const struct ph_entry *d = NULL;
	struct ph_known kn;
	int c = 1;

	if (!ph_staterow_path_ok(path, strlen(path))) {
		/* Never merged with a tree nor planned: dropped after the walk. */
		if (m->nbad == m->capbad) {
			size_t nc = m->capbad ? m->capbad * 2 : 16;
			char **nv = realloc(m->bad, nc * sizeof(*nv));

			if (nv == NULL)
				return PHSYNC_ENOMEM;
			m->bad = nv;
			m->capbad = nc;
		}
		if ((m->bad[m->nbad] = strdup(path)) == NULL)
			return PHSYNC_ENOMEM;
		m->nbad++;
		return 0;
	}
	while (m->si < src->n && (c = ph_path_cmp(src->v[m->si].path, path)) < 0)
		m->si++;
	if (m->si < src->n && c == 0)
		s = &src->v[m->si];
	c = 1;
	while (m->di < dst->n && (c = ph_path_cmp(dst->v[m->di].path, path)) < 0)
		m->di++;
	if (m->di < dst->n && c == 0)
		d = &dst->v[m->di];
	kn.ssize = m->pull ? f->rsize : f->lsize;
	kn.smtime = m->pull ? f->rmtime : f->lmtime;
	kn.dsize = m->pull ? f->lsize : f->rsize;
	kn.dmtime = m->pull ? f->lmtime : f->rmtime;
	kn.touched = 0;
	/* The local side as recorded by size and time: its identity says
	 * whether that can be trusted (ident.c), as git's index does. */
	{
		const struct ph_entry *l = m->pull ? d : s;
		const struct ph_tree *lt = m->pull ? dst : src;
		int rc;

		if ((f->has_lid || f->has_hash) && l != NULL && l->type == PH_T_FILE &&
		    !l->nosize && !m->j->o->dry_run && l->size == (m->pull ? kn.dsize : kn.ssize) &&
		    l->mtime == (m->pull ? kn.dmtime : kn.smtime)) {
			if ((rc = ph_ident_changed_seen(m->j, ph_entry_raw(l), path, f,
			                                lt->ids_ok ? lt->ids[l - lt->v] : 0,
			                                l->mtime)) < 0)
				return rc;
			kn.touched = rc ? (m->pull ? PH_KNOWN_DST : PH_KNOWN_SRC) : 0;
		}
	}
	/* (A mirror's source tree is this one's destination: the same
	 * entries, so its flags go on d.) */
	if (s != NULL)
		s->flags |= PH_E_KNOWN;
	if (m->mirror != NULL && d != NULL)
		((struct ph_entry *)d)->flags |= PH_E_KNOWN;
	if (s != NULL && d != NULL && s->type == PH_T_FILE && d->type == PH_T_FILE &&
	    !s->nosize && !kn.touched &&
	    !d->nosize && s->size == kn.ssize && s->mtime == kn.smtime &&
	    d->size == kn.dsize && d->mtime == kn.dmtime) {
		s->flags |= PH_E_ASREC;
		m->asrec++;
		if (m->mirror != NULL) {
			((struct ph_entry *)d)->flags |= PH_E_ASREC;
			m->mirror->asrec++;
		}
		return 0;
	}
	{
		int rc = kmerge_keep(m, s, path, &kn);

		if (rc != 0 || m->mirror == NULL)
			return rc;
	}
	return kmerge_mirror(m->mirror, (struct ph_entry *)d, path, &kn);
}

/* The records merged for one orientation, or with mj (a two-way run's
 * other pass) for both at once: one read of the rows, one check of each
 * local file's identity. */
int
ph_known_load(struct ph_job *j, int pull, struct ph_known_set *known, struct ph_job *mj,
              struct ph_known_set *mknown)
{
	struct kmerge m, mm;
	size_t i;
	int rc;

	memset(&m, 0, sizeof(m));
	memset(&mm, 0, sizeof(mm));
	m.j = j;
	m.pull = pull;
	mm.j = mj;
	mm.pull = !pull;
	m.mirror = mj != NULL ? &mm : NULL;
	rc = ph_state_each(j->state, kmerge_row, &m);
	known->v = m.v;
	known->n = m.n;
	known->asrec = m.asrec;
	if (mknown != NULL) {
		mknown->v = mm.v;
		mknown->n = mm.n;
		mknown->asrec = mm.asrec;
	}
	for (i = 0; i < m.nbad; i++) {
		if (rc == 0) {
			ph_bad_row(j, m.bad[i], "a file record");
			rc = ph_state_file_forget(j->state, m.bad[i]);
		}
		free(m.bad[i]);
	}
	free(m.bad);
	ph_ident_close(j);
	if (rc == 0)
		rc = ph_ident_renew(j);
	return rc;
}
