/* SPDX-License-Identifier: ISC */
/* Push: the temp file of a file being pushed. Created (PF_OPENING),
 * written through many pipelined WRITEs read straight from the local file
 * into the send buffer, or built from copy-data pieces of the old version
 * and writes of the literal bytes (PF_WRITING), then made durable and
 * given its times (PF_FINISHING) and closed (PF_CLOSING). See push_int.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pfs.h"
#include "push_int.h"

/* The most one copy-data request asks the server to copy: a phone copying
 * a whole video in one request could stay silent past the timeout. */
#define MAX_COPY (64u << 20)

/* Reads the next piece of the local file straight into the send buffer. */
static int
fill_from_file(void *arg, void *dst, uint32_t len)
{
	struct pfile *f = arg;
	size_t got = 0;

	while (got < len) {
		int64_t r = ph_pread(f->fd, (uint8_t *)dst + got, len - got, f->fill_off + got);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return ph_err_from_errno((int)-r);
		if (r == 0)
			return PHSYNC_ECORRUPT; /* the file shrank while being sent */
		got += (size_t)r;
	}
	/* Filled in order: the hash and signature of what was sent, with no
	 * second read. (A delta's were made on its planning read.) */
	if (!pf_delta_live(f)) {
		XXH3_128bits_update(f->hs, dst, len);
		pf_sig_feed(f, dst, len, f->fill_off + len == f->e->size);
	}
	return 0;
}

int
pf_more_to_send(const struct pfile *f)
{
	return pf_delta_live(f) ? f->u.dl.opi < f->u.dl.pd.n : f->next_off < f->e->size;
}

/* One WRITE or copy in flight: len bytes of it cross the link. */
struct wreq {
	struct pfile *f;
	uint64_t off;
	uint32_t len;
};

/* The per-file and per-run caps on pieces in flight: counted here only. */
static int
room_for_piece(const struct pfile *f)
{
	const struct push *p = f->p;

	return pf_live(f) && f->writes < MAX_WRITES_FILE && p->writes < MAX_WRITES &&
	       p->write_bytes < MAX_WRITE_BYTES;
}

static void
piece_queued(struct pfile *f, const struct wreq *w, uint32_t n)
{
	f->writes++;
	f->p->writes++;
	f->p->write_bytes += w->len;
	f->p->j->st.bytes_done += n;
}

static void
piece_answered(struct pfile *f, struct wreq *w)
{
	f->writes--;
	f->p->writes--;
	f->p->write_bytes -= w->len;
	free(w);
}

/* A piece that could not be queued: the file fails (returns 0), or the
 * request table is full (returns PHSYNC_ENOMEM: retried later). */
static int
piece_refused(struct pfile *f, struct wreq *w, int rc, const char *what)
{
	free(w);
	if (rc == PHSYNC_ECORRUPT) {
		pf_fail(f, PHSYNC_EIO, "the local file shrank while being sent; not sent "
		        "(retried next run)");
		return 0;
	}
	if (rc != PHSYNC_ENOMEM) {
		pf_fail(f, rc, what);
		return 0;
	}
	return rc;
}

static void
write_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct wreq *w = arg;
	struct pfile *f = w->f;

	(void)s;
	f->p->j->busy = f->e->path;   /* the progress line names it */
	if (f->rs.acked != NULL && pf_status_ok(r)) {
		uint64_t i = (w->off - f->rs.have0) / f->p->chunk;

		f->rs.acked[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	piece_answered(f, w);
	if (pf_live(f) && !pf_status_ok(r))
		pf_reply_err(f, r, "the server refused a write");
	pf_step(f);
}

static void
copy_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct wreq *w = arg;
	struct pfile *f = w->f;

	(void)s;
	piece_answered(f, w);
	if (pf_live(f) && !pf_status_ok(r)) {
		if (r->type != 0)
			pf_delta_forget(f);
		pf_reply_err(f, r, "the server could not copy from the old version (sent whole "
		             "next run)");
	}
	pf_step(f);
}

/* Queues a delta's pieces while there is room: copy-data for what the old
 * version holds, WRITEs for the rest. */
