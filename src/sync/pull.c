/* SPDX-License-Identifier: ISC */
/* Pull executor: remote files stream into local temp files through many
 * pipelined SFTP reads, several files at once. This thread drives the
 * network; the bytes go to the local I/O thread (lio.c), which writes,
 * makes files durable and renames them into place. Folders are made first
 * and get their times back last. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "phsync/delta.h"

#include "buf.h"
#include "cfdelta.h"
#include "dbound.h"
#include "lio.h"
#include "ctx.h"
#include "job.h"
#include "local.h"
#include "reap.h"
#include "sigfd.h"
#include "platform.h"

#define MAX_FILES 64          /* files open at once */
#define MAX_READS 96          /* read requests in flight, all files */
#define MAX_READS_FILE 32     /* read requests in flight, one file */
#define PH_RESUME_MIN_FILE (16u << 20) /* smaller files start over when cut */
#define DELTA_MIN (32u << 10)  /* smaller files come whole */
#define DELTA_READS_FILE 8     /* delta reads in flight, one file */
#define COPY_BUF (256u << 10)
/* Bytes of strong hash per block in the signature a pull sends: with the
 * 4-byte rolling sum, a wrong block match needs a 72-bit coincidence, and
 * the delta's END hash (XXH3-128 of the whole file) is checked anyway: a
 * file built wrong is never kept. 5 instead of 8 cuts the signature by a
 * quarter (bench/bench_wire.py: 1.25 MB up for 60 edited photos, then
 * 0.94 MB). */
#define PULL_STRONG 5

struct pull;

struct xfer {
	struct pull *p;
	size_t ai;                 /* plan index */
	const struct ph_entry *e;
	uint8_t h[PH_SFTP_MAX_HANDLE];
	uint32_t hlen;
	struct ph_lio_file *wf;    /* the local temp file, until finished */
	const char *final;         /* points into e->path */
	uint64_t next_off;         /* next offset to ask for */
	uint64_t got;              /* bytes that arrived, in complete replies */
	uint64_t hi;               /* end of the furthest bytes that arrived */
	uint64_t eof_at;           /* lowest offset the server said EOF at */
	unsigned reads;
	int probed;                /* the read at the listed size was sent */
	int opening, failed, silent, done;
	int sign_pending;          /* open; its old copy is signed by the
	                              main loop's next turn (sign_next) */
	size_t slot;               /* index in p->active */
	/* A delta through the helper (docs/PROTOCOL.md): the signature of the
	 * local old copy went out with phsync-delta-start; the delta comes
	 * back in order, COPY ops are read from the old copy, LITERAL ops
	 * written as sent, and END's hash must match what was built. */
	int delta;
	int dstarted;              /* the helper took the signature */
	int basis;                 /* the local old copy, -1 */
	phsync_delta_reader *dr;
	uint64_t dnext;            /* next delta offset to ask for */
	unsigned dwin;             /* delta reads it may have in flight */
	uint64_t dfed;             /* delta bytes received, in order */
	int dshort, deof, dend;    /* a short reply / EOF / END came */
	uint64_t dlen;             /* END: the new file's length and hash */
	uint8_t dhash[16];
	uint64_t matched;          /* bytes taken from the old copy */
	/* A delta through check-file (cfdelta.c), when no helper runs: the
	 * server's digests of the new file's blocks come first (cf_wait),
	 * then the main loop hashes the old copy where those blocks may be
	 * (sign_pending), then the blocks found are copied from the old copy
	 * (basis) and the rest read as in a plain pull. */
	struct ph_cf *cf;
	int cf_wait;
	int cf_probe;              /* its check-file is the run's first (probe) */
	int cf_hold;               /* waits for the probe's answer (sign_next) */
};

struct rreq {
	struct xfer *x;
	uint64_t off;
	uint32_t len;
};

struct pull {
	struct ph_job *j;
	struct ph_lio *lio;
	struct xfer **active;      /* files in flight */
	size_t nactive;
	size_t reads;
	uint32_t chunk;
	size_t max_files;
	int fatal;                 /* stop starting files (full disk, dead link) */
	int stopping;              /* interrupted: drop everything quietly */
	int nocheck;               /* the server refused check-file: not asked again */
	int cf_probing;            /* the first check-file is out, unanswered */
	int cf_known;              /* ... it was answered, not refused */
	uint8_t *cbuf;             /* COPY bytes from an old copy, on their way */
};

static int xfer_maybe_done(struct xfer *x);

static void
xfer_fail(struct xfer *x, int err, const char *msg)
{
	struct pull *p = x->p;

	if (x->failed)
		return;
	x->failed = 1;
	if (x->wf != NULL) {
		/* A large file cut by the link or a stop keeps its good prefix
		 * for the next run; one that failed on its own starts over. */
		int keep = !x->e->nosize && x->e->size >= PH_RESUME_MIN_FILE &&
		           (x->silent || p->stopping || err == PHSYNC_EINTR || err == PHSYNC_ECONNECT);

		ph_lio_finish(p->lio, x->wf, keep ? PH_LIO_KEEP : PH_LIO_ABORT);
		x->wf = NULL;
	}
	if (x->hlen > 0) {
		ph_sftp_close(p->j->sftp, x->h, x->hlen, NULL, NULL);
		x->hlen = 0;
	}
	if (err == PHSYNC_ENOSPC && !p->fatal)
		p->fatal = ph_err(p->j->ctx, PHSYNC_ENOSPC,
		                  "no space left on the local disk; stopped (partial "
		                  "files were removed, existing files are intact)");
	if (x->silent || p->stopping)
		return;
	p->j->st.files_failed++;
	ph_job_event(p->j, PHSYNC_EV_FILE_FAILED, x->e->path, NULL, x->e->size, err, msg);
}

