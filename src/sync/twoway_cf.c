/* SPDX-License-Identifier: ISC */
/* A two-way run's conflicts (docs/TWOWAY.md, twoway.h): first contact's
 * content check, the loser's version renamed to its conflict copy on its
 * own side, the last pass that sends the laptop's copies, the copies'
 * records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "tempname.h"
#include "twoway.h"
#include "unreached.h"
#include "whole.h"

/* The action of plan p whose source is src, from *i on (both in order). */
static struct ph_action *
find_action(struct ph_plan *p, size_t *i, uint32_t src)
{
	while (*i < p->n && p->v[*i].src < src)
		(*i)++;
	return *i < p->n && p->v[*i].src == src ? &p->v[*i] : NULL;
}

int
ph_two_conflicts_init(struct ph_two *t)
{
	size_t k, i = 0, j = 0;

	if (t->rec.nc == 0)
		return 0;
	if ((t->c = calloc(t->rec.nc, sizeof(*t->c))) == NULL)
		return PHSYNC_ENOMEM;
	for (k = 0; k < t->rec.nc; k++) {
		struct ph_two_cf *c = &t->c[k];

		c->l = t->rec.c[k].l;
		c->r = t->rec.c[k].r;
		c->winner = t->rec.c[k].winner;
		c->first = t->rec.c[k].first;
		c->copy = t->rec.c[k].copy;
		c->pa = find_action(&t->a.j.plan, &i, c->r);
		c->pb = find_action(&t->b.j.plan, &j, c->l);
	}
	t->nc = t->rec.nc;
	return 0;
}

void
ph_two_conflicts_free(struct ph_two *t)
{
	size_t k;

	for (k = 0; k < t->nc; k++) {
		free(t->c[k].beside);
		free(t->c[k].cpath);
	}
	free(t->c);
	t->c = NULL;
	t->nc = 0;
}

/* Takes action x out of plan p's copies: it becomes kind (a record, or a
 * file left for the next run). */
static void
unplan(struct ph_job *j, struct ph_action *x, uint8_t kind)
{
	if (x == NULL)
		return;
	if (x->kind == PH_A_NEW || x->kind == PH_A_UPDATE) {
		j->plan.files_todo--;
		j->plan.bytes_todo -= j->src.v[x->src].size;
		j->st.files_todo--;
		j->st.bytes_todo -= j->src.v[x->src].size;
	}
	x->kind = kind;
	x->how = 1;
}

/* Do the two sides of c hold the same bytes? 1, 0, or 0 when that cannot
 * be told (a read failed): a conflict then keeps both. */
static int
same_bytes(struct ph_two *t, const struct ph_two_cf *c)
{
	const struct ph_entry *l = &t->ltree->v[c->l], *r = &t->rtree->v[c->r];
	uint8_t hl[16], hr[16];
	uint64_t n;

	if (l->nosize || r->nosize || l->size != r->size)
		return 0;
	if (ph_whole_helper_same(&t->a.j, ph_entry_raw(r), ph_entry_raw(l), l->size) == 1)
		return 1;
	if (ph_whole_local(&t->a.j, ph_entry_raw(l), hl, &n) != 0 || n != l->size)
		return 0;
	if (ph_whole_remote(&t->a.j, ph_entry_raw(r), r->size, hr) != 0)
		return 0;
	return memcmp(hl, hr, 16) == 0;
}

/* The laptop's file l (as listed) gets time when; l then holds the time
 * it shows (a FAT disk's 2 s step). Left as it is when it changed since
 * the listing or the time cannot be set: each side's own time is then
 * recorded. */
static void
adopt_local(struct ph_two *t, struct ph_entry *l, int64_t when)
{
	struct ph_job *a = &t->a.j;
	struct ph_stat st;
	const char *base;
	char *dir;
	int dfd, fd = -1;

	if (ph_local_split(ph_entry_raw(l), &dir, &base) != 0)
		return;
	if (ph_local_opendir(a->lroot, dir, &dfd) == 0) {
		fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW | PH_O_NONBLOCK, 0);
		ph_close(dfd);
	}
	free(dir);
	if (fd < 0)
		return;
	/* No access time kept: it gets the modification time. */
	if (ph_fstat(fd, &st) == 0 && st.type == PH_FT_REG && st.size == l->size &&
	    st.mtime_sec == l->mtime && ph_set_times(fd, when, 0) == 0 &&
	    (!a->o->fsync || ph_durable_sync(&fd, 1) == 0) && ph_fstat(fd, &st) == 0)
		l->mtime = ph_mtime_fit(st.mtime_sec);
	ph_close(fd);
}

