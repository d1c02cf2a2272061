/* The planner; see plan.h. */
#include <stdlib.h>
#include <string.h>

#include "phsync/error.h"
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
			if (plan->nforget == cap_f) {
				size_t nc = cap_f ? cap_f * 2 : 64;
				const char **nv = realloc(plan->forget, nc * sizeof(*nv));

				if (nv == NULL)
					return PHSYNC_ENOMEM;
				plan->forget = nv;
				cap_f = nc;
			}
			plan->forget[plan->nforget++] = kn->path;
			continue;
		}
		if (!opts->deletes || d->type != PH_T_FILE)
			continue;
		if (plan->ndel == cap_del) {
			size_t nc = cap_del ? cap_del * 2 : 64;
			struct ph_del *nv = realloc(plan->del, nc * sizeof(*nv));

			if (nv == NULL)
				return PHSYNC_ENOMEM;
			plan->del = nv;
			cap_del = nc;
		}
		plan->del[plan->ndel].dst = (int64_t)(d - dst->v);
		plan->del[plan->ndel].kept = d->nosize || d->size != kn->dsize ||
		                             !same_time(d->mtime, kn->dmtime, win);
		if (!plan->del[plan->ndel].kept)
			plan->ndel_go++;
		plan->ndel++;
	}
	return 0;
}

int
ph_plan_make(const struct ph_tree *src, const struct ph_tree *dst,
             const struct ph_plan_opts *opts, struct ph_plan *plan)
{
	static const struct ph_plan_opts none = { 0, 0, NULL, 0, 0, NULL };
	const struct ph_known_set *known;
	int64_t young_after, win;
	size_t i, j = 0, kj = 0;
	const char *blocked = NULL;
	size_t blen = 0;

	if (opts == NULL)
		opts = &none;
	known = opts->known;
	young_after = opts->young_after;
	win = opts->modify_window;
	memset(plan, 0, sizeof(*plan));
	if (src->n == 0)
		return plan_gone(src, dst, opts, plan);
	if ((plan->v = calloc(src->n, sizeof(*plan->v))) == NULL)
		return PHSYNC_ENOMEM;
	for (i = 0; i < src->n; i++) {
		const struct ph_entry *s = &src->v[i], *d = NULL;
		struct ph_action a = { (uint32_t)i, -1, 0, 0 };
		int c = 1;

		const struct ph_known *kn = NULL;
		int kc = 1;

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
		if (blocked != NULL && under(s->path, blocked, blen)) {
			a.kind = PH_A_BLOCKED;
		} else if (s->type == PH_T_LINK) {
			a.kind = PH_A_SKIP_LINK;
		} else if (s->type == PH_T_OTHER) {
			a.kind = PH_A_SKIP_OTHER;
		} else if (s->type == PH_T_DIR) {
			if (d == NULL)
				a.kind = PH_A_MKDIR;
			else if (d->type != PH_T_DIR)
				a.kind = PH_A_CONFLICT;
			else if (!same_time(d->mtime, s->mtime, win))
				a.kind = PH_A_DIRTIME;
			if (a.kind == PH_A_CONFLICT) {
				blocked = s->path;
				blen = strlen(blocked);
			}
		} else if (young_after != 0 && s->mtime > young_after &&
		           (d == NULL || d->type != PH_T_FILE || s->nosize || d->nosize ||
		            d->size != s->size || !same_time(d->mtime, s->mtime, win))) {
			a.kind = PH_A_SKIP_YOUNG;
		} else if (d == NULL) {
			a.kind = PH_A_NEW;
		} else if (d->type != PH_T_FILE) {
			a.kind = PH_A_CONFLICT;
		} else if (s->nosize || d->nosize || d->size != s->size ||
		           !same_time(d->mtime, s->mtime, win)) {
			int src_changed = kn == NULL || s->nosize || kn->ssize != s->size ||
			                  !same_time(kn->smtime, s->mtime, win);
			int dst_changed = kn == NULL || d->nosize || kn->dsize != d->size ||
			                  !same_time(kn->dmtime, d->mtime, win);

			if (!src_changed && !dst_changed) {
				/* both sides as recorded: in sync (times not settable) */
			} else if (opts->overwrite || !dst_changed) {
				a.kind = PH_A_UPDATE;
				a.how = PH_U_REPLACE;
			} else if (kn == NULL) {
				a.kind = PH_A_UPDATE;
				a.how = PH_U_FIRST;
			} else if (!src_changed) {
				a.kind = PH_A_KEPT;
			} else {
				a.kind = PH_A_UPDATE;
				a.how = PH_U_CONFLICT;
			}
		}
		if (a.kind == 0)
			continue;
		if (a.kind == PH_A_NEW || a.kind == PH_A_UPDATE) {
			plan->files_todo++;
			plan->bytes_todo += s->size;
		}
		plan->v[plan->n++] = a;
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
