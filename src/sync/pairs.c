/* SPDX-License-Identifier: ISC */
/* Pairs taken out of both trees as they fill; see pairs.h.
 *
 * Each tree is a stream here: its scan appends under the feed's lock
 * (tree.h), and the taker copies a batch out (the entries from the feed's
 * taken on), decides each in key order, and writes the kept ones back at
 * w, before the entries not yet copied out. Between w and taken lie the
 * entries copied out (those not yet decided, and the room of those taken
 * out): once that room is as large as what follows it, what follows moves
 * down, so a tree holds what was kept plus about its scan's lead. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ident.h"
#include "job.h"
#include "pairs.h"
#include "probe.h"
#include "records.h"
#include "staterow.h"
#include "winname.h"

#define BATCH 4096
#define MOVE_FROM 1024   /* the least room worth moving a tree's tail for */

struct side {
	struct ph_tree *t;
	struct ph_entry in[BATCH];   /* copied out: in[at..nin) not decided */
	uint64_t inid[BATCH];
	size_t at, nin;
	struct ph_entry out[BATCH];  /* decided and kept, to write back at w */
	uint64_t outid[BATCH];
	size_t nout;
	size_t w;
	const char *prev;            /* the key decided last */
	int cur_ok;                  /* in[at] is known to come after prev */
	int next_ok;                 /* in[at + 1] is known to come after in[at] */
	int eq;                      /* in[at]'s key is the row's (keep_before) */
	int end;                     /* the scan ended, all of it copied out */
};

#define HOLD_MAX 65536       /* rows held for the second read, at most */

struct held_row {
	struct ph_state_file f;
	const char *path;
};

struct ph_pairs {
	struct ph_job *j;
	const atomic_int *stop;
	struct side l, r;
	uint8_t *bits;               /* bit i: row i was taken out */
	size_t nrows, capbits;
	uint64_t count;
	uint64_t hsum;               /* the taken rows' paths */
	int told;                    /* the destination keeps case */
	int tries;                   /* asked, and no answer */
	char okdir[4096];            /* the folder of the last plain path */
	size_t okdlen;
	/* The rows not taken out, held for the second read while few (at a
	 * million unchanged files, a few): else that read is the state's
	 * again, the taken rows skipped by their bits. */
	struct held_row *held;
	size_t nheld, capheld;
	struct ph_tree paths;         /* their paths (kept by the tree's blocks,
	                                no pool, no entries) */
	int reread;                  /* too many to hold */
	int off;                     /* nothing more is taken (a side came out
	                                of order, or the case is not told) */
};

struct ph_pairs *
ph_pairs_new(struct ph_job *j, struct ph_tree *lt, struct ph_tree *rt, const atomic_int *stop)
{
	struct ph_pairs *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->j = j;
	p->stop = stop;
	p->l.t = lt;
	p->r.t = rt;
	return p;
}

static void
held_free(struct ph_pairs *p)
{
	ph_tree_free(&p->paths);
	free(p->held);
	p->held = NULL;
	p->nheld = p->capheld = 0;
}

void
ph_pairs_free(struct ph_pairs *p)
{
	if (p == NULL)
		return;
	held_free(p);
	free(p->bits);
	free(p);
}

/* A row not taken out, held for the second read (or, past HOLD_MAX, none
 * held: that read is the state's). 0 or PHSYNC_ENOMEM. */
static int
hold_row(struct ph_pairs *p, const char *path, size_t len, const struct ph_state_file *f)
{
	struct held_row *h;
	char *s;

	if (p->reread)
		return 0;
	if (p->nheld == HOLD_MAX) {
		held_free(p);
		p->reread = 1;
		return 0;
	}
	if (p->nheld == p->capheld && ph_grow(&p->held, &p->capheld, sizeof(*p->held), 256) != 0)
		return PHSYNC_ENOMEM;
	if (ph_tree_keep(&p->paths, path, len, &s) != 0)
		return PHSYNC_ENOMEM;
	h = &p->held[p->nheld++];
	h->f = *f;
	h->f.hash = NULL;   /* (ph_state_each loads none; said here too) */
	h->f.sig = NULL;
	h->f.siglen = 0;
	h->path = s;
	return 0;
}

