/* SPDX-License-Identifier: ISC */
/* The pair's records as the planner needs them (known.h): one ordered
 * read of the state merged with both trees, for one orientation or, in a
 * two-way run, for both at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctx.h"
#include "ident.h"
#include "known.h"
#include "names.h"
#include "pairs.h"
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
 * them (the remote is the source of a pull). Each record is met in two
 * halves: its local side (kmerge_local: the local tree's entry, its
 * identity checked) and its remote side (kmerge_remote). A one-way pull
 * does the first half while the server is listed (ph_known_early). */
struct kmerge {
	struct ph_job *j;
	int pull;
	size_t li, ri;             /* the local and the remote tree's next entry */
	struct ph_known *v;
	size_t n, cap;
	uint64_t asrec;
	char **bad;                /* rows with names phsync never writes */
	size_t nbad, capbad;
	struct kmerge *mirror;     /* a two-way run: the other orientation's,
	                              filled from the same rows and checks */
	const atomic_int *stop;    /* early: set when the run no longer wants it */
};

static struct ph_tree *
local_tree(const struct kmerge *m)
{
	return m->pull ? &m->j->dst : &m->j->src;
}

static struct ph_tree *
remote_tree(const struct kmerge *m)
{
	return m->pull ? &m->j->src : &m->j->dst;
}

/* t's entry at path, its index *i advanced past those before it. */
static struct ph_entry *
advance(struct ph_tree *t, size_t *i, const char *path)
{
	int c = 1;

	while (*i < t->n && (c = ph_path_cmp(t->v[*i].path, path)) < 0)
		(*i)++;
	return *i < t->n && c == 0 ? &t->v[*i] : NULL;
}

/* A copy of a record's path kept for the run (the plan points into it), in
 * the job's known_paths; NULL when out of memory. */
static const char *
known_path(struct ph_job *j, const char *path)
{
	struct ph_entry e = { 0 };

	if (ph_tree_add(&j->known_paths, path, strlen(path), &e) != 0)
		return NULL;
	return j->known_paths.v[j->known_paths.n - 1].path;
}

/* A record kept for the plan: s its source entry, or none (gone from the
 * source: its path is kept in the job's known_paths unless the caller has
 * kept it: kn->path not NULL). */
static int
kmerge_keep(struct kmerge *m, const struct ph_entry *s, const char *path, struct ph_known *kn)
{
	if (s != NULL) {
		kn->path = s->path;
	} else if (kn->path == NULL && (kn->path = known_path(m->j, path)) == NULL) {
		return PHSYNC_ENOMEM;
	}
	if (m->n == m->cap && ph_grow(&m->v, &m->cap, sizeof(*m->v), 256) != 0)
		return PHSYNC_ENOMEM;
	m->v[m->n++] = *kn;
	return 0;
}

/* The other orientation's record: the same row, its sides swapped. */
static int
kmerge_mirror(struct kmerge *m, struct ph_entry *d, const char *path, const struct ph_known *kn)
{
	struct ph_known k;

	k.path = NULL;
	k.ssize = kn->dsize;
	k.smtime = kn->dmtime;
	k.dsize = kn->ssize;
	k.dmtime = kn->smtime;
	k.touched = kn->touched == PH_KNOWN_DST ? PH_KNOWN_SRC :
	            kn->touched == PH_KNOWN_SRC ? PH_KNOWN_DST : 0;
	return kmerge_keep(m, d, path, &k);
}

/* A row with a name phsync never writes: never merged with a tree nor
 * planned, dropped after the walk. */
