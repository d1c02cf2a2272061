/* SPDX-License-Identifier: ISC */
/* Push, PM_COMPARE (enum cmp_state): first contact with a remote file of
 * the same size: is it the same content? Read it and compare each piece
 * with the local file's bytes at the same offset (replies may come in any
 * order). The same: only its time is set. Else the local version goes
 * beside it (a whole upload). */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pfs.h"
#include "push_int.h"

struct creq {
	struct pfile *f;
	uint64_t off;
	uint32_t len;
};

static void cmp_read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

static int
cmp_queue(struct pfile *f, uint64_t off, uint32_t len)
{
	struct creq *q = malloc(sizeof(*q));
	int rc;

	if (q == NULL)
		return PHSYNC_ENOMEM;
	q->f = f;
	q->off = off;
	q->len = len;
	if ((rc = ph_sftp_read(pf_sftp(f), &f->h, off, len, cmp_read_cb, q)) != 0) {
		free(q);
		return rc;
	}
	f->u.cmp.reads++;
	return 0;
}

/* Not the same (said once: later replies have nothing more to say). */
static void
differs(struct pfile *f)
{
	if (f->u.cmp.state != CMP_DIFFER)
		pf_cmp_state(f, CMP_DIFFER);
}

static void
same_set_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type != 0 && !pf_status_ok(r))
		f->times_failed = 1;
	pf_step(f);
}

/* The LSTAT behind the SETSTAT: the time the server now shows is recorded. */
static void
same_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct ph_job *j = f->p->j;
	const struct ph_entry *d = &j->dst.v[j->plan.v[f->ai].dst];
	struct ph_stat st;
	int64_t rmtime = f->times_failed ? d->mtime : f->e->mtime;

	(void)s;
	if (r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_ACMODTIME))
		rmtime = (int64_t)r->attrs.mtime;
	if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	} else if (pf_live(f)) {
		if (ph_fstat(f->fd, &st) != 0 || st.size != f->e->size ||
		    st.mtime_sec != f->e->mtime) {
			pf_fail(f, PHSYNC_EIO, "the local file changed while it was compared; "
			        "retried next run");
		} else {
			/* Where the time could not be set, the server's stays. */
			pf_state(f, PF_DONE);
			j->st.files_done++;
			ph_job_record(j, f->e->path, f->e->size, f->e->mtime, rmtime, NULL, 0);
			ph_job_event(j, PHSYNC_EV_FILE_DONE, f->e->path, "same", f->e->size, 0, NULL);
		}
	}
	pf_step(f);
}

/* All read and the same: the remote file gets the local time, read back. */
static void
set_same_time(struct pfile *f)
{
	struct ph_sftp_attrs a = { 0 };

	a.flags = PH_ATTR_ACMODTIME;
	a.atime = (uint32_t)f->e->mtime;
	a.mtime = (uint32_t)f->e->mtime;
	if (pf_cmp_state(f, CMP_SETTIME) != 0)
		return;
	if (ph_sftp_setstat(pf_sftp(f), f->rfinal, &a, same_set_cb, f) != 0 ||
	    ph_sftp_stat(pf_sftp(f), PH_LSTAT, f->rfinal, same_cb, f) != 0)
		pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
}

/* Reads on while the content agrees; once nothing is in flight, the
 * verdict: the same (its time set) or not (put beside). */
static void
cmp_step(struct pfile *f)
{
	struct pf_cmp *c = &f->u.cmp;
	uint32_t chunk = ph_sftp_max_read(f->p->j->sftp);

	while (pf_live(f) && c->state == CMP_READ && c->off < f->e->size &&
	       c->reads < MAX_WRITES_FILE) {
		uint64_t left = f->e->size - c->off;
		uint32_t n = left < chunk ? (uint32_t)left : chunk;

		if (cmp_queue(f, c->off, n) != 0) {
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a read");
			return;
		}
		c->off += n;
	}
	if (!pf_live(f) || c->reads > 0 || f->state != PF_OLD || c->state == CMP_SETTIME)
		return;
	pf_close(f, &f->h);
	if (c->state == CMP_DIFFER) {
		f->cm.beside = 1;
		if (pf_state(f, PF_OPENING) == 0 && pf_open_temp(f) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
		return;
	}
	set_same_time(f);
}

static void
cmp_read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct creq *q = arg;
	struct pfile *f = q->f;

	(void)s;
	f->u.cmp.reads--;
	if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	} else if (!pf_live(f) || f->u.cmp.state == CMP_DIFFER) {
		/* nothing more to learn */
	} else if (r->type == PH_FXP_DATA && r->len > 0 && r->len <= q->len) {
		uint8_t *mine = malloc(r->len);
		int64_t n = mine ? ph_pread(f->fd, mine, r->len, q->off) : -1;

		if (mine == NULL)
			pf_fail(f, PHSYNC_ENOMEM, "out of memory");
		else if (n != (int64_t)r->len || memcmp(mine, r->data, r->len) != 0)
			differs(f);
		else if (r->len < q->len && cmp_queue(f, q->off + r->len, q->len - r->len) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a read");
		free(mine);
	} else {
		/* Shorter than listed, more than asked, unreadable: not the same. */
		differs(f);
	}
	free(q);
	cmp_step(f);
	pf_step(f);
}

void
pf_cmp_open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type == PH_FXP_HANDLE) {
		(void)ph_sftp_handle_set(&f->h, r);
		if (!pf_live(f)) /* interrupted meanwhile */
			pf_close(f, &f->h);
		else
			pf_cmp_state(f, CMP_READ);
	} else if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	} else if (pf_live(f)) {
		differs(f); /* unreadable: never taken as the same */
	}
	if (pf_live(f))
		cmp_step(f);
	pf_step(f);
}
