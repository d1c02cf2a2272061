/* SPDX-License-Identifier: ISC */
/* A run's steps (run.h): connect, scan both sides, plan, execute, report;
 * phsync_sync (entry.c) runs them one way, twoway.c both. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx.h"
#include "ident.h"
#include "job.h"
#include "kept.h"
#include "known.h"
#include "local.h"
#include "login.h"
#include "lscan.h"
#include "names.h"
#include "pairs.h"
#include "pfs.h"
#include "platform.h"
#include "probe.h"
#include "reap.h"
#include "single.h"
#include "spec.h"
#include "ssh.h"
#include "staterow.h"
#include "strpool.h"
#include "tempname.h"
#include "run.h"
#include "unreached.h"

/* The local folder made absolute: Linux's PATH_MAX, not mingw's 260, which
 * would refuse the long paths Windows takes. */
#define LPATH_MAX 4096

static void
report_skips(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->plan.n; i++) {
		const struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];

		switch (a->kind) {
		case PH_A_SKIP_LINK:
			j->st.files_skipped++;
			ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "symlink", 0, 0,
			             "symlink (never followed nor created)");
			break;
		case PH_A_SKIP_OTHER:
			j->st.files_skipped++;
			ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "special", 0, 0,
			             "not a regular file or folder");
			break;
		case PH_A_SKIP_YOUNG:
			j->st.files_skipped++;
			ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "too new", 0, 0,
			             (e->flags & PH_E_HOLD) ? "still being written; left for a "
			             "later run" : "changed less than --min-age seconds ago; "
			             "left for a later run");
			break;
		case PH_A_KEPT:
			j->st.files_skipped++;
			ph_job_event(j, PHSYNC_EV_SKIPPED, e->path, "kept", 0, 0,
			             "changed here since the last sync while the source's version "
			             "did not: kept (--overwrite to take the source's)");
			break;
		case PH_A_CONFLICT:
			j->st.files_failed++;
			ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, 0, PHSYNC_EUNSAFE,
			             e->type == PH_T_DIR ?
			             "the destination has a non-folder here; left alone" :
			             "the destination has a folder, symlink or special file "
			             "here; left alone");
			break;
		default:
			break;
		}
	}
}

/* Opens the pair's state: keyed by the phone (its host key, as known_hosts
 * just checked it), the login user, the remote folder and the local folder
 * made absolute (and a single file's name: its own pair); the address we reached (user@host:port after ssh_config)
 * is recorded, and a phone found at a new one is said so, once. */
static int
open_state(struct ph_job *j, struct ph_ssh *ssh, const char *rpath, const char *local_dir,
           const char *single)
{
	struct ph_state_key key;
	char user[256], host[256], lpath[LPATH_MAX], hk[PH_SSH_HOST_KEY_MAX], msg[1200];
	const char *was;
	int rc;

	ph_ssh_identity(ssh, user, sizeof(user), host, sizeof(host), &key.port);
	if ((rc = ph_realpath(local_dir, lpath, sizeof(lpath))) != 0) {
		/* A push's source or a pull's destination exists by now. */
		return ph_err(j->ctx, ph_err_from_errno(-rc), "%s: %s", local_dir, strerror(-rc));
	}
	/* Always there: the connection checked it against known_hosts. (A key
	 * libssh cannot name would key the pair by address, as before.) */
	key.hostkey = ph_ssh_host_key(ssh, hk, sizeof(hk)) == 0 ? hk : NULL;
	key.user = user;
	key.host = host;
	key.rpath = rpath;
	key.lpath = lpath;
	key.single = single;
	rc = ph_state_open(j->ctx, j->o->state_dir, &key,
	                   (j->o->reset_state ? PH_STATE_RESET : 0) |
	                   (j->o->dry_run ? PH_STATE_READONLY : 0), &j->state);
	if (rc == 0 && (was = ph_state_moved_from(j->state)) != NULL) {
		snprintf(msg, sizeof(msg), "phone %s (%s) now at %s:%u (was %s); same pair, its "
		         "state is kept", ph_ssh_host(ssh), hk, host, key.port,
		         strrchr(was, '@') ? strrchr(was, '@') + 1 : was);
		ph_job_event(j, PHSYNC_EV_WARNING, ".", NULL, 0, 0, msg);
	}
	return rc;
}

/* The kept transfers (j->partials) whose path or temp name is not one
 * phsync made for that file where it lands this run (kind: PH_TEMP_PARTIAL
 * for a pull's kept download, PH_TEMP_NEW for a push's kept upload) are
 * dropped before anything opens, removes or renames their temp. In a
 * two-way pass the other kind's rows are the other pass's: only taken
 * out of this pass's list. */
