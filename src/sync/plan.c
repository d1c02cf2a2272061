/* SPDX-License-Identifier: ISC */
/* The planner; see plan.h. */
#include <stdlib.h>
#include <string.h>

#include "phsync/error.h"
#include "buf.h"
#include "plan.h"

static int
under(const char *path, const char *dir, size_t dl)
{
	return strncmp(path, dir, dl) == 0 && path[dl] == '/';
}

size_t
ph_plan_block_subtree(struct ph_plan *plan, const struct ph_tree *src, size_t i)
{
	const char *dir = src->v[plan->v[i].src].path;
	size_t dl = strlen(dir), j, n = 0;

	for (j = i + 1; j < plan->n && under(src->v[plan->v[j].src].path, dir, dl); j++) {
		if (plan->v[j].kind != PH_A_BLOCKED) {
			if (plan->v[j].kind == PH_A_NEW || plan->v[j].kind == PH_A_UPDATE) {
				plan->files_todo--;
				plan->bytes_todo -= src->v[plan->v[j].src].size;
			}
			plan->v[j].kind = PH_A_BLOCKED;
			n++;
		}
	}
	return n;
}

/* Same time, within the window (FAT keeps 2 s steps). */
static int
same_time(int64_t a, int64_t b, int64_t window)
{
	return a == b || (a > b ? a - b : b - a) <= window;
}

/* Is path excluded by the filter, itself or through a folder above it? */
static int
excluded(const struct ph_filter *f, const char *path)
{
	char buf[4096];
	size_t n = strlen(path), i;

	if (f == NULL || f->n == 0)
		return 0;
	if (n >= sizeof(buf))
		return 1; /* cannot tell: keep it */
	memcpy(buf, path, n + 1);
	for (i = 0; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (!ph_filter_match(f, buf, 1))
			return 1;
		buf[i] = '/';
	}
	return !ph_filter_match(f, path, 0);
}

/* Does a folder above path exist in the source as something else? */
static int
parent_replaced(const struct ph_tree *src, const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	const struct ph_entry *e;
	char *s;

	if (n >= sizeof(buf))
		return 1;
	memcpy(buf, path, n + 1);
	while ((s = strrchr(buf, '/')) != NULL) {
		*s = '\0';
		if ((e = ph_tree_find(src, buf)) != NULL)
			return e->type != PH_T_DIR;
	}
	return 0;
}

static int
del_key_cmp(const void *a, const void *b)
{
	const struct ph_del *x = *(struct ph_del *const *)a;
	const struct ph_del *y = *(struct ph_del *const *)b;

	if (x->ssize != y->ssize)
		return x->ssize < y->ssize ? -1 : 1;
	if (x->smtime != y->smtime)
		return x->smtime < y->smtime ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

/* As recorded, or as recorded once a whole-hour shift of that side is
 * taken off (plan.h). */
static int
time_as_recorded(int64_t t, int64_t rec, int64_t shift, int64_t win)
{
	return same_time(t, rec, win) || (shift != 0 && same_time(t - shift, rec, win));
}

/* The first candidate of v (sorted by del_key_cmp) not taken yet with the
 * source's recorded size and time, taken; or NULL. */
static struct ph_del *
take_candidate(struct ph_del **v, size_t n, uint64_t size, int64_t mtime)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid]->ssize < size || (v[mid]->ssize == size && v[mid]->smtime < mtime))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && v[lo]->ssize == size && v[lo]->smtime == mtime; lo++)
		if (v[lo]->kept != 3) {
			v[lo]->kept = 3; /* taken for now (reset by the caller) */
			return v[lo];
		}
	return NULL;
}

/* New source files that look like a recorded file gone from the source
 * whose copy is still at the destination: moves (or copies) to confirm.
 * A source whose times all moved by whole hours is looked up as recorded
 * too (a file moved on a phone that changed time zone). */