static void
xfer_free(struct xfer *x)
{
	struct pull *p = x->p;

	p->active[x->slot] = p->active[--p->nactive];
	p->active[x->slot]->slot = x->slot;
	if (x->wf != NULL)
		ph_lio_file_free(x->wf);
	/* The I/O thread's copy of it (wf) may be the last reference to the
	 * old copy, or this one: see reap(). */
	ph_reap_release(&p->j->reap, x->basis);
	phsync_delta_reader_free(x->dr);
	ph_cf_free(x->cf);
	free(x);
}

static void read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* A reply to a file that already failed, through a dead link (type 0) or
 * during a stop: fails the file if it has not failed yet and says the
 * reply is moot. */
static int
reply_moot(struct xfer *x, const struct ph_sftp_reply *r)
{
	if (!x->failed && r->type != 0 && !x->p->stopping)
		return 0;
	if (r->type == 0)
		x->silent = 1;
	if (!x->failed)
		xfer_fail(x, r->err ? r->err : PHSYNC_EINTR, "connection lost");
	return 1;
}

/* Is there more to ask for? The listed size is a hint, never trusted: a
 * file of known size S is read up to S plus one read at S that must answer
 * EOF (else the file grew); a file of unknown size is read until EOF. */
static int
want_more(const struct xfer *x)
{
	if (x->delta)
		return !x->dend && !x->dshort && !x->deof;
	if (x->eof_at != UINT64_MAX)
		return 0;
	if (x->e->nosize)
		return 1;
	return x->next_off < x->e->size || !x->probed;
}

static int
queue_read(struct xfer *x, uint64_t off, uint32_t len)
{
	struct pull *p = x->p;
	struct rreq *rq = malloc(sizeof(*rq));
	int rc;

	if (rq == NULL)
		return PHSYNC_ENOMEM;
	rq->x = x;
	rq->off = off;
	rq->len = len;
	if ((rc = ph_sftp_read(p->j->sftp, x->h, x->hlen, off, len, read_cb, rq)) != 0) {
		free(rq);
		return rc;
	}
	x->reads++;
	p->reads++;
	return 0;
}

static void dread_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

static int
issue_reads(struct xfer *x)
{
	struct pull *p = x->p;
	int rc;

	while (x->delta && want_more(x) && x->reads < x->dwin && p->reads < MAX_READS) {
		struct rreq *rq = malloc(sizeof(*rq));

		if (rq == NULL)
			return PHSYNC_ENOMEM;
		rq->x = x;
		rq->off = x->dnext;
		rq->len = p->chunk;
		if ((rc = ph_sftp_helper_delta_read(p->j->sftp, x->h, x->hlen, rq->off, rq->len,
		                                    dread_cb, rq)) != 0) {
			free(rq);
			return rc;
		}
		x->dnext += rq->len;
		x->reads++;
		p->reads++;
	}
	while (!x->delta && want_more(x) && x->reads < MAX_READS_FILE && p->reads < MAX_READS) {
		uint32_t len = p->chunk;

		if (x->cf != NULL && x->next_off < x->e->size) {
			int64_t src;
			uint64_t run;

			ph_cf_at(x->cf, x->next_off, &src, &run);
			if (src >= 0) {
				/* Blocks the old copy holds: the I/O thread copies them. */
				if (ph_lio_copy(p->lio, x->wf, x->next_off, (uint64_t)src,
				                (size_t)run) != 0)
					return PHSYNC_ENOMEM;
				x->next_off += run;
				x->got += run;
				x->hi = x->next_off > x->hi ? x->next_off : x->hi;
				x->matched += run;
				p->j->st.bytes_done += run;
				continue;
			}
			if (run < len)
				len = (uint32_t)run;
		}
		if (!x->e->nosize && x->next_off < x->e->size && x->e->size - x->next_off < len)
			len = (uint32_t)(x->e->size - x->next_off);
		if ((rc = queue_read(x, x->next_off, len)) != 0)
			return rc;
		if (!x->e->nosize && x->next_off >= x->e->size)
			x->probed = 1;
		x->next_off += len;
	}
	return 0;
}

/* Commits the file only when every byte from 0 to the EOF the server
 * reported arrived in complete replies, and that EOF is the listed size
 * (or the size was unknown). Anything else aborts the file: it is retried
 * by the next run, never kept cut or padded. */
static void
xfer_complete(struct xfer *x)
{
	struct pull *p = x->p;
	char msg[160];

	if (x->delta) {
		if (!x->dend) {
			xfer_fail(x, PHSYNC_EPROTO, "the helper's delta ended before its end; not "
			          "copied (retried next run)");
			return;
		}
		if (!x->e->nosize && x->dlen != x->e->size) {
			snprintf(msg, sizeof(msg), "the file is %llu bytes now, not the %llu the "
			         "helper listed (changed while read?); not copied, retried next run",
			         (unsigned long long)x->dlen, (unsigned long long)x->e->size);
			xfer_fail(x, PHSYNC_EREMOTE, msg);
			return;
		}
		ph_sftp_close(p->j->sftp, x->h, x->hlen, NULL, NULL);
		x->hlen = 0;
		x->wf->expect = x->dlen;
		x->wf->check_hash = 1;
		memcpy(x->wf->want_hash, x->dhash, 16);
		x->wf->matched = x->matched;
		ph_lio_finish(p->lio, x->wf, 1);
		x->wf = NULL;
		x->done = 1;
		return;
	}
	if (x->eof_at == UINT64_MAX || x->got != x->eof_at || x->hi > x->eof_at) {
		xfer_fail(x, PHSYNC_EREMOTE, "the server's replies did not cover the file; "
		          "not copied (retried next run)");
		return;
	}
	if (!x->e->nosize && x->eof_at != x->e->size) {
		snprintf(msg, sizeof(msg), "the file ends at byte %llu, not at the %llu the "
		         "server listed (changed while read?); not copied, retried next run",
		         (unsigned long long)x->eof_at, (unsigned long long)x->e->size);
		xfer_fail(x, PHSYNC_EREMOTE, msg);
		return;
	}
	ph_sftp_close(p->j->sftp, x->h, x->hlen, NULL, NULL);
	x->hlen = 0;
	x->wf->expect = x->got;
	x->wf->matched = x->matched;
	ph_lio_finish(p->lio, x->wf, 1);
	x->wf = NULL;
	x->done = 1;
}