static int
check_partial_rows(struct ph_job *j, int kind)
{
	size_t i;
	int rc;

	for (i = 0; i < j->npartials;) {
		struct ph_partial *pa = &j->partials[i];
		const struct ph_entry *e;
		struct ph_temp_info ti;

		/* A two-way run's passes share the state: the other pass's
		 * kept transfer is its own to check, left in the state. */
		if (j->twoway && pa->tmp != NULL && ph_temp_parse(pa->tmp, strlen(pa->tmp), &ti) &&
		    ti.kind == (kind == PH_TEMP_NEW ? PH_TEMP_PARTIAL : PH_TEMP_NEW)) {
			free(pa->path);
			free(pa->tmp);
			memmove(pa, pa + 1, (j->npartials - i - 1) * sizeof(*pa));
			j->npartials--;
			continue;
		}
		e = ph_staterow_path_ok(pa->path, strlen(pa->path)) ?
		    ph_tree_find(&j->src, pa->path) : NULL;
		if (ph_staterow_partial_ok(pa->path, e ? ph_entry_dpath(e) : NULL, pa->tmp, kind)) {
			i++;
			continue;
		}
		ph_bad_row(j, pa->path, "a cut transfer");
		if ((rc = ph_state_partial_drop(j->state, pa->path)) != 0)
			return rc;
		/* out of the list: nothing after this sees it */
		free(pa->path);
		free(pa->tmp);
		memmove(pa, pa + 1, (j->npartials - i - 1) * sizeof(*pa));
		j->npartials--;
	}
	return 0;
}

/* The destination's time step: a FAT/exFAT disk here (statfs), or a
 * server whose files all show even times (16 or more of them: a chance of
 * 1 in 65,536 otherwise), keeps 2 s steps; times that close then count as
 * equal, as --modify-window 2 would say. Quietly: it is what the user
 * would have asked for. */
static int64_t
time_step(struct ph_job *j, int pull)
{
	size_t i, n = 0;

	if (pull)
		return j->lroot >= 0 ? ph_fs_time_step(j->lroot) : 0;
	for (i = 0; i < j->dst.n; i++) {
		if (j->dst.v[i].type != PH_T_FILE || j->dst.v[i].nosize)
			continue;
		if (j->dst.v[i].mtime % 2 != 0)
			return 0;
		n++;
	}
	return n >= 16 ? 2 : 0;
}

/* A side whose times all moved by whole hours is said so; its files'
 * records are renewed with the new times (so it is said once). */
static void
report_shift(struct ph_job *j, int64_t shift, int src_side)
{
	char msg[400];
	int remote = (j->dir == PHSYNC_PULL) == src_side;

	if (shift == 0)
		return;
	snprintf(msg, sizeof(msg), "the times of the files %s moved by %+lld h since the last "
	         "sync (a time zone or daylight saving change%s?); files whose size and time "
	         "are as recorded once that is allowed for are taken as unchanged and not "
	         "sent again", remote ? "on the server" : "here", (long long)(shift / 3600),
	         remote ? " on the phone" : "");
	ph_job_event(j, PHSYNC_EV_WARNING, ".", NULL, 0, 0, msg);
}

static int
renew_records(struct ph_job *j)
{
	size_t i;
	int pull = j->dir == PHSYNC_PULL, rc;

	for (i = 0; i < j->plan.n && j->state != NULL && j->state_err == 0; i++) {
		const struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *s = &j->src.v[a->src], *d;
		struct ph_state_file f;
		uint8_t h[16];

		if (a->kind != PH_A_RECORD || a->dst < 0)
			continue;
		d = &j->dst.v[a->dst];
		if (a->how == 1)
			rc = 0;   /* first contact: nothing recorded */
		else if ((rc = ph_state_file_get(j->state, s->path, &f, h)) < 0)
			return rc;
		ph_job_record_as(j, s->path, s->size, pull ? d->mtime : s->mtime,
		                 pull ? s->mtime : d->mtime, rc == 1 ? f.hash : NULL,
		                 rc == 1 && f.hread);
	}
	return j->state_err;
}

/* The cut downloads an earlier pull kept: those whose source is still as
 * it was and still to copy are resumed (j->partials); the others' files
 * are removed and their records dropped. */
