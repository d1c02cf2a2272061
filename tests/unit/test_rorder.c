/* SPDX-License-Identifier: ISC */
/* The remote listing put in order as it comes (rorder.c): random trees
 * (names around '/' in the order: "a", "a-b", "a.b", "a!", bytes above
 * 0x7f), listed by a simulated server that answers up to K folders at a
 * time in random pieces, with some entries' LSTATs answered later in any
 * order. Whatever the order of the answers, the tree comes out complete
 * and strictly in subtree order without a sort; with one folder at a time
 * the folders are listed in subtree order (depth first, by name); a
 * listing cut at any point still leaves every added entry in the tree
 * once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rorder.h"
#include "tree.h"
#include "ut_rand.h"

/* The model of the server's tree. */
struct mnode {
	char *path;
	int dir;
};

struct model {
	struct mnode *v;
	int n, cap;
};

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	return (uint32_t)(ut_xorshift64(&rng) % n);
}

static const char *const stems[] = {
	"a", "a-b", "a.b", "a!", "a b", "A", "b", "\xc3\xa9t\xc3\xa9", "z~", "0", "00", "a0",
	"IMG_0001.jpg", "IMG_0001.jpg.x", "DCIM", "Camera", ".hidden",
};

static int
mnode_add(struct model *m, const char *parent, const char *name, int dir)
{
	struct mnode *x;

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = realloc(m->v, (size_t)m->cap * sizeof(*m->v));
		assert_non_null(m->v);
	}
	x = &m->v[m->n];
	memset(x, 0, sizeof(*x));
	x->path = malloc(strlen(parent) + strlen(name) + 2);
	assert_non_null(x->path);
	sprintf(x->path, "%s%s%s", parent, parent[0] ? "/" : "", name);
	x->dir = dir;
	return m->n++;
}

/* Folder at index f (-1: the root, "") gets random children, folders
 * among them filled in turn, depth at most 5. */
static void
fill(struct model *m, int f, int depth)
{
	int k = (int)rnd(depth == 0 ? 12 : 9), used = 0, i;
	char seen[64][32];

	for (i = 0; i < k; i++) {
		char name[32];
		int dir = depth < 5 && rnd(3) == 0, c, j, dup = 0;
		const char *parent = f < 0 ? "" : m->v[f].path;

		snprintf(name, sizeof(name), "%s%s", stems[rnd(sizeof(stems) / sizeof(*stems))],
		         rnd(2) ? "" : (const char *[]){ "1", "-", ".", "x", "\xff" }[rnd(5)]);
		for (j = 0; j < used; j++)
			dup |= strcmp(seen[j], name) == 0;
		if (dup)
			continue;
		strcpy(seen[used++], name);
		c = mnode_add(m, parent, name, dir);
		if (dir)
			fill(m, c, depth + 1);
	}
}

static void
model_free(struct model *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->v[i].path);
	}
	free(m->v);
}

/* The model's entries directly in folder rel ("" the root). */
static int
kids_of(const struct model *m, const char *rel, int *out)
{
	int n = 0;
	size_t rl = strlen(rel);

	for (int i = 0; i < m->n; i++) {
		const char *p = m->v[i].path, *s = strrchr(p, '/');
		size_t dl = s ? (size_t)(s - p) : 0;

		if (dl == rl && strncmp(p, rel, rl) == 0)
			out[n++] = i;
	}
	return n;
}

/* One folder being listed: its names not yet sent, in the server's
 * (random) order. */
struct lst {
	struct ph_rfolder *f;
	int *left, nleft;
};

struct pstat {
	struct ph_rfolder *f;
	int node;
};

struct sim {
	struct model *m;
	struct ph_tree t;
	struct ph_rorder *o;
	struct lst l[64];
	int nl, k;
	int stats;      /* some entries come by LSTAT */
	struct pstat *ps;
	int nps;
	int added;
	char **listed;  /* the folders in the order they were listed */
	int nlisted;
};

static void
add_node(struct sim *s, struct ph_rfolder *f, int node)
{
	const struct mnode *x = &s->m->v[node];
	struct ph_entry e = { 0 };

	e.type = x->dir ? PH_T_DIR : PH_T_FILE;
	e.size = (uint64_t)node;
	e.mtime = node;
	e.mode = 0644;
	assert_int_equal(ph_rorder_add(s->o, f, x->path, strlen(x->path), &e, x->dir), 0);
	s->added++;
}

