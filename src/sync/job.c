/* SPDX-License-Identifier: ISC */
/* The job helpers every executor shares: events, progress, folders to
 * touch, records, the remote scan's hooks. Called by sync.c and the
 * executors; calls none of them (job.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ident.h"
#include "job.h"
#include "login.h"
#include "remote.h"
#include "str.h"
#include "unreached.h"

void
ph_job_scan_failed(struct ph_job *j, const struct ph_tree *t, const char *path)
{
	struct ph_entry e = { 0 };

	if (t == &j->src) {
		j->src_failed++;
		if (j->twoway && (path[0] == '\0' || strcmp(path, ".") == 0 ||
		                  ph_tree_add(&j->src_failed_at, path, strlen(path), &e) != 0))
			j->src_unlisted = 1;
	} else if (path[0] == '\0' || strcmp(path, ".") == 0 ||
	         ph_tree_add(&j->dst_failed, path, strlen(path), &e) != 0)
		j->dst_unlisted = 1; /* the root, or no memory to say where */
}

/* The remote scan's hooks: which side's tree, for its failed listings;
 * the login's more clients, and the local walk beside the listing. */
struct rscan_side {
	struct ph_job *j;
	const struct ph_tree *t;
	struct ph_login_more m;
	const atomic_int *walking;
	const atomic_size_t *found;
};

/* More clients for a long listing (ph_login_more). More helpers wait for
 * the local walk: on a phone that is this machine they would take its
 * cores from the walk (a no-change pull of 1,000,000 files on loopback,
 * 4.8 s with one helper, took 5.9 s with a second asked at once); on a
 * phone the laptop's walk ends long before the phone's listing, so the
 * wait costs little there. More sftp-servers do not wait: plain SFTP's
 * listing is the slow side even on loopback (docs/PERFORMANCE.md). */
static size_t
rscan_more(void *arg, struct ph_sftp **out, size_t max)
{
	struct rscan_side *sd = arg;

	/* (A walk held to the listing, its pairs taken out as both come, is
	 * no longer ahead of it: pairs.h. Then the listing is what the run
	 * waits for, and more helpers are asked at once.) */
	if (ph_sftp_helper(sd->j->sftp) != 0 && sd->walking != NULL &&
	    atomic_load(sd->walking) && sd->t->feed == NULL)
		return PH_RSCAN_MORE_LATER;
	return ph_login_more(&sd->m, out, max);
}

static void
rscan_end_more(void *arg, struct ph_sftp **v, size_t n)
{
	ph_login_end_more(&((struct rscan_side *)arg)->m, v, n);
}

static void
rscan_failed(void *arg, const char *path)
{
	struct rscan_side *sd = arg;

	ph_job_scan_failed(sd->j, sd->t, path);
}

static int
rscan_keep_temp(void *arg, const char *name)
{
	return ph_job_partial_tmp(((struct rscan_side *)arg)->j, name);
}

static void
rscan_tick(void *arg, uint64_t listed)
{
	struct rscan_side *sd = arg;

	ph_job_scan_progress(sd->j, listed, sd->found != NULL ?
	                     atomic_load_explicit(sd->found, memory_order_relaxed) : 0);
}

void
ph_job_scan_progress(struct ph_job *j, uint64_t remote, uint64_t local)
{
	j->st.listing = 1;
	j->st.listed_remote = remote;
	j->st.listed_local = local;
	ph_emit_progress(&j->ev, NULL);
}

int
ph_job_remote_scan(struct ph_job *j, struct ph_tree *t, int remove_temps,
                   const atomic_int *walking, const atomic_size_t *found)
{
	struct rscan_side sd = { j, t, { j->ctx, j->o, j->ssh, j->sftp, &j->ev }, walking,
	                         found };
	struct ph_rscan in;

	memset(&in, 0, sizeof(in));
	in.ctx = j->ctx;
	in.sftp = j->sftp;
	in.rroot = j->rroot;
	in.filter = &j->filter;
	in.ev = &j->ev;
	in.remove_temps = remove_temps;
	in.dry_run = j->o->dry_run;
	in.failed = rscan_failed;
	in.keep_temp = rscan_keep_temp;
	in.more = rscan_more;
	in.end_more = rscan_end_more;
	in.more_arg = &sd;
	in.tick = rscan_tick;
	in.arg = &sd;
	return ph_remote_scan(&in, t);
}

void
ph_job_borrow(struct ph_job *j, const struct ph_job *from, const struct phsync_options *o,
              enum phsync_direction dir)
{
	j->ctx = from->ctx;
	j->o = o;
	j->dir = dir;
	j->sftp = from->sftp;
	j->ssh = from->ssh;
	j->rroot = from->rroot;
	j->lroot = from->lroot;
	j->filter = from->filter;
	j->state = from->state;
	j->started = from->started;
	j->local_dir = from->local_dir;
	j->root_mtime = from->root_mtime;
	j->root_atime = from->root_atime;
	j->twoway = from->twoway;
	ph_emit_init(&j->ev, o, &j->st);
}

void
ph_job_event(struct ph_job *j, enum phsync_event_type type, const char *path,
             const char *action, uint64_t size, int err, const char *msg)
{
	if (type == PHSYNC_EV_FILE_DONE || type == PHSYNC_EV_FILE_FAILED ||
	    type == PHSYNC_EV_CONFLICT)
		ph_unreached_mark(j, path);
	ph_emit(&j->ev, type, path, action, size, err, msg);
}