static int
load_partials(struct ph_job *j)
{
	size_t i, k;
	int rc;

	if ((rc = ph_state_partial_load(j->state, &j->partials, &j->npartials)) != 0 ||
	    (rc = check_partial_rows(j, PH_TEMP_PARTIAL)) != 0)
		return rc;
	for (i = 0; i < j->npartials; i++) {
		struct ph_partial *pa = &j->partials[i];
		const struct ph_entry *e;
		int keep = 0;

		if (pa->path == NULL)
			continue;   /* dropped by check_partial_rows */
		e = ph_tree_find(&j->src, pa->path);

		for (k = 0; e != NULL && k < j->plan.n && !keep; k++) {
			const struct ph_action *a = &j->plan.v[k];

			keep = &j->src.v[a->src] == e && (a->kind == PH_A_NEW || a->kind == PH_A_UPDATE) &&
			       e->size == pa->size && e->mtime == pa->mtime && pa->have < e->size;
		}
		if (keep)
			continue;
		{
			const char *base;
			char *dir;
			int dfd;

			if (ph_local_split(e ? ph_entry_dpath(e) : pa->path, &dir, &base) == 0) {
				if (ph_local_opendir(j->lroot, dir, &dfd) == 0) {
					ph_unlinkat(dfd, pa->tmp, 0);
					ph_close(dfd);
				}
				free(dir);
			}
		}
		if ((rc = ph_state_partial_drop(j->state, pa->path)) != 0)
			return rc;
		free(pa->path);
		pa->path = NULL;
	}
	/* Partial files this pair's state does not know (another pair's, a
	 * state reset or lost): they cannot be resumed, so they go. */
	for (i = 0; i < j->found_partials.n; i++) {
		const char *path = j->found_partials.v[i].path, *base;
		int known = 0, dfd;
		char *dir;

		for (k = 0; k < j->npartials && !known; k++) {
			const struct ph_partial *pa = &j->partials[k];
			const struct ph_entry *e;
			const char *dp;
			size_t dl;

			if (pa->path == NULL)
				continue;
			/* Kept ones only: the file is in its destination folder. */
			e = ph_tree_find(&j->src, pa->path);
			dp = e ? ph_entry_dpath(e) : pa->path;
			dl = strrchr(dp, '/') ? (size_t)(strrchr(dp, '/') - dp) : 0;
			known = strncmp(path, dp, dl) == 0 && (dl == 0 || path[dl] == '/') &&
			        strcmp(path + dl + (dl > 0), pa->tmp) == 0;
		}
		if (known || ph_local_split(path, &dir, &base) != 0)
			continue;
		if (ph_local_opendir(j->lroot, dir, &dfd) == 0) {
			ph_unlinkat(dfd, base, 0);
			ph_close(dfd);
		}
		free(dir);
	}
	return 0;
}

static void
report_renamed(void *arg, const char *key, const char *raw)
{
	struct ph_job *j = arg;
	char msg[PATH_MAX + 200];

	snprintf(msg, sizeof(msg), "its name differs only by case or Unicode form from another "
	         "one here, which the destination would take for the same file: it goes there "
	         "as '%s'", key);
	ph_job_event(j, PHSYNC_EV_WARNING, raw, NULL, 0, 0, msg);
}

/* A phone name the folder here cannot hold (ph_probe_winnames): skipped,
 * never written under another name. */
static void
report_unholdable(void *arg, const char *raw, const char *why)
{
	struct ph_job *j = arg;
	char msg[256];

	snprintf(msg, sizeof(msg), "this folder cannot hold the name, %s: skipped; rename it on the "
	         "phone to copy it", why);
	j->st.files_skipped++;
	ph_job_event(j, PHSYNC_EV_SKIPPED, raw, "name", 0, PHSYNC_EUNSUPPORTED, msg);
}

/* Is path at or below one the destination's scan could not list? */
static int
unlisted(const struct ph_job *j, const char *path)
{
	size_t i;

	if (j->dst_unlisted)
		return 1;
	for (i = 0; i < j->dst_failed.n; i++) {
		const char *f = j->dst_failed.v[i].path;
		size_t fl = strlen(f);

		if (strncmp(path, f, fl) == 0 && (path[fl] == '\0' || path[fl] == '/'))
			return 1;
	}
	return 0;
}

/* What the plan would write where the destination's listing failed is
 * left alone: an unlisted file is not a missing one (it would be sent
 * again and land as a conflict copy beside itself). The failure itself
 * was reported and makes the run partial. */
static void
block_unlisted(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->plan.n && (j->dst_failed.n > 0 || j->dst_unlisted); i++) {
		struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];

		if (a->kind == PH_A_BLOCKED || !unlisted(j, ph_entry_dpath(e)))
			continue;
		if (a->kind == PH_A_NEW || a->kind == PH_A_UPDATE) {
			j->plan.files_todo--;
			j->plan.bytes_todo -= e->size;
		}
		a->kind = PH_A_BLOCKED;
	}
}

/* One key per name on both sides (NFC; case folded where the destination
 * ignores case), source names that would land on one another kept apart,
 * and each source entry's path at the destination (a two-way run's pull
 * gets those once the push's match settled the phone's keys:
 * ph_run_dest_again). */
