/* SPDX-License-Identifier: ISC */
/* Backup reads: pipelined SFTP reads delivered in archive order, or local
 * reads beneath the root (fetch.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "fetch.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"

/* Bytes asked for and not yet handed over. Where the archive can take an
 * entry back, only files up to HOLD_MEM are held here and the budget is
 * small; otherwise it must fit a held file of PH_FETCH_HOLD and more. */
#define BUDGET_UNDO (4u << 20)
#define BUDGET_HOLD (12u << 20)
#define HOLD_MEM (1u << 20)
#define MAX_OPEN 32          /* files open (or being opened) at once */
#define LOCAL_CHUNK (1u << 20)
/* Chunk buffers kept for reuse: a fresh one per read costs page faults
 * (an mmap per chunk), and on a VM the host's too; with them the copy out
 * of each reply was a quarter of an incremental backup's CPU. */
#define SPARE 128

enum { F_WAIT, F_OPENING, F_OPEN, F_FAILED };

struct fetch;

struct ffile {
	struct fetch *fe;
	size_t item;
	uint64_t size;
	struct ph_sftp_handle h;
	int state;
	int probe;            /* 0 waiting, 1 the size holds */
	int begun, consumed;
	int undo;             /* begun after a mark: a failure takes it back */
	unsigned refs;        /* requests in flight that point here */
	uint64_t next_off;    /* the next slot's offset */
	int err;
	char msg[200];
};

struct slot {
	struct ffile *f;
	uint64_t off;
	uint32_t len, have;
	uint8_t *buf;
	int sent, done, inflight, orphan;
	struct slot *next;
};

struct fetch {
	struct ph_brun *run;
	const struct ph_fetch_item *items;
	size_t n;
	const struct ph_fetch_ops *ops;
	struct ffile **win;   /* files [head, tail): win[i % MAX_OPEN] */
	size_t head, tail, slot_file;
	struct slot *first, *last;
	uint64_t buffered, budget, hold_mem;
	uint32_t chunk;
	int fatal;
	uint8_t *spare[SPARE]; /* chunk-sized buffers to reuse */
	size_t nspare;
};

static struct ffile *
fat(struct fetch *fe, size_t i)
{
	return fe->win[i % MAX_OPEN];
}

static void
ffile_unref(struct ffile *f)
{
	if (--f->refs == 0 && f->consumed)
		free(f);
}

static void
ffail(struct ffile *f, int err, const char *fmt, const char *detail)
{
	if (f->state == F_FAILED)
		return;
	f->state = F_FAILED;
	f->err = err;
	snprintf(f->msg, sizeof(f->msg), fmt, detail ? detail : "");
}

static char *
rpath_of(struct fetch *fe, size_t i)
{
	return ph_rpath_join(fe->run->rroot, ph_entry_raw(fe->items[i].e));
}

static void read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

static int
send_slot(struct fetch *fe, struct slot *sl)
{
	struct ffile *f = sl->f;
	int rc;

	rc = ph_sftp_read(fe->run->sftp, &f->h, sl->off + sl->have, sl->len - sl->have,
	                  read_cb, sl);
	if (rc != 0)
		return rc;
	sl->sent = sl->inflight = 1;
	f->refs++;
	return 0;
}

static void
read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct slot *sl = arg;
	struct ffile *f = sl->f;
	struct fetch *fe = f->fe;

	(void)s;
	sl->inflight = 0;
	if (sl->orphan) {
		free(sl->buf);
		free(sl);
		ffile_unref(f);
		return;
	}
	if (r->type == PH_FXP_DATA) {
		if (r->len == 0 || r->len > sl->len - sl->have) {
			ffail(f, PHSYNC_EPROTO, "the server sent more bytes than asked for%s", NULL);
			sl->done = 1;
		} else {
			memcpy(sl->buf + sl->have, r->data, r->len);
			sl->have += r->len;
			/* A short read asks for the rest of its range. */
			if (sl->have < sl->len && f->state != F_FAILED && !fe->fatal) {
				int rc = send_slot(fe, sl);

				if (rc != 0 && !fe->fatal)
					fe->fatal = rc;
			} else
				sl->done = 1;
		}
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		ffail(f, PHSYNC_EREMOTE, "the file ends before the size the server listed (it "
		      "shrank, or the server lies)%s; left out of the archive", NULL);
		sl->done = 1;
	} else {
		ffail(f, r->err ? r->err : PHSYNC_EPROTO, "reading: %s", r->msg && r->msg[0] ?
		      r->msg : phsync_strerror(r->err ? r->err : PHSYNC_EPROTO));
		sl->done = 1;
		if (r->type == 0 && !fe->fatal)
			fe->fatal = r->err ? r->err : PHSYNC_ECONNECT;
	}
	ffile_unref(f);
}

