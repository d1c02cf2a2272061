/* SPDX-License-Identifier: ISC */
/* Two-way sync's reconciler (src/sync/recon.c): each row of the table in
 * docs/TWOWAY.md, from real one-way plans of the same trees and records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "phsync/error.h"
#include "plan.h"
#include "recon.h"
#include "tree.h"
#include "ut_tree.h"

/* A record: the laptop's and the phone's size and time at the last sync. */
struct rec {
	const char *path;
	uint64_t lsize, rsize;
	int64_t lmtime, rmtime;
};

struct pair {
	struct ph_tree l, r;
	struct ph_known kpull[32], kpush[32]; /* the records, both ways */
	struct ph_known_set spull, spush;
	struct ph_plan pull, push;
	struct ph_recon rc;
};

/* Sorts the trees, marks recorded entries (as the run's state merge does),
 * plans both ways with every delete listed, and reconciles. recs sorted by
 * path; records NULL: first contact with no state at all. */
static void
plan_both(struct pair *p, const struct rec *recs, size_t n, enum ph_prefer prefer)
{
	struct ph_plan_opts o = { 0 };
	size_t i;

	ph_tree_sort(&p->l);
	ph_tree_sort(&p->r);
	assert_true(n <= 32);
	for (i = 0; i < n; i++) {
		struct ph_entry *e;
		struct ph_known *a = &p->kpull[i], *b = &p->kpush[i];

		a->path = b->path = recs[i].path;
		a->ssize = b->dsize = recs[i].rsize;
		a->smtime = b->dmtime = recs[i].rmtime;
		a->dsize = b->ssize = recs[i].lsize;
		a->dmtime = b->smtime = recs[i].lmtime;
		a->touched = b->touched = 0;
		if ((e = (struct ph_entry *)ph_tree_find(&p->l, recs[i].path)) != NULL)
			e->flags |= PH_E_KNOWN;
		if ((e = (struct ph_entry *)ph_tree_find(&p->r, recs[i].path)) != NULL)
			e->flags |= PH_E_KNOWN;
	}
	p->spull.v = p->kpull;
	p->spush.v = p->kpush;
	p->spull.n = p->spush.n = n;
	o.deletes = 1;
	o.known = recs != NULL ? &p->spull : NULL;
	assert_int_equal(ph_plan_make(&p->r, &p->l, &o, &p->pull), 0);
	o.known = recs != NULL ? &p->spush : NULL;
	assert_int_equal(ph_plan_make(&p->l, &p->r, &o, &p->push), 0);
	assert_int_equal(ph_recon_make(&p->l, &p->r, &p->pull, &p->push, prefer, &p->rc), 0);
}

static void
pair_free(struct pair *p)
{
	ph_recon_free(&p->rc);
	ph_plan_free(&p->pull);
	ph_plan_free(&p->push);
	ph_tree_free(&p->l);
	ph_tree_free(&p->r);
}

/* The plan's actions as "kind how path" lines, for one comparison. */
static const char *
show(const struct ph_plan *p, const struct ph_tree *src)
{
	static const char *const kinds[] = {
		[PH_A_MKDIR] = "mkdir", [PH_A_NEW] = "new", [PH_A_UPDATE] = "update",
		[PH_A_DIRTIME] = "dirtime", [PH_A_SKIP_LINK] = "link", [PH_A_SKIP_OTHER] = "other",
		[PH_A_CONFLICT] = "kind", [PH_A_BLOCKED] = "blocked", [PH_A_SKIP_YOUNG] = "young",
		[PH_A_KEPT] = "kept", [PH_A_RECORD] = "record", [PH_A_MOVED] = "moved",
	};
	static char buf[2048];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s %d %s\n", kinds[p->v[i].kind],
		                      p->v[i].how, src->v[p->v[i].src].path);
	return buf;
}

/* The destination paths of the deletes that go. */
static const char *
dels(const struct ph_plan *p, const struct ph_tree *dst)
{
	static char buf[1024];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < p->ndel; i++)
		if (!p->del[i].kept)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s\n",
			                      dst->v[p->del[i].dst].path);
	return buf;
}

static const struct rec table_recs[] = {
	{ "both-del.txt", 10, 10, 100, 100 },
	{ "both-mod.txt", 10, 10, 100, 100 },
	{ "ldel-rmod.txt", 10, 10, 100, 100 },
	{ "ldel.txt", 10, 10, 100, 100 },
	{ "lmod-rdel.txt", 10, 10, 100, 100 },
	{ "lmod.txt", 10, 10, 100, 100 },
	{ "rdel.txt", 10, 10, 100, 100 },
	{ "rmod.txt", 10, 10, 100, 100 },
	{ "same.txt", 10, 10, 100, 100 },
};