static int
plan_moves(struct ph_plan *plan, const struct ph_tree *src, int deletes)
{
	struct ph_del **v;
	size_t i, n = 0;

	for (i = 0; i < plan->ndel; i++)
		n += !plan->del[i].kept && plan->del[i].ssize > 0;
	if (n == 0)
		return 0;
	if ((v = malloc(n * sizeof(*v))) == NULL)
		return PHSYNC_ENOMEM;
	for (i = 0, n = 0; i < plan->ndel; i++)
		if (!plan->del[i].kept && plan->del[i].ssize > 0)
			v[n++] = &plan->del[i];
	qsort(v, n, sizeof(*v), del_key_cmp);
	for (i = 0; i < plan->n; i++) {
		struct ph_action *a = &plan->v[i];
		const struct ph_entry *s = &src->v[a->src];
		struct ph_del *c;

		if (a->kind != PH_A_NEW || s->nosize || s->size == 0)
			continue;
		if ((c = take_candidate(v, n, s->size, s->mtime)) == NULL && plan->src_shift != 0)
			c = take_candidate(v, n, s->size, s->mtime - plan->src_shift);
		if (c != NULL) {
			a->how = deletes ? PH_N_MOVE : PH_N_COPY;
			a->dst = c->dst;
		}
	}
	for (i = 0; i < n; i++)
		if (v[i]->kept == 3)
			v[i]->kept = 0;
	free(v);
	return 0;
}

static int
plan_gone(const struct ph_tree *src, const struct ph_tree *dst,
          const struct ph_plan_opts *opts, struct ph_plan *plan)
{
	const struct ph_known_set *known = opts->known;
	size_t k, si = 0, di = 0, cap_del = 0, cap_f = 0;
	int64_t win = opts->modify_window;

	if (known == NULL)
		return 0;
	for (k = 0; k < known->n; k++) {
		const struct ph_known *kn = &known->v[k];
		const struct ph_entry *d = NULL;
		int c = 1;

		while (si < src->n && (c = ph_path_cmp(src->v[si].path, kn->path)) < 0)
			si++;
		if (si < src->n && c == 0)
			continue; /* still in the source */
		c = 1;
		while (di < dst->n && (c = ph_path_cmp(dst->v[di].path, kn->path)) < 0)
			di++;
		if (di < dst->n && c == 0)
			d = &dst->v[di];
		if (excluded(opts->filter, kn->path) || parent_replaced(src, kn->path))
			continue;
		if (d == NULL) {
			if (plan->nforget == cap_f &&
			    ph_grow(&plan->forget, &cap_f, sizeof(*plan->forget), 64) != 0)
				return PHSYNC_ENOMEM;
			plan->forget[plan->nforget++] = kn->path;
			continue;
		}
		if (d->type != PH_T_FILE)
			continue;
		if (plan->ndel == cap_del &&
		    ph_grow(&plan->del, &cap_del, sizeof(*plan->del), 64) != 0)
			return PHSYNC_ENOMEM;
		plan->del[plan->ndel].dst = (int64_t)(d - dst->v);
		plan->del[plan->ndel].ssize = kn->ssize;
		plan->del[plan->ndel].smtime = kn->smtime;
		plan->del[plan->ndel].kept = d->nosize || d->size != kn->dsize ||
		                             !time_as_recorded(d->mtime, kn->dmtime,
		                                               plan->dst_shift, win) ||
		                             (kn->touched & PH_KNOWN_DST);
		if (!plan->del[plan->ndel].kept && opts->deletes)
			plan->ndel_go++;
		plan->ndel++;
	}
	/* A source listing that failed hides files that are still there: a
	 * "moved" file may be one of them, so its old copy stays (a copy). */
	return plan_moves(plan, src, opts->deletes && !opts->src_incomplete);
}

/* The whole-hour shift of side (0: source, 1: destination) of tree t
 * against the records, or 0; see plan.h. */
