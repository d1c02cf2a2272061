/* SPDX-License-Identifier: ISC */
/* Push: the commit (PF_COMMIT, enum cm_state). The closed temp file is
 * renamed into place (posix-rename@openssh.com where offered). A server
 * without posix-rename cannot RENAME over a file: the old one is renamed
 * aside first, the new one in, then the aside copy removed; if the new one
 * cannot go in, the old one is put back. At no moment is the content
 * nowhere: a run cut between the two renames leaves the aside copy, which
 * the next run puts back. A file changed on the server during the run
 * (the guard's LSTAT), a conflict, and a new file whose name was taken
 * meanwhile land beside, as a conflict copy. */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "push_int.h"

/* A name in the folder of f->rfinal (malloc'd), or NULL. */
static char *
sibling(const struct pfile *f, const char *name)
{
	const char *base = strrchr(f->rfinal, '/');
	size_t dl = base ? (size_t)(base - f->rfinal) + 1 : 0;
	char *r = malloc(dl + strlen(name) + 1);

	if (r != NULL) {
		memcpy(r, f->rfinal, dl);
		strcpy(r + dl, name);
	}
	return r;
}

static const char *
final_base(const struct pfile *f)
{
	const char *base = strrchr(f->rfinal, '/');

	return base ? base + 1 : f->rfinal;
}

static void
cleanup_step(struct pfile *f, const struct ph_sftp_reply *r, const char *msg)
{
	/* A refusal is a warning (msg says what is left and that the next
	 * run deals with it). */
	if (r->type != 0 && !pf_status_ok(r))
		ph_job_event(f->p->j, PHSYNC_EV_WARNING, f->e->path, NULL, 0,
		             r->err ? r->err : PHSYNC_EREMOTE, msg);
	pf_step(f);
}

static void
unaside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	cleanup_step(arg, r, "the old version could not be put back; it is kept beside "
	             "the file as .NAME.phsync-o.* and the next run puts it back");
}

static void
drop_aside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	cleanup_step(arg, r, "the old version, set aside during the replace, could not "
	             "be removed; the next run removes it");
}

/* Puts the old version back where it was (it was moved aside). */
static void
unaside(struct pfile *f)
{
	(void)ph_sftp_rename(pf_sftp(f), f->cm.raside, f->rfinal, PH_RENAME_PLAIN, unaside_cb, f);
}

static void new_clash_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* In place: counted, recorded (with the time the server shows, and the
 * signature of what was sent), told. */
static void
committed(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	XXH128_canonical_t c;

	pf_state(f, PF_DONE);
	f->tmp_made = 0;
	j->st.files_done++;
	j->st.bytes_committed += f->e->size;
	if (pf_delta_live(f))
		j->st.bytes_matched += f->u.dl.pd.copy_bytes;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(f->hs));
	if (!f->sig.done)
		pf_sig_feed(f, NULL, 0, 1); /* an empty file */
	/* Where the server refused our time, the one it gave (-1: not learned
	 * while the SETSTAT failed, which never matches: compared as before). */
	ph_job_record_pushed(j, f->e->path, f->e->size, f->e->mtime,
	                     f->rmtime != -1 ? f->rmtime : f->times_failed ? -1 : f->e->mtime,
	                     c.digest, f->sig.done ? f->sig.buf : NULL,
	                     f->sig.done ? f->sig.len : 0);
	ph_job_touch_parent(j, f->e->path);
	if (f->times_failed)
		ph_job_event(j, PHSYNC_EV_WARNING, f->e->path, NULL, 0, PHSYNC_EREMOTE,
		             "the server would not set this file's time or mode");
	ph_job_event(j, PHSYNC_EV_FILE_DONE, f->e->path,
	             f->mode == PM_RESUME ? "resume" : j->plan.v[f->ai].kind == PH_A_NEW ? "new" :
	             "update", f->e->size, 0, NULL);
	if (f->cm.raside != NULL)
		(void)ph_sftp_remove(pf_sftp(f), f->cm.raside, drop_aside_cb, f);
}

static void
rename_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct ph_job *j = f->p->j;

	if (pf_status_ok(r) && pf_live(f)) {
		committed(f);
	} else if (r->type == PH_FXP_STATUS && j->plan.v[f->ai].kind == PH_A_NEW && pf_live(f) &&
	           ph_sftp_stat(pf_sftp(f), PH_LSTAT, f->rfinal, new_clash_cb, f) == 0) {
		/* A new file's plain RENAME fails on a name that exists: one made
		 * since the listing, or the same name in another case on a server
		 * that ignores case. Which is it? */
		f->cm.rename_status = r->status;
		pf_cm_state(f, CM_CLASH);
	} else {
		/* Not in place: the old version goes back where it was. */
		if (f->cm.raside != NULL && r->type != 0)
			unaside(f);
		pf_reply_err(f, r, "the server could not rename the file into place");
	}
	(void)s;
	pf_step(f);
}

/* After a new file's rename failed: is its name taken? Then it lands
 * beside, as a conflict copy; else the rename's failure stands. */
static void
new_clash_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type == PH_FXP_ATTRS) {
		f->cm.beside = 1;   /* pf_commit goes on to CM_BESIDE */
	} else {
		struct ph_sftp_reply rr = *r;

		if (r->type != 0) {
			rr.type = PH_FXP_STATUS;
			rr.status = f->cm.rename_status;
			rr.err = ph_sftp_status_err(f->cm.rename_status);
			rr.msg = "";
		}
		pf_reply_err(f, &rr, "the server could not rename the file into place");
	}
	pf_step(f);
}

