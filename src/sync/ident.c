/* SPDX-License-Identifier: ISC */
/* The local file's identity and git's racy-clean rule; see ident.h and
 * docs/ARCHITECTURE.md ("What a run trusts"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctx.h"
#include "ident.h"
#include "job.h"
#include "local.h"
#include "pfs.h"
#include "whole.h"

/* A record renewed with a fresh identity (its content checked). */
struct ph_renew {
	char *path;
	struct ph_ident id;
};

/* The folder of rel, open beneath the root: kept open from one call to
 * the next (files come in tree order, a folder's files together), so a
 * run over a million unchanged files opens each folder once. */
static int
dir_of(struct ph_job *j, const char *rel, const char **base)
{
	const char *slash = strrchr(rel, '/');
	size_t dl = slash ? (size_t)(slash - rel) : 0;
	char *dir;
	int dfd, rc;

	/* The folder already open: no copy of its name per file. */
	if (j->idir != NULL && j->idfd >= 0 && strncmp(j->idir, rel, dl) == 0 &&
	    j->idir[dl] == '\0') {
		*base = slash ? slash + 1 : rel;
		return j->idfd;
	}
	if ((rc = ph_local_split(rel, &dir, base)) != 0)
		return rc;
	if ((rc = ph_local_opendir(j->lroot, dir, &dfd)) != 0) {
		free(dir);
		return rc;
	}
	ph_ident_close(j);
	j->idir = dir;
	j->idfd = dfd;
	return dfd;
}

void
ph_ident_close(struct ph_job *j)
{
	if (j->idir != NULL && j->idfd >= 0)
		ph_close(j->idfd);
	free(j->idir);
	j->idir = NULL;
	j->idfd = -1;
}

static void
from_stat(const struct ph_stat *st, struct ph_ident *id)
{
	id->size = st->size;
	id->ino = st->ino;
	id->dev = st->dev;
	id->mtime = ph_mtime_fit(st->mtime_sec);
	id->mtime_ns = st->mtime_ns;
	id->ctime_ns = st->ctime_ns;
}

int
ph_ident_stat(struct ph_job *j, const char *rel, struct ph_ident *id)
{
	const char *base;
	struct ph_stat st;
	int dfd, rc;

	if (j->lroot < 0)
		return PHSYNC_ENOENT;
	if ((dfd = dir_of(j, rel, &base)) < 0)
		return dfd;
	rc = ph_fstatat(dfd, base, &st);
	rc = rc != 0 ? ph_err_from_errno(-rc) : st.type != PH_FT_REG ? PHSYNC_ENOENT : 0;
	if (rc != 0)
		return rc;
	from_stat(&st, id);
	return 0;
}

int
ph_ident_suspect(const struct ph_state_file *f, const struct ph_ident *id)
{
	if (!f->has_lid)
		return 0;
	if (id->ino != f->lino || id->dev != f->ldev || id->ctime_ns != f->lctime)
		return 1;
	/* Racy clean: a change right after the record, within the same clock
	 * step, leaves every time as recorded. */
	return f->lref == 0 || f->lctime >= f->lref - PH_IDENT_RACY_NS ||
	       id->mtime_ns >= f->lref - PH_IDENT_RACY_NS;
}

/* The local side's name of source entry e. */
static const char *
local_rel(const struct ph_job *j, const struct ph_entry *e)
{
	return j->dir == PHSYNC_PULL ? ph_entry_dpath(e) : ph_entry_raw(e);
}

void
ph_ident_fill(struct ph_job *j, const char *path, struct ph_state_file *f)
{
	const struct ph_entry *e;
	struct ph_ident id;
	int rc;

	f->has_lid = 0;
	if (f->hash == NULL)
		return;
	if (j->lid_st != NULL) {
		/* The pull's I/O thread stat'ed the file it had just renamed
		 * into place, through the folder's fd: the same inode, and the
		 * network thread opens no folder per file. */
		from_stat(j->lid_st, &id);
	} else {
		if ((e = ph_tree_find(&j->src, path)) == NULL)
			return;
		/* Folders change while a run carries out its plan: none kept
		 * open. */
		ph_ident_close(j);
		rc = ph_ident_stat(j, local_rel(j, e), &id);
		ph_ident_close(j);
		if (rc != 0)
			return;
	}
	f->has_lid = 1;
	f->lino = id.ino;
	f->ldev = id.dev;
	f->lctime = id.ctime_ns;
	/* Changed already (not as recorded): an identity that never matches. */
	if (id.size != f->lsize || id.mtime != f->lmtime)
		f->lctime = -1;
	/* A push read the file during the run: a change then (not its own)
	 * may hide behind the ctime seen now. Checked next run. */
	if (j->dir == PHSYNC_PUSH && id.ctime_ns > (int64_t)j->started * 1000000000 -
	                                          PH_IDENT_RACY_NS)
		f->lctime = -1;
}