static int
ids_of(const struct ph_tree *t)
{
	return t->want_ids && t->ids_ok;
}

/* Under the lock: the tree's tail (what the scan added that the taker has
 * not taken) moved down to entry to. */
static void
move_tail(struct side *s, size_t to)
{
	struct ph_tree *t = s->t;
	struct ph_feed *f = t->feed;
	size_t tail = t->n - f->taken;

	if (tail > 0 && to != f->taken) {
		memmove(t->v + to, t->v + f->taken, tail * sizeof(*t->v));
		if (ids_of(t))
			memmove(t->ids + to, t->ids + f->taken, tail * sizeof(*t->ids));
	}
	t->n = to + tail;
	f->taken = to;
}

/* Under the lock: the kept entries written back; the tail moved down when
 * the room before it is at least its size. */
static void
flush_locked(struct side *s)
{
	struct ph_tree *t = s->t;
	struct ph_feed *f = t->feed;
	size_t open = s->nin - s->at, room;

	if (s->nout > 0) {
		memcpy(t->v + s->w, s->out, s->nout * sizeof(*s->out));
		if (ids_of(t))
			memcpy(t->ids + s->w, s->outid, s->nout * sizeof(*s->outid));
	}
	s->w += s->nout;
	s->nout = 0;
	room = f->taken - s->w - open;
	if (room >= MOVE_FROM && room >= t->n - f->taken)
		move_tail(s, s->w + open);
}

static void
flush(struct side *s)
{
	pthread_mutex_lock(&s->t->feed->mu);
	flush_locked(s);
	pthread_mutex_unlock(&s->t->feed->mu);
}

/* At least k entries not decided in s->in, unless the scan ended first
 * (waiting for it meanwhile). 0, or PHSYNC_EINTR once stop is set. */
