/* SPDX-License-Identifier: ISC */
/* Push executor: local files stream to remote temp files through many
 * pipelined SFTP writes, several files at once; each is then fsync'ed
 * (fsync@openssh.com), given its times, closed and renamed into place.
 * This file is the driver: folders first, then files started in plan
 * order while there is room (each then moved along its states by its
 * replies, push_file.c), then the folders' times. See push_int.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "local.h"
#include "pfs.h"
#include "push_int.h"

/* After Ctrl-C: how long the temp files' removal may take before the link
 * is abandoned (the next run removes what is left). */
#define STOP_GRACE_MS 2000

/* Opens the local file of f beneath the local root, never through a
 * symlink, and makes sure it is a regular file. On a failure *why says
 * why. */
static int
pf_open_local(struct pfile *f, const char **why)
{
	struct ph_job *j = f->p->j;
	char *dir = NULL;
	const char *base;
	struct ph_stat st;
	int dfd = -1, fd, rc;

	if ((rc = ph_local_split(ph_entry_raw(f->e), &dir, &base)) != 0)
		return rc;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	if (rc == 0) {
		/* A folder now in its place is refused by the open itself (pfs.h):
		 * no regular file, as the type check below says for the rest. */
		fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW, 0);
		if (fd >= 0)
			f->fd = fd;
		else
			rc = fd == -EISDIR ? PHSYNC_EUNSAFE : ph_err_from_errno(-fd);
		/* Held open by another program without sharing read (Windows). */
		if (fd == -EBUSY)
			*why = PH_HELD_MSG;
	}
	free(dir);
	if (rc == 0 && (ph_fstat(f->fd, &st) != 0 || st.type != PH_FT_REG))
		rc = PHSYNC_EUNSAFE;
	if (rc != 0 && *why == NULL)
		*why = rc == PHSYNC_EUNSAFE ? "changed into a non-file or a symlink is in the way" :
		       phsync_strerror(rc);
	if (dfd >= 0)
		ph_close(dfd);
	return rc;
}

/* Names f's remote paths: its temp file (tmpname, or the one kept for pa)
 * beside the final one. Returns 0 or PHSYNC_ENOMEM. */
static int
pf_name_remote(struct pfile *f, struct ph_partial *pa)
{
	struct ph_job *j = f->p->j;
	char *dir = NULL, *tmprel = NULL, tmpname[256];
	const char *base;
	int rc = PHSYNC_ENOMEM;

	if (ph_local_split(ph_entry_dpath(f->e), &dir, &base) != 0)
		return PHSYNC_ENOMEM;
	if (pa != NULL)
		memcpy(tmpname, pa->tmp, strlen(pa->tmp) + 1);
	else if (ph_temp_name(tmpname, sizeof(tmpname), base, PH_TEMP_NEW, &f->p->owner) != 0)
		tmpname[0] = '\0';
	if (tmpname[0] == '\0' || (tmprel = malloc(strlen(dir) + strlen(tmpname) + 2)) == NULL)
		goto out;
	sprintf(tmprel, "%s%s%s", dir, dir[0] ? "/" : "", tmpname);
	f->rtmp = ph_job_rpath(j, tmprel);
	f->rfinal = ph_job_rpath(j, ph_entry_dpath(f->e));
	if (f->rtmp != NULL && f->rfinal != NULL && (f->hs = XXH3_createState()) != NULL)
		rc = 0;
out:
	free(tmprel);
	free(dir);
	return rc;
}

/* Chooses f's mode and first state: a conflict goes beside; on first
 * contact so does a file of another size, and one of the same size is
 * compared first; a replace goes on from a kept upload (pa), or as a
 * delta where one is worth it, or whole. */
static int
pf_choose(struct pfile *f, struct ph_partial *pa, int resumable)
{
	struct push *p = f->p;
	struct ph_job *j = p->j;
	const struct ph_action *act = &j->plan.v[f->ai];
	const struct ph_entry *e = f->e;
	int rc;

	f->state = PF_OPENING;
	if (act->kind == PH_A_UPDATE && act->how != PH_U_REPLACE) {
		const struct ph_entry *d = &j->dst.v[act->dst];

		if (act->how == PH_U_CONFLICT || d->nosize || d->size != e->size) {
			f->cm.beside = 1;
		} else {
			f->mode = PM_COMPARE;
			f->state = PF_OLD;
		}
	}
	if (pa == NULL && act->kind == PH_A_UPDATE && act->how == PH_U_REPLACE && !f->cm.beside)
		pf_delta_prepare(f, &j->dst.v[act->dst]);
	if (f->mode == PM_DELTA || f->mode == PM_HDELTA)
		f->state = PF_OLD;
	if (resumable && f->mode == PM_WHOLE) /* if cut: count the acknowledged chunks */
		f->rs.acked = calloc((e->size / p->chunk + 1) / 8 + 1, 1);
	if (pa == NULL || f->rs.acked == NULL)
		return 0;
	/* Go on from the prefix an earlier run left (checked against the
	 * bytes here by pf_check_partials): hash and sign it from the local
	 * file, then write the rest into the same temp. */
	if ((rc = pf_feed_prefix(f, pa->have)) != 0)
		return rc;
	f->next_off = f->rs.have0 = pa->have;
	f->mode = PM_RESUME;
	j->st.bytes_todo -= pa->have;
	return 0;
}

