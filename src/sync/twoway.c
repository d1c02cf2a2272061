/* SPDX-License-Identifier: ISC */
/* A two-way run (docs/TWOWAY.md): both sides listed once, the pair's
 * records read in both orientations, the two one-way plans reconciled
 * (recon.c), then the pull executor and the push executor on the one
 * connection, each recording into the same state as it goes, and last a
 * short push of the conflict copies the pull pass set aside.
 *
 * A conflict's replace-aside (PH_U_ASIDE) is done here, around the
 * executors, as a rename on the side whose version loses:
 *   the laptop's wins: the pull pass writes the phone's version beside,
 *     here (PH_U_CONFLICT, as a pull always has); then the phone's file is
 *     renamed to that same conflict name and the laptop's goes to the phone
 *     as a new file;
 *   the phone's wins: the laptop's file is renamed to the conflict name,
 *     the phone's comes as a new file, and the last pass sends the renamed
 *     one to the phone.
 * A run cut between any two of these steps loses no version: the next run
 * sees a file deleted on one side and changed on the other (the change
 * goes back) and a conflict copy new on one side (it goes across). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ident.h"
#include "twoway.h"
#include "unreached.h"

/* A pass's events, with the way their files went. */
static void
fwd_event(const struct phsync_event *ev, void *arg)
{
	const struct ph_fwd *f = arg;
	struct phsync_event e = *ev;

	if (f->fn == NULL)
		return;
	switch (ev->type) {
	case PHSYNC_EV_FILE_DONE:
	case PHSYNC_EV_FILE_FAILED:
	case PHSYNC_EV_SKIPPED:
	case PHSYNC_EV_MKDIR:
	case PHSYNC_EV_CONFLICT:
	case PHSYNC_EV_DELETED:
	case PHSYNC_EV_NOT_REACHED:
		e.dir = f->dir;
		break;
	default:
		e.dir = 0;
		break;
	}
	f->fn(&e, f->arg);
}

/* The pull pass's conflict copies: which name each landed under. */
static void
on_beside(void *arg, const char *path, const char *beside)
{
	struct ph_two *t = arg;
	size_t i;

	for (i = 0; i < t->nc; i++)
		if (t->c[i].winner == PH_SIDE_LOCAL && t->c[i].copy && t->c[i].beside == NULL &&
		    strcmp(t->rtree->v[t->c[i].r].path, path) == 0) {
			t->c[i].beside = strdup(beside);
			return;
		}
}

/* The push pass's job, borrowing the pull run's connection, state and
 * trees (the local tree is its source). */
static void
push_setup(struct ph_two *t)
{
	struct ph_job *a = &t->a.j, *b = &t->b.j;

	ph_job_borrow(b, a, &t->ob, PHSYNC_PUSH);
	b->src = a->dst;
	b->dst = a->src;
	/* The scans noted their failures on the pull's sides: the phone's as
	 * its source's (and where, for the push: nothing is written where the
	 * phone could not be listed), the laptop's as the pull's destination. */
	b->src_failed = a->dst_failed.n + (uint64_t)a->dst_unlisted;
	b->dst_failed = a->src_failed_at;
	memset(&a->src_failed_at, 0, sizeof(a->src_failed_at));
	b->dst_unlisted = a->src_unlisted;
	/* The uploads an earlier run cut, loaded before the scan (which left
	 * their temps on the phone): the push pass checks and goes on from
	 * them as a push does; the pull pass loads its own downloads. */
	b->partials = a->partials;
	b->npartials = a->npartials;
	a->partials = NULL;
	a->npartials = 0;
	t->b.pull = 0;
	/* Records are forgotten only after complete listings of both sides;
	 * a side's deletes are refused when the other (its source) could not
	 * be listed whole. */
	t->b.scan_failed = t->a.scan_failed;
	t->a.del_failed = a->src_failed;
	t->b.del_failed = b->src_failed;
}

/* What the push pass owns (not what it borrows). */
static void
push_free(struct ph_two *t)
{
	struct ph_job *b = &t->b.j;

	ph_plan_free(&b->plan);
	free((void *)t->b.known.v);
	free(b->dirty);
	ph_unreached_free(b);
	free(b->off);
	ph_ident_renew_free(b);
	ph_ident_close(b);
	ph_state_partials_free(b->partials, b->npartials);
	ph_tree_free(&b->found_partials);
	ph_tree_free(&b->dst_failed);
	ph_tree_free(&b->known_paths);
}