/* Frees x when nothing of it is in flight; returns 1 when it did. */
static int
xfer_maybe_done(struct xfer *x)
{
	if (x->reads > 0 || x->opening)
		return 0;
	if (!x->failed && x->p->stopping)
		xfer_fail(x, PHSYNC_EINTR, "interrupted");
	if (!x->failed && !want_more(x))
		xfer_complete(x);
	if (x->failed || x->done) {
		xfer_free(x);
		return 1;
	}
	return 0;
}

static void
read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;
	struct pull *p = x->p;
	uint64_t end = rq->off + r->len;

	(void)s;
	x->reads--;
	p->reads--;
	p->j->busy = x->e->path;
	if (reply_moot(x, r)) {
		/* nothing more to do with it */
	} else if (r->type == PH_FXP_DATA && r->len > rq->len) {
		xfer_fail(x, PHSYNC_EPROTO, "the server sent more data than asked for");
	} else if (r->type == PH_FXP_DATA && r->len > 0 && !x->e->nosize && end > x->e->size) {
		xfer_fail(x, PHSYNC_EREMOTE, "the file grew on the server while it was read; "
		          "not copied (retried next run)");
	} else if (r->type == PH_FXP_DATA && r->len > 0 && end > x->eof_at) {
		xfer_fail(x, PHSYNC_EREMOTE, "the file changed on the server while it was read "
		          "(data past the end it reported); not copied, retried next run");
	} else if (r->type == PH_FXP_DATA && r->len > 0) {
		if (ph_lio_write(p->lio, x->wf, rq->off, r->data, r->len) != 0) {
			xfer_fail(x, PHSYNC_ENOMEM, "out of memory");
		} else {
			x->got += r->len;
			if (end > x->hi)
				x->hi = end;
			p->j->st.bytes_done += r->len;
			/* A short read: ask for the rest of this range. */
			if (r->len < rq->len && queue_read(x, end, rq->len - r->len) != 0)
				xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
		}
	} else if (r->type == PH_FXP_DATA ||
	           (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF)) {
		/* EOF (an empty DATA reply counts as one). */
		if (rq->off < x->eof_at)
			x->eof_at = rq->off;
		if (x->hi > x->eof_at)
			xfer_fail(x, PHSYNC_EPROTO, "the server reported an end before data it "
			          "had sent");
	} else {
		xfer_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		          r->msg[0] ? r->msg : "the server refused to read this file");
	}
	free(rq);
	if (!x->failed && issue_reads(x) != 0)
		xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	xfer_maybe_done(x);
}

/* Applies delta bytes as they come: COPY from the old copy, LITERAL as
 * sent, both written at their place in the new file. No op may write past
 * the listed size (dbound.h): else msg says why. */
static int
delta_apply(struct xfer *x, const uint8_t *data, size_t len, char *msg, size_t msglen)
{
	struct pull *p = x->p;
	struct phsync_in in = { data, len, 0 };
	struct phsync_delta_op op;
	int rc;

	for (;;) {
		if ((rc = phsync_delta_read(x->dr, &in, 0, &op)) != 0)
			return rc;
		if (op.type == PHSYNC_OP_NONE)
			return 0;
		if ((rc = ph_dbound_op(&op, x->e->size, msg, msglen)) != 0)
			return rc;
		if (op.type == PHSYNC_OP_END) {
			x->dend = 1;
			x->dlen = op.len;
			memcpy(x->dhash, op.hash, 16);
		} else if (op.type == PHSYNC_OP_LITERAL) {
			if (ph_lio_write(p->lio, x->wf, op.out_off, op.data, (size_t)op.len) != 0)
				return PHSYNC_ENOMEM;
			p->j->st.bytes_done += op.len;
		} else {
			/* The I/O thread reads the old copy itself (one copy of the
			 * bytes fewer, and off this thread). */
			if (x->wf->basis < 0 && (x->wf->basis = dup(x->basis)) < 0)
				return PHSYNC_ENOMEM;
			if (ph_lio_copy(p->lio, x->wf, op.out_off, op.off, (size_t)op.len) != 0)
				return PHSYNC_ENOMEM;
			x->matched += op.len;
			p->j->st.bytes_done += op.len;
		}
	}
}

