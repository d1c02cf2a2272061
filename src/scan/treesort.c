/* SPDX-License-Identifier: ISC */
/* Putting a tree in subtree order (tree.h): ph_tree_sort.
 *
 * A local walk adds its entries in order (local.c), and so does the remote
 * listing (rorder.c), so their trees are only checked. A tree out of order
 * (an aside copy put back after the listing, a server naming one folder
 * twice) usually has each folder's names together but the folders
 * interleaved. Sorting that with whole-path comparisons walks the shared
 * folder prefix of every pair, through pointers spread over the string pool:
 * at 100,000 entries 45 ms of the serial steps after the listing
 * (docs/PERFORMANCE.md section 7, "The small and million rows on a quiet
 * machine"). Instead the entries are grouped by
 * folder (one hash of each entry's folder path, most of them skipped: the
 * entries of one reply share it), each folder's names sorted on their own,
 * and the tree laid out by a walk from the root. Whatever that cannot place
 * (an entry whose folder is not in the tree, two folders with one key) or
 * any order it gets wrong is caught by the check after it, and a plain
 * quicksort does the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "tree.h"

/* By key; two entries with one key (the NFC and the NFD form of a name)
 * by their raw bytes, the one already in NFC first. */
static int
entry_cmp(const struct ph_entry *x, const struct ph_entry *y)
{
	int c = ph_path_cmp(x->path, y->path);

	if (c != 0)
		return c;
	if ((x->flags & PH_E_RAW) != (y->flags & PH_E_RAW))
		return x->flags & PH_E_RAW ? 1 : -1;
	return strcmp(ph_entry_raw(x), ph_entry_raw(y));
}

static void
swap(struct ph_entry *a, struct ph_entry *b)
{
	struct ph_entry x = *a;

	*a = *b;
	*b = x;
}

/* The one quicksort, over items a and b of what arg holds, by less and
 * swap: in place (glibc's qsort merges through a copy of the whole array:
 * 32 MB for a million entries, twice when both sides sort at once), on a
 * median of three, the smaller side recursed, the larger looped (stack
 * depth log n), insertion sort for short runs; no allocation. */
struct qs {
	int (*less)(const void *arg, size_t a, size_t b);
	void (*swap)(void *arg, size_t a, size_t b);
	void *arg;
};