static int
match_names(struct ph_job *j, int *foldp, int dst_named)
{
	struct ph_probe pr;
	int fold, refuse, rc;

	pr.local = j->dir == PHSYNC_PULL;
	pr.lroot = j->lroot;
	pr.sftp = j->sftp;
	pr.rroot = j->rroot;
	pr.src = &j->src;
	pr.dst = &j->dst;
	pr.dry_run = j->o->dry_run;
	(void)ph_probe_winnames(&pr, &refuse);
	if (refuse)
		(void)ph_names_drop_unholdable(&j->src, report_unholdable, j);
	/* (dst_named: the destination's own part done already, known.h.) */
	if ((rc = ph_names_normalize(&j->src)) != 0 ||
	    (!dst_named && (rc = ph_names_normalize(&j->dst)) != 0) ||
	    /* (The scan took out files only once told the destination keeps
	     * case, pairs.h: not asked again.) */
	    (rc = j->paired > 0 ? (fold = 0) : ph_probe_fold(&pr, &fold)) != 0 ||
	    (!dst_named && (rc = ph_names_separate(&j->dst, NULL, 0, NULL, NULL)) != 0) ||
	    (rc = ph_names_separate(&j->src, &j->dst, fold, report_renamed, j)) != 0 ||
	    (!(j->twoway && pr.local) && (rc = ph_names_dest_paths(&j->src, &j->dst, fold)) != 0))
		return ph_err(j->ctx, rc, "out of memory matching names");
	*foldp = fold;
	return 0;
}

/* Marks the source files the caller says are still being written: the
 * planner leaves them as it leaves files younger than --min-age. */
static void
hold_paths(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->o->n_hold; i++) {
		struct ph_entry *e = (struct ph_entry *)ph_tree_find(&j->src, j->o->hold_paths[i]);

		if (e != NULL && e->type == PH_T_FILE)
			e->flags |= PH_E_HOLD;
	}
}


/* The run's settings checked, the job set up, the remote spec read. On a
 * failure nothing is held and no event was sent. */
int
ph_run_begin(struct run *r, phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
          const struct phsync_options *opts, const char *local_dir)
{
	struct ph_job *j = &r->j;
	int rc;

	ctx->err[0] = '\0';
	ctx->interrupted = 0;
	if (opts == NULL) {
		phsync_options_init(&r->defaults);
		opts = &r->defaults;
	}
	j->ctx = ctx;
	j->o = opts;
	j->dir = dir;
	j->lroot = -1;
	ph_emit_init(&j->ev, opts, &j->st);
	j->started = (int64_t)time(NULL);
	j->local_dir = local_dir;
	r->pull = dir == PHSYNC_PULL;
	if (dir != PHSYNC_PULL && dir != PHSYNC_PUSH)
		return ph_err(ctx, PHSYNC_EINVAL, "direction must be pull, push or both");
	if (opts->remove_source && (!r->pull || !opts->fsync))
		return ph_err(ctx, PHSYNC_EINVAL, "--remove-source-files works with pull, and "
		              "needs fsync (not with --no-fsync): a phone's file goes only once "
		              "its copy here is durable");
	if ((rc = ph_spec_remote(ctx, remote, &r->user, &r->host, &r->rpath, &j->rroot)) != 0)
		return rc;
	/* Both trees keep their paths in one pool: mostly the same strings. */
	ph_strpool_init(&r->pool);
	j->src.pool = j->dst.pool = &r->pool;
	return 0;
}

/* The local walk on its thread (lscan.h). early: started before the
 * login, so while the server's answers are awaited. A pull's walk then
 * lists the leftovers it would remove (r->stale) and ph_run_scan removes
 * them once the run is known to be the folder's: a pull turns out to be of
 * one file only after the login, and such a run leaves the other files'
 * leftovers alone. The walk keeps a copy of the filter for the same
 * reason: the login may change the job's. */
static void
scan_start(struct run *r, int early)
{
	struct ph_job *j = &r->j;
	struct ph_lscan *ls = &r->ls;

	memset(ls, 0, sizeof(*ls));
	r->ls_filter = j->filter;
	ls->root = j->lroot;
	ls->filter = &r->ls_filter;
	ls->remove_temps = r->pull && !j->o->dry_run;
	ls->stale = ls->remove_temps && early ? &r->stale : NULL;
	ls->check_names = !r->pull;
	ls->t = r->pull ? &j->dst : &j->src;
	ls->t->want_ids = 1; /* each file's identity, for the state merge */
	ls->partials = r->pull && !j->o->dry_run ? &j->found_partials : NULL;
	/* A pull of a folder may take out, as they come, the files both
	 * sides hold as recorded (pairs.h): known only after the login (the
	 * state, a single file), so the walk is ready for it from its start
	 * and let go if not (ph_run_scan). Not with --remove-source-files,
	 * which frees the phone of unchanged files too (offload.c). */
	if (r->pull && !j->twoway && !j->o->dry_run && !j->o->remove_source &&
	    j->filter.only == NULL)
		r->lfeed_on = ph_feed_init(&r->lfeed, ls->t) == 0;
	r->ls_on = 1;
	ph_lscan_start(ls);
}