/* The read across the listed end: S-1..S+1 must give exactly one byte
 * (a file of 0 bytes: EOF at 0). Sent first, so a file whose size moved
 * since the listing is known before its header would be written. */
static void
probe_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct ffile *f = arg;
	int want = f->size > 0 ? 1 : 0;
	int got = r->type == PH_FXP_DATA ? (int)r->len :
	          r->type == PH_FXP_STATUS && r->status == PH_FX_EOF ? 0 : -1;

	(void)s;
	if (got == want)
		f->probe = 1;
	else if (got > want)
		ffail(f, PHSYNC_EREMOTE, "the file grew since it was listed (still being "
		      "written?)%s; left out of this archive, the next one takes it", NULL);
	else if (got >= 0)
		ffail(f, PHSYNC_EREMOTE, "the file is shorter than the size the server listed "
		      "(it shrank, or the server lies)%s; left out of the archive", NULL);
	else {
		ffail(f, r->err ? r->err : PHSYNC_EPROTO, "reading: %s", r->msg && r->msg[0] ?
		      r->msg : phsync_strerror(r->err ? r->err : PHSYNC_EPROTO));
		if (r->type == 0 && !f->fe->fatal)
			f->fe->fatal = r->err ? r->err : PHSYNC_ECONNECT;
	}
	ffile_unref(f);
}

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct ffile *f = arg;
	struct fetch *fe = f->fe;
	struct slot *sl;
	int rc = 0;

	(void)s;
	if (r->type != PH_FXP_HANDLE) {
		ffail(f, r->err ? r->err : PHSYNC_EPROTO, "cannot open: %s", r->msg && r->msg[0] ?
		      r->msg : phsync_strerror(r->err ? r->err : PHSYNC_EPROTO));
		if (r->type == 0 && !fe->fatal)
			fe->fatal = r->err ? r->err : PHSYNC_ECONNECT;
		ffile_unref(f);
		return;
	}
	(void)ph_sftp_handle_set(&f->h, r);
	if (f->state == F_FAILED || fe->fatal) {
		ph_sftp_close(fe->run->sftp, &f->h, NULL, NULL);
		f->h.len = 0;
		ffile_unref(f);
		return;
	}
	f->state = F_OPEN;
	rc = ph_sftp_read(fe->run->sftp, &f->h, f->size > 0 ? f->size - 1 : 0, 2, probe_cb, f);
	if (rc == 0)
		f->refs++;
	for (sl = fe->first; sl != NULL && rc == 0; sl = sl->next)
		if (sl->f == f && !sl->sent)
			rc = send_slot(fe, sl);
	if (rc != 0 && !fe->fatal)
		fe->fatal = rc;
	ffile_unref(f);
}

static int
start_file(struct fetch *fe)
{
	size_t i = fe->tail;
	const struct ph_entry *e = fe->items[i].e;
	struct ffile *f = calloc(1, sizeof(*f));
	char *rp;
	int rc = 0;

	if (f == NULL)
		return PHSYNC_ENOMEM;
	f->fe = fe;
	f->item = i;
	f->size = e->type == PH_T_DIR ? 0 : e->size;
	f->refs = 1;   /* the window's */
	fe->win[i % MAX_OPEN] = f;
	fe->tail++;
	if (e->type == PH_T_DIR) {
		f->state = F_OPEN;
		f->probe = 1;
		return 0;
	}
	if ((rp = rpath_of(fe, i)) == NULL)
		return PHSYNC_ENOMEM;
	f->state = F_OPENING;
	rc = ph_sftp_open(fe->run->sftp, rp, PH_FXF_READ, NULL, open_cb, f);
	free(rp);
	if (rc == 0)
		f->refs++;
	return rc;
}