static int64_t
detect_shift(const struct ph_tree *t, const struct ph_known_set *known, int side)
{
	uint64_t cnt[29] = { 0 }, total = 0;
	size_t i, k = 0, best = 14;

	if (known == NULL)
		return 0;
	for (i = 0; i < t->n; i++) {
		const struct ph_entry *e = &t->v[i];
		const struct ph_known *kn;
		int c = 1;
		int64_t d;

		if (e->type != PH_T_FILE || e->nosize)
			continue;
		while (k < known->n && (c = ph_path_cmp(known->v[k].path, e->path)) < 0)
			k++;
		if (k >= known->n || c != 0)
			continue;
		kn = &known->v[k];
		if ((side ? kn->dsize : kn->ssize) != e->size)
			continue;
		total++;
		d = e->mtime - (side ? kn->dmtime : kn->smtime);
		if (d != 0 && d % 3600 == 0 && d >= -14 * 3600 && d <= 14 * 3600)
			cnt[d / 3600 + 14]++;
	}
	total += known->asrec; /* as recorded: unshifted */
	for (i = 0; i < 29; i++)
		if (cnt[i] > cnt[best])
			best = i;
	if (best == 14 || cnt[best] < PH_SHIFT_MIN || cnt[best] * 100 < total * PH_SHIFT_SHARE)
		return 0;
	return ((int64_t)best - 14) * 3600;
}

/* A file on both sides whose size or time differ (or whose content the
 * record says changed): which side changed since the last sync decides
 * (plan.h). */
static void
file_differs(const struct ph_entry *s, const struct ph_entry *d, const struct ph_known *kn,
             const struct ph_plan_opts *opts, const struct ph_plan *plan, struct ph_action *a)
{
	int64_t win = opts->modify_window;
	int asrec = kn == NULL && (s->flags & PH_E_ASREC);
	int src_changed = !asrec && (kn == NULL || s->nosize || kn->ssize != s->size ||
	                             !same_time(kn->smtime, s->mtime, win));
	int dst_changed = !asrec && (kn == NULL || d->nosize || kn->dsize != d->size ||
	                             !same_time(kn->dmtime, d->mtime, win));
	int shifted = 0;

	/* A side whose every time moved by whole hours: as recorded once the
	 * shift is taken off. */
	if (src_changed && kn != NULL && plan->src_shift != 0 && !s->nosize &&
	    kn->ssize == s->size && same_time(kn->smtime, s->mtime - plan->src_shift, win))
		src_changed = 0, shifted = 1;
	if (dst_changed && kn != NULL && plan->dst_shift != 0 && !d->nosize &&
	    kn->dsize == d->size && same_time(kn->dmtime, d->mtime - plan->dst_shift, win))
		dst_changed = 0, shifted = 1;
	/* Content changed though size and time are as recorded. */
	if (kn != NULL && (kn->touched & PH_KNOWN_SRC))
		src_changed = 1, shifted = 0;
	if (kn != NULL && (kn->touched & PH_KNOWN_DST))
		dst_changed = 1, shifted = 0;
	if (!src_changed && !dst_changed) {
		/* both sides as recorded: in sync (times not settable) */
		if (shifted)
			a->kind = PH_A_RECORD;
	} else if (opts->overwrite || !dst_changed) {
		a->kind = PH_A_UPDATE;
		a->how = PH_U_REPLACE;
	} else if (kn == NULL) {
		a->kind = PH_A_UPDATE;
		a->how = PH_U_FIRST;
	} else if (!src_changed) {
		a->kind = PH_A_KEPT;
	} else {
		a->kind = PH_A_UPDATE;
		a->how = PH_U_CONFLICT;
	}
}

/* What the walk carries from one source entry to the next. */
struct walk {
	const char *blocked;    /* a folder whose subtree cannot be made */
	size_t blen;
};

/* The action for source entry s (d: the destination's entry of that
 * path, kn: its record; either NULL); kind 0: nothing to do. */
static void
classify(const struct ph_entry *s, const struct ph_entry *d, const struct ph_known *kn,
         const struct ph_plan_opts *opts, const struct ph_plan *plan, struct walk *w,
         struct ph_action *a)
{
	int64_t win = opts->modify_window;