/* The feeds detached (the scans and the taker done). */
static void
feeds_off(struct run *r)
{
	struct ph_job *j = &r->j;

	if (r->lfeed_on)
		ph_feed_free(&r->lfeed, r->pull ? &j->dst : &j->src);
	if (r->rfeed_on)
		ph_feed_free(&r->rfeed, r->pull ? &j->src : &j->dst);
	r->lfeed_on = r->rfeed_on = 0;
	ph_pairs_free(r->pairs);
	r->pairs = NULL;
	r->ke.pairs = NULL;
}

/* Waits for the walk (stopping it first when it is no longer wanted). */
static void
scan_join(struct run *r, int stop)
{
	if (!r->ls_on)
		return;
	if (stop)
		ph_lscan_stop(&r->ls);
	ph_lscan_join(&r->ls);
	r->ls_on = 0;
}

/* A walk made for a filter the run no longer has (a pull of one file)
 * forgotten: its entries, the partial downloads and leftovers it found. */
static void
scan_drop(struct run *r)
{
	struct ph_tree *t = r->ls.t;
	struct ph_strpool *pool = t->pool;

	scan_join(r, 1);
	feeds_off(r);
	ph_lscan_free(&r->ls);
	memset(&r->ls, 0, sizeof(r->ls));
	ph_tree_free(t);          /* (each of these zeroes what it frees) */
	t->pool = pool;
	ph_tree_free(&r->j.found_partials);
	ph_tree_free(&r->stale);
}

/* The filter, a single file as the source (single.h: a
 * push's is seen here, a pull's once the server says what its path is),
 * and the local root. The local side first: a bad local path should not
 * cost a login. A pull's missing destination is made only once the source
 * is known good, so a refused host or a typo leaves nothing behind. */
int
ph_run_local(struct run *r, const char *remote)
{
	struct ph_job *j = &r->j;
	int rc;

	if ((rc = ph_filter_options(&j->filter, j->o, &r->pat, &r->incl)) != 0)
		return rc;
	ph_raise_nofile();
	if (r->pull)
		rc = ph_single_pull_dest(j, j->local_dir);
	else if ((rc = ph_single_local(j, j->local_dir, &r->ldir, &r->single)) == 0 &&
	         r->single != NULL) {
		j->filter.only = r->single;
		j->local_dir = r->ldir;
		rc = ph_single_options(j, remote);
	}
	if (rc != 0)
		return rc;
	rc = ph_local_open_root(j->ctx, j->local_dir, PH_ROOT_OPEN, &j->lroot);
	if (rc == PHSYNC_ENOENT && r->pull)
		rc = 0, j->lroot = -1;
	if (rc == 0 && j->lroot >= 0)
		scan_start(r, 1);
	return rc;
}

/* The remote root must be a folder (the destination of a push may be
 * created: one level, as mkdir would); a pull of one file makes its folder
 * the root, its name the one synced, the pair its own. */
static int
run_remote_root(struct run *r, const char *remote)
{
	struct ph_job *j = &r->j;
	char *rp = ph_job_rpath(j, "");
	int rc = rp ? ph_sftp_stat_sync(j->sftp, PH_STAT, rp, &r->ra) : PHSYNC_ENOMEM;

	if (rc == PHSYNC_ENOENT && !r->pull && !j->o->dry_run) {
		rc = ph_sftp_mkdir_sync(j->sftp, rp, 0755);
		if (rc == 0)
			rc = ph_sftp_stat_sync(j->sftp, PH_STAT, rp, &r->ra);
	}
	free(rp);
	if (rc == PHSYNC_ENOENT && !r->pull && j->o->dry_run) {
		r->remote_missing = 1;
		rc = 0;
		r->ra.flags = PH_ATTR_PERMISSIONS;
		r->ra.perm = 040755;
	}
	if (rc != 0)
		return ph_err(j->ctx, rc == PHSYNC_ENOENT ? PHSYNC_ENOENT : rc, "%s:%s: %s", r->host,
		              r->rpath, rc == PHSYNC_ENOENT ? (r->pull ? "no such file or folder on "
		              "the server" : "no such folder on the server") : phsync_strerror(rc));
	if (r->pull && (r->ra.flags & PH_ATTR_PERMISSIONS) && (r->ra.perm & 0170000) == 0100000) {
		if ((rc = ph_single_remote(j, r->ssh, r->host, r->rpath, j->o->conn != NULL,
		                           &r->single)) != 0)
			return rc;
		j->filter.only = r->single;
		return ph_single_options(j, remote);
	}
	if ((r->ra.flags & PH_ATTR_PERMISSIONS) && (r->ra.perm & 0170000) != 0040000)
		return ph_err(j->ctx, PHSYNC_ENOTDIR, "%s:%s is not a folder", r->host, r->rpath);
	return 0;
}