/* The phone's file r (as listed) gets time when, read back (a phone that
 * steps or refuses times keeps its own, which is recorded). 0, or the
 * link's failure. */
static int
adopt_remote(struct ph_two *t, struct ph_entry *r, int64_t when)
{
	struct ph_job *a = &t->a.j;
	struct ph_sftp_attrs at, now;
	char *rp = ph_job_rpath(a, ph_entry_raw(r));
	int rc;

	if (rp == NULL)
		return PHSYNC_ENOMEM;
	memset(&at, 0, sizeof(at));
	at.flags = PH_ATTR_ACMODTIME;
	at.atime = at.mtime = (uint32_t)when;
	/* Still as listed (its bytes were just compared), then set. */
	rc = ph_sftp_stat_sync(a->sftp, PH_LSTAT, rp, &now);
	if (rc == 0 && (now.flags & PH_ATTR_SIZE) && (now.flags & PH_ATTR_ACMODTIME) &&
	    now.size == r->size && (int64_t)now.mtime == r->mtime &&
	    (rc = ph_sftp_setstat_sync(a->sftp, rp, &at)) == 0 &&
	    (rc = ph_sftp_stat_sync(a->sftp, PH_LSTAT, rp, &now)) == 0 &&
	    (now.flags & PH_ATTR_ACMODTIME) && now.size == r->size)
		r->mtime = ph_mtime_fit((int64_t)now.mtime);
	free(rp);
	return rc < 0 && ph_sftp_dead(a->sftp) ? rc : 0;
}

/* The same bytes adopted: both sides get the older of their two times
 * (the original's: a copy made later carries a later time), set on the
 * side whose time is later (docs/TWOWAY.md). */
static int
adopt_time(struct ph_two *t, const struct ph_two_cf *c)
{
	struct ph_entry *l = &t->b.j.src.v[c->l], *r = &t->a.j.src.v[c->r];

	if (l->mtime > r->mtime)
		adopt_local(t, l, r->mtime);
	else if (r->mtime > l->mtime)
		return adopt_remote(t, r, l->mtime);
	return 0;
}

int
ph_two_first_contact(struct ph_two *t)
{
	size_t k;
	int rc;

	for (k = 0; k < t->nc && !t->oa.dry_run; k++) {
		struct ph_two_cf *c = &t->c[k];

		/* Both edited to the same bytes (or, first contact, met with
		 * them): no conflict; one time on both sides, recorded. */
		if (!same_bytes(t, c))
			continue;
		c->adopted = 1;
		if ((rc = adopt_time(t, c)) != 0)
			return rc;
		if (c->pa != NULL) {
			unplan(&t->a.j, c->pa, PH_A_RECORD);
			c->pa->dst = c->l;
		}
		unplan(&t->b.j, c->pb, PH_A_RECORD);
	}
	return 0;
}

/* path's folder ("" at the top) joined with name; NULL on ENOMEM. */
static char *
sibling(const char *path, const char *name)
{
	const char *s = strrchr(path, '/');
	size_t dl = s ? (size_t)(s - path) + 1 : 0, nl = strlen(name);
	char *out = malloc(dl + nl + 1);

	if (out == NULL)
		return NULL;
	memcpy(out, path, dl);
	memcpy(out + dl, name, nl + 1);
	return out;
}

/* Renames the laptop's file of c (raw path lp, in folder dfd as base) to a
 * conflict name free on both sides; c->cpath gets its path. 0, 1 when it
 * could not (the file changed, no free name), or PHSYNC_ENOMEM. */