/* The first request of f, by its mode. */
static int
pf_first(struct pfile *f)
{
	switch (f->mode) {
	case PM_DELTA:
	case PM_HDELTA:
		/* The old version first (its blocks are checked while the temp
		 * file is made), then the temp (pf_bopen_cb). */
		return ph_sftp_open(pf_sftp(f), f->rfinal, PH_FXF_READ, NULL, pf_bopen_cb, f);
	case PM_COMPARE:
		return ph_sftp_open(pf_sftp(f), f->rfinal, PH_FXF_READ, NULL, pf_cmp_open_cb, f);
	default:
		return pf_open_temp(f);
	}
}

static void
start_failed(struct ph_job *j, const struct ph_entry *e, int rc, const char *msg)
{
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, rc, msg);
}

static int
start_file(struct push *p, size_t ai)
{
	struct ph_job *j = p->j;
	const struct ph_action *act = &j->plan.v[ai];
	const struct ph_entry *e = &j->src.v[act->src];
	struct pfile *f = calloc(1, sizeof(*f));
	struct ph_partial *pa;
	const char *why = NULL;
	int rc, resumable;

	if (f == NULL)
		return PHSYNC_ENOMEM;
	f->p = p;
	f->ai = ai;
	f->e = e;
	f->fd = -1;
	f->rmtime = -1;
	f->grp.idle = pf_idle;
	f->grp.arg = f;
	/* Resumable: big, with a state; a first contact or a conflict (compared,
	 * or put beside) never takes over a kept upload. */
	resumable = e->size >= PH_PUSH_RESUME_MIN && j->state != NULL &&
	            (act->kind == PH_A_NEW || act->how == PH_U_REPLACE);
	pa = resumable ? ph_job_partial(j, e->path) : NULL;
	if (pa != NULL && (!pa->ready || strlen(pa->tmp) >= 256))
		pa = NULL;
	if ((rc = pf_open_local(f, &why)) != 0) {
		start_failed(j, e, rc, why);
		rc = 0;
		goto out;
	}
	if ((rc = pf_name_remote(f, pa)) != 0)
		goto out;
	XXH3_128bits_reset(f->hs);
	if (phsync_sig_gen_new(j->ctx, e->size, pf_sig_block_len(e->size), 0, &f->sig.sg) != 0)
		f->sig.sg = NULL;
	if ((rc = pf_choose(f, pa, resumable)) != 0) {
		start_failed(j, e, rc, "cannot read the local file");
		rc = 0;
		goto out;
	}
	if ((rc = pf_first(f)) != 0)
		goto out;
	f->slot = p->nactive;
	p->active[p->nactive++] = f;
	f = NULL;
out:
	if (f != NULL) {
		if (f->fd >= 0)
			ph_close(f->fd);
		free(f->rtmp);
		free(f->rfinal);
		XXH3_freeState(f->hs);
		phsync_sig_gen_free(f->sig.sg);
		free(f->sig.buf);
		free(f->rs.acked);
		pf_delta_free(f);
		free(f);
	}
	return rc;
}

struct waiter {
	struct push *p;
	size_t ai;
};

static void
mkdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct waiter *w = arg;
	struct ph_job *j = w->p->j;
	struct ph_action *a = &j->plan.v[w->ai];
	const struct ph_entry *e = &j->src.v[a->src];

	(void)s;
	if (pf_status_ok(r)) {
		ph_job_dir_made(j, a->src);
	} else if (r->type != 0) {
		ph_plan_block_subtree(&j->plan, &j->src, w->ai);
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "mkdir", 0,
		             r->err ? r->err : PHSYNC_EPROTO, pf_msg_of(r, "cannot create this folder"));
	}
	free(w);
}