static void
dread_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;
	struct pull *p = x->p;
	char msg[200];
	int rc;

	(void)s;
	x->reads--;
	p->reads--;
	p->j->busy = x->e->path;
	if (!x->delta) {
		/* The helper refused the delta and the file went back to plain
		 * reads: what was asked of the delta is moot. */
	} else if (reply_moot(x, r)) {
		/* nothing more to do with it */
	} else if (r->type == PH_FXP_DATA) {
		if (!x->dstarted || r->len == 0 || r->len > rq->len || x->dshort ||
		    rq->off != x->dfed) {
			xfer_fail(x, PHSYNC_EPROTO, "the helper sent delta bytes out of order or "
			          "more than asked for");
		} else {
			if (r->len < rq->len)
				x->dshort = 1; /* only the last reply may be short */
			else
				x->dwin = DELTA_READS_FILE;
			x->dfed += r->len;
			if ((rc = delta_apply(x, r->data, r->len, msg, sizeof(msg))) != 0)
				xfer_fail(x, rc == PHSYNC_ENOMEM || rc == PHSYNC_EREMOTE ? rc :
				          PHSYNC_EPROTO, rc == PHSYNC_ENOMEM ? "out of memory" :
				          rc == PHSYNC_EREMOTE ? msg :
				          "the helper sent a malformed delta; not copied");
		}
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		x->deof = 1;
	} else {
		xfer_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		          r->msg[0] ? r->msg : "the helper refused the delta");
	}
	free(rq);
	if (!x->failed && issue_reads(x) != 0)
		xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	xfer_maybe_done(x);
}

static void
dstart_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct xfer *x = arg;

	(void)s;
	x->opening = 0;
	if (reply_moot(x, r)) {
		/* nothing more to do with it */
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_OK) {
		x->dstarted = 1;
	} else {
		/* The helper would not take the signature (too many deltas at
		 * once, say): the file comes whole over the same handle. */
		x->delta = 0;
		close(x->basis);
		x->basis = -1;
		if (issue_reads(x) != 0)
			xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	}
	xfer_maybe_done(x);
}

/* Is a delta worth asking for, the destination's old copy being d? */
static int
delta_wanted(const struct xfer *x, const struct ph_entry *d)
{
	const struct pull *p = x->p;

	return ph_sftp_helper(p->j->sftp) >= 1 && !x->e->nosize && x->e->size >= DELTA_MIN &&
	       !d->nosize && d->size >= DELTA_MIN && p->j->lroot >= 0 && p->cbuf != NULL;
}

/* The local old copy (the plan's destination entry d) opened for reading,
 * or -1 when it is no longer what the plan saw: no basis to trust. */
static int
open_basis(struct pull *p, const struct ph_entry *d)
{
	char *dir = NULL;
	const char *base;
	struct stat st;
	int dfd = -1, fd = -1;

	if (ph_local_split(ph_entry_dpath(d), &dir, &base) == 0 &&
	    ph_local_opendir(p->j->lroot, dir, &dfd) == 0 &&
	    (fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) >= 0 &&
	    (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != d->size ||
	     (int64_t)st.st_mtime != d->mtime)) {
		close(fd);
		fd = -1;
	}
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return fd;
}

/* The signature of the local old copy (the plan's destination entry d,
 * for which delta_wanted said yes); the file stays open as the delta's
 * basis. Returns 1 with the delta asked for, 0 to read the file whole. */
static int
delta_begin(struct xfer *x, const struct ph_entry *d)
{
	struct pull *p = x->p;
	struct ph_job *j = p->j;
	struct ph_buf sig = { NULL, 0, 0, PH_SFTP_MAX_PACKET - 1024 };
	int fd, ok = 0;

	if ((fd = open_basis(p, d)) < 0)
		return 0;
	/* A signature too large for one request (its buffer's max) means
	 * the file comes whole. */
	if (ph_sig_fd(fd, d->size, 0, PULL_STRONG, p->cbuf, COPY_BUF, &sig) != 0)
		goto out;
	if (phsync_delta_reader_new(j->ctx, d->size, &x->dr) != 0)
		goto out;
	if (ph_sftp_helper_delta_start(j->sftp, x->h, x->hlen, sig.data, sig.len, dstart_cb,
	                               x) != 0) {
		phsync_delta_reader_free(x->dr);
		x->dr = NULL;
		goto out;
	}
	x->delta = 1;
	/* One read first: the delta of an edited photo is a few KiB and comes
	 * whole in it. Eight each (DELTA_READS_FILE) held slots of the global
	 * window with seven reads that could only answer EOF. A full reply (a
	 * big delta) opens the window. */
	x->dwin = 1;
	x->basis = fd;
	x->opening = 1;     /* until the helper answers the start */
	fd = -1;
	ok = 1;
out:
	ph_buf_free(&sig);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Is a check-file delta worth asking for (no helper; see cfdelta.h)? */
static int
cf_wanted(const struct xfer *x, const struct ph_entry *d)
{
	const struct pull *p = x->p;

	return ph_sftp_helper(p->j->sftp) == 0 && !p->nocheck && ph_cf_available() &&
	       !x->e->nosize && x->e->size >= DELTA_MIN && x->e->size <= PH_CF_MAX_SIZE &&
	       !d->nosize && d->size >= DELTA_MIN &&
	       p->j->lroot >= 0 && p->cbuf != NULL;
}

/* Once the digests and samples are all in, the old copy is hashed by the
 * main loop's next turn (sign_next); without digests the file is read
 * whole. */
static void
cf_settle(struct xfer *x)
{
	if (x->cf_wait && x->reads == 0) {
		x->cf_wait = 0;
		if (x->cf != NULL && !x->failed && !x->p->stopping) {
			x->sign_pending = 1;    /* opening stays set until then */
		} else {
			x->opening = 0;
			if (!x->failed && !x->p->stopping && issue_reads(x) != 0)
				xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
		}
	}
	xfer_maybe_done(x);
}

static void
cf_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;
	struct pull *p = x->p;
	int moot;

	(void)s;
	x->reads--;
	p->reads--;
	if ((moot = reply_moot(x, r)) != 0) {
		/* nothing more to do with it */
	} else if (x->cf != NULL && ph_cf_take(x->cf, r) != 0) {
		/* A refusal (OpenSSH, Dropbear: unknown request) means none of
		 * this server's; an odd reply, none for this file. Either way the
		 * file is read whole. */
		if (r->type == PH_FXP_STATUS && r->status == PH_FX_OP_UNSUPPORTED)
			p->nocheck = 1;
		ph_cf_free(x->cf);
		x->cf = NULL;
	}
	if (x->cf_probe) {
		/* The files held for this answer go on (sign_next): with digests
		 * unless refused. A probe lost with its file is tried again. */
		x->cf_probe = 0;
		p->cf_probing = 0;
		p->cf_known = !moot && !p->nocheck;
	}
	free(rq);
	cf_settle(x);
}