static void
qs_sort(const struct qs *q, size_t lo, size_t n)
{
#define LESS(a, b) q->less(q->arg, lo + (a), lo + (b))
#define SWAP(a, b) q->swap(q->arg, lo + (a), lo + (b))
	while (n > 16) {
		size_t i, j, m = n / 2;

		if (LESS(m, 0))
			SWAP(m, 0);
		if (LESS(n - 1, 0))
			SWAP(n - 1, 0);
		if (LESS(n - 1, m))
			SWAP(n - 1, m);
		/* [0] <= [m] <= [n - 1]: the median is the pivot, at n - 2. */
		SWAP(m, n - 2);
		for (i = 0, j = n - 2;;) {
			while (LESS(++i, n - 2))
				;
			while (LESS(n - 2, --j))
				;
			if (i >= j)
				break;
			SWAP(i, j);
		}
		SWAP(i, n - 2);
		if (i < n - i - 1) {
			qs_sort(q, lo, i);
			lo += i + 1;
			n -= i + 1;
		} else {
			qs_sort(q, lo + i + 1, n - i - 1);
			n = i;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && LESS(j, j - 1); j--)
			SWAP(j, j - 1);
#undef LESS
#undef SWAP
}

static int
entries_less(const void *arg, size_t a, size_t b)
{
	const struct ph_entry *v = arg;

	return entry_cmp(&v[a], &v[b]) < 0;
}

static void
entries_swap(void *arg, size_t a, size_t b)
{
	struct ph_entry *v = arg;

	swap(&v[a], &v[b]);
}

/* Entries in place (the fallback: it must not allocate). */
static void
sort_range(struct ph_entry *v, size_t n)
{
	const struct qs q = { entries_less, entries_swap, v };

	qs_sort(&q, 0, n);
}

/* Two entries of one folder, whose paths share its off bytes: by their
 * names (bytes: a name holds no '/'), then as entry_cmp. */
static int
name_cmp(const struct ph_entry *x, const struct ph_entry *y, size_t off)
{
	int c = strcmp(x->path + off, y->path + off);

	return c != 0 ? c : entry_cmp(x, y);
}

/* One folder's entries, as indices into v (x[0..n)), their paths sharing
 * off bytes. */
struct idx_sort {
	const struct ph_entry *v;
	uint32_t *x;
	size_t off;
};

static int
idx_less(const void *arg, size_t a, size_t b)
{
	const struct idx_sort *s = arg;

	return name_cmp(&s->v[s->x[a]], &s->v[s->x[b]], s->off) < 0;
}

static void
idx_swap(void *arg, size_t a, size_t b)
{
	struct idx_sort *s = arg;
	uint32_t t = s->x[a];

	s->x[a] = s->x[b];
	s->x[b] = t;
}

static void
sort_idx(const struct ph_entry *v, uint32_t *x, size_t n, size_t off)
{
	struct idx_sort s = { v, x, off };
	const struct qs q = { idx_less, idx_swap, &s };

	qs_sort(&q, 0, n);
}

/* Already in order (a local scan adds its entries so)? Stops at the
 * first pair out of order. */
static int
sorted(const struct ph_entry *v, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (entry_cmp(&v[i - 1], &v[i]) > 0)
			return 0;
	return 1;
}

/* The tree's folders by path: open addressing, the slot holding the
 * folder's number + 1 (0 empty). */
struct dirs {
	const struct ph_entry *v;
	uint32_t *entry;    /* folder number -> its entry (number 0: the root) */
	uint32_t *slot;
	size_t mask, n;
};

static size_t
dir_slot(const struct dirs *d, const char *p, size_t len)
{
	size_t k = (size_t)XXH3_64bits(p, len) & d->mask;

	for (;; k = (k + 1) & d->mask) {
		uint32_t f = d->slot[k];
		const char *q;

		if (f == 0)
			return k;
		q = d->v[d->entry[f - 1]].path;
		if (strncmp(q, p, len) == 0 && q[len] == '\0')
			return k;
	}
}

/* The number of the folder p (len bytes; "" is the root, 0), or
 * UINT32_MAX when the tree has no such folder. */
static uint32_t
dir_find(const struct dirs *d, const char *p, size_t len)
{
	uint32_t f;

	if (len == 0)
		return 0;
	f = d->slot[dir_slot(d, p, len)];
	return f == 0 ? UINT32_MAX : f - 1;
}

/* The order of a walk from the root through the folders' sorted entries
 * (kids, folder k's from start[k] to start[k + 1]) into order: each
 * folder's subtree right after it. Returns 0, or -1 when entries are left
 * that no walk reaches or the nesting is deeper than its stack. */
static int
walk(const struct dirs *d, size_t n, const uint32_t *kids, const uint32_t *start,
     uint32_t *order)
{
	uint32_t stack[258][2];
	size_t i, depth = 0;

	stack[0][0] = 0;
	stack[0][1] = start[0];
	for (i = 0; i < n;) {
		uint32_t f = stack[depth][0], at = stack[depth][1], e;

		if (at == start[f + 1]) {
			if (depth == 0)
				return -1;
			depth--;
			continue;
		}
		stack[depth][1]++;
		e = kids[at];
		order[i++] = e;
		if (d->v[e].type == PH_T_DIR) {
			if (depth + 1 >= 258)
				return -1;
			f = dir_find(d, d->v[e].path, strlen(d->v[e].path));
			depth++;
			stack[depth][0] = f;
			stack[depth][1] = start[f];
		}
	}
	return 0;
}

/* Puts v in the order order gives (v[i] becomes the old v[order[i]]), a
 * cycle at a time; a placed slot is marked by its own index. */
static void
permute(struct ph_entry *v, size_t n, uint32_t *order)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct ph_entry tmp;
		uint32_t j = (uint32_t)i, next;

		if (order[i] == i)
			continue;
		tmp = v[i];
		for (;;) {
			next = order[j];
			order[j] = j;
			if (next == i) {
				v[j] = tmp;
				break;
			}
			v[j] = v[next];
			j = next;
		}
	}
}