static int
make_slot(struct fetch *fe, struct ffile *f)
{
	struct slot *sl = calloc(1, sizeof(*sl));
	uint64_t left = f->size - f->next_off;

	if (sl == NULL)
		return PHSYNC_ENOMEM;
	sl->f = f;
	sl->off = f->next_off;
	sl->len = left < fe->chunk ? (uint32_t)left : fe->chunk;
	if (sl->len == fe->chunk && fe->nspare > 0)
		sl->buf = fe->spare[--fe->nspare];
	else if ((sl->buf = malloc(sl->len)) == NULL) {
		free(sl);
		return PHSYNC_ENOMEM;
	}
	f->next_off += sl->len;
	fe->buffered += sl->len;
	if (fe->last != NULL)
		fe->last->next = sl;
	else
		fe->first = sl;
	fe->last = sl;
	if (f->state == F_OPEN)
		return send_slot(fe, sl);
	return 0;
}

/* Takes the head slot off the queue; frees it unless a request for it is
 * still out (then the reply frees it). */
static void
drop_head_slot(struct fetch *fe)
{
	struct slot *sl = fe->first;

	fe->first = sl->next;
	if (fe->first == NULL)
		fe->last = NULL;
	fe->buffered -= sl->len;
	if (sl->inflight) {
		sl->orphan = 1;
		return;
	}
	if (sl->len == fe->chunk && fe->nspare < SPARE)
		fe->spare[fe->nspare++] = sl->buf;
	else
		free(sl->buf);
	free(sl);
}

static void
retire(struct fetch *fe, struct ffile *f)
{
	if (f->h.len > 0)
		ph_sftp_close(fe->run->sftp, &f->h, NULL, NULL);
	f->h.len = 0;
	f->consumed = 1;
	fe->win[f->item % MAX_OPEN] = NULL;
	fe->head++;
	if (fe->slot_file < fe->head)
		fe->slot_file = fe->head;
	ffile_unref(f);
}

/* Hands over what the head file has ready. Returns 1 when something
 * moved, 0 when it waits for replies, or a PHSYNC_E*. */
static int
consume(struct fetch *fe)
{
	const struct ph_fetch_ops *ops = fe->ops;
	struct ffile *f = fat(fe, fe->head);
	int rc, moved = 0;

	if (f->state == F_FAILED) {
		if (f->begun && f->undo && (rc = ops->undo(ops->arg, f->item)) != 0)
			return rc;
		if (f->begun && !f->undo) {
			return ph_err(fe->run->ctx, f->err ? f->err : PHSYNC_EREMOTE,
			              "%s: %s: its header already promised %llu bytes, so the "
			              "archive was abandoned rather than hold wrong content; run "
			              "again (or --exclude it)", ph_entry_raw(fe->items[f->item].e),
			              f->msg, (unsigned long long)f->size);
		}
		/* Left out: nothing of it was written. */
		while (fe->first != NULL && fe->first->f == f)
			drop_head_slot(fe);
		if (f->state == F_FAILED && f->next_off < f->size)
			f->next_off = f->size;  /* no more slots for it */
		ops->failed(ops->arg, f->item, f->err, f->msg);
		retire(fe, f);
		return 1;
	}
	if (!f->begun) {
		int ready = f->probe == 1 && f->state == F_OPEN;
		struct slot *sl;

		if (ready && f->size <= fe->hold_mem) {
			/* Held: every byte in before the header. */
			ready = f->next_off == f->size;
			for (sl = fe->first; ready && sl != NULL && sl->f == f; sl = sl->next)
				ready = sl->done;
		} else if (ready && f->size > 0) {
			ready = fe->first != NULL && fe->first->f == f && fe->first->done;
		}
		if (!ready)
			return 0;
		sl = fe->first != NULL && fe->first->f == f ? fe->first : NULL;
		if (f->size > fe->hold_mem && f->size <= PH_FETCH_HOLD) {
			/* Streamed, with the way back a held file would have. */
			if ((rc = ops->mark(ops->arg)) != 0)
				return rc;
			f->undo = 1;
		}
		rc = ops->begin(ops->arg, f->item, f->size, fe->items[f->item].e->mtime, 0,
		                sl ? sl->buf : NULL, sl ? sl->have : 0);
		if (rc != 0)
			return rc;
		f->begun = 1;
		moved = 1;
	}
	while (fe->first != NULL && fe->first->f == f && fe->first->done &&
	       f->state != F_FAILED) {
		struct slot *sl = fe->first;

		if ((rc = ops->data(ops->arg, f->item, sl->buf, sl->have)) != 0)
			return rc;
		drop_head_slot(fe);
		moved = 1;
	}
	if (f->state == F_FAILED)
		return 1;   /* said on the next call */
	if (f->next_off == f->size && (fe->first == NULL || fe->first->f != f)) {
		if ((rc = ops->end(ops->arg, f->item)) != 0)
			return rc;
		retire(fe, f);
		moved = 1;
	}
	return moved;
}