/* A laptop file the caller says is still being written (held: the push
 * plan leaves it, and the reconciler then the pull's action on it too) is
 * not deleted here because the phone deleted it: it is changing, and a
 * change beats a delete. */
static void
keep_held(struct ph_two *t)
{
	struct ph_plan *p = &t->a.j.plan;
	size_t i;

	for (i = 0; i < p->ndel && t->oa.n_hold > 0; i++)
		if (!p->del[i].kept && (t->a.j.dst.v[p->del[i].dst].flags & PH_E_HOLD)) {
			p->del[i].kept = 1;
			p->ndel_go--;
		}
}

/* Both trees scanned, names matched both ways, both plans made (each
 * orientation's records merged in), then reconciled. */
static int
two_plan(struct ph_two *t)
{
	struct ph_job *a = &t->a.j, *b = &t->b.j;
	int rc;

	if ((rc = ph_run_names(&t->a)) != 0)
		return rc;
	push_setup(t);
	if ((rc = ph_run_names(&t->b)) != 0)
		return rc;
	/* Matching may have sorted or renamed: one tree each, the latest. */
	a->src = b->dst;
	a->dst = b->src;
	if ((rc = ph_run_dest_again(&t->a, &t->b)) != 0 ||
	    (rc = ph_run_known_both(&t->a, &t->b)) != 0 ||
	    (rc = ph_run_plan(&t->a)) != 0 || (rc = ph_run_plan(&t->b)) != 0)
		return rc;
	keep_held(t);
	t->ltree = &b->src;
	t->rtree = &a->src;
	if ((rc = ph_recon_make(t->ltree, t->rtree, &a->plan, &b->plan,
	                        (enum ph_prefer)t->oa.prefer, &t->rec)) != 0)
		return ph_err(a->ctx, rc, "out of memory reconciling the two sides");
	ph_run_counts(a);
	ph_run_counts(b);
	return ph_two_conflicts_init(t);
}

/* Adds the push pass's counts to the pull's: one run's stats. */
static void
stats_merge(struct phsync_stats *to, const struct phsync_stats *from)
{
	if (from->files_total > to->files_total)
		to->files_total = from->files_total;
	to->files_todo += from->files_todo;
	to->files_done += from->files_done;
	to->files_failed += from->files_failed;
	to->files_skipped += from->files_skipped;
	to->dirs_created += from->dirs_created;
	to->bytes_todo += from->bytes_todo;
	to->bytes_done += from->bytes_done;
	to->bytes_committed += from->bytes_committed;
	to->conflicts += from->conflicts;
	to->files_deleted += from->files_deleted;
	to->bytes_matched += from->bytes_matched;
	to->files_unreached += from->files_unreached;
}

/* A refused delete on one side does not stop the other side's files: the
 * run goes on, and ends with the refusal. */
static int
keep_going(int rc, int *refused)
{
	if (rc == PHSYNC_EREFUSED) {
		if (*refused == 0)
			*refused = rc;
		return 0;
	}
	return rc;
}

/* The pull pass, the phone's asides, the push pass, the last pass. */
static int
two_execute(struct ph_two *t)
{
	struct ph_job *a = &t->a.j, *b = &t->b.j;
	int rc, refused = 0;

	if ((rc = ph_two_first_contact(t)) != 0 || (rc = ph_two_aside_local(t)) != 0)
		return rc;
	t->fa.dir = PHSYNC_PULL;
	a->beside_fn = on_beside;
	a->beside_arg = t;
	rc = keep_going(ph_run_pass(&t->a), &refused);
	t->fa.dir = 0;
	if (rc == 0 && a->ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == 0)
		rc = ph_two_aside_remote(t);
	if (rc != 0)
		return rc;
	t->fb.dir = PHSYNC_PUSH;
	/* The push pass's own message for a refusal replaces the pull's: the
	 * first is said as a warning so neither is lost. */
	if (refused != 0)
		ph_job_event(a, PHSYNC_EV_WARNING, ".", NULL, 0, refused, a->ctx->err);
	rc = keep_going(ph_run_pass(&t->b), &refused);
	if (rc == 0 && !a->ctx->interrupted)
		rc = ph_two_last_pass(t);
	t->fb.dir = 0;
	if (rc == 0)
		rc = ph_two_record_copies(t);
	stats_merge(&a->st, &b->st);
	if (rc == 0 && a->ctx->interrupted)
		rc = PHSYNC_EINTR;
	return rc != 0 ? rc : refused;
}