/* One step of the simulated server; 0 when nothing is left. */
static int
step(struct sim *s)
{
	struct ph_rfolder *f;

	while (s->nl < s->k && (f = ph_rorder_next(s->o)) != NULL) {
		struct lst *l = &s->l[s->nl++];
		int *all = malloc((size_t)s->m->n * sizeof(int) + 1), n;

		assert_non_null(all);
		n = kids_of(s->m, ph_rorder_rel(f), all);
		for (int i = n - 1; i > 0; i--) {  /* the server's own order */
			int j = (int)rnd((uint32_t)i + 1), x = all[i];

			all[i] = all[j];
			all[j] = x;
		}
		l->f = f;
		l->left = all;
		l->nleft = n;
		ph_rorder_hold(f);
		s->listed = realloc(s->listed, (size_t)(s->nlisted + 1) * sizeof(char *));
		assert_non_null(s->listed);
		s->listed[s->nlisted++] = strdup(ph_rorder_rel(f));
	}
	if (s->nl == 0 && s->nps == 0)
		return 0;
	if (s->nps > 0 && (s->nl == 0 || rnd(3) == 0)) {
		/* An LSTAT's answer, any of those asked. */
		int i = (int)rnd((uint32_t)s->nps);
		struct pstat p = s->ps[i];

		s->ps[i] = s->ps[--s->nps];
		add_node(s, p.f, p.node);
		assert_int_equal(ph_rorder_release(s->o, p.f), 0);
		return 1;
	}
	{
		/* A READDIR reply of a random size from a random lister. */
		int li = (int)rnd((uint32_t)s->nl), c;
		struct lst *l = &s->l[li];

		c = l->nleft == 0 ? 0 : 1 + (int)rnd((uint32_t)l->nleft);
		while (c-- > 0) {
			int node = l->left[--l->nleft];

			if (s->stats && rnd(5) == 0) { /* no attributes: asked with LSTAT */
				s->ps = realloc(s->ps, (size_t)(s->nps + 1) * sizeof(*s->ps));
				assert_non_null(s->ps);
				s->ps[s->nps].f = l->f;
				s->ps[s->nps++].node = node;
				ph_rorder_hold(l->f);
			} else {
				add_node(s, l->f, node);
			}
		}
		if (l->nleft == 0 && rnd(2) == 0) { /* EOF */
			struct ph_rfolder *done = l->f;

			free(l->left);
			*l = s->l[--s->nl];
			assert_int_equal(ph_rorder_release(s->o, done), 0);
		}
	}
	return 1;
}

static void
sim_init(struct sim *s, struct model *m, int k, int stats)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->k = k;
	s->stats = stats;
	assert_non_null(s->o = ph_rorder_new(&s->t));
}

static void
sim_free(struct sim *s)
{
	for (int i = 0; i < s->nl; i++)
		free(s->l[i].left);
	for (int i = 0; i < s->nlisted; i++)
		free(s->listed[i]);
	free(s->listed);
	free(s->ps);
	ph_tree_free(&s->t);
}

/* Every model entry in the tree once, with its own fields. */
static void
check_complete(const struct sim *s)
{
	assert_int_equal(s->t.n, (size_t)s->m->n);
	for (size_t i = 0; i < s->t.n; i++) {
		const struct ph_entry *e = &s->t.v[i];

		assert_true(e->size < (uint64_t)s->m->n);
		assert_string_equal(e->path, s->m->v[e->size].path);
		assert_int_equal(e->type == PH_T_DIR, s->m->v[e->size].dir);
	}
}

static void
test_any_answer_order(void **state)
{
	(void)state;
	for (int round = 0; round < 400; round++) {
		struct model m = { 0 };
		struct sim s;

		rng = 0x9e3779b97f4a7c15ull + (uint64_t)round * 7919;
		fill(&m, -1, 0);
		sim_init(&s, &m, 1 + (int)rnd(40), 1);
		while (step(&s))
			;
		assert_int_equal(ph_rorder_end(s.o), 0);
		check_complete(&s);
		/* In order as built: strictly, no sort after it. */
		for (size_t i = 1; i < s.t.n; i++)
			assert_true(ph_path_cmp(s.t.v[i - 1].path, s.t.v[i].path) < 0);
		sim_free(&s);
		model_free(&m);
	}
}

static void
test_depth_first_listing(void **state)
{
	(void)state;
	for (int round = 0; round < 100; round++) {
		struct model m = { 0 };
		struct sim s;
		int nd = 0;

		rng = 0x2545f4914f6cdd1dull + (uint64_t)round * 104729;
		fill(&m, -1, 0);
		sim_init(&s, &m, 1, 0);
		while (step(&s))
			;
		assert_int_equal(ph_rorder_end(s.o), 0);
		check_complete(&s);
		/* One folder at a time: listed in the tree's own order (when no
		 * folder is known only from an LSTAT answered later). */
		assert_string_equal(s.listed[0], "");
		for (int i = 0; i < m.n; i++)
			nd += m.v[i].dir;
		assert_int_equal(s.nlisted, nd + 1);
		for (int i = 2; i < s.nlisted; i++)
			assert_true(ph_path_cmp(s.listed[i - 1], s.listed[i]) < 0);
		sim_free(&s);
		model_free(&m);
	}
}

static void
test_cut_short(void **state)
{
	(void)state;
	for (int round = 0; round < 300; round++) {
		struct model m = { 0 };
		struct sim s;
		int steps;

		rng = 0xd1b54a32d192ed03ull + (uint64_t)round * 31337;
		fill(&m, -1, 0);
		sim_init(&s, &m, 1 + (int)rnd(8), 1);
		steps = (int)rnd(60);
		while (steps-- > 0 && step(&s))
			;
		/* The link died here: what was added is in the tree, once. */
		assert_int_equal(ph_rorder_end(s.o), 0);
		assert_int_equal(s.t.n, (size_t)s.added);
		for (size_t i = 0; i < s.t.n; i++)
			for (size_t j = i + 1; j < s.t.n; j++)
				assert_true(s.t.v[i].size != s.t.v[j].size);
		ph_tree_sort(&s.t);
		for (size_t i = 1; i < s.t.n; i++)
			assert_true(ph_path_cmp(s.t.v[i - 1].path, s.t.v[i].path) < 0);
		sim_free(&s);
		model_free(&m);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_any_answer_order),
		cmocka_unit_test(test_depth_first_listing),
		cmocka_unit_test(test_cut_short),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