static int
issue_delta(struct pfile *f)
{
	struct push *p = f->p;
	struct pf_delta *d = &f->u.dl;

	if (d->state != DL_READY || f->h.len == 0)
		return 0;
	while (d->opi < d->pd.n && room_for_piece(f)) {
		const struct ph_dop *op = &d->pd.ops[d->opi];
		uint64_t left = op->len - d->op_pos;
		struct wreq *w = malloc(sizeof(*w));
		uint32_t n;
		int rc;

		if (w == NULL)
			return PHSYNC_ENOMEM;
		w->f = f;
		w->off = op->out_off + d->op_pos;
		if (op->copy) {
			n = left < MAX_COPY ? (uint32_t)left : MAX_COPY;
			w->len = 0; /* nothing of it crosses the link */
			rc = ph_sftp_copy_data(pf_sftp(f), &d->bh, op->off + d->op_pos, n,
			                       &f->h, w->off, copy_cb, w);
		} else {
			n = left < p->chunk ? (uint32_t)left : p->chunk;
			w->len = n;
			f->fill_off = w->off;
			rc = ph_sftp_write_fill(pf_sftp(f), &f->h, w->off, n, fill_from_file, f,
			                        write_cb, w);
		}
		if (rc != 0)
			return piece_refused(f, w, rc, op->copy ? "cannot queue a copy" :
			                     "cannot read the local file");
		if ((d->op_pos += n) == op->len) {
			d->opi++;
			d->op_pos = 0;
		}
		piece_queued(f, w, n);
	}
	return 0;
}

/* Queues writes while there is room. Returns 0, or PHSYNC_ENOMEM when the
 * request table is full (retried later); a file that cannot be read is
 * failed here. */
int
pf_issue_writes(struct pfile *f)
{
	struct push *p = f->p;

	if (pf_delta_live(f))
		return issue_delta(f);
	while (f->next_off < f->e->size && room_for_piece(f)) {
		uint64_t left = f->e->size - f->next_off;
		uint32_t n = left < p->chunk ? (uint32_t)left : p->chunk;
		struct wreq *w = malloc(sizeof(*w));
		int rc;

		if (w == NULL)
			return PHSYNC_ENOMEM;
		w->f = f;
		w->off = f->next_off;
		w->len = n;
		f->fill_off = f->next_off;
		rc = ph_sftp_write_fill(pf_sftp(f), &f->h, f->next_off, n, fill_from_file, f,
		                        write_cb, w);
		if (rc != 0)
			return piece_refused(f, w, rc, "cannot read the local file");
		f->next_off += n;
		piece_queued(f, w, n);
	}
	return 0;
}

static void
fsync_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (pf_live(f) && !pf_status_ok(r))
		pf_reply_err(f, r, "the server could not fsync the file");
	pf_step(f);
}

static void
fstat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_ACMODTIME) &&
	    (!(r->attrs.flags & PH_ATTR_SIZE) || r->attrs.size == f->e->size))
		f->rmtime = r->attrs.mtime;
	/* A file built from pieces of the old version must come out at the
	 * size planned; else it is not put in place. */
	if (pf_delta_live(f) && pf_live(f) && r->type != 0 &&
	    !(r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_SIZE) &&
	      r->attrs.size == f->e->size)) {
		pf_delta_forget(f);
		pf_fail(f, PHSYNC_EREMOTE, "the file built from the old version on the server "
		        "has the wrong size; not put in place (sent whole next run)");
	}
	pf_step(f);
}

static void
setstat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type == 0) {
		pf_reply_err(f, r, "connection lost");
	} else if (!pf_status_ok(r) && pf_live(f)) {
		/* Many phones cannot set times: warn and go on; the FSTAT sent
		 * behind this request learns the time the server gave the file,
		 * so the state can tell next time that it is unchanged (not sent
		 * again and again). */
		f->times_failed = 1;
	}
	pf_step(f);
}

/* PF_WRITING, once every piece is answered: the old version is closed,
 * the local file checked unchanged, and the temp made durable and given
 * its times (PF_FINISHING). */