/* A --trash folder inside the synced folders is on both sides: what one
 * side moved there is no new file for the other (excluded, as a rule
 * from the top). */
static int
trash_excluded(struct ph_two *t, const struct phsync_options *o)
{
	const char *tr = o->trash_dir;
	size_t n = o->n_excludes, len;

	if (tr == NULL || tr[0] == '/' || strncmp(tr, "../", 3) == 0)
		return 0;
	len = strlen(tr);
	while (len > 0 && tr[len - 1] == '/')
		len--;
	if (len == 0 || (t->excl = calloc(n + 1, sizeof(*t->excl))) == NULL ||
	    (t->trash_rule = malloc(len + 3)) == NULL)
		return len == 0 ? 0 : PHSYNC_ENOMEM;
	/* "/DIR/": the folder at the top only, not a name at any depth. */
	snprintf(t->trash_rule, len + 3, "/%.*s/", (int)len, tr);
	if (n > 0)
		memcpy(t->excl, o->excludes, n * sizeof(*t->excl));
	t->excl[n] = t->trash_rule;
	t->oa.excludes = t->excl;
	t->oa.n_excludes = n + 1;
	return 0;
}

/* Options a two-way run cannot take, and those it sets for its passes. */
static int
two_begin(struct ph_two *t, phsync_ctx *ctx, const struct phsync_options *opts)
{
	if (opts == NULL) {
		phsync_options_init(&t->oa);
		opts = &t->oa;
	}
	ctx->err[0] = '\0';
	if (opts->remove_source || opts->overwrite)
		return ph_err(ctx, PHSYNC_EINVAL, "a two-way sync takes neither %s: %s",
		              opts->remove_source ? "--remove-source-files" : "--overwrite",
		              opts->remove_source ? "use pull" : "use --prefer local|remote|newer");
	if (opts->prefer < PHSYNC_PREFER_NONE || opts->prefer > PHSYNC_PREFER_NEWER ||
	    opts->max_delete_percent > 100)
		return ph_err(ctx, PHSYNC_EINVAL, "a two-way sync's --prefer or "
		              "--max-delete-percent is out of range");
	t->oa = *opts;
	if (trash_excluded(t, opts) != 0)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory");
	t->fa.fn = t->fb.fn = opts->on_event;
	t->fa.arg = t->fb.arg = opts->event_arg;
	t->oa.on_event = fwd_event;
	t->oa.event_arg = &t->fa;
	t->ob = t->oa;
	t->ob.event_arg = &t->fb;
	return 0;
}

int
ph_sync_twoway(phsync_ctx *ctx, const char *remote, const char *local_dir,
               const struct phsync_options *opts, struct phsync_stats *stats)
{
	struct ph_two *t = calloc(1, sizeof(*t));
	int rc;

	if (t == NULL)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory");
	if ((rc = two_begin(t, ctx, opts)) != 0 ||
	    (rc = ph_run_begin(&t->a, ctx, PHSYNC_PULL, remote, &t->oa, local_dir)) != 0) {
		free(t->excl);
		free(t->trash_rule);
		free(t);
		return rc;
	}
	t->a.j.twoway = 1;
	if ((rc = ph_run_local(&t->a, remote)) == 0 && t->a.single != NULL)
		rc = ph_err(ctx, PHSYNC_EINVAL, "%s: a two-way sync is of two folders", local_dir);
	if (rc == 0 && (rc = ph_run_connect(&t->a, remote)) == 0 && t->a.single != NULL)
		rc = ph_err(ctx, PHSYNC_EINVAL, "%s: a two-way sync is of two folders", remote);
	if (rc == 0 && (rc = ph_run_state(&t->a)) == 0 && (rc = ph_run_scan(&t->a)) == 0 &&
	    (rc = two_plan(t)) == 0)
		rc = two_execute(t);
	if (rc == 0)
		rc = ph_two_prefer_said(t, ph_run_result(&t->a.j, 0));
	push_free(t);
	ph_two_conflicts_free(t);
	ph_recon_free(&t->rec);
	rc = ph_run_end(&t->a, rc, stats);
	free(t->excl);
	free(t->trash_rule);
	free(t);
	return rc;
}
