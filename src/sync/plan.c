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

int
ph_plan_make(const struct ph_tree *src, const struct ph_tree *dst,
             const struct ph_plan_opts *opts, struct ph_plan *plan)
{
	static const struct ph_plan_opts none = { 0, 0, NULL };
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
		return 0;
	if ((plan->v = calloc(src->n, sizeof(*plan->v))) == NULL)
		return PHSYNC_ENOMEM;
	for (i = 0; i < src->n; i++) {
		const struct ph_entry *s = &src->v[i], *d = NULL;
		struct ph_action a = { (uint32_t)i, -1, 0 };
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
		} else if ((s->nosize || d->nosize || d->size != s->size ||
		            !same_time(d->mtime, s->mtime, win)) &&
		           !(kn != NULL && !s->nosize && !d->nosize && kn->ssize == s->size &&
		             kn->smtime == s->mtime && kn->dsize == d->size && kn->dmtime == d->mtime)) {
			a.kind = PH_A_UPDATE;
		}
		if (a.kind == 0)
			continue;
		if (a.kind == PH_A_NEW || a.kind == PH_A_UPDATE) {
			plan->files_todo++;
			plan->bytes_todo += s->size;
		}
		plan->v[plan->n++] = a;
	}
	return 0;
}

void
ph_plan_free(struct ph_plan *plan)
{
	free(plan->v);
	memset(plan, 0, sizeof(*plan));
}