static void
finish_sent(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	const struct ph_action *act = &j->plan.v[f->ai];
	struct ph_sftp_attrs a = { 0 };
	struct ph_stat st;
	int rc;

	/* Every copy is answered: the old version is not read again. */
	if (f->mode == PM_DELTA || f->mode == PM_HDELTA)
		pf_close(f, &f->u.dl.bh);
	/* All of it was sent: if the local file changed meanwhile (a video
	 * still being recorded), what went is not the file; it is not put in
	 * place, and the next run sends it whole. */
	if (ph_fstat(f->fd, &st) != 0 || st.size != f->e->size || st.mtime_sec != f->e->mtime) {
		pf_fail(f, PHSYNC_EIO, "the local file changed while it was sent; not "
		        "put in place (retried next run)");
		pf_step(f);
		return;
	}
	/* All data acknowledged: make it durable, set its times (and, when
	 * replacing a file, the bits that file had; a new file keeps what
	 * the server's umask made of the source's bits). */
	a.flags = PH_ATTR_ACMODTIME;
	a.atime = (uint32_t)f->e->mtime;
	a.mtime = (uint32_t)f->e->mtime;
	if (act->kind == PH_A_UPDATE && act->dst >= 0 && j->dst.v[act->dst].mode != 0) {
		a.flags |= PH_ATTR_PERMISSIONS;
		a.perm = j->dst.v[act->dst].mode & 0777;
	}
	rc = 0;
	if (j->o->fsync && (ph_sftp_exts(j->sftp) & PH_EXT_FSYNC))
		rc = ph_sftp_fsync(pf_sftp(f), &f->h, fsync_cb, f);
	if (rc == 0)
		rc = ph_sftp_fsetstat(pf_sftp(f), &f->h, &a, setstat_cb, f);
	/* The time the server kept (FAT: 2 s steps; refused: its own) is
	 * what the state records: read back right behind the SETSTAT. */
	if (rc == 0)
		rc = ph_sftp_fstat(pf_sftp(f), &f->h, fstat_cb, f);
	if (rc != 0)
		pf_queue_failed(f, rc);
	else
		pf_state(f, PF_FINISHING);
}

void
pf_send_step(struct pfile *f)
{
	int rc = pf_issue_writes(f);

	if (rc != 0) {
		pf_queue_failed(f, rc);
		return;
	}
	if (!pf_live(f)) {
		pf_step(f);
		return;
	}
	if (f->grp.inflight > 0 || pf_more_to_send(f) ||
	    ((f->mode == PM_DELTA || f->mode == PM_HDELTA) && f->u.dl.state == DL_CHECK))
		return;
	finish_sent(f);
}

static void
close_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->h.len = 0;
	if (pf_live(f) && !pf_status_ok(r))
		pf_reply_err(f, r, "the server could not close the file");
	/* Ctrl-C before the rename started: the file is abandoned (its temp
	 * removed), never half-way through a replace. */
	if (pf_live(f) && f->p->stopping)
		pf_fail(f, PHSYNC_EINTR, "interrupted");
	if (pf_live(f))
		pf_state(f, PF_COMMIT);
	pf_step(f);
}

/* PF_FINISHING, once fsync, times and FSTAT are answered. */
void
pf_close_temp(struct pfile *f)
{
	int rc = ph_sftp_close(pf_sftp(f), &f->h, close_cb, f);

	if (rc != 0) {
		pf_queue_failed(f, rc);
		return;
	}
	f->h.len = 0; /* being closed: never closed twice */
	pf_state(f, PF_CLOSING); /* close_cb moves on to PF_COMMIT */
}

static void
pf_open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type != PH_FXP_HANDLE) {
		/* Nothing was created: never remove a file of that name. */
		if (pf_live(f))
			pf_reply_err(f, r, "the server would not create the file");
	} else if (!pf_live(f)) {
		/* Failed (Ctrl-C) while the OPEN was in flight: the temp exists
		 * now, so close and remove it before the file is let go. */
		(void)ph_sftp_handle_set(&f->h, r);
		pf_close(f, &f->h);
		if (!f->rs.keep) /* a kept upload stays for the next run */
			pf_remove_temp(f);
	} else {
		(void)ph_sftp_handle_set(&f->h, r);
		f->tmp_made = 1;
		pf_state(f, PF_WRITING);
	}
	pf_step(f);
}

/* Creates the remote temp file (the caller has moved f to PF_OPENING). A
 * new file gets the source's rw bits, which the server's umask trims (as
 * cp and rsync without -p); a replacement gets its old bits at the end,
 * until then only we may read it. A resumed upload opens the temp an
 * earlier run kept, as it is. */
int
pf_open_temp(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	struct ph_sftp_attrs a = { 0 };

	if (f->mode == PM_RESUME)
		return ph_sftp_open(pf_sftp(f), f->rtmp, PH_FXF_WRITE, NULL, pf_open_cb, f);
	a.flags = PH_ATTR_PERMISSIONS;
	a.perm = j->plan.v[f->ai].kind == PH_A_UPDATE ? 0600 : f->e->mode & 0666;
	return ph_sftp_open(pf_sftp(f), f->rtmp, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_EXCL, &a,
	                    pf_open_cb, f);
}

