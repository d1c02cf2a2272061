/* SPDX-License-Identifier: ISC */
/* The remote listing in subtree order as it comes (rorder.h).
 *
 * Before, the listing added each reply's entries to the tree as they came,
 * 32 folders interleaved, and ph_tree_sort laid the tree out after the
 * listing: at 1,000,000 files 0.37 s on one core while the other waited
 * (0.15 s of it sorting each folder's names, 0.14 s moving the entries into
 * place, one cache miss each). Here a folder's entries wait in the folder
 * until it is whole, are sorted there while they are still in the cache,
 * and go to the tree when their turn comes: the tree is built in order,
 * ph_tree_sort only checks it. The turn is a walk from the root (place):
 * the innermost folder being placed is on top of a stack; placing one of
 * its entries that is a folder pushes that folder, whose entries come
 * next. A folder not yet whole stops the walk until it is.
 *
 * The folders are listed in the tree's order, first the first waiting (a
 * heap by path): the walk needs them in that order, so few whole folders
 * wait for their turn, and a subfolder is listed as soon as its name comes
 * (a folder whose listing takes many replies does not hold its subfolders
 * back). A folder of a million names waits whole, 32 bytes a name, before
 * it is placed. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "phsync/phsync.h"
#include "rorder.h"
#include "strsort.h"

enum { F_WAITING, F_LISTING, F_WHOLE };

/* An entry held until its folder is whole and its turn comes. */
struct held {
	struct ph_entry e;        /* its path kept in the tree's strings */
	struct ph_rfolder *child; /* the folder it is, to list; or NULL */
};

struct ph_rfolder {
	const char *rel;          /* in the tree's strings ("" the root) */
	struct held *v;
	size_t n, cap;
	size_t at;                /* the next of v to place */
	unsigned holds;
	int state;
	struct ph_rfolder *prev, *next; /* every folder alive */
};

struct ph_rorder {
	struct ph_tree *t;
	struct ph_rfolder *all;
	struct ph_rfolder **list;   /* to list: a heap, the first path at 0 */
	size_t nlist, caplist;
	struct ph_rfolder **place;  /* being placed; the innermost on top */
	size_t nplace, capplace;
};

static struct ph_rfolder *
folder_new(struct ph_rorder *o, const char *rel)
{
	struct ph_rfolder *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->rel = rel;
	f->state = F_WAITING;
	f->next = o->all;
	if (o->all != NULL)
		o->all->prev = f;
	o->all = f;
	return f;
}

static void
folder_free(struct ph_rorder *o, struct ph_rfolder *f)
{
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		o->all = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	free(f->v);
	free(f);
}

struct ph_rorder *
ph_rorder_new(struct ph_tree *t)
{
	struct ph_rorder *o = calloc(1, sizeof(*o));
	struct ph_rfolder *root;

	if (o == NULL)
		return NULL;
	o->t = t;
	if ((root = folder_new(o, "")) == NULL ||
	    ph_grow(&o->list, &o->caplist, sizeof(*o->list), 64) != 0 ||
	    ph_grow(&o->place, &o->capplace, sizeof(*o->place), 64) != 0) {
		(void)ph_rorder_end(o);
		return NULL;
	}
	o->list[o->nlist++] = root;
	o->place[o->nplace++] = root;
	return o;
}

static int
list_before(const struct ph_rorder *o, size_t a, size_t b)
{
	return ph_path_cmp(o->list[a]->rel, o->list[b]->rel) < 0;
}

static void
list_swap(struct ph_rorder *o, size_t a, size_t b)
{
	struct ph_rfolder *x = o->list[a];

	o->list[a] = o->list[b];
	o->list[b] = x;
}

/* Queues f to be listed. 0 or PHSYNC_ENOMEM. */
static int
list_push(struct ph_rorder *o, struct ph_rfolder *f)
{
	size_t i;

	if (o->nlist == o->caplist && ph_grow(&o->list, &o->caplist, sizeof(*o->list), 64) != 0)
		return PHSYNC_ENOMEM;
	i = o->nlist++;
	o->list[i] = f;
	for (; i > 0 && list_before(o, i, (i - 1) / 2); i = (i - 1) / 2)
		list_swap(o, i, (i - 1) / 2);
	return 0;
}