/* Sends the MKDIR of plan action i (a folder), counted in g. */
static int
mkdir_one(struct push *p, size_t i, struct ph_sftp_group *g)
{
	struct ph_job *j = p->j;
	const struct ph_entry *e = &j->src.v[j->plan.v[i].src];
	struct ph_sftp_attrs at = { 0 };
	struct waiter *w;
	char *rp;
	int rc;

	at.flags = PH_ATTR_PERMISSIONS;
	at.perm = (e->mode & 0777) | 0700;
	if ((w = malloc(sizeof(*w))) == NULL || (rp = ph_job_rpath(j, ph_entry_dpath(e))) == NULL) {
		free(w);
		return PHSYNC_ENOMEM;
	}
	w->p = p;
	w->ai = i;
	rc = ph_sftp_mkdir(ph_sftp_in_group(j->sftp, g), rp, &at, mkdir_cb, w);
	free(rp);
	if (rc != 0)
		free(w);
	return rc;
}

/* Folders first. Sent in order and awaited level by level, so a server that
 * answers out of order still sees a parent before its child. */
static int
make_dirs(struct push *p)
{
	struct ph_job *j = p->j;
	struct ph_sftp_group g = { 0, NULL, NULL };
	size_t i;
	int rc = 0;

	for (i = 0; i < j->plan.n && rc == 0; i++) {
		struct ph_action *a = &j->plan.v[i];

		if (a->kind != PH_A_MKDIR)
			continue;
		if (j->o->dry_run) {
			ph_job_dir_made(j, a->src);
			continue;
		}
		/* One at a time: a server may answer out of order, and a child
		 * must not be asked before its parent exists. */
		while (g.inflight > 0 && (rc = ph_sftp_pump(j->sftp, -1)) == 0)
			;
		if (rc != 0 || a->kind != PH_A_MKDIR)
			continue;
		rc = mkdir_one(p, i, &g);
	}
	while (rc == 0 && g.inflight > 0)
		rc = ph_sftp_pump(j->sftp, -1);
	/* Leaving early (Ctrl-C, no memory): the MKDIRs in flight hold
	 * pointers to g and p; run their callbacks now. */
	if (g.inflight > 0)
		ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EINTR);
	return rc;
}

struct dirwait {
	struct ph_job *j;
	char *path;        /* relative, for the warning */
};

static void
dirtime_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct dirwait *w = arg;

	(void)s;
	if (r->type != 0 && !pf_status_ok(r))
		ph_job_event(w->j, PHSYNC_EV_WARNING, w->path, NULL, 0,
		             r->err ? r->err : PHSYNC_EREMOTE,
		             pf_msg_of(r, "the server would not set this folder's time"));
	free(w->path);
	free(w);
}

/* Sends the SETSTAT of folder e's times (e NULL: the root), counted in g. */
static int
dirtime_one(struct ph_job *j, const struct ph_entry *e, struct ph_sftp_group *g)
{
	struct ph_sftp_attrs a = { 0 };
	struct dirwait *w;
	char *rp;
	int rc;

	a.flags = PH_ATTR_ACMODTIME;
	if (e != NULL) {
		a.atime = (uint32_t)e->mtime;
		a.mtime = (uint32_t)e->mtime;
	} else {
		a.atime = (uint32_t)(j->root_atime ? j->root_atime : j->root_mtime);
		a.mtime = (uint32_t)j->root_mtime;
	}
	rp = ph_job_rpath(j, e ? ph_entry_dpath(e) : "");
	w = malloc(sizeof(*w));
	if (rp == NULL || w == NULL || (w->path = strdup(e ? e->path : ".")) == NULL) {
		free(rp);
		free(w);
		return PHSYNC_ENOMEM;
	}
	w->j = j;
	rc = ph_sftp_setstat(ph_sftp_in_group(j->sftp, g), rp, &a, dirtime_cb, w);
	free(rp);
	if (rc != 0) {
		free(w->path);
		free(w);
	}
	return rc;
}

/* Gives touched folders their source times on the server, deepest first.
 * Their modes are left as made (the server's umask on the source's bits)
 * or as they were. A refusal is a warning (many phones cannot set times). */
static int
finish_dirs(struct push *p)
{
	struct ph_job *j = p->j;
	struct ph_sftp_group g = { 0, NULL, NULL };
	size_t i = j->src.n + 1;
	int rc = 0;

	while (i-- > 0 && rc == 0) {
		const struct ph_entry *e = i < j->src.n ? &j->src.v[i] : NULL;

		if (e != NULL && (e->type != PH_T_DIR || !j->dirty[i]))
			continue;
		if (e == NULL && !j->root_dirty)
			continue;
		rc = dirtime_one(j, e, &g);
	}
	while (g.inflight > 0 && ph_sftp_pump(j->sftp, -1) == 0)
		;
	if (g.inflight > 0)
		ph_sftp_abort(j->sftp, PHSYNC_ECONNECT); /* w must not outlive the run */
	return rc;
}