static int
need(struct ph_pairs *p, struct side *s, size_t k)
{
	struct ph_tree *t = s->t;
	struct ph_feed *f = t->feed;
	int rc = 0;

	if (s->nin - s->at >= k || s->end)
		return 0;
	pthread_mutex_lock(&f->mu);
	flush_locked(s);
	memmove(s->in, s->in + s->at, (s->nin - s->at) * sizeof(*s->in));
	memmove(s->inid, s->inid + s->at, (s->nin - s->at) * sizeof(*s->inid));
	s->nin -= s->at;
	s->at = 0;
	for (;;) {
		size_t avail = t->n - f->taken, room = BATCH - s->nin;
		size_t c = avail < room ? avail : room;

		if (c > 0) {
			memcpy(s->in + s->nin, t->v + f->taken, c * sizeof(*s->in));
			if (ids_of(t))
				memcpy(s->inid + s->nin, t->ids + f->taken, c * sizeof(*s->inid));
			else
				memset(s->inid + s->nin, 0, c * sizeof(*s->inid));
			s->nin += c;
			f->taken += c;
			/* (The walk may wait for its lead to shrink.) */
			pthread_cond_broadcast(&f->cv);
		}
		if (s->nin >= k)
			break;
		if (f->ended && f->taken == t->n) {
			s->end = 1;
			break;
		}
		if (atomic_load(p->stop)) {
			rc = PHSYNC_EINTR;
			break;
		}
		pthread_cond_wait(&f->cv, &f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* The next entry decided: each must come after the one before it (else
 * nothing more is taken: the trees are put in order after the scan). */
static void
decided(struct ph_pairs *p, struct side *s)
{
	const char *key = s->in[s->at].path;

	if (!s->cur_ok && s->prev != NULL && ph_path_cmp(s->prev, key) >= 0)
		p->off = 1;
	s->prev = key;
	s->cur_ok = s->next_ok;
	s->next_ok = 0;
	s->at++;
}

static void
keep(struct ph_pairs *p, struct side *s)
{
	s->out[s->nout] = s->in[s->at];
	s->outid[s->nout] = s->inid[s->at];
	s->nout++;
	decided(p, s);
	if (s->nout == BATCH)
		flush(s);
}

/* Every entry of s before path kept; 0 or PHSYNC_EINTR. */
static int
keep_before(struct ph_pairs *p, struct side *s, const char *path)
{
	int rc, c;

	for (;;) {
		s->eq = 0;
		if ((rc = need(p, s, 1)) != 0)
			return rc;
		if (s->at == s->nin)
			return 0;
		if ((c = ph_path_cmp(s->in[s->at].path, path)) >= 0) {
			s->eq = c == 0;
			return 0;
		}
		keep(p, s);
	}
}

/* s's entry with key path, alone (its next entry, if any, after it), or
 * NULL. */
static const struct ph_entry *
alone_at(struct ph_pairs *p, struct side *s, const char *path, int *rc)
{
	*rc = 0;
	if (!s->eq)
		return NULL;
	if ((*rc = need(p, s, 2)) != 0)
		return NULL;
	if (s->nin - s->at >= 2) {
		if (ph_path_cmp(s->in[s->at + 1].path, path) <= 0) {
			p->off = 1;
			return NULL;
		}
		s->next_ok = 1;
	}
	return &s->in[s->at];
}

/* Plain: printable ASCII only, each name one Windows holds too. Name
 * matching (names.h) leaves such a path as it is on both sides and never
 * numbers another name onto it (a number goes on a name that folds or
 * normalizes to another; without folding, those are not ASCII). A plain
 * path is one ph_staterow_path_ok passes: its names are never empty, "."
 * or "..", hold no control byte, '/' or '\\' (winname.h), and are held to
 * 255 bytes here, the path to PH_STATEROW_PATH_MAX. */
static int
plain(struct ph_pairs *p, const char *path, size_t len)
{
	size_t dl = len, i, b = 0;

	if (len == 0 || len > PH_STATEROW_PATH_MAX)
		return 0;
	while (dl > 0 && path[dl - 1] != '/')
		dl--;
	dl -= dl > 0;   /* the folder's length, without its '/' */

	/* (The folder as the row before's, plain: its name alone.) */
	if (dl > 0 && dl == p->okdlen && memcmp(path, p->okdir, dl) == 0)
		b = i = dl + 1;
	else
		i = 0;
	for (; i <= len; i++) {
		if (i == len || path[i] == '/') {
			if (i - b > 255 || ph_winname_check_n(path + b, i - b) != PH_WINNAME_OK)
				return 0;
			b = i + 1;
		} else if ((unsigned char)path[i] < 0x20 || (unsigned char)path[i] > 0x7e) {
			return 0;
		}
	}
	if (dl > 0 && dl < sizeof(p->okdir)) {
		memcpy(p->okdir, path, dl);
		p->okdlen = dl;
	}
	return 1;
}

/* Whether the destination keeps case, told by one file's name with its
 * case swapped (probe.h); until it is told nothing is taken: with a
 * destination that ignores case, the run's name matching pairs names
 * that differ in case alone, and must see them all. */
static int
case_told(struct ph_pairs *p, const char *path)
{
	int r;

	if (p->told)
		return 1;
	if ((r = ph_probe_case_at(p->j->lroot, path)) < 0) {
		/* No letter to swap (asked nothing), or no answer: the next
		 * file, a few times. */
		if (r == -2 && ++p->tries == 8)
			p->off = 1;
		return 0;
	}
	if (r == 1)
		p->off = 1;
	else
		p->told = 1;
	return p->told;
}

/* l and r exactly as the row records them (kmerge_local and kmerge_remote
 * in known.c decide the same): 1, 0, or a PHSYNC_E* from the identity
 * check. */
static int
as_recorded(struct ph_pairs *p, const struct ph_entry *l, uint64_t lid,
            const struct ph_entry *r, const char *path, const struct ph_state_file *f)
{
	int rc;

	if (l->type != PH_T_FILE || r->type != PH_T_FILE || l->nosize || r->nosize ||
	    r->size != f->rsize || r->mtime != f->rmtime || l->size != f->lsize ||
	    l->mtime != f->lmtime)
		return 0;
	if (f->has_lid || f->has_hash) {
		if ((rc = ph_ident_changed_seen(p->j, path, path, f, lid, l->mtime)) != 0)
			return rc < 0 ? rc : 0;
	}
	return 1;
}

static int row_take(struct ph_pairs *p, const char *path, size_t len, size_t i,
                    const struct ph_state_file *f);

static int
pairs_row(void *arg, const char *path, const struct ph_state_file *f)
{
	struct ph_pairs *p = arg;
	size_t len = strlen(path), i = p->nrows++;
	int rc;

	if (i / 8 >= p->capbits) {
		size_t nc = p->capbits ? p->capbits * 2 : 4096;
		uint8_t *b = realloc(p->bits, nc);

		if (b == NULL)
			return PHSYNC_ENOMEM;
		memset(b + p->capbits, 0, nc - p->capbits);
		p->bits = b;
		p->capbits = nc;
	}
	if (atomic_load(p->stop))
		return PHSYNC_EINTR;
	if ((rc = row_take(p, path, len, i, f)) < 0)
		return rc;
	return rc == 1 ? 0 : hold_row(p, path, len, f);
}

/* Row i taken out with its two entries (1), or not (0), or a PHSYNC_E*. */
static int
row_take(struct ph_pairs *p, const char *path, size_t len, size_t i,
         const struct ph_state_file *f)
{
	const struct ph_entry *l, *r;
	int rc;

	if (p->off || !plain(p, path, len))
		return 0;
	/* What comes before the row on either side has no row: kept. */
	if ((rc = keep_before(p, &p->l, path)) != 0 || (rc = keep_before(p, &p->r, path)) != 0)
		return rc;
	if ((l = alone_at(p, &p->l, path, &rc)) == NULL || rc != 0 ||
	    (r = alone_at(p, &p->r, path, &rc)) == NULL || rc != 0)
		return rc;
	/* (alone_at may have moved the local side's batch: l again.) */
	l = &p->l.in[p->l.at];
	if (p->off || !case_told(p, path))
		return 0;
	if ((rc = as_recorded(p, l, p->l.inid[p->l.at], r, path, f)) <= 0)
		return rc;
	decided(p, &p->l);
	decided(p, &p->r);
	p->bits[i / 8] |= (uint8_t)(1u << (i % 8));
	p->count++;
	p->hsum += XXH3_64bits(path, len);
	return 1;
}

/* The taker gone: what it holds written back, the room closed, the scan
 * no longer held back. */
static void
side_end(struct ph_pairs *p, struct side *s)
{
	struct ph_tree *t = s->t;
	struct ph_feed *f = t->feed;

	while (s->at < s->nin)
		keep(p, s);
	pthread_mutex_lock(&f->mu);
	flush_locked(s);
	move_tail(s, s->w);   /* (nothing is open now: all written back) */
	f->taken = t->n;
	f->closed = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

int
ph_pairs_run(struct ph_pairs *p)
{
	int rc = ph_state_each(p->j->state, pairs_row, p);

	side_end(p, &p->l);
	side_end(p, &p->r);
	return rc;
}

void
ph_pairs_wake(struct ph_pairs *p)
{
	ph_feed_wake(p->l.t);
	ph_feed_wake(p->r.t);
}

/* The second read from the state: the rows taken out skipped, and at its
 * end, the check that it saw the rows the first saw. */
struct reread {
	struct ph_pairs *p;
	ph_state_each_fn *fn;
	void *arg;
	size_t row;
	uint64_t hsum;
};

static int
reread_row(void *arg, const char *path, const struct ph_state_file *f)
{
	struct reread *rr = arg;
	struct ph_pairs *p = rr->p;
	size_t i = rr->row++;

	if (i < p->nrows && (p->bits[i / 8] & (1u << (i % 8)))) {
		rr->hsum += XXH3_64bits(path, strlen(path));
		return 0;
	}
	return rr->fn(rr->arg, path, f);
}

int
ph_pairs_each(struct ph_pairs *p, struct ph_state *st, ph_state_each_fn *fn, void *arg)
{
	struct reread rr = { p, fn, arg, 0, 0 };
	size_t i;
	int rc = 0;

	if (!p->reread) {
		for (i = 0; i < p->nheld && rc == 0; i++)
			rc = fn(arg, p->held[i].path, &p->held[i].f);
		return rc;
	}
	if ((rc = ph_state_each(st, reread_row, &rr)) != 0)
		return rc;
	return rr.row == p->nrows && rr.hsum == p->hsum ? 0 : PHSYNC_ECORRUPT;
}

uint64_t
ph_pairs_count(const struct ph_pairs *p)
{
	return p != NULL ? p->count : 0;
}