static int
kmerge_bad(struct kmerge *m, const char *path)
{
	if (m->nbad == m->capbad && ph_grow(&m->bad, &m->capbad, sizeof(*m->bad), 16) != 0)
		return PHSYNC_ENOMEM;
	if ((m->bad[m->nbad] = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	m->nbad++;
	return 0;
}

/* A record's local side: kn filled from the row (oriented), *lp its entry
 * in the local tree (or NULL), and whether that file changed though its
 * size and time are as recorded: its identity says whether they can be
 * trusted (ident.c), as git's index does. */
static int
kmerge_local(struct kmerge *m, const char *path, const struct ph_state_file *f,
             struct ph_entry **lp, struct ph_known *kn)
{
	struct ph_tree *lt = local_tree(m);
	struct ph_entry *l = advance(lt, &m->li, path);
	uint64_t lsize = f->lsize;
	int64_t lmtime = f->lmtime;
	int rc;

	*lp = l;
	kn->path = NULL;
	kn->ssize = m->pull ? f->rsize : f->lsize;
	kn->smtime = m->pull ? f->rmtime : f->lmtime;
	kn->dsize = m->pull ? f->lsize : f->rsize;
	kn->dmtime = m->pull ? f->lmtime : f->rmtime;
	kn->touched = 0;
	if ((f->has_lid || f->has_hash) && l != NULL && l->type == PH_T_FILE && !l->nosize &&
	    !m->j->o->dry_run && l->size == lsize && l->mtime == lmtime) {
		if ((rc = ph_ident_changed_seen(m->j, ph_entry_raw(l), path, f,
		                                lt->ids_ok ? lt->ids[l - lt->v] : 0, l->mtime)) < 0)
			return rc;
		kn->touched = rc ? (m->pull ? PH_KNOWN_DST : PH_KNOWN_SRC) : 0;
	}
	return 0;
}

/* A record's remote side, its local entry l found: the flags on the
 * source entry, and the record counted as recorded or kept. */
static int
kmerge_remote(struct kmerge *m, const char *path, struct ph_entry *l, struct ph_known *kn)
{
	struct ph_entry *r = advance(remote_tree(m), &m->ri, path);
	struct ph_entry *s = m->pull ? r : l, *d = m->pull ? l : r;
	int rc;

	/* (A mirror's source tree is this one's destination: the same
	 * entries, so its flags go on d.) */
	if (s != NULL)
		s->flags |= PH_E_KNOWN;
	if (m->mirror != NULL && d != NULL)
		d->flags |= PH_E_KNOWN;
	if (s != NULL && d != NULL && s->type == PH_T_FILE && d->type == PH_T_FILE &&
	    !s->nosize && !kn->touched &&
	    !d->nosize && s->size == kn->ssize && s->mtime == kn->smtime &&
	    d->size == kn->dsize && d->mtime == kn->dmtime) {
		s->flags |= PH_E_ASREC;
		m->asrec++;
		if (m->mirror != NULL) {
			d->flags |= PH_E_ASREC;
			m->mirror->asrec++;
		}
		return 0;
	}
	if ((rc = kmerge_keep(m, s, path, kn)) != 0 || m->mirror == NULL)
		return rc;
	return kmerge_mirror(m->mirror, d, path, kn);
}

static int
kmerge_row(void *arg, const char *path, const struct ph_state_file *f)
{
	struct kmerge *m = arg;
	struct ph_entry *l;
	struct ph_known kn;
	int rc;

	if (!ph_staterow_path_ok(path, strlen(path)))
		return kmerge_bad(m, path);
	if ((rc = kmerge_local(m, path, f, &l, &kn)) != 0)
		return rc;
	return kmerge_remote(m, path, l, &kn);
}

/* After the pass: the bad rows said and dropped, the identities that
 * moved (content the same) renewed. */
static int
kmerge_end(struct kmerge *m, int rc)
{
	size_t i;

	for (i = 0; i < m->nbad; i++) {
		if (rc == 0) {
			ph_bad_row(m->j, m->bad[i], "a file record");
			rc = ph_state_file_forget(m->j->state, m->bad[i]);
		}
		free(m->bad[i]);
	}
	free(m->bad);
	m->bad = NULL;
	m->nbad = 0;
	ph_ident_close(m->j);
	if (rc == 0)
		rc = ph_ident_renew(m->j);
	return rc;
}

/* The records merged for one orientation, or with mj (a two-way run's
 * other pass) for both at once: one read of the rows, one check of each
 * local file's identity. */
int
ph_known_load(struct ph_job *j, int pull, struct ph_known_set *known, struct ph_job *mj,
              struct ph_known_set *mknown)
{
	struct kmerge m, mm;
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
	return kmerge_end(&m, rc);
}

/* The early half (ph_known_early): each row's local side, while the
 * server is listed. A row whose local file is exactly as recorded, and
 * whose remote side was recorded with the same size and time (what a pull
 * leaves), is one bit on that file's entry: its whole record is the
 * entry's size and time. Any other row is kept whole (kn, its local
 * entry's index or -1), in the rows' order. */
struct early_row {
	struct ph_known kn;
	int64_t l;
};

struct early {
	struct kmerge m;
	uint8_t *same;             /* bit i: dst.v[i] holds its row */
	struct early_row *v;
	size_t n, cap;
};

static int
early_row(void *arg, const char *path, const struct ph_state_file *f)
{
	struct early *e = arg;
	struct kmerge *m = &e->m;
	struct ph_entry *l;
	struct ph_known kn;
	int rc;

	if (*m->stop)
		return PHSYNC_EINTR;
	if (!ph_staterow_path_ok(path, strlen(path)))
		return kmerge_bad(m, path);
	if ((rc = kmerge_local(m, path, f, &l, &kn)) != 0)
		return rc;
	if (l != NULL && l->type == PH_T_FILE && !l->nosize && !kn.touched &&
	    l->size == kn.dsize && l->mtime == kn.dmtime && kn.ssize == kn.dsize &&
	    kn.smtime == kn.dmtime) {
		size_t i = (size_t)(l - m->j->dst.v);

		e->same[i / 8] |= (uint8_t)(1u << (i % 8));
		return 0;
	}
	if (e->n == e->cap && ph_grow(&e->v, &e->cap, sizeof(*e->v), 256) != 0)
		return PHSYNC_ENOMEM;
	/* (With l, the row's key is its entry's: the same string.) */
	if ((kn.path = l != NULL ? l->path : known_path(m->j, path)) == NULL)
		return PHSYNC_ENOMEM;
	e->v[e->n].kn = kn;
	e->v[e->n].l = l != NULL ? (int64_t)(l - m->j->dst.v) : -1;
	e->n++;
	return 0;
}

static void *
early_run(void *arg)
{
	struct ph_known_early *ke = arg;
	struct ph_job *j = ke->j;
	struct early *e;
	int rc;

	/* The pairs as recorded taken out while both trees fill; then the
	 * walk's end (this thread waits for it): its failure is the run's
	 * thread's to report. */
	if (ke->pairs != NULL) {
		ke->rc = ph_pairs_run(ke->pairs);
		ke->paired = ph_pairs_count(ke->pairs);
	}
	ph_lscan_join(ke->ls);
	if (ke->rc != 0)
		return NULL;
	if (ke->ls->rc != 0 || ke->stop)
		return NULL;
	/* (Taken from as it was walked, it was left for this to sort.) */
	if (ke->pairs != NULL)
		ph_tree_sort(&j->dst);
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->same = calloc(j->dst.n / 8 + 1, 1)) == NULL) {
		ke->rc = PHSYNC_ENOMEM;
		free(e);
		return NULL;
	}
	e->m.j = j;
	e->m.pull = 1;
	e->m.stop = &ke->stop;
	ke->e = e;
	/* The local tree's keys as the run's name matching leaves them (only
	 * the destination's own names count for them: names.h). */
	if ((rc = ph_names_normalize(&j->dst)) != 0 ||
	    (rc = ph_names_separate(&j->dst, NULL, 0, NULL, NULL)) != 0) {
		ke->rc = rc;
		return NULL;
	}
	ke->named = 1;
	/* (The rows taken out with their files, skipped.) */
	ke->rc = ke->pairs != NULL ? ph_pairs_each(ke->pairs, j->state, early_row, e) :
	         ph_state_each(j->state, early_row, e);
	if (ke->rc == PHSYNC_ECORRUPT)
		ke->rc = ph_err(j->ctx, PHSYNC_ECORRUPT, "the sync state's records changed "
		                "while this run read them");
	ph_ident_close(j);
	/* Every record's local side is checked: the identities the walk saw
	 * are not asked again (8 MB at a million files, freed before the
	 * listing ends, when both trees are whole; a merge done again, with
	 * redo, stats instead). */
	if (ke->rc == 0)
		ph_tree_drop_ids(&j->dst);
	return NULL;
}