/* Logged in (or on the caller's kept connection), the remote root known. */
int
ph_run_connect(struct run *r, const char *remote)
{
	struct ph_job *j = &r->j;
	int rc;

	if (j->o->conn != NULL)
		rc = ph_kept_use(j->o->conn, r->user, r->host, j->rroot, &r->ssh, &j->sftp);
	else
		rc = ph_login_run(j->ctx, j->o, r->user, r->host, j->rroot, &j->ev, &r->ssh, &j->sftp);
	if (rc != 0)
		return rc;
	j->ssh = r->ssh;
	j->st.helper = ph_sftp_helper(j->sftp);
	if ((rc = run_remote_root(r, remote)) != 0)
		return rc;
	j->root_mtime = r->ra.mtime;
	j->root_atime = r->ra.atime;
	return 0;
}

/* A pull's destination made, the pair's state open and locked for this
 * run (a dry run only reads it, and takes no lock; a dry pull into a
 * folder not yet made has none), a push's uploads cut last time loaded
 * (their temps are kept by the scan; a two-way run loads them into its
 * pull's job, which lists the phone, and hands them to its push pass). */
int
ph_run_state(struct run *r)
{
	struct ph_job *j = &r->j;
	int rc;

	if (r->pull && j->lroot < 0 && !j->o->dry_run &&
	    (rc = ph_local_open_root(j->ctx, j->local_dir, PH_ROOT_MAKE, &j->lroot)) != 0)
		return rc;
	if ((!j->o->dry_run || j->lroot >= 0) &&
	    (rc = open_state(j, r->ssh, j->rroot, j->local_dir, r->single)) != 0)
		return rc;
	if ((!r->pull || j->twoway) && j->state != NULL && !j->o->dry_run)
		return ph_state_partial_load(j->state, &j->partials, &j->npartials);
	return 0;
}

/* Both sides scanned at once: the local walk runs on a thread while this
 * one lists the server (rsync's sender and generator overlap the same
 * way). Our own leftovers (a killed run's temp files) are removed on the
 * destination side, never on the source. */
int
ph_run_scan(struct run *r)
{
	struct ph_job *j = &r->j;
	struct ph_lscan *ls = &r->ls;
	/* The phone's tree and this machine's (a two-way run lists as a pull). */
	struct ph_tree *rt = r->pull ? &j->src : &j->dst, *lt = r->pull ? &j->dst : &j->src;
	int rc = 0, walked;

	/* Started before the login with the folder's filter, but the run is
	 * of one file: walked again with its own. */
	if (r->ls_on && r->ls_filter.only != j->filter.only)
		scan_drop(r);
	/* (A pull's destination made only now: nothing in it to remove.) */
	if (!r->ls_on && j->lroot >= 0)
		scan_start(r, 0);
	walked = r->ls_on;
	/* A one-way pull merges its records' local half meanwhile, after
	 * taking out the files as recorded while both sides are scanned. */
	if (r->pull && !j->twoway && j->state != NULL && r->ls_on) {
		if (r->lfeed_on && j->filter.only == NULL &&
		    (r->pairs = ph_pairs_new(j, lt, rt, &r->ke.stop)) != NULL)
			r->rfeed_on = ph_feed_init(&r->rfeed, rt) == 0;
		if (!r->rfeed_on) {
			ph_pairs_free(r->pairs);
			r->pairs = NULL;
		}
		if (!ph_known_early_start(&r->ke, j, &r->ls, r->pairs) && r->pairs != NULL) {
			ph_pairs_free(r->pairs);
			r->pairs = NULL;
			r->ke.pairs = NULL;
			/* (Not listed into yet: let go now, or the listing would
			 * wait for a taker that never came.) */
			ph_feed_free(&r->rfeed, rt);
			r->rfeed_on = 0;
		}
	}
	/* Nothing takes from the walk: it goes on unheld. */
	if (r->lfeed_on && r->pairs == NULL)
		ph_feed_close(lt);
	/* (The phone holds a two-way run's push temps, so our stale ones go
	 * there too, the kept uploads left as a push leaves them.) */
	if (r->pull || !r->remote_missing)
		rc = ph_job_remote_scan(j, rt, !j->o->dry_run && (!r->pull || j->twoway),
		                        r->ls_on ? &ls->walking : NULL, r->ls_on ? &ls->found : NULL);
	if (r->rfeed_on && ph_feed_end(rt) != 0 && rc == 0)
		rc = PHSYNC_ENOMEM;
	/* The listing sorted while the walk or the records' local half may
	 * still run (one taken from: once the taker is done). */
	if (rc == 0 && r->pairs == NULL)
		ph_tree_sort(rt);
	/* The walk still going once the listing is in (a push of a big
	 * folder to a phone that has little of it): its progress meanwhile. */
	while (rc == 0 && r->ls_on && j->o->progress_ms != 0 && !ph_lscan_wait(ls, 100))
		ph_job_scan_progress(j, rt->nkept,
		                     atomic_load_explicit(&ls->found, memory_order_relaxed));
	ph_known_early_join(&r->ke, rc != 0);
	scan_join(r, 0);
	if (rc == 0 && r->pairs != NULL)
		ph_tree_sort(rt);
	j->paired = r->ke.paired;
	feeds_off(r);
	ph_lscan_report(j, ls);
	if (rc == 0 && ls->rc != 0)
		rc = ph_err(j->ctx, ls->rc, "%s: %s", j->local_dir, ls->ctx.err);
	ph_lscan_free(ls);
	memset(ls, 0, sizeof(*ls));
	/* The leftovers of dead runs, now that the run is the folder's. */
	if (rc == 0 && r->stale.n > 0)
		ph_local_remove_stale(j->lroot, &r->stale);
	ph_tree_free(&r->stale);
	ph_strpool_seal(&r->pool); /* nothing more is looked up */
	j->st.listing = 0;
	if (rc != 0)
		return rc;
	j->st.listed_remote = rt->n + j->paired;
	j->st.listed_local = walked ? lt->n + j->paired : 0;
	r->scan_failed = r->del_failed = j->st.files_failed;
	return 0;
}