/* Frees every file that is finished with nothing in flight. */
static void
settle_all(struct push *p)
{
	size_t i;

	for (i = 0; i < p->nactive;)
		if (!pf_settle(p->active[i]))
			i++;
}

/* Ctrl-C: remove the temp files, finish the commits under way, and give
 * that a short while (*stop_at): a hung server is abandoned. */
static void
stop_files(struct push *p, uint64_t *stop_at)
{
	size_t i;

	p->stopping = 1;
	*stop_at = ph_now_ms() + STOP_GRACE_MS;
	for (i = p->nactive; i-- > 0;)
		if (pf_abandonable(p->active[i]))
			pf_fail(p->active[i], PHSYNC_EINTR, "interrupted");
}

/* One turn of the main loop's work: a delta planned, files started in
 * plan order while there is room, writes for files that hit the global
 * cap. Returns 0 or the PHSYNC_E* that ends the run; *took says a plan
 * was made. */
static int
turn(struct push *p, size_t *ai, int *took)
{
	struct ph_job *j = p->j;
	size_t i;
	int rc = 0;

	p->planned = 0;
	*took = pf_plan_next(p);
	while (!p->fatal && !p->stopping && !p->planned && *ai < j->plan.n &&
	       p->nactive < MAX_FILES && p->writes < MAX_WRITES) {
		uint8_t k = j->plan.v[*ai].kind;

		if ((k == PH_A_NEW || k == PH_A_UPDATE) && (rc = start_file(p, *ai)) != 0)
			return rc;
		(*ai)++;
	}
	/* Files that hit the global write cap get their turn again; one
	 * that fails here is freed once its cleanup is answered. */
	for (i = 0; i < p->nactive && p->writes < MAX_WRITES; i++) {
		struct pfile *f = p->active[i];

		if (f->state == PF_WRITING && pf_more_to_send(f) && pf_issue_writes(f) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a write");
	}
	return 0;
}

/* The files: started, stepped by their replies, until all are done, the
 * run is stopped or fails. */
static int
run_files(struct push *p)
{
	struct ph_job *j = p->j;
	size_t ai = 0;
	uint64_t stop_at = 0;
	int rc = 0, took;

	while (rc == 0) {
		if (j->ctx->interrupted && !p->stopping)
			stop_files(p, &stop_at);
		settle_all(p);
		if (p->stopping && ph_now_ms() >= stop_at)
			break;
		if ((rc = turn(p, &ai, &took)) != 0)
			break;
		settle_all(p);
		ph_job_progress(j);
		if (p->nactive == 0 && (ai >= j->plan.n || p->fatal || p->stopping))
			break;
		/* After a plan (or a file let go of in a stop) its requests go out,
		 * and replies are taken, without waiting before the next. */
		rc = ph_sftp_pump(j->sftp, took || p->planned ? 0 : p->stopping ? 100 : 200);
		if (rc == PHSYNC_EINTR)
			rc = 0;
	}
	return rc;
}

static const struct pf_steps steps = { pf_send_step, pf_close_temp, pf_commit };

int
ph_push_run(struct ph_job *j)
{
	struct push p;
	size_t i;
	int rc;

	memset(&p, 0, sizeof(p));
	p.j = j;
	p.steps = &steps;
	p.chunk = ph_sftp_max_write(j->sftp);
	ph_temp_owner_self(&p.owner);
	for (i = 0; i < j->plan.n; i++)
		if (j->plan.v[i].kind == PH_A_DIRTIME)
			j->dirty[j->plan.v[i].src] = 1;
	if ((rc = make_dirs(&p)) != 0)
		return rc;
	if (j->o->dry_run) {
		ph_job_dry_run_files(j);
		return 0;
	}
	ph_move_run(j);
	pf_check_partials(j);
	if ((p.active = calloc(MAX_FILES, sizeof(*p.active))) == NULL)
		return PHSYNC_ENOMEM;
	rc = run_files(&p);
	if (rc == 0 && !p.stopping)
		rc = finish_dirs(&p);
	if (rc == 0)
		rc = p.fatal;
	if (rc == 0 && p.stopping)
		rc = PHSYNC_EINTR;
	/* Leaving early (link lost, interrupted): run the callbacks still
	 * pending so each file and request is released exactly once (a file
	 * whose last request is settled is freed by its idle hook). */
	if (p.nactive > 0) {
		for (i = 0; i < p.nactive; i++)
			p.active[i]->silent = 1;
		ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EINTR);
	}
	while (p.nactive > 0)
		pf_free(p.active[p.nactive - 1]);
	free(p.active);
	phsync_diff_free(p.diff);
	return rc;
}