static int
fetch_remote(struct fetch *fe)
{
	struct ph_brun *run = fe->run;
	int rc = 0;

	fe->chunk = ph_sftp_max_read(run->sftp);
	if (fe->chunk == 0 || fe->chunk > (1u << 20))
		fe->chunk = 32768;
	while (fe->head < fe->n && rc >= 0) {
		if (run->ctx->interrupted) {
			rc = PHSYNC_EINTR;
			break;
		}
		while (rc == 0 && fe->tail < fe->n && fe->tail - fe->head < MAX_OPEN)
			rc = start_file(fe);
		if (fe->slot_file < fe->head)
			fe->slot_file = fe->head;
		while (rc == 0 && fe->slot_file < fe->tail) {
			struct ffile *f = fat(fe, fe->slot_file);

			if (f->state == F_FAILED || f->next_off >= f->size) {
				fe->slot_file++;
				continue;
			}
			if (fe->buffered + fe->chunk > fe->budget)
				break;
			rc = make_slot(fe, f);
		}
		if (rc == 0 && fe->fatal)
			rc = fe->fatal;
		if (rc != 0)
			break;
		/* Only files started: all of the window can be handed over in
		 * one pass (small files come whole in a reply), and the next
		 * one is not open yet. */
		while (fe->head < fe->tail && (rc = consume(fe)) == 1)
			;
		if (rc < 0)
			break;
		rc = 0;
		if (fe->head < fe->n && (rc = ph_sftp_pump(run->sftp, 200)) != 0)
			break;
		if (fe->fatal && (rc = fe->fatal) != 0)
			break;
		ph_emit_progress(&run->ev, NULL);
	}
	return rc;
}

/* A local file, opened beneath the root without following symlinks. */
static int
local_open(struct ph_brun *run, const char *rel, int *fd)
{
	const char *base;
	char *dir;
	int dfd, rc;

	if ((rc = ph_local_split(rel, &dir, &base)) != 0)
		return rc;
	rc = ph_local_opendir(run->lroot, dir, &dfd);
	free(dir);
	if (rc != 0)
		return rc;
	*fd = ph_openat(dfd, base, PH_O_RDONLY | PH_O_NOFOLLOW | PH_O_NONBLOCK, 0);
	rc = *fd < 0 ? ph_err_from_errno(-*fd) : 0;
	ph_close(dfd);
	return rc;
}