int
ph_run_names(struct run *r)
{
	return match_names(&r->j, &r->fold, 0);
}

int
ph_run_dest_again(struct run *r, struct run *other)
{
	int rc = ph_names_dest_paths(&r->j.src, &r->j.dst, r->fold);

	/* (The phone's tree is both runs': the same storage.) */
	other->j.dst = r->j.src;
	return rc != 0 ? ph_err(r->j.ctx, rc, "out of memory matching names") : 0;
}

int
ph_run_known_both(struct run *r, struct run *other)
{
	int rc = 0;

	if (r->j.state != NULL)
		rc = ph_known_load(&r->j, r->pull, &r->known, &other->j, &other->known);
	r->known_ready = other->known_ready = 1;
	return rc;
}

/* Names matched, the state's records merged in, the plan made. */
int
ph_run_plan(struct run *r)
{
	struct ph_job *j = &r->j;
	struct ph_plan_opts po;
	int64_t step;
	int rc;

	/* (A two-way run matched both orientations' names first.) */
	if (!j->twoway && (rc = match_names(j, &r->fold, r->ke.named)) != 0)
		return rc;
	if (!r->pull)
		hold_paths(j);
	if (j->state != NULL && !r->known_ready) {
		if ((rc = ph_known_early_finish(&r->ke, &r->known, r->fold)) == 0)
			rc = ph_known_load(j, r->pull, &r->known, NULL, NULL);
		if (rc < 0)
			return rc;
	}
	po.young_after = j->o->min_age_s ? (int64_t)time(NULL) - j->o->min_age_s : 0;
	po.modify_window = j->o->modify_window_s;
	if (po.modify_window < 2 && (step = time_step(j, r->pull)) > po.modify_window)
		po.modify_window = step;
	po.known = &r->known;
	po.overwrite = j->o->overwrite;
	po.deletes = j->o->delete_missing || j->twoway;
	po.filter = &j->filter;
	po.src_incomplete = j->src_failed > 0;
	if ((rc = ph_plan_make(&j->src, &j->dst, &po, &j->plan)) != 0)
		return rc;
	j->plan.files_total += j->paired; /* (the source's files the scan took out) */
	block_unlisted(j);
	if ((j->dirty = calloc(j->src.n ? j->src.n : 1, 1)) == NULL ||
	    ph_unreached_init(j) != 0)
		return PHSYNC_ENOMEM;
	ph_run_counts(j);
	return 0;
}

void
ph_run_counts(struct ph_job *j)
{
	j->st.files_total = j->plan.files_total;
	j->st.files_todo = j->plan.files_todo;
	j->st.bytes_todo = j->plan.bytes_todo;
}

/* What the plan says carried out: the files, then the records renewed,
 * the files gone from the source, --remove-source-files. */
int
ph_run_pass(struct run *r)
{
	struct ph_job *j = &r->j;
	int rc;

	if (r->pull && j->state != NULL && !j->o->dry_run && j->lroot >= 0 &&
	    (rc = load_partials(j)) != 0)
		return rc;
	report_skips(j);
	/* (A two-way run's push pass found the shifts its pull pass said.) */
	if (r->pull || !j->twoway) {
		report_shift(j, j->plan.src_shift, 1);
		report_shift(j, j->plan.dst_shift, 0);
	}
	/* A push's kept uploads, checked now their files' places are known. */
	if (!r->pull && j->npartials > 0 && (rc = check_partial_rows(j, PH_TEMP_NEW)) != 0)
		return rc;
	rc = r->pull ? ph_pull_run(j) : ph_push_run(j);
	/* A run cut short names what it never got to (unreached.h). */
	if (rc != 0 || j->ctx->interrupted)
		ph_unreached_report(j);
	if (rc == 0 && !j->o->dry_run)
		rc = renew_records(j);
	if (rc == 0 && j->ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == 0)
		rc = ph_delete_gone(j, r->scan_failed, r->del_failed);
	if (rc == 0 && r->pull && j->o->remove_source)
		rc = ph_offload_run(j);
	return rc;
}