static void
table_trees(struct pair *p, int64_t both_l, int64_t both_r)
{
	ut_add(&p->l, "same.txt", PH_T_FILE, 10, 100);
	ut_add(&p->r, "same.txt", PH_T_FILE, 10, 100);
	ut_add(&p->l, "lmod.txt", PH_T_FILE, 11, 200);
	ut_add(&p->r, "lmod.txt", PH_T_FILE, 10, 100);
	ut_add(&p->l, "rmod.txt", PH_T_FILE, 10, 100);
	ut_add(&p->r, "rmod.txt", PH_T_FILE, 20, 500);
	ut_add(&p->r, "ldel.txt", PH_T_FILE, 10, 100);
	ut_add(&p->l, "rdel.txt", PH_T_FILE, 10, 100);
	ut_add(&p->r, "ldel-rmod.txt", PH_T_FILE, 21, 600);
	ut_add(&p->l, "lmod-rdel.txt", PH_T_FILE, 12, 300);
	ut_add(&p->l, "both-mod.txt", PH_T_FILE, 13, both_l);
	ut_add(&p->r, "both-mod.txt", PH_T_FILE, 14, both_r);
	ut_add(&p->l, "lnew.txt", PH_T_FILE, 5, 50);
	ut_add(&p->r, "rnew.txt", PH_T_FILE, 6, 60);
}

/* Every row: a change on one side goes to the other, a delete goes when
 * the other side did not change the file and loses to a change, a change
 * on both sides is a conflict (the newer keeps the name, the other is
 * kept beside on both sides). ldel.txt and rdel.txt have the same size
 * and time: the planner takes the phone's ldel.txt for a move of the
 * laptop's rdel.txt, and still a path the laptop deleted stays deleted. */
static void
test_recon_table(void **state)
{
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	table_trees(&p, 400, 300);
	plan_both(&p, table_recs, sizeof(table_recs) / sizeof(table_recs[0]), PH_PREFER_NONE);
	/* phone -> laptop: the phone's changes, a file the laptop deleted
	 * but the phone changed, the phone's version of the conflict beside. */
	assert_string_equal(show(&p.pull, &p.r), "update 2 both-mod.txt\n"
	                                         "new 0 ldel-rmod.txt\n"
	                                         "update 0 rmod.txt\n"
	                                         "new 0 rnew.txt\n");
	/* laptop -> phone: the laptop's; the conflict replaces the phone's
	 * version, keeping it aside. */
	assert_string_equal(show(&p.push, &p.l), "update 3 both-mod.txt\n"
	                                         "new 0 lmod-rdel.txt\n"
	                                         "update 0 lmod.txt\n"
	                                         "new 0 lnew.txt\n");
	/* Deletes: the phone's rdel on the laptop, the laptop's ldel on the
	 * phone; the changed ones (ldel-rmod, lmod-rdel) stay. */
	assert_string_equal(dels(&p.pull, &p.l), "rdel.txt\n");
	assert_string_equal(dels(&p.push, &p.r), "ldel.txt\n");
	assert_int_equal(p.rc.del_local, 1);
	assert_int_equal(p.rc.del_remote, 1);
	assert_int_equal(p.pull.nforget, 1);
	assert_string_equal(p.pull.forget[0], "both-del.txt");
	assert_int_equal(p.rc.nc, 1);
	assert_string_equal(p.l.v[p.rc.c[0].l].path, "both-mod.txt");
	assert_string_equal(p.r.v[p.rc.c[0].r].path, "both-mod.txt");
	assert_int_equal(p.rc.c[0].winner, PH_SIDE_LOCAL);
	assert_int_equal(p.rc.c[0].copy, 1);
	assert_int_equal(p.rc.c[0].first, 0);
	/* Counted as they are carried out. */
	assert_int_equal(p.pull.files_todo, 4);
	assert_int_equal(p.pull.bytes_todo, 14 + 21 + 20 + 6);
	assert_int_equal(p.push.files_todo, 4);
	assert_int_equal(p.push.bytes_todo, 13 + 12 + 11 + 5);
	pair_free(&p);
}

/* The phone's version is newer: it replaces the laptop's, which is kept
 * aside and goes to the phone from there (not from its old name). */