	if (w->blocked != NULL && under(s->path, w->blocked, w->blen)) {
		a->kind = PH_A_BLOCKED;
	} else if (s->type == PH_T_LINK) {
		a->kind = PH_A_SKIP_LINK;
	} else if (s->type == PH_T_OTHER) {
		a->kind = PH_A_SKIP_OTHER;
	} else if (s->type == PH_T_DIR) {
		if (d == NULL)
			a->kind = PH_A_MKDIR;
		else if (d->type != PH_T_DIR)
			a->kind = PH_A_CONFLICT;
		else if (!same_time(d->mtime, s->mtime, win))
			a->kind = PH_A_DIRTIME;
		if (a->kind == PH_A_CONFLICT) {
			w->blocked = s->path;
			w->blen = strlen(w->blocked);
		}
	} else if (((opts->young_after != 0 && s->mtime > opts->young_after) ||
	            (s->flags & PH_E_HOLD)) &&
	           (d == NULL || d->type != PH_T_FILE || s->nosize || d->nosize ||
	            d->size != s->size || !same_time(d->mtime, s->mtime, win))) {
		a->kind = PH_A_SKIP_YOUNG;
	} else if (d == NULL) {
		a->kind = PH_A_NEW;
	} else if (d->type != PH_T_FILE) {
		a->kind = PH_A_CONFLICT;
	} else if (s->nosize || d->nosize || d->size != s->size ||
	           !same_time(d->mtime, s->mtime, win) || (kn != NULL && kn->touched)) {
		file_differs(s, d, kn, opts, plan, a);
	} else if ((opts->known != NULL && kn == NULL && !(s->flags & PH_E_KNOWN)) ||
	           (kn != NULL && (kn->ssize != s->size || kn->dsize != d->size ||
	                           !same_time(kn->smtime, s->mtime, win) ||
	                           !same_time(kn->dmtime, d->mtime, win)))) {
		/* The same on both sides at first contact (a folder an earlier
		 * tool synced), or since the record (both sides changed to the
		 * same size and time): recorded as they are, so that a later
		 * change on one side is told from a change on both. */
		a->kind = PH_A_RECORD;
		a->how = 1;
	}
}

static int
append(struct ph_plan *plan, const struct ph_action *a, const struct ph_entry *s)
{
	if (a->kind == PH_A_NEW || a->kind == PH_A_UPDATE) {
		plan->files_todo++;
		plan->bytes_todo += s->size;
	}
	/* Grown as needed: a run that changes nothing holds none. */
	if (plan->n == plan->cap && ph_grow(&plan->v, &plan->cap, sizeof(*plan->v), 256) != 0)
		return PHSYNC_ENOMEM;
	plan->v[plan->n++] = *a;
	return 0;
}

int
ph_plan_make(const struct ph_tree *src, const struct ph_tree *dst,
             const struct ph_plan_opts *opts, struct ph_plan *plan)
{
	static const struct ph_plan_opts none = { 0, 0, NULL, 0, 0, NULL, 0 };
	const struct ph_known_set *known;
	struct walk w = { NULL, 0 };
	size_t i, j = 0, kj = 0;
	int rc;

	if (opts == NULL)
		opts = &none;
	known = opts->known;
	memset(plan, 0, sizeof(*plan));
	if (src->n == 0)
		return plan_gone(src, dst, opts, plan);
	plan->src_shift = detect_shift(src, known, 0);
	plan->dst_shift = detect_shift(dst, known, 1);
	for (i = 0; i < src->n; i++) {
		const struct ph_entry *s = &src->v[i], *d = NULL;
		const struct ph_known *kn = NULL;
		struct ph_action a = { (uint32_t)i, -1, 0, 0 };
		int c = 1, kc = 1;

		/* The destination's entry and the record of this path, if any:
		 * all three are sorted alike. */
		while (j < dst->n && (c = ph_path_cmp(dst->v[j].path, s->path)) < 0)
			j++;
		if (j < dst->n && c == 0) {
			d = &dst->v[j];
			a.dst = (int64_t)j;
		}
		while (known != NULL && kj < known->n &&
		       (kc = ph_path_cmp(known->v[kj].path, s->path)) < 0)
			kj++;
		if (known != NULL && kj < known->n && kc == 0)
			kn = &known->v[kj];
		if (s->type == PH_T_FILE)
			plan->files_total++;
		classify(s, d, kn, opts, plan, &w, &a);
		if (a.kind != 0 && (rc = append(plan, &a, s)) != 0)
			return rc;
	}
	return plan_gone(src, dst, opts, plan);
}

void
ph_plan_free(struct ph_plan *plan)
{
	free(plan->v);
	free(plan->del);
	free(plan->forget);
	memset(plan, 0, sizeof(*plan));
}