int
ph_run_result(struct ph_job *j, int rc)
{
	if (rc == 0 && j->st.files_failed > 0)
		rc = ph_err(j->ctx, PHSYNC_EPARTIAL, "%llu file(s) failed; the rest synced",
		            (unsigned long long)j->st.files_failed);
	if (rc == 0 && j->st.conflicts > 0)
		rc = ph_err(j->ctx, PHSYNC_ECONFLICT, "%llu file(s) changed on both sides: %s "
		            "(NAME.phsync-conflict-DATE-TIME.EXT)%s",
		            (unsigned long long)j->st.conflicts, j->twoway ?
		            "each kept on both sides, the newer version under its name and the "
		            "other beside it" : "each kept as it is here, with the incoming "
		            "version beside it", j->o->dry_run ? " (dry run)" : "");
	return rc;
}

/* The run's result said (the summary event, the state closed with it) and
 * everything it held let go. Returns the result. */
int
ph_run_end(struct run *r, int rc, struct phsync_stats *stats)
{
	struct ph_job *j = &r->j;
	phsync_ctx *ctx = j->ctx;

	if (rc == 0 && j->state_err != 0)
		rc = j->state_err;
	/* A stop asked for during a prompt or the connection ends as such. */
	if (rc != 0 && rc != PHSYNC_EINTR && ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == PHSYNC_EINTR)
		ph_err(ctx, rc, "interrupted; run again to finish");
	/* A run that ended before its scan step (a refused login): the walk
	 * is stopped and waited for before anything it writes to is freed. */
	ph_known_early_free(&r->ke);
	if (r->ls_on) {
		scan_join(r, 1);
		ph_lscan_free(&r->ls);
	}
	feeds_off(r);
	ph_tree_free(&r->stale);
	ph_emit_elapsed(&j->ev);
	if (stats != NULL)
		*stats = j->st;
	ph_job_event(j, PHSYNC_EV_SUMMARY, NULL, NULL, 0, rc, rc ? ctx->err : NULL);
	ph_state_close(j->state, rc, &j->st);
	ph_plan_free(&j->plan);
	free((void *)r->known.v);
	ph_tree_free(&j->src);
	ph_tree_free(&j->dst);
	ph_strpool_free(&r->pool);
	free(j->dirty);
	ph_unreached_free(j);
	free(j->off);
	ph_ident_renew_free(j);
	ph_ident_close(j);
	ph_state_partials_free(j->partials, j->npartials);
	ph_tree_free(&j->found_partials);
	ph_tree_free(&j->dst_failed);
	ph_tree_free(&j->src_failed_at);
	ph_tree_free(&j->known_paths);
	if (j->o->conn == NULL) {
		ph_sftp_free(j->sftp);
		ph_ssh_free(r->ssh);
	} else if (j->sftp != NULL && (ph_sftp_dead(j->sftp) || ph_sftp_awaited(j->sftp) > 0)) {
		/* Replies still awaited would call back into this run's
		 * memory: the kept link ends here (the caller opens a new
		 * one). Requests sent with no callback are harmless. */
		ph_kept_drop(j->o->conn);
	}
	/* Last: the old copies the reaper still frees overlap all of the above. */
	ph_reap_end(&j->reap);
	if (j->lroot >= 0)
		ph_close(j->lroot);
	free(j->rroot);
	free(r->pat);
	free(r->incl);
	free(r->user);
	free(r->host);
	free(r->rpath);
	free(r->ldir);
	free(r->single);
	return rc;
}

int
ph_sync_oneway(phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
               const char *local_dir, const struct phsync_options *opts,
               struct phsync_stats *stats)
{
	struct run *r = calloc(1, sizeof(*r));
	int rc;

	if (r == NULL)
		return ph_err(ctx, PHSYNC_ENOMEM, "out of memory");
	if ((rc = ph_run_begin(r, ctx, dir, remote, opts, local_dir)) != 0) {
		free(r);
		return rc;
	}
	if ((rc = ph_run_local(r, remote)) == 0 &&
	    (rc = ph_run_connect(r, remote)) == 0 &&
	    (rc = ph_run_state(r)) == 0 &&
	    (rc = ph_run_scan(r)) == 0 &&
	    (rc = ph_run_plan(r)) == 0)
		rc = ph_run_result(&r->j, ph_run_pass(r));
	rc = ph_run_end(r, rc, stats);
	free(r);
	return rc;
}