static int
rename_local(struct ph_two *t, struct ph_two_cf *c, int dfd, const char *base)
{
	const struct ph_entry *l = &t->ltree->v[c->l];
	char name[256];
	struct ph_stat st;
	unsigned n;
	int rc = -EEXIST;

	if (ph_fstatat(dfd, base, &st) != 0 || st.type != PH_FT_REG || st.size != l->size ||
	    st.mtime_sec != l->mtime)
		return 1;   /* changed since the listing: the pull puts its copy beside */
	for (n = 1; n < 100 && rc == -EEXIST; n++) {
		char *cp;

		if (ph_conflict_name(name, sizeof(name), base, t->a.j.started, n) != 0)
			return 1;
		if ((cp = sibling(ph_entry_raw(l), name)) == NULL)
			return PHSYNC_ENOMEM;
		if (ph_tree_find(t->rtree, cp) != NULL || ph_tree_find(t->ltree, cp) != NULL) {
			free(cp);
			continue;
		}
		rc = ph_rename_noreplace(dfd, base, dfd, name);
		if (rc == 0)
			c->cpath = cp;
		else
			free(cp);
	}
	return rc == 0 ? 0 : 1;
}

int
ph_two_aside_local(struct ph_two *t)
{
	struct ph_job *a = &t->a.j;
	size_t k;
	int rc = 0;

	t->fa.dir = PHSYNC_PULL;
	for (k = 0; k < t->nc && rc >= 0; k++) {
		struct ph_two_cf *c = &t->c[k];
		const char *lp = ph_entry_raw(&t->ltree->v[c->l]), *base;
		char *dir;
		int dfd;

		if (c->winner != PH_SIDE_REMOTE || !c->copy || c->adopted || c->pa == NULL)
			continue;
		if (t->oa.dry_run) {
			ph_job_conflict(a, t->rtree->v[c->r].path, NULL, t->rtree->v[c->r].size,
			                c->first);
			continue;
		}
		rc = 1;
		if (ph_local_split(lp, &dir, &base) != 0)
			return PHSYNC_ENOMEM;
		if (ph_local_opendir(a->lroot, dir, &dfd) == 0) {
			rc = rename_local(t, c, dfd, base);
			ph_close(dfd);
		}
		free(dir);
		if (rc == 1) {
			/* Not moved aside: the phone's version lands beside here,
			 * the laptop's stays (the next run sends the copy). */
			c->pa->how = PH_U_CONFLICT;
			rc = 0;
			continue;
		}
		if (rc == 0) {
			c->moved = 1;
			c->pa->kind = PH_A_NEW;
			c->pa->how = PH_N_PLAIN;
			c->pa->dst = -1;
			ph_job_conflict(a, t->rtree->v[c->r].path, strrchr(c->cpath, '/') ?
			                strrchr(c->cpath, '/') + 1 : c->cpath,
			                t->ltree->v[c->l].size, c->first);
		}
	}
	t->fa.dir = 0;
	return rc < 0 ? rc : 0;
}

int
ph_two_aside_remote(struct ph_two *t)
{
	struct ph_job *a = &t->a.j;
	size_t k;

	for (k = 0; k < t->nc && !t->oa.dry_run; k++) {
		struct ph_two_cf *c = &t->c[k];
		const char *rp = ph_entry_raw(&t->rtree->v[c->r]);
		char *cp = NULL, *from = NULL, *to = NULL;
		int rc = 1;

		if (c->winner != PH_SIDE_LOCAL || !c->copy || c->adopted || c->pb == NULL)
			continue;
		if (c->beside != NULL && (cp = sibling(rp, c->beside)) != NULL &&
		    (from = ph_job_rpath(a, rp)) != NULL && (to = ph_job_rpath(a, cp)) != NULL)
			rc = ph_sftp_rename_sync(a->sftp, from, to);
		free(from);
		free(to);
		if (rc == 0) {
			/* The phone's version is its copy now: the laptop's
			 * goes to the free name. */
			c->moved = 1;
			c->cpath = cp;
			c->pb->kind = PH_A_NEW;
			c->pb->how = PH_N_PLAIN;
			c->pb->dst = -1;
			continue;
		}
		free(cp);
		if (rc < 0 && ph_sftp_dead(a->sftp))
			return rc;
		/* Left: the next run sees the laptop's change again. */
		unplan(&t->b.j, c->pb, PH_A_KEPT);
	}
	return 0;
}