static void
cf_sample_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct rreq *rq = arg;
	struct xfer *x = rq->x;

	(void)s;
	x->reads--;
	x->p->reads--;
	if (r->type == 0 && !x->failed) {
		x->silent = 1;
		xfer_fail(x, r->err ? r->err : PHSYNC_EINTR, "connection lost");
	} else if (r->type == PH_FXP_DATA && x->cf != NULL) {
		ph_cf_sample_take(x->cf, (uint32_t)rq->off, r->data, r->len);
	}
	free(rq);
	cf_settle(x);
}

/* Asks the server for the digests of the new file's blocks; the file
 * waits for them (opening). Returns 1 when asked, 0 to read it whole. */
static int
cf_start(struct xfer *x)
{
	struct pull *p = x->p;
	struct rreq *rq;
	uint32_t block, i, n, slen;
	uint64_t len;

	if (ph_cf_new(x->e->size, &x->cf) != 0)
		return 0;
	ph_cf_request(x->cf, &len, &block);
	if ((rq = malloc(sizeof(*rq))) == NULL ||
	    ph_sftp_check_file(p->j->sftp, x->h, x->hlen, PH_CF_ALGS, 0, len, block, cf_cb,
	                       rq) != 0) {
		free(rq);
		ph_cf_free(x->cf);
		x->cf = NULL;
		return 0;
	}
	rq->x = x;
	rq->off = 0;
	rq->len = 0;
	x->reads++;
	p->reads++;
	n = ph_cf_samples(x->cf, &slen);
	for (i = 0; i < n; i++) {
		if ((rq = malloc(sizeof(*rq))) == NULL ||
		    ph_sftp_read(p->j->sftp, x->h, x->hlen, ph_cf_sample_off(x->cf, i), slen,
		                 cf_sample_cb, rq) != 0) {
			free(rq);
			break;
		}
		rq->x = x;
		rq->off = i;
		rq->len = slen;
		x->reads++;
		p->reads++;
	}
	x->cf_wait = 1;
	x->opening = 1;
	if (!p->cf_known) {
		/* Until the server answers one, this is the run's probe. */
		x->cf_probe = 1;
		p->cf_probing = 1;
	}
	return 1;
}

/* The old copy's blocks that the new file holds (every reply is in). */
static void
cf_begin(struct xfer *x, const struct ph_entry *d)
{
	struct pull *p = x->p;
	int fd = open_basis(p, d);

	if (fd >= 0 && ph_cf_match(x->cf, fd, d->size, p->cbuf, COPY_BUF) > 0 &&
	    (x->wf->basis = dup(fd)) >= 0) {
		x->basis = fd;
		return;
	}
	if (fd >= 0)
		close(fd);
	ph_cf_free(x->cf);
	x->cf = NULL;
}

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct xfer *x = arg;
	struct pull *p = x->p;

	(void)s;
	x->opening = 0;
	if (r->type != PH_FXP_HANDLE) {
		if (r->type == 0)
			x->silent = 1;
		xfer_fail(x, r->err ? r->err : PHSYNC_EPROTO,
		          r->msg[0] ? r->msg : "the server would not open this file");
		xfer_maybe_done(x);
		return;
	}
	memcpy(x->h, r->data, r->len);
	x->hlen = r->len;
	if (p->stopping) {
		xfer_maybe_done(x);
		return;
	}
	/* The I/O thread creates the local temp file on the first write. */
	if ((x->wf = ph_lio_file_new(ph_entry_dpath(x->e))) == NULL) {
		xfer_fail(x, PHSYNC_ENOMEM, "out of memory");
		xfer_maybe_done(x);
		return;
	}
	{
		const struct ph_action *a = &p->j->plan.v[x->ai];

		/* New: the source's rw bits under the umask (as cp, rsync without
		 * -p). Replacing: the file keeps the bits it has. */
		if (a->kind == PH_A_UPDATE && a->dst >= 0) {
			const struct ph_entry *d = &p->j->dst.v[a->dst];

			x->wf->mode = d->mode & 0777;
			x->wf->exact_mode = 1;
			/* The file there is replaced only if it is still what the
			 * plan saw; a conflict goes beside it at once (a size no
			 * file has); on first contact only the same content is
			 * replaced. */
			x->wf->guard = 1;
			x->wf->guard_size = a->how == PH_U_CONFLICT ? UINT64_MAX : d->size;
			x->wf->guard_mtime = d->mtime;
			x->wf->guard_content = a->how == PH_U_FIRST;
			x->wf->conflict_time = p->j->started;
		} else {
			x->wf->mode = x->e->mode & 0666;
		}
	}
	x->wf->mtime = x->e->mtime;
	x->wf->cookie = x->ai;
	{
		/* Cut last time with the source as it is now: go on from the good
		 * prefix (sync.c dropped partials whose source changed). */
		struct ph_partial *pa = ph_job_partial(p->j, x->e->path);

		if (pa != NULL && pa->size == x->e->size && pa->mtime == x->e->mtime &&
		    pa->have < x->e->size && (x->wf->resume_name = strdup(pa->tmp)) != NULL) {
			x->wf->resume_have = pa->have;
			x->next_off = x->got = x->hi = pa->have;
			p->j->st.bytes_todo -= pa->have;
		} else {
			/* A file this side has an old copy of comes as a delta when
			 * the helper runs on the other end. Its signing waits for the
			 * main loop: OPEN replies come in bursts, and signing them all
			 * here would keep every delta start from the helper until the
			 * last was signed. */
			const struct ph_action *a = &p->j->plan.v[x->ai];

			if (a->kind == PH_A_UPDATE && a->dst >= 0 &&
			    delta_wanted(x, &p->j->dst.v[a->dst])) {
				x->sign_pending = 1;
				x->opening = 1;
				return;
			}
			if (a->kind == PH_A_UPDATE && a->dst >= 0 &&
			    cf_wanted(x, &p->j->dst.v[a->dst])) {
				/* One file asks first: OpenSSH and Dropbear refuse,
				 * and a burst of OPEN replies would each send the
				 * request and its sample reads before the refusal
				 * came. The others wait for that one answer. */
				if (p->cf_probing) {
					x->cf_hold = 1;
					x->opening = 1;
					return;
				}
				if (cf_start(x)) {
					xfer_maybe_done(x);
					return;
				}
			}
		}
	}
	if (issue_reads(x) != 0)
		xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
	xfer_maybe_done(x);
}