/* Lays t out folder by folder (see the top). Returns 0, or -1 when it
 * cannot (no memory, a folder twice, an entry without its folder): the
 * caller sorts the usual way. */
static int
by_folder(struct ph_tree *t)
{
	struct ph_entry *v = t->v;
	size_t n = t->n, i, nd = 1, ns = 16, k;
	uint32_t *group = NULL, *kids = NULL, *start = NULL;
	struct dirs d = { v, NULL, NULL, 0, 0 };
	const char *prev = NULL;
	size_t prevlen = 0;
	uint32_t prevg = 0;
	int rc = -1;

	if (n >= UINT32_MAX)
		return -1;
	for (i = 0; i < n; i++)
		nd += v[i].type == PH_T_DIR;
	while (ns < nd * 2)
		ns *= 2;
	d.mask = ns - 1;
	if ((d.entry = malloc(nd * sizeof(*d.entry))) == NULL ||
	    (d.slot = calloc(ns, sizeof(*d.slot))) == NULL ||
	    (group = malloc(n * sizeof(*group))) == NULL ||
	    (kids = malloc(n * sizeof(*kids))) == NULL ||
	    (start = calloc(nd + 1, sizeof(*start))) == NULL)
		goto out;
	/* Number the folders (the root is 0). */
	d.entry[0] = UINT32_MAX;
	for (i = 0, d.n = 1; i < n; i++) {
		if (v[i].type != PH_T_DIR)
			continue;
		k = dir_slot(&d, v[i].path, strlen(v[i].path));
		if (d.slot[k] != 0)
			goto out; /* one key twice: the quicksort orders them */
		d.entry[d.n] = (uint32_t)i;
		d.slot[k] = (uint32_t)++d.n;
	}
	/* Each entry's folder; most share the one before's. */
	for (i = 0; i < n; i++) {
		const char *p = v[i].path, *s = strrchr(p, '/');
		size_t len = s ? (size_t)(s - p) : 0;

		if (prev == NULL || len != prevlen || memcmp(p, prev, len) != 0) {
			if ((prevg = dir_find(&d, p, len)) == UINT32_MAX)
				goto out;
			prev = p;
			prevlen = len;
		}
		group[i] = prevg;
		start[prevg]++;
	}
	/* Counting sort: each folder's entries together, then sorted. */
	for (k = 0, i = 0; k <= d.n; k++) {
		size_t c = k < d.n ? start[k] : 0;

		start[k] = (uint32_t)i;
		i += c;
	}
	for (i = 0; i < n; i++)
		kids[start[group[i]]++] = (uint32_t)i;
	for (k = d.n; k > 0; k--)
		start[k] = start[k - 1];
	start[0] = 0;
	for (k = 0; k < d.n; k++) {
		size_t off = k == 0 ? 0 : strlen(v[d.entry[k]].path) + 1;

		sort_idx(v, kids + start[k], start[k + 1] - start[k], off);
	}
	/* The walk from the root: each folder's subtree right after it. The
	 * order goes to group (no longer needed). */
	if ((rc = walk(&d, n, kids, start, group)) == 0)
		permute(v, n, group);
out:
	free(d.entry);
	free(d.slot);
	free(group);
	free(kids);
	free(start);
	return rc;
}

void
ph_tree_sort(struct ph_tree *t)
{
	if (!sorted(t->v, t->n)) {
		/* Laid out by folder, checked: a plain sort whenever that fails. */
		if (by_folder(t) != 0 || !sorted(t->v, t->n))
			sort_range(t->v, t->n);
		t->ids_ok = 0;   /* no longer beside their entries */
	}
	/* Scanning is over: give back the room the doubling left. */
	if (t->cap > t->n + t->n / 16 && t->n > 0) {
		struct ph_entry *v = realloc(t->v, t->n * sizeof(*v));

		if (v != NULL) {
			t->v = v;
			t->cap = t->n;
		}
	}
}