/* The last pass's job: the laptop's conflict copies as new files. */
static int
last_job(struct ph_two *t, struct ph_job *c)
{
	const struct ph_job *b = &t->b.j;
	size_t k;

	ph_job_borrow(c, b, b->o, PHSYNC_PUSH);
	for (k = 0; k < t->nc; k++) {
		const struct ph_entry *l = &t->ltree->v[t->c[k].l];
		struct ph_entry e = *l;

		if (t->c[k].winner != PH_SIDE_REMOTE || !t->c[k].moved)
			continue;
		e.flags = 0;
		if (ph_tree_add(&c->src, t->c[k].cpath, strlen(t->c[k].cpath), &e) != 0)
			return PHSYNC_ENOMEM;
	}
	ph_tree_sort(&c->src);
	if (c->src.n == 0)
		return 0;
	if ((c->plan.v = calloc(c->src.n, sizeof(*c->plan.v))) == NULL ||
	    (c->dirty = calloc(c->src.n, 1)) == NULL || ph_unreached_init(c) != 0)
		return PHSYNC_ENOMEM;
	for (k = 0; k < c->src.n; k++) {
		c->plan.v[k].src = (uint32_t)k;
		c->plan.v[k].dst = -1;
		c->plan.v[k].kind = PH_A_NEW;
		c->plan.files_todo++;
		c->plan.bytes_todo += c->src.v[k].size;
	}
	c->plan.n = c->plan.cap = c->src.n;
	c->plan.files_total = c->src.n;
	ph_run_counts(c);
	return 0;
}

int
ph_two_last_pass(struct ph_two *t)
{
	struct ph_job *c = calloc(1, sizeof(*c));
	int rc;

	if (c == NULL)
		return PHSYNC_ENOMEM;
	c->lroot = -1;
	if ((rc = last_job(t, c)) == 0 && c->src.n > 0 && !t->oa.dry_run) {
		rc = ph_push_run(c);
		if (rc != 0 || c->ctx->interrupted)
			ph_unreached_report(c);
		if (rc == 0 && c->state_err != 0)
			rc = c->state_err;
	}
	t->b.j.st.files_done += c->st.files_done;
	t->b.j.st.files_todo += c->st.files_todo;
	t->b.j.st.files_failed += c->st.files_failed;
	t->b.j.st.bytes_todo += c->st.bytes_todo;
	t->b.j.st.bytes_done += c->st.bytes_done;
	t->b.j.st.bytes_committed += c->st.bytes_committed;
	t->b.j.st.files_unreached += c->st.files_unreached;
	ph_plan_free(&c->plan);
	ph_tree_free(&c->src);
	free(c->dirty);
	ph_unreached_free(c);
	free(c->off);
	free(c);
	return rc;
}

int
ph_two_record_copies(struct ph_two *t)
{
	struct ph_job *a = &t->a.j;
	size_t k;

	for (k = 0; k < t->nc && !t->oa.dry_run && a->state != NULL; k++) {
		const struct ph_two_cf *c = &t->c[k];
		struct ph_sftp_attrs ra;
		struct ph_stat st;
		char *rp;
		int rc;

		if (c->winner != PH_SIDE_LOCAL || !c->moved)
			continue;
		if ((rp = ph_job_rpath(a, c->cpath)) == NULL)
			return PHSYNC_ENOMEM;
		rc = ph_sftp_stat_sync(a->sftp, PH_STAT, rp, &ra);
		free(rp);
		/* Unknown or other bytes: the next run's first contact with
		 * the copy decides. */
		if (rc != 0 || ph_fstatat(a->lroot, c->cpath, &st) != 0 || st.type != PH_FT_REG ||
		    !(ra.flags & PH_ATTR_SIZE) || ra.size != st.size)
			continue;
		ph_job_record(a, c->cpath, ra.size, st.mtime_sec, (int64_t)ra.mtime, NULL, 0);
	}
	return a->state_err;
}

int
ph_two_prefer_said(struct ph_two *t, int rc)
{
	static const char *const who[] = { "", "local", "remote", "newer" };
	char msg[300];
	size_t k, n = 0;

	for (k = 0; k < t->nc; k++)
		n += !t->c[k].copy && !t->c[k].adopted;
	if (n == 0)
		return rc;
	snprintf(msg, sizeof(msg), "%zu file(s) changed on both sides: %s version kept "
	         "(--prefer %s), the other replaced", n,
	         t->oa.prefer == PHSYNC_PREFER_LOCAL ? "the laptop's" :
	         t->oa.prefer == PHSYNC_PREFER_REMOTE ? "the phone's" : "the newer",
	         who[t->oa.prefer & 3]);
	ph_job_event(&t->a.j, PHSYNC_EV_WARNING, ".", NULL, 0, 0, msg);
	return rc;
}