/* Signs one old copy waiting for it (see open_cb); the pump that follows
 * sends its delta start at once, so the helper works on it while the next
 * is signed. Files held for the check-file probe's answer go on once it
 * came. Returns 1 when one was signed or any let go. */
static int
sign_next(struct pull *p)
{
	size_t i;
	int held = 0;

	for (i = 0; !p->cf_probing && i < p->nactive;) {
		struct xfer *x = p->active[i];
		const struct ph_action *a = &p->j->plan.v[x->ai];

		if (!x->cf_hold) {
			i++;
			continue;
		}
		x->cf_hold = 0;
		x->opening = 0;
		held = 1;
		if (!x->failed && !p->stopping) {
			/* A probe lost with its file: this one asks (cf_start). */
			if (!(cf_wanted(x, &p->j->dst.v[a->dst]) && cf_start(x)) &&
			    issue_reads(x) != 0)
				xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
		}
		if (!xfer_maybe_done(x))
			i++;   /* else slot i now holds another file */
	}
	if (held)
		return 1;
	for (i = 0; i < p->nactive; i++) {
		struct xfer *x = p->active[i];

		if (!x->sign_pending)
			continue;
		x->sign_pending = 0;
		x->opening = 0;
		if (!x->failed && !p->stopping && x->cf != NULL)
			cf_begin(x, &p->j->dst.v[p->j->plan.v[x->ai].dst]);
		else if (!x->failed && !p->stopping)
			delta_begin(x, &p->j->dst.v[p->j->plan.v[x->ai].dst]);
		if (!x->failed && !p->stopping && issue_reads(x) != 0)
			xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
		xfer_maybe_done(x);
		return 1;
	}
	return 0;
}

static int
start_file(struct pull *p, size_t ai)
{
	struct ph_job *j = p->j;
	const struct ph_entry *e = &j->src.v[j->plan.v[ai].src];
	struct xfer *x = calloc(1, sizeof(*x));
	const char *dp = ph_entry_dpath(e), *slash = strrchr(dp, '/');
	char *rp;
	int rc;

	if (x == NULL || (rp = ph_job_rpath(j, ph_entry_raw(e))) == NULL) {
		free(x);
		return PHSYNC_ENOMEM;
	}
	x->p = p;
	x->ai = ai;
	x->e = e;
	x->final = slash ? slash + 1 : dp;
	x->eof_at = UINT64_MAX;
	x->basis = -1;
	x->opening = 1;
	rc = ph_sftp_open(j->sftp, rp, PH_FXF_READ, NULL, open_cb, x);
	free(rp);
	if (rc != 0) {
		free(x);
		return rc;
	}
	x->slot = p->nactive;
	p->active[p->nactive++] = x;
	return 0;
}

/* Keeps a copied file for --remove-source-files (a lost entry only means
 * the file stays on the phone). */
static void
offload_add(struct ph_job *j, uint32_t src, const uint8_t hash[16])
{
	if (j->noff == j->capoff) {
		size_t nc = j->capoff ? j->capoff * 2 : 64;
		struct ph_offload *nv = realloc(j->off, nc * sizeof(*nv));

		if (nv == NULL)
			return;
		j->off = nv;
		j->capoff = nc;
	}
	j->off[j->noff].src = src;
	memcpy(j->off[j->noff].hash, hash, 16);
	j->noff++;
}

/* A file that was resumed is complete, or failed (its temp removed with
 * it): its partial record goes, so the next run starts over. */
static void
partial_done(struct ph_job *j, const char *path)
{
	struct ph_partial *pa = ph_job_partial(j, path);
	int rc;

	if (pa == NULL || j->state == NULL || j->state_err != 0)
		return;
	if ((rc = ph_state_partial_drop(j->state, path)) != 0)
		j->state_err = rc;
	free(pa->path);
	pa->path = NULL;
}