int
ph_known_early_start(struct ph_known_early *ke, struct ph_job *j, struct ph_lscan *ls,
                     struct ph_pairs *pairs)
{
	pthread_attr_t attr;

	memset(ke, 0, sizeof(*ke));
	ke->j = j;
	ke->ls = ls;
	ke->pairs = pairs;
	/* SQLite and the name matching on it: 2 MiB everywhere (macOS gives
	 * a thread 512 KiB, musl 128 KiB). */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 2u << 20);
	ke->on = pthread_create(&ke->th, &attr, early_run, ke) == 0;
	pthread_attr_destroy(&attr);
	return ke->on;
}

void
ph_known_early_join(struct ph_known_early *ke, int stop)
{
	if (!ke->on)
		return;
	if (stop) {
		ke->stop = 1;
		ph_lscan_stop(ke->ls);
		if (ke->pairs != NULL)
			ph_pairs_wake(ke->pairs);
	}
	pthread_join(ke->th, NULL);
	ke->on = 0;
}

int
ph_known_early_finish(struct ph_known_early *ke, struct ph_known_set *known, int redo)
{
	struct early *e = ke->e;
	struct kmerge *m;
	const struct ph_tree *dst;
	size_t i = 0, k = 0;
	int rc = ke->rc;

	if (ke->paired > 0 && rc == 0 && (e == NULL || redo))
		rc = ph_err(ke->j->ctx, PHSYNC_ECORRUPT, "internal: %llu files as recorded were "
		            "left out of the scan, and the records were to be read again",
		            (unsigned long long)ke->paired);
	if (e == NULL)
		return rc;
	if (rc != 0 || redo) {
		/* (Its renewals are the loaded records' to queue again.) */
		if (redo)
			ph_ident_renew_free(ke->j);
		ph_known_early_free(ke);
		return rc;
	}
	m = &e->m;
	dst = &m->j->dst;
	/* The rows again, in their order: the entries that hold theirs and
	 * the rows kept whole, merged. */
	while (rc == 0) {
		struct ph_entry *l;
		struct ph_known kn;

		while (i < dst->n && !(e->same[i / 8] & (1u << (i % 8))))
			i++;
		if (k < e->n && (i == dst->n || (e->v[k].l >= 0 ? (size_t)e->v[k].l < i :
		                                 ph_path_cmp(e->v[k].kn.path, dst->v[i].path) < 0))) {
			kn = e->v[k].kn;
			l = e->v[k].l >= 0 ? &m->j->dst.v[e->v[k].l] : NULL;
			k++;
		} else if (i < dst->n) {
			l = &m->j->dst.v[i++];
			kn.path = l->path;
			kn.ssize = kn.dsize = l->size;
			kn.smtime = kn.dmtime = l->mtime;
			kn.touched = 0;
		} else {
			break;
		}
		rc = kmerge_remote(m, kn.path, l, &kn);
	}
	known->v = m->v;
	known->n = m->n;
	known->asrec = m->asrec + ke->paired;
	m->v = NULL;
	rc = kmerge_end(m, rc);
	ph_known_early_free(ke);
	return rc != 0 ? rc : 1;
}

void
ph_known_early_free(struct ph_known_early *ke)
{
	struct early *e = ke->e;
	size_t i;

	ph_known_early_join(ke, 1);
	if (e == NULL)
		return;
	for (i = 0; i < e->m.nbad; i++)
		free(e->m.bad[i]);
	free(e->m.bad);
	free(e->m.v);
	free(e->same);
	free(e->v);
	free(e);
	ke->e = NULL;
}
