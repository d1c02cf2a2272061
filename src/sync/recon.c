/* SPDX-License-Identifier: ISC */
/* Two-way sync's reconciler; see recon.h and docs/TWOWAY.md. */
#include <stdlib.h>
#include <string.h>

#include "phsync/error.h"
#include "buf.h"
#include "recon.h"

/* What the two plans hold for one path: an action in each, or none. */
struct both {
	struct ph_action *a; /* pull's (source: the remote tree) */
	struct ph_action *b; /* push's (source: the local tree) */
};

/* The delete candidate of plan p at destination index dst, or NULL (the
 * candidates are in destination order). */
static const struct ph_del *
find_del(const struct ph_plan *p, int64_t dst)
{
	size_t lo = 0, hi = p->ndel;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->del[mid].dst < dst)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->ndel && p->del[lo].dst == dst ? &p->del[lo] : NULL;
}

static void
drop(struct ph_plan *p, struct ph_action *a, const struct ph_tree *src, uint64_t *count)
{
	if (a->kind == PH_A_NEW || a->kind == PH_A_UPDATE) {
		p->files_todo--;
		p->bytes_todo -= src->v[a->src].size;
	}
	a->kind = 0;
	(*count)++;
}

/* A file a plan would make new at its destination (absent there), whose
 * source entry the state knows: the destination's side deleted it. The other plan's delete candidate says whether this
 * side changed it since (kept): a change beats a delete and the file goes
 * back; else the delete goes and this copy stays put. */
static int
undoes_delete(const struct ph_action *a, const struct ph_tree *src, const struct ph_plan *other)
{
	const struct ph_del *d;

	/* Whatever way the planner would make it: a recorded file of the
	 * same size and time gone from this side may look like its source
	 * (a move), but the path itself was deleted there. */
	if (a->kind != PH_A_NEW || !(src->v[a->src].flags & PH_E_KNOWN))
		return 0;
	d = find_del(other, (int64_t)a->src);
	return d != NULL && !d->kept;
}

static int
is_conflict(const struct ph_action *a)
{
	return a != NULL && a->kind == PH_A_UPDATE &&
	       (a->how == PH_U_CONFLICT || a->how == PH_U_FIRST);
}

static int
add_conflict(struct ph_recon *out, size_t *cap, const struct ph_recon_conflict *c)
{
	if (out->nc == *cap && ph_grow(&out->c, cap, sizeof(*out->c), 16) != 0)
		return PHSYNC_ENOMEM;
	out->c[out->nc++] = *c;
	return 0;
}

/* Both sides changed path: who keeps the name, and the two actions. */
static int
conflict(const struct ph_tree *local, const struct ph_tree *remote, struct ph_plan *pull,
         struct ph_plan *push, const struct both *x, enum ph_prefer prefer,
         struct ph_recon *out, size_t *cap)
{
	struct ph_recon_conflict c;

	c.l = x->b->src;
	c.r = x->a->src;
	c.first = x->a->how == PH_U_FIRST || x->b->how == PH_U_FIRST;
	c.copy = prefer == PH_PREFER_NONE;
	if (prefer == PH_PREFER_LOCAL)
		c.winner = PH_SIDE_LOCAL;
	else if (prefer == PH_PREFER_REMOTE)
		c.winner = PH_SIDE_REMOTE;
	else
		c.winner = remote->v[c.r].mtime > local->v[c.l].mtime ? PH_SIDE_REMOTE
		                                                      : PH_SIDE_LOCAL;
	if (!c.copy) {
		/* The winner's version replaces the other; nothing is kept. */
		if (c.winner == PH_SIDE_LOCAL) {
			x->b->how = PH_U_REPLACE;
			drop(pull, x->a, remote, &out->dropped_pull);
		} else {
			x->a->how = PH_U_REPLACE;
			drop(push, x->b, local, &out->dropped_push);
		}
	} else if (c.winner == PH_SIDE_LOCAL) {
		x->a->how = PH_U_CONFLICT; /* the phone's version beside, here */
		x->b->how = PH_U_ASIDE;    /* the laptop's in, the phone's kept */
	} else {
		x->a->how = PH_U_ASIDE;    /* the phone's in, the laptop's kept */
		/* The laptop's version goes from its copy, in the last pass. */
		drop(push, x->b, local, &out->dropped_push);
	}
	return add_conflict(out, cap, &c);
}

/* One path that both plans, or one of them, act on. */
static int
one_path(const struct ph_tree *local, const struct ph_tree *remote, struct ph_plan *pull,
         struct ph_plan *push, const struct both *x, enum ph_prefer prefer,
         struct ph_recon *out, size_t *cap)
{
	struct ph_action *a = x->a, *b = x->b;