/* Reports what the I/O thread finished. */
static void
reap(struct pull *p, int wait)
{
	struct ph_lio_file *done[64];
	size_t n, i;

	while ((n = ph_lio_pop(p->lio, done, 64, wait)) > 0) {
		for (i = 0; i < n; i++) {
			struct ph_job *j = p->j;
			const struct ph_action *a = &j->plan.v[done[i]->cookie];
			const struct ph_entry *e = &j->src.v[a->src];
			int err = done[i]->err;

			if (err == -ECANCELED) {
				/* aborted by us (already reported); a kept prefix is
				 * recorded for the next run */
				if (done[i]->kept > 0 && j->state != NULL && j->state_err == 0) {
					struct ph_partial pa = { NULL, done[i]->kept_name, e->size,
					                         done[i]->kept, e->mtime, 0 };
					int rc = ph_state_partial_put(j->state, e->path, &pa);

					if (rc != 0)
						j->state_err = rc;
				}
			} else if (err == -EBADMSG) {
				partial_done(j, e->path); /* its temp is gone: start over */
				j->st.files_failed++;
				ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size,
				             PHSYNC_EREMOTE, "the file built from the delta does not match "
				             "the hash of the source; not copied (retried next run)");
			} else if (err != 0) {
				int code = ph_err_from_errno(-err);

				partial_done(j, e->path); /* its temp is gone: start over */
				j->st.files_failed++;
				ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, code,
				             code == PHSYNC_EUNSAFE ?
				             "a symlink on the local side is in the way; not written through" :
				             strerror(-err));
			} else if (done[i]->landed == PH_LIO_BESIDE) {
				partial_done(j, e->path);
				ph_job_conflict(j, e->path, done[i]->beside, done[i]->size,
				                a->kind == PH_A_UPDATE && a->how == PH_U_FIRST);
				ph_job_record(j, e->path, done[i]->size, done[i]->dst_mtime, e->mtime,
				              done[i]->hash, 1);
				ph_job_touch_parent(j, e->path);
			} else {
				partial_done(j, e->path);
				j->st.files_done++;
				j->st.bytes_committed += done[i]->size;
				j->st.bytes_matched += done[i]->matched;
				ph_job_record(j, e->path, done[i]->size, done[i]->dst_mtime, e->mtime,
				              done[i]->hash, 0);
				ph_job_touch_parent(j, e->path);
				if (j->o->remove_source)
					offload_add(j, a->src, done[i]->hash);
				/* "resume": a cut run's prefix was kept, only the
				 * rest was read (bytes_done says how much). */
				ph_job_event(j, PHSYNC_EV_FILE_DONE, e->path,
				             done[i]->landed == PH_LIO_SAME ? "same" :
				             done[i]->resume_have > 0 ? "resume" :
				             a->kind == PH_A_NEW ? "new" : "update", done[i]->size, 0, NULL);
			}
			/* Its old copy (the delta's basis), replaced now: freeing
			 * its blocks is the reaper's (core/reap.c), not this
			 * thread's, 1.5-2 ms a photo here. */
			ph_reap_release(&j->reap, done[i]->basis);
			done[i]->basis = -1;
			ph_lio_file_free(done[i]);
		}
		wait = 0;
	}
	if (!p->fatal && ph_lio_error(p->lio) == -ENOSPC)
		p->fatal = ph_err(p->j->ctx, PHSYNC_ENOSPC,
		                  "no space left on the local disk; stopped (partial files "
		                  "were removed, existing files are intact)");
}

/* Makes the folders the plan needs, parents first. */
static void
make_dirs(struct pull *p)
{
	struct ph_job *j = p->j;
	size_t i;

	for (i = 0; i < j->plan.n; i++) {
		struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];
		char *dir;
		const char *base;
		int dfd, rc;

		if (a->kind != PH_A_MKDIR)
			continue;
		if (j->o->dry_run) {
			ph_job_dir_made(j, a->src);
			continue;
		}
		if ((rc = ph_local_split(ph_entry_dpath(e), &dir, &base)) == 0) {
			rc = ph_local_opendir(j->lroot, dir, &dfd);
			free(dir);
		}
		if (rc == 0) {
			/* The source's bits under the umask, as mkdir does; always
			 * writable by us, or its contents could not be made. */
			if (mkdirat(dfd, base, (e->mode & 0777) | 0700) != 0 && errno != EEXIST)
				rc = ph_err_from_errno(errno);
			close(dfd);
		}
		if (rc != 0) {
			size_t blocked = ph_plan_block_subtree(&j->plan, &j->src, i);

			j->st.files_failed++;
			ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "mkdir", 0, rc,
			             rc == PHSYNC_EUNSAFE ? "a symlink is in the way; not followed" :
			             "cannot create this folder");
			(void)blocked;
			continue;
		}
		ph_job_dir_made(j, a->src);
	}
}

static void
dir_failed(struct ph_job *j, const char *path, int err, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, path, NULL, 0, ph_err_from_errno(err), msg);
}

static void
dir_warn(struct ph_job *j, const char *path, int err, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	ph_job_event(j, PHSYNC_EV_WARNING, path, NULL, 0, ph_err_from_errno(err), msg);
}

/* Makes the renames in touched folders durable and gives them their source
 * times, deepest first. Their modes are left as made (or as they were). A
 * folder that cannot be made durable is a failure (the files in it may not
 * survive a power cut); one whose time cannot be set is a warning. */