struct ph_rfolder *
ph_rorder_next(struct ph_rorder *o)
{
	struct ph_rfolder *f;
	size_t i = 0;

	if (o->nlist == 0)
		return NULL;
	f = o->list[0];
	o->list[0] = o->list[--o->nlist];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < o->nlist && list_before(o, l, m))
			m = l;
		if (l + 1 < o->nlist && list_before(o, l + 1, m))
			m = l + 1;
		if (m == i)
			break;
		list_swap(o, i, m);
		i = m;
	}
	f->state = F_LISTING;
	return f;
}

size_t
ph_rorder_waiting(const struct ph_rorder *o)
{
	return o->nlist;
}

const char *
ph_rorder_rel(const struct ph_rfolder *f)
{
	return f->rel;
}

int
ph_rorder_add(struct ph_rorder *o, struct ph_rfolder *f, const char *path, size_t len,
              const struct ph_entry *e, int list)
{
	struct held *h;
	char *kept;

	if (f->n == f->cap && ph_grow(&f->v, &f->cap, sizeof(*f->v), 16) != 0)
		return PHSYNC_ENOMEM;
	if (ph_tree_keep(o->t, path, len, &kept) != 0)
		return PHSYNC_ENOMEM;
	h = &f->v[f->n];
	h->e = *e;
	h->e.path = kept;
	h->child = NULL;
	if (list && ((h->child = folder_new(o, kept)) == NULL || list_push(o, h->child) != 0))
		return PHSYNC_ENOMEM;
	f->n++;
	return 0;
}

void
ph_rorder_hold(struct ph_rfolder *f)
{
	f->holds++;
}

/* The bytes every entry of f begins with: its folder's path and a '/'
 * (none for the root's), checked, since the sort will not read them. */
static size_t
shared_prefix(const struct ph_rfolder *f)
{
	size_t rl = strlen(f->rel), i;

	if (rl == 0)
		return 0;
	for (i = 0; i < f->n; i++)
		if (strncmp(f->v[i].e.path, f->rel, rl) != 0 || f->v[i].e.path[rl] != '/')
			return 0;
	return rl + 1;
}

_Static_assert(sizeof(struct held) <= PH_STRSORT_MAX_SIZE, "a held entry is too large for ph_strsort");

/* Places in the tree what is in turn (see the top). */
static int
place(struct ph_rorder *o)
{
	while (o->nplace > 0) {
		struct ph_rfolder *f = o->place[o->nplace - 1];
		struct held *h;

		if (f->state != F_WHOLE)
			return 0;
		if (f->at == f->n) {
			o->nplace--;
			folder_free(o, f);
			continue;
		}
		h = &f->v[f->at];
		if (h->child != NULL && o->nplace == o->capplace &&
		    ph_grow(&o->place, &o->capplace, sizeof(*o->place), 64) != 0)
			return PHSYNC_ENOMEM;
		if (ph_tree_push(o->t, &h->e) != 0)
			return PHSYNC_ENOMEM;
		f->at++;
		if (h->child != NULL)
			o->place[o->nplace++] = h->child;
	}
	return 0;
}

int
ph_rorder_release(struct ph_rorder *o, struct ph_rfolder *f)
{
	int rc;

	if (f->holds > 0)
		f->holds--;
	if (f->holds > 0 || f->state != F_LISTING)
		return 0;
	f->state = F_WHOLE;
	/* One folder's entries share its path and a '/' before their names,
	 * which hold no '/': their byte order by the whole path is the tree's,
	 * and the sort need not read what they share. */
	if (f->n > 1)
		ph_strsort_from(f->v, f->n, sizeof(*f->v), offsetof(struct held, e.path),
		                shared_prefix(f));
	/* (A taker of the tree's entries given them: tree.h.) */
	return (rc = place(o)) == 0 ? ph_feed_batch(o->t) : rc;
}

int
ph_rorder_end(struct ph_rorder *o)
{
	int rc = place(o);

	/* Left when the listing was cut short: in any order. */
	while (o->all != NULL) {
		struct ph_rfolder *f = o->all;

		for (; f->at < f->n && rc == 0; f->at++)
			rc = ph_tree_push(o->t, &f->v[f->at].e);
		folder_free(o, f);
	}
	free(o->list);
	free(o->place);
	free(o);
	return rc;
}