/* The incoming version went beside the changed remote file (or not). */
static void
beside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct ph_job *j = f->p->j;
	const struct ph_action *act = &j->plan.v[f->ai];

	(void)s;
	if (pf_status_ok(r) && pf_live(f)) {
		XXH128_canonical_t c;
		const char *base = strrchr(f->cm.rbeside, '/');

		pf_state(f, PF_DONE);
		f->tmp_made = 0;
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(f->hs));
		ph_job_conflict(j, f->e->path, base ? base + 1 : f->cm.rbeside, f->e->size,
		                act->kind == PH_A_UPDATE && act->how == PH_U_FIRST);
		ph_job_record(j, f->e->path, f->e->size, f->e->mtime, f->e->mtime, c.digest, 1);
		ph_job_touch_parent(j, f->e->path);
	} else {
		pf_reply_err(f, r, "the server would not put the incoming version beside the "
		             "changed file");
	}
	pf_step(f);
}

/* The file about to be replaced, as it is now: still what the plan saw? */
static void
guard_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct ph_job *j = f->p->j;
	const struct ph_entry *d = &j->dst.v[j->plan.v[f->ai].dst];

	(void)s;
	if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	} else if (r->type == PH_FXP_ATTRS) {
		if (!(r->attrs.flags & PH_ATTR_SIZE) || r->attrs.size != d->size ||
		    !(r->attrs.flags & PH_ATTR_ACMODTIME) || (int64_t)r->attrs.mtime != d->mtime)
			f->cm.beside = 1; /* changed during the run: kept */
	} else if (!(r->type == PH_FXP_STATUS && r->status == PH_FX_NO_SUCH_FILE)) {
		f->cm.beside = 1; /* cannot tell: never overwrite blind */
	}
	pf_step(f);   /* pf_commit goes on from CM_GUARD */
}

static void
aside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	int rc;

	(void)s;
	if (!pf_live(f)) {
		/* Cut off while the old file moved: if it did, put it back. */
		if (pf_status_ok(r))
			unaside(f);
		pf_step(f);
		return;
	}
	if (!pf_status_ok(r)) {
		int gone = r->type == PH_FXP_STATUS && r->status == PH_FX_NO_SUCH_FILE;

		free(f->cm.raside);
		f->cm.raside = NULL;
		if (!gone) {
			pf_reply_err(f, r, "the server would not move the old version aside to "
			             "replace it");
			pf_step(f);
			return;
		}
		/* The old file is gone already: nothing to set aside. */
	}
	if ((rc = ph_sftp_rename(pf_sftp(f), f->rtmp, f->rfinal, PH_RENAME_PLAIN, rename_cb, f)) != 0) {
		if (f->cm.raside != NULL)
			unaside(f);
		pf_fail(f, rc, "cannot queue a rename");
	} else {
		pf_cm_state(f, CM_RENAME);
	}
	pf_step(f);
}

/* Sends the rename that lands the temp: beside, aside first, or onto the
 * name. Returns 0 or the PHSYNC_E* of a request that could not go. */
static int
commit_target(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	const struct ph_action *act = &j->plan.v[f->ai];
	char name[256];
	int rc;

	if (f->cm.beside) {
		if (ph_conflict_name(name, sizeof(name), final_base(f), j->started, 1) != 0 ||
		    (f->cm.rbeside = sibling(f, name)) == NULL)
			return PHSYNC_ENOMEM;
		/* Plain RENAME: never replaces an existing name. */
		if ((rc = ph_sftp_rename(pf_sftp(f), f->rtmp, f->cm.rbeside, PH_RENAME_PLAIN,
		                         beside_cb, f)) != 0)
			return rc;
		return pf_cm_state(f, CM_BESIDE);
	}
	if (act->kind == PH_A_UPDATE && !(ph_sftp_exts(j->sftp) & PH_EXT_POSIX_RENAME)) {
		/* Plain RENAME will not replace: the old file goes aside first. */
		if (ph_temp_name(name, sizeof(name), final_base(f), PH_TEMP_OLD, &f->p->owner) != 0 ||
		    (f->cm.raside = sibling(f, name)) == NULL)
			return PHSYNC_ENOMEM;
		if ((rc = ph_sftp_rename(pf_sftp(f), f->rfinal, f->cm.raside, PH_RENAME_PLAIN,
		                         aside_cb, f)) != 0)
			return rc;
		return pf_cm_state(f, CM_ASIDE);
	}
	/* A new file: plain RENAME, which never replaces a name taken since
	 * the listing (new_clash_cb). */
	if ((rc = ph_sftp_rename(pf_sftp(f), f->rtmp, f->rfinal,
	                         act->kind != PH_A_NEW ? PH_RENAME_POSIX : PH_RENAME_PLAIN,
	                         rename_cb, f)) != 0)
		return rc;
	return pf_cm_state(f, CM_RENAME);
}

/* PF_COMMIT, whenever nothing of f is in flight: the next step. */
void
pf_commit(struct pfile *f)
{
	const struct ph_action *act = &f->p->j->plan.v[f->ai];
	int rc = 0;

	switch (f->cm.state) {
	case CM_START:
		if (act->kind == PH_A_UPDATE && !f->cm.beside) {
			/* Replace only what the plan saw: a file edited on the phone
			 * during the run is kept, the new version put beside. */
			if ((rc = ph_sftp_stat(pf_sftp(f), PH_LSTAT, f->rfinal, guard_cb, f)) == 0)
				rc = pf_cm_state(f, CM_GUARD);
			break;
		}
		rc = commit_target(f);
		break;
	case CM_GUARD:
	case CM_CLASH:
		rc = commit_target(f);
		break;
	default:
		return;   /* a rename's callback moves f on */
	}
	if (rc != 0)
		pf_queue_failed(f, rc);
}