static void
finish_dirs(struct pull *p)
{
	struct ph_job *j = p->j;
	size_t i = j->src.n;

	while (i-- > 0) {
		const struct ph_entry *e = &j->src.v[i];
		struct timespec ts[2];
		int dfd, rc;

		if (e->type != PH_T_DIR || !j->dirty[i])
			continue;
		if ((rc = ph_local_opendir(j->lroot, ph_entry_dpath(e), &dfd)) != 0) {
			if (rc != PHSYNC_ENOENT) {
				j->st.files_failed++;
				ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, 0, rc,
				             "cannot open this folder to make it durable");
			}
			continue;
		}
		if (j->o->fsync && fsync(dfd) != 0)
			dir_failed(j, e->path, errno, "cannot make this folder durable (fsync)");
		ts[0].tv_sec = e->mtime;
		ts[0].tv_nsec = 0;
		ts[1].tv_sec = e->mtime;
		ts[1].tv_nsec = 0;
		if (futimens(dfd, ts) != 0)
			dir_warn(j, e->path, errno, "cannot set this folder's time");
		close(dfd);
	}
	if (j->root_dirty) {
		struct timespec ts[2] = { { j->root_atime ? j->root_atime : j->root_mtime, 0 },
		                          { j->root_mtime, 0 } };

		if (j->o->fsync && fsync(j->lroot) != 0)
			dir_failed(j, ".", errno, "cannot make the destination folder durable (fsync)");
		if (futimens(j->lroot, ts) != 0)
			dir_warn(j, ".", errno, "cannot set the destination folder's time");
	}
}

int
ph_pull_run(struct ph_job *j)
{
	struct pull p;
	size_t ai = 0, i;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	p.j = j;
	p.chunk = ph_sftp_max_read(j->sftp);
	p.max_files = MAX_FILES;
	if (ph_sftp_max_handles(j->sftp) > 0 && ph_sftp_max_handles(j->sftp) / 2 < p.max_files)
		p.max_files = ph_sftp_max_handles(j->sftp) / 2 ? ph_sftp_max_handles(j->sftp) / 2 : 1;
	for (i = 0; i < j->plan.n; i++)
		if (j->plan.v[i].kind == PH_A_DIRTIME)
			j->dirty[j->plan.v[i].src] = 1;
	make_dirs(&p);
	if (j->o->dry_run) {
		ph_job_dry_run_files(j);
		return 0;
	}
	ph_move_run(j);
	if ((p.active = calloc(p.max_files, sizeof(*p.active))) == NULL)
		return PHSYNC_ENOMEM;
	/* For deltas (the helper's or check-file's); without it files simply
	 * come whole. */
	if (ph_sftp_helper(j->sftp) >= 1 || ph_cf_available())
		p.cbuf = malloc(COPY_BUF);
	if ((rc = ph_lio_new(j->lroot, j->o->fsync, &p.lio)) != 0)
		goto out;
	while (rc == 0) {
		if (j->ctx->interrupted) {
			/* Stop now, without waiting for the replies in flight (the
			 * server may be the reason for the Ctrl-C): the files in
			 * flight are abandoned below and their temp files removed. */
			p.stopping = 1;
			break;
		}
		while (!p.fatal && ai < j->plan.n && p.nactive < p.max_files &&
		       p.reads < MAX_READS) {
			uint8_t k = j->plan.v[ai].kind;

			if ((k == PH_A_NEW || k == PH_A_UPDATE) && (rc = start_file(&p, ai)) != 0)
				break;
			ai++;
		}
		if (rc != 0)
			break;
		/* Files that hit the global read cap get their turn again. A file
		 * that fails here with nothing in flight is freed now (it would
		 * otherwise wait forever for a reply that never comes). */
		for (i = 0; i < p.nactive && p.reads < MAX_READS;) {
			struct xfer *x = p.active[i];

			if (!x->failed && !x->opening && x->wf != NULL && x->reads < MAX_READS_FILE &&
			    want_more(x) && issue_reads(x) != 0) {
				xfer_fail(x, PHSYNC_ENOMEM, "cannot queue a read");
				if (xfer_maybe_done(x))
					continue; /* slot i now holds another file */
			}
			i++;
		}
		reap(&p, 0);
		ph_job_progress(j);
		if (p.nactive == 0 && (ai >= j->plan.n || p.fatal || p.stopping))
			break;
		/* One signature a turn, replies taken in between without waiting. */
		rc = ph_sftp_pump(j->sftp, sign_next(&p) ? 0 : 200);
		if (rc == PHSYNC_EINTR)
			rc = 0; /* handled at the top of the loop */
	}
	if (rc != 0) {
		/* The link died: every callback has run; drop what is left. */
		p.stopping = 1;
	}
	/* What the I/O thread already has is local work: let it finish, so
	 * every file committed is counted and its folder made durable. */
	while (ph_lio_pending(p.lio) > 0)
		reap(&p, 1);
	finish_dirs(&p);
	if (rc == 0)
		rc = p.fatal;
	if (rc == 0 && p.stopping)
		rc = PHSYNC_EINTR;
out:
	/* Callbacks still pending would touch freed files: abandon them with
	 * their temp files removed. */
	if (p.nactive > 0) {
		for (i = 0; i < p.nactive; i++)
			p.active[i]->silent = 1;
		ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EINTR);
	}
	while (p.nactive > 0) {
		struct xfer *x = p.active[p.nactive - 1];

		xfer_fail(x, PHSYNC_EINTR, "abandoned");
		xfer_free(x);
	}
	if (p.lio != NULL) {
		while (ph_lio_pending(p.lio) > 0)
			reap(&p, 1);
		ph_lio_free(p.lio);
	}
	free(p.active);
	free(p.cbuf);
	return rc;
}