static int
same_id(const struct ph_ident *a, const struct ph_ident *b)
{
	return a->size == b->size && a->ino == b->ino && a->dev == b->dev &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Renewals one run keeps (about 100 bytes each): a state upgraded from
 * schema 4 gives every row an identity over a few runs, not all at once. */
#define MAX_RENEW 65536

/* Queues path's record to be renewed with identity id. Returns 0 (a
 * renewal that cannot be kept is only done again next run). */
static int
queue_renew(struct ph_job *j, const char *path, const struct ph_ident *id)
{
	if (j->nrenew >= MAX_RENEW)
		return 0;
	if (j->nrenew == j->caprenew &&
	    ph_grow(&j->renew, &j->caprenew, sizeof(*j->renew), 16) != 0)
		return 0;
	if ((j->renew[j->nrenew].path = strdup(path)) == NULL)
		return 0;
	j->renew[j->nrenew++].id = *id;
	return 0;
}

int
ph_ident_changed(struct ph_job *j, const char *rel, const char *path,
                 const struct ph_state_file *f)
{
	struct ph_state_file r;
	struct ph_ident id, id2;
	uint8_t rh[16], h[16];
	uint64_t n = 0;
	int rc;

	if (j->state == NULL || (!f->has_lid && !f->has_hash) || ph_ident_stat(j, rel, &id) != 0)
		return 0;
	/* A record from before identities were kept (schema 4): trusted by
	 * size and time as then, and given the identity seen now. */
	if (!f->has_lid)
		return queue_renew(j, path, &id);
	if (!ph_ident_suspect(f, &id))
		return 0;
	if ((rc = ph_state_file_get(j->state, path, &r, rh)) < 0)
		return rc;
	if (rc == 0 || r.hash == NULL)
		return 1;
	/* The bytes decide; the identity must hold still around the read.
	 * A file another program holds unreadable (Windows' share modes)
	 * cannot be read now: trusted by size and time, as a record without
	 * an identity is, and not renewed; replacing it fails while it is
	 * held (the pull reports it then), and the next run asks again. */
	rc = ph_whole_local_errno(j, rel, h, &n);
	if (rc == -EBUSY)
		return 0;
	if (rc != 0 || n != r.lsize || memcmp(h, r.hash, 16) != 0 ||
	    ph_ident_stat(j, rel, &id2) != 0 || !same_id(&id, &id2))
		return 1;
	return queue_renew(j, path, &id);
}

int
ph_ident_changed_seen(struct ph_job *j, const char *rel, const char *path,
                      const struct ph_state_file *f, uint64_t seen, int64_t mtime)
{
	int64_t lim = f->lref - PH_IDENT_RACY_NS;

	/* ph_ident_suspect's answer for the identity seen: the same inode,
	 * device and ctime (64 bits of digest), the record out of the racy
	 * window, and the file's time (below mtime + 1 s) before it too. */
	if (j->state != NULL && seen != 0 && f->has_lid && f->lref != 0 && lim > 0 &&
	    f->lctime < lim && mtime < lim / 1000000000 - 1 &&
	    seen == ph_tree_ident_sum(f->lino, f->ldev, f->lctime))
		return 0;
	return ph_ident_changed(j, rel, path, f);
}

int
ph_ident_renew(struct ph_job *j)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < j->nrenew && rc == 0; i++) {
		struct ph_renew *w = &j->renew[i];
		struct ph_state_file f;
		uint8_t h[16], *sig = NULL;

		if ((rc = ph_state_file_get_sig(j->state, w->path, &f, h, &sig)) == 1) {
			f.has_lid = 1;
			f.lino = w->id.ino;
			f.ldev = w->id.dev;
			f.lctime = w->id.ctime_ns;
			rc = ph_state_file_done(j->state, w->path, &f);
		}
		free(sig);
	}
	ph_ident_renew_free(j);
	return rc < 0 ? rc : 0;
}

void
ph_ident_renew_free(struct ph_job *j)
{
	size_t i;

	for (i = 0; i < j->nrenew; i++)
		free(j->renew[i].path);
	free(j->renew);
	j->renew = NULL;
	j->nrenew = j->caprenew = 0;
}