static ssize_t
read_full(int fd, uint8_t *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int
fetch_local_one(struct fetch *fe, size_t i, uint8_t *buf)
{
	const struct ph_fetch_ops *ops = fe->ops;
	const struct ph_entry *e = fe->items[i].e;
	struct ph_stat st;
	uint64_t left;
	ssize_t r;
	int fd = -1, rc;
	char msg[200];

	if (e->type == PH_T_DIR) {
		if ((rc = ops->begin(ops->arg, i, 0, e->mtime, 0, NULL, 0)) != 0)
			return rc;
		return ops->end(ops->arg, i);
	}
	if ((rc = local_open(fe->run, ph_entry_raw(e), &fd)) != 0 || ph_fstat(fd, &st) != 0 ||
	    st.type != PH_FT_REG) {
		snprintf(msg, sizeof(msg), "cannot open: %s", rc ? phsync_strerror(rc) :
		         "not a regular file any more");
		ops->failed(ops->arg, i, rc ? rc : PHSYNC_EIO, msg);
		if (fd >= 0)
			ph_close(fd);
		return 0;
	}
	left = st.size;
	if (left <= PH_FETCH_HOLD) {
		/* Held: read it whole (and one byte more, which must not come). */
		uint8_t *all = malloc(left + 1);

		if (all == NULL) {
			ph_close(fd);
			return PHSYNC_ENOMEM;
		}
		r = read_full(fd, all, left + 1);
		ph_close(fd);
		if (r != (ssize_t)left) {
			snprintf(msg, sizeof(msg), r < 0 ? "reading: %s" : "the file changed size "
			         "while read%s; left out of this archive", r < 0 ? strerror(errno) : "");
			ops->failed(ops->arg, i, PHSYNC_EIO, msg);
			free(all);
			return 0;
		}
		rc = ops->begin(ops->arg, i, left, st.mtime_sec, st.mtime_nsec,
		                all, left);
		if (rc == 0 && left > 0)
			rc = ops->data(ops->arg, i, all, left);
		if (rc == 0)
			rc = ops->end(ops->arg, i);
		free(all);
		return rc;
	}
	rc = ops->begin(ops->arg, i, left, st.mtime_sec, st.mtime_nsec, NULL, 0);
	while (rc == 0 && left > 0) {
		size_t want = left < LOCAL_CHUNK ? (size_t)left : LOCAL_CHUNK;

		r = read_full(fd, buf, want);
		if (r != (ssize_t)want) {
			rc = ph_err(fe->run->ctx, PHSYNC_EIO, "%s: %s after its header was written (it "
			            "promised %llu bytes), so the archive was abandoned rather than "
			            "hold wrong content", ph_entry_raw(e),
			            r < 0 ? strerror(errno) : "the file shrank",
			            (unsigned long long)st.size);
			break;
		}
		rc = ops->data(ops->arg, i, buf, want);
		left -= want;
		ph_emit_progress(&fe->run->ev, NULL);
		if (fe->run->ctx->interrupted)
			rc = PHSYNC_EINTR;
	}
	ph_close(fd);
	return rc == 0 ? ops->end(ops->arg, i) : rc;
}

int
ph_fetch_run(struct ph_brun *run, const struct ph_fetch_item *items, size_t n,
             const struct ph_fetch_ops *ops)
{
	struct fetch fe;
	size_t i;
	int rc = 0;

	memset(&fe, 0, sizeof(fe));
	fe.run = run;
	fe.items = items;
	fe.n = n;
	fe.ops = ops;
	fe.budget = ops->undo_ok ? BUDGET_UNDO : BUDGET_HOLD;
	fe.hold_mem = ops->undo_ok ? HOLD_MEM : PH_FETCH_HOLD;
	if (run->lroot >= 0) {
		uint8_t *buf = malloc(LOCAL_CHUNK);

		if (buf == NULL)
			return PHSYNC_ENOMEM;
		for (i = 0; i < n && rc == 0; i++) {
			rc = fetch_local_one(&fe, i, buf);
			if (rc == 0 && run->ctx->interrupted)
				rc = PHSYNC_EINTR;
		}
		free(buf);
		return rc;
	}
	if ((fe.win = calloc(MAX_OPEN, sizeof(*fe.win))) == NULL)
		return PHSYNC_ENOMEM;
	rc = fetch_remote(&fe);
	/* Requests of files left out may still be answered: wait for them
	 * (their callbacks free what they point to). */
	while (rc == 0 && ph_sftp_inflight(run->sftp) > 0)
		rc = ph_sftp_pump(run->sftp, 1000);
	if (rc != 0) {
		/* Replies still out would land in freed memory: end the link
		 * (every callback runs now), then free what is left. */
		ph_sftp_abort(run->sftp, rc);
	}
	while (fe.first != NULL)
		drop_head_slot(&fe);
	while (fe.nspare > 0)
		free(fe.spare[--fe.nspare]);
	for (i = fe.head; i < fe.tail; i++) {
		struct ffile *f = fat(&fe, i);

		if (f != NULL) {
			f->consumed = 1;
			ffile_unref(f);
		}
	}
	free(fe.win);
	return rc;
}