static void
test_recon_conflict_phone_newer(void **state)
{
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	table_trees(&p, 300, 400);
	plan_both(&p, table_recs, sizeof(table_recs) / sizeof(table_recs[0]), PH_PREFER_NONE);
	assert_int_equal(p.pull.v[0].kind, PH_A_UPDATE);
	assert_int_equal(p.pull.v[0].how, PH_U_ASIDE);
	assert_string_equal(p.r.v[p.pull.v[0].src].path, "both-mod.txt");
	assert_string_equal(show(&p.push, &p.l), "new 0 lmod-rdel.txt\n"
	                                         "update 0 lmod.txt\n"
	                                         "new 0 lnew.txt\n");
	assert_int_equal(p.rc.c[0].winner, PH_SIDE_REMOTE);
	assert_int_equal(p.rc.c[0].copy, 1);
	pair_free(&p);
}

/* --prefer: the named side's version replaces the other's, no copy; newer
 * with equal times keeps the laptop's. */
static void
test_recon_prefer(void **state)
{
	static const struct {
		enum ph_prefer prefer;
		int64_t lt, rt;
		uint8_t winner;
	} cases[] = {
		{ PH_PREFER_REMOTE, 400, 300, PH_SIDE_REMOTE },
		{ PH_PREFER_LOCAL, 300, 400, PH_SIDE_LOCAL },
		{ PH_PREFER_NEWER, 300, 400, PH_SIDE_REMOTE },
		{ PH_PREFER_NEWER, 400, 400, PH_SIDE_LOCAL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pair p;
		const struct ph_plan *win, *lose;
		const struct ph_tree *wsrc, *lsrc;

		memset(&p, 0, sizeof(p));
		table_trees(&p, cases[i].lt, cases[i].rt);
		plan_both(&p, table_recs, sizeof(table_recs) / sizeof(table_recs[0]),
		          cases[i].prefer);
		assert_int_equal(p.rc.nc, 1);
		assert_int_equal(p.rc.c[0].winner, cases[i].winner);
		assert_int_equal(p.rc.c[0].copy, 0);
		win = cases[i].winner == PH_SIDE_LOCAL ? &p.push : &p.pull;
		wsrc = cases[i].winner == PH_SIDE_LOCAL ? &p.l : &p.r;
		lose = cases[i].winner == PH_SIDE_LOCAL ? &p.pull : &p.push;
		lsrc = cases[i].winner == PH_SIDE_LOCAL ? &p.r : &p.l;
		assert_string_equal(wsrc->v[win->v[0].src].path, "both-mod.txt");
		assert_int_equal(win->v[0].kind, PH_A_UPDATE);
		assert_int_equal(win->v[0].how, PH_U_REPLACE);
		assert_string_not_equal(lsrc->v[lose->v[0].src].path, "both-mod.txt");
		pair_free(&p);
	}
}

/* First contact: the union; equal files recorded once; a file on both
 * sides that differs is a conflict whose bytes the executor compares
 * first; nothing is deleted. */
static void
test_recon_first_contact(void **state)
{
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	ut_add(&p.l, "a.txt", PH_T_FILE, 1, 1);
	ut_add(&p.r, "a.txt", PH_T_FILE, 1, 1);
	ut_add(&p.l, "b.txt", PH_T_FILE, 2, 2);
	ut_add(&p.r, "b.txt", PH_T_FILE, 9, 9);
	ut_add(&p.l, "c.txt", PH_T_FILE, 3, 3);
	ut_add(&p.r, "d.txt", PH_T_FILE, 4, 4);
	/* A state with no records yet: equal files are recorded. */
	plan_both(&p, table_recs, 0, PH_PREFER_NONE);
	assert_string_equal(show(&p.pull, &p.r), "record 1 a.txt\n"
	                                         "update 3 b.txt\n"
	                                         "new 0 d.txt\n");
	assert_string_equal(show(&p.push, &p.l), "new 0 c.txt\n");
	assert_int_equal(p.rc.nc, 1);
	assert_int_equal(p.rc.c[0].first, 1);
	assert_int_equal(p.rc.c[0].winner, PH_SIDE_REMOTE);
	assert_int_equal(p.pull.v[1].how, PH_U_ASIDE);
	assert_int_equal(p.rc.del_local + p.rc.del_remote, 0);
	pair_free(&p);
}

/* A folder the laptop deleted, whose files the phone did not change, is
 * deleted on the phone, not made again here; a folder new on the phone is
 * made here, empty or not. */
static void
test_recon_folders(void **state)
{
	static const struct rec recs[] = {
		{ "Old/x.jpg", 10, 10, 100, 100 },
	};
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	ut_add(&p.r, "Old", PH_T_DIR, 0, 100);
	ut_add(&p.r, "Old/x.jpg", PH_T_FILE, 10, 100);
	ut_add(&p.r, "Empty", PH_T_DIR, 0, 100);
	ut_add(&p.r, "New", PH_T_DIR, 0, 100);
	ut_add(&p.r, "New/y.jpg", PH_T_FILE, 5, 100);
	plan_both(&p, recs, 1, PH_PREFER_NONE);
	assert_string_equal(show(&p.pull, &p.r), "mkdir 0 Empty\n"
	                                         "mkdir 0 New\n"
	                                         "new 0 New/y.jpg\n");
	assert_int_equal(p.push.n, 0);
	assert_string_equal(dels(&p.push, &p.r), "Old/x.jpg\n");
	pair_free(&p);
}

/* A photo the phone moved to another album moves here too (the planner's
 * move, confirmed by content when carried out); the laptop's copy at the
 * old name does not go back to the phone. */
static void
test_recon_moved_on_phone(void **state)
{
	static const struct rec recs[] = {
		{ "a/p.jpg", 70000, 70000, 100, 100 },
	};
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	ut_add(&p.l, "a", PH_T_DIR, 0, 1);
	ut_add(&p.l, "a/p.jpg", PH_T_FILE, 70000, 100);
	ut_add(&p.r, "a", PH_T_DIR, 0, 1);
	ut_add(&p.r, "b", PH_T_DIR, 0, 1);
	ut_add(&p.r, "b/p.jpg", PH_T_FILE, 70000, 100);
	plan_both(&p, recs, 1, PH_PREFER_NONE);
	assert_string_equal(show(&p.pull, &p.r), "mkdir 0 b\n"
	                                         "new 1 b/p.jpg\n");
	assert_string_equal(p.l.v[p.pull.v[1].dst].path, "a/p.jpg");
	assert_int_equal(p.push.n, 0);
	pair_free(&p);
}

/* A file still being written on one side waits for a later run, both
 * ways: no conflict is decided from half a file. */
static void
test_recon_young_waits(void **state)
{
	static const struct rec recs[] = {
		{ "v.mp4", 10, 10, 100, 100 },
	};
	struct pair p;

	(void)state;
	memset(&p, 0, sizeof(p));
	ut_add(&p.l, "v.mp4", PH_T_FILE, 50, 200);
	ut_add(&p.r, "v.mp4", PH_T_FILE, 60, 300);
	ph_tree_sort(&p.l);
	p.l.v[0].flags |= PH_E_HOLD;
	plan_both(&p, recs, 1, PH_PREFER_NONE);
	assert_int_equal(p.pull.n, 0);
	assert_string_equal(show(&p.push, &p.l), "young 0 v.mp4\n");
	assert_int_equal(p.rc.nc, 0);
	assert_int_equal(p.pull.files_todo + p.push.files_todo, 0);
	pair_free(&p);
}

/* The model of docs/TWOWAY.md's table for one file: what must happen to it,
 * from its two sides and its record (each side: 0 absent, else a version
 * number that stands for a size and a time). */
enum outcome { O_NOTHING, O_TO_LOCAL, O_TO_REMOTE, O_DEL_LOCAL, O_DEL_REMOTE, O_CONFLICT,
               O_RECORD, O_FORGET };

static enum outcome
model(int l, int r, int kl, int kr, int recorded)
{
	int lch, rch;

	if (!recorded) {
		if (l && r)
			return l == r ? O_RECORD : O_CONFLICT;
		return l ? O_TO_REMOTE : r ? O_TO_LOCAL : O_NOTHING;
	}
	/* The same on both sides: in sync, the record renewed if it is not
	 * of them. */
	if (l && l == r)
		return l == kl && r == kr ? O_NOTHING : O_RECORD;
	lch = l != kl;
	rch = r != kr;
	if (!lch && !rch)
		return O_NOTHING;
	if (lch && !rch)
		return l ? O_TO_REMOTE : O_DEL_REMOTE;
	if (!lch && rch)
		return r ? O_TO_LOCAL : O_DEL_LOCAL;
	if (!l && !r)
		return O_FORGET;
	if (!l)
		return O_TO_LOCAL;  /* a change beats a delete */
	if (!r)
		return O_TO_REMOTE;
	return O_CONFLICT;
}

/* What the reconciled plans do to path. */
static enum outcome
observed(const struct pair *p, const char *path)
{
	size_t i;
	int pulled = 0, pushed = 0, conflict = 0, record = 0, forget = 0, dl = 0, dr = 0;

	for (i = 0; i < p->pull.n; i++)
		if (strcmp(p->r.v[p->pull.v[i].src].path, path) == 0) {
			record |= p->pull.v[i].kind == PH_A_RECORD;
			pulled |= p->pull.v[i].kind == PH_A_NEW || p->pull.v[i].kind == PH_A_UPDATE;
		}
	for (i = 0; i < p->push.n; i++)
		if (strcmp(p->l.v[p->push.v[i].src].path, path) == 0) {
			record |= p->push.v[i].kind == PH_A_RECORD;
			pushed |= p->push.v[i].kind == PH_A_NEW || p->push.v[i].kind == PH_A_UPDATE;
		}
	for (i = 0; i < p->rc.nc; i++)
		conflict |= strcmp(p->l.v[p->rc.c[i].l].path, path) == 0;
	for (i = 0; i < p->pull.ndel; i++)
		dl |= !p->pull.del[i].kept && strcmp(p->l.v[p->pull.del[i].dst].path, path) == 0;
	for (i = 0; i < p->push.ndel; i++)
		dr |= !p->push.del[i].kept && strcmp(p->r.v[p->push.del[i].dst].path, path) == 0;
	for (i = 0; i < p->pull.nforget; i++)
		forget |= strcmp(p->pull.forget[i], path) == 0;
	if (conflict)
		return O_CONFLICT;
	assert_true(pulled + pushed + dl + dr + record + forget <= 1);
	return pulled ? O_TO_LOCAL : pushed ? O_TO_REMOTE : dl ? O_DEL_LOCAL : dr ? O_DEL_REMOTE :
	       record ? O_RECORD : forget ? O_FORGET : O_NOTHING;
}

/* Random pairs of folders and records, seeded: every file ends as the
 * model says, whatever the mix around it (versions share sizes and times
 * across files, so the planner's move guesses are in play too). */
static void
test_recon_model(void **state)
{
	unsigned seed = 12345, round;

	(void)state;
	for (round = 0; round < 400; round++) {
		struct rec recs[12];
		struct pair p;
		int lv[12], rv[12], kl[12], kr[12], rec[12];
		char names[12][8];
		size_t i, nrec = 0, n = 1 + round % 12;

		memset(&p, 0, sizeof(p));
		for (i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			rec[i] = (seed >> 16) % 3 != 0;
			kl[i] = kr[i] = rec[i] ? 1 + (int)((seed >> 20) % 2) : 0;
			/* a phone that cannot set times: the record's sides differ */
			if (rec[i] && (seed >> 23) % 4 == 0)
				kr[i] = kl[i] + 2;
			lv[i] = (seed >> 8) % 4 == 0 ? 0 : (seed >> 10) % 3 == 0 ? 1 + (int)((seed >> 12) % 4) : kl[i];
			rv[i] = (seed >> 14) % 4 == 0 ? 0 : (seed >> 18) % 3 == 0 ? 1 + (int)((seed >> 25) % 4) : kr[i];
			snprintf(names[i], sizeof(names[i]), "f%02zu", i);
			if (lv[i])
				ut_add(&p.l, names[i], PH_T_FILE, 1000 + (uint64_t)lv[i], 100 * lv[i]);
			if (rv[i])
				ut_add(&p.r, names[i], PH_T_FILE, 1000 + (uint64_t)rv[i], 100 * rv[i]);
			if (rec[i]) {
				recs[nrec].path = names[i];
				recs[nrec].lsize = 1000 + (uint64_t)kl[i];
				recs[nrec].lmtime = 100 * kl[i];
				recs[nrec].rsize = 1000 + (uint64_t)kr[i];
				recs[nrec].rmtime = 100 * kr[i];
				nrec++;
			}
		}
		plan_both(&p, recs, nrec, PH_PREFER_NONE);
		for (i = 0; i < n; i++) {
			enum outcome want = model(lv[i], rv[i], kl[i], kr[i], rec[i]);

			if (observed(&p, names[i]) != want)
				fail_msg("round %u, %s: l %d r %d record %d (%d/%d): want %d, got %d",
				         round, names[i], lv[i], rv[i], rec[i], kl[i], kr[i], want,
				         observed(&p, names[i]));
		}
		pair_free(&p);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recon_table),
		cmocka_unit_test(test_recon_conflict_phone_newer),
		cmocka_unit_test(test_recon_prefer),
		cmocka_unit_test(test_recon_first_contact),
		cmocka_unit_test(test_recon_folders),
		cmocka_unit_test(test_recon_moved_on_phone),
		cmocka_unit_test(test_recon_young_waits),
		cmocka_unit_test(test_recon_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