void
ph_job_progress(struct ph_job *j)
{
	ph_emit_progress(&j->ev, j->busy);
}

void
ph_job_touch_parent(struct ph_job *j, const char *path)
{
	const char *s = strrchr(path, '/');
	const struct ph_entry *e;
	char *dir;

	if (s == NULL) {
		/* A single file's folder is the user's, not a synced one: its
		 * times are left as the new file leaves them (as cp's). */
		if (j->filter.only == NULL)
			j->root_dirty = 1;
		return;
	}
	if ((dir = ph_strndup(path, (size_t)(s - path))) == NULL)
		return;
	e = ph_tree_find(&j->src, dir);
	if (e != NULL)
		j->dirty[e - j->src.v] = 1;
	free(dir);
}

void
ph_job_conflict(struct ph_job *j, const char *path, const char *beside, uint64_t size, int first)
{
	const char *why = first ? "differs from the incoming version and no sync of it is "
	                          "recorded (first contact)" :
	                          "changed on both sides since the last sync";
	char msg[512];

	j->st.conflicts++;
	if (beside != NULL && j->beside_fn != NULL)
		j->beside_fn(j->beside_arg, path, beside);
	if (beside != NULL)
		snprintf(msg, sizeof(msg), "%s; the version here is kept, the incoming one is "
		         "beside it as %s", why, beside);
	else
		snprintf(msg, sizeof(msg), "%s; the version here would be kept, the incoming one "
		         "put beside it as NAME.phsync-conflict-DATE-TIME.EXT", why);
	ph_job_event(j, PHSYNC_EV_CONFLICT, path, "conflict", size, PHSYNC_ECONFLICT, msg);
}

void
ph_job_dir_made(struct ph_job *j, size_t src)
{
	const char *path = j->src.v[src].path;

	j->st.dirs_created++;
	ph_job_touch_parent(j, path);
	j->dirty[src] = 1;
	ph_job_event(j, PHSYNC_EV_MKDIR, path, "mkdir", 0, 0, NULL);
}

void
ph_job_dry_run_files(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->plan.n; i++) {
		const struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];

		if (j->nofit != NULL && j->nofit[i]) {
			/* refused already, for want of room */
		} else if (a->kind == PH_A_UPDATE && a->how == PH_U_CONFLICT) {
			ph_job_conflict(j, e->path, NULL, e->size, 0);
		} else if (a->kind == PH_A_NEW || a->kind == PH_A_UPDATE) {
			/* First contact: the content decides (same: replaced,
			 * else a conflict copy); a dry run reads nothing. A push
			 * cannot copy on the server: it uploads. */
			int copy = a->kind == PH_A_NEW && a->how == PH_N_COPY && j->dir == PHSYNC_PULL;
			int move = a->kind == PH_A_NEW && a->how == PH_N_MOVE;

			j->st.files_done++;
			j->st.bytes_committed += e->size;
			ph_job_event(j, PHSYNC_EV_FILE_DONE, e->path,
			             move ? "move" : copy ? "copy" : a->kind == PH_A_NEW ? "new" :
			             a->how == PH_U_FIRST ? "compare" : "update", e->size, 0,
			             move || copy ? j->dst.v[a->dst].path : NULL);
		}
	}
}

struct ph_partial *
ph_job_partial(struct ph_job *j, const char *path)
{
	size_t i;

	for (i = 0; i < j->npartials; i++) /* a handful at most */
		if (j->partials[i].path != NULL && strcmp(j->partials[i].path, path) == 0)
			return &j->partials[i];
	return NULL;
}

int
ph_job_partial_tmp(const struct ph_job *j, const char *name)
{
	size_t i;

	for (i = 0; i < j->npartials; i++)
		if (j->partials[i].path != NULL && strcmp(j->partials[i].tmp, name) == 0)
			return 1;
	return 0;
}

static void
record(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime, int64_t rmtime,
       const uint8_t *hash, int diverged, const uint8_t *sig, size_t siglen, int hread)
{
	struct ph_state_file f;
	int rc;

	if (j->state == NULL || j->state_err != 0)
		return;
	memset(&f, 0, sizeof(f));
	f.lsize = f.rsize = size;
	f.lmtime = lmtime;
	f.rmtime = rmtime;
	f.hash = hash;
	f.sig = sig;
	f.siglen = siglen;
	f.hread = hread;
	if (diverged && j->dir == PHSYNC_PULL)
		f.lsize = PH_KNOWN_DIVERGED;
	else if (diverged)
		f.rsize = PH_KNOWN_DIVERGED;
	else
		ph_ident_fill(j, path, &f);
	if ((rc = ph_state_file_done(j->state, path, &f)) != 0)
		j->state_err = rc;
}

void
ph_job_record(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime, int64_t rmtime,
              const uint8_t *hash, int diverged)
{
	/* A pull's hash is always of the bytes read from the server's path
	 * (or built from a delta checked against the helper's hash of it). */
	record(j, path, size, lmtime, rmtime, hash, diverged, NULL, 0, j->dir == PHSYNC_PULL);
}

void
ph_job_record_as(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime,
                 int64_t rmtime, const uint8_t *hash, int hread)
{
	record(j, path, size, lmtime, rmtime, hash, 0, NULL, 0, hread);
}

void
ph_job_record_pushed(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime,
                     int64_t rmtime, const uint8_t *hash, const uint8_t *sig, size_t siglen)
{
	record(j, path, size, lmtime, rmtime, hash, 0, sig, siglen, 0);
}