	/* A file still being written on one side waits, both ways. */
	if (a != NULL && b != NULL && (a->kind == PH_A_SKIP_YOUNG || b->kind == PH_A_SKIP_YOUNG)) {
		if (a->kind != PH_A_SKIP_YOUNG)
			drop(pull, a, remote, &out->dropped_pull);
		else if (b->kind != PH_A_SKIP_YOUNG)
			drop(push, b, local, &out->dropped_push);
		else
			drop(push, b, local, &out->dropped_push); /* said once */
		return 0;
	}
	if (is_conflict(a) && is_conflict(b))
		return conflict(local, remote, pull, push, x, prefer, out, cap);
	if (a != NULL) {
		/* The laptop changed it and the phone did not (push carries
		 * it); folder times are each side's own (docs/TWOWAY.md); the
		 * laptop deleted it and the phone did not change it. */
		if (a->kind == PH_A_KEPT || a->kind == PH_A_DIRTIME ||
		    undoes_delete(a, remote, push))
			drop(pull, a, remote, &out->dropped_pull);
	}
	if (b != NULL) {
		if (b->kind == PH_A_KEPT || b->kind == PH_A_DIRTIME ||
		    undoes_delete(b, local, pull))
			drop(push, b, local, &out->dropped_push);
		/* What both plans would say or record once: once. */
		else if (a != NULL && a->kind == b->kind &&
		         (b->kind == PH_A_RECORD || b->kind == PH_A_CONFLICT ||
		          b->kind == PH_A_BLOCKED))
			drop(push, b, local, &out->dropped_push);
	}
	return 0;
}

static int
under(const char *path, const char *dir, size_t dl)
{
	return strncmp(path, dir, dl) == 0 && path[dl] == '/';
}

/* A folder plan p would make (at index i) that the other side deleted:
 * nothing p still does lies under it, and the other plan deletes files
 * under it (other's destination is p's source side). */
static int
folder_deleted(const struct ph_plan *p, const struct ph_tree *src, size_t i,
               const struct ph_plan *other)
{
	const char *dir = src->v[p->v[i].src].path;
	size_t dl = strlen(dir), j;
	int gone = 0;

	for (j = i + 1; j < p->n && under(src->v[p->v[j].src].path, dir, dl); j++)
		if (p->v[j].kind != 0)
			return 0;
	for (j = 0; j < other->ndel && !gone; j++)
		gone = !other->del[j].kept && under(src->v[other->del[j].dst].path, dir, dl);
	return gone;
}

static void
drop_deleted_folders(struct ph_plan *p, const struct ph_tree *src, const struct ph_plan *other,
                     uint64_t *count)
{
	size_t i = p->n;

	/* From the end, so a folder inside a deleted folder goes first. */
	while (i-- > 0)
		if (p->v[i].kind == PH_A_MKDIR && folder_deleted(p, src, i, other))
			drop(p, &p->v[i], src, count);
}

static void
compact(struct ph_plan *p)
{
	size_t i, n = 0;

	for (i = 0; i < p->n; i++)
		if (p->v[i].kind != 0)
			p->v[n++] = p->v[i];
	p->n = n;
}

int
ph_recon_make(const struct ph_tree *local, const struct ph_tree *remote,
              struct ph_plan *pull, struct ph_plan *push, enum ph_prefer prefer,
              struct ph_recon *out)
{
	size_t i = 0, k = 0, cap = 0, j;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	while (rc == 0 && (i < pull->n || k < push->n)) {
		struct both x = { NULL, NULL };
		int c;

		if (i == pull->n)
			c = 1;
		else if (k == push->n)
			c = -1;
		else
			c = ph_path_cmp(remote->v[pull->v[i].src].path, local->v[push->v[k].src].path);
		if (c <= 0)
			x.a = &pull->v[i++];
		if (c >= 0)
			x.b = &push->v[k++];
		rc = one_path(local, remote, pull, push, &x, prefer, out, &cap);
	}
	if (rc != 0)
		return rc;
	drop_deleted_folders(pull, remote, push, &out->dropped_pull);
	drop_deleted_folders(push, local, pull, &out->dropped_push);
	compact(pull);
	compact(push);
	for (j = 0; j < pull->ndel; j++)
		out->del_local += !pull->del[j].kept;
	for (j = 0; j < push->ndel; j++)
		out->del_remote += !push->del[j].kept;
	return 0;
}

void
ph_recon_free(struct ph_recon *r)
{
	free(r->c);
	memset(r, 0, sizeof(*r));
}
