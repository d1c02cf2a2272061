/* SPDX-License-Identifier: ISC */
/* Push executor: local files stream to remote temp files through many
 * pipelined SFTP writes, several files at once; each is then fsync'ed
 * (fsync@openssh.com), given its times, closed and renamed into place
 * (posix-rename@openssh.com where offered). A server without posix-rename
 * cannot RENAME over a file: the old one is renamed aside first, the new
 * one in, then the aside copy removed; if the new one cannot go in, the old
 * one is put back. At no moment is the content nowhere: a run cut between
 * the two renames leaves the aside copy, which the next run puts back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "phsync/delta.h"
#include "ctx.h"
#include "job.h"
#include "local.h"
#include "dbound.h"
#include "pdelta.h"
#include "tempname.h"

#define MAX_FILES 64
#define MAX_WRITES 96
#define MAX_WRITES_FILE 32
/* Bytes of WRITE requests in flight: the server's channel window (2 MiB
 * on OpenSSH) bounds what moves anyway; more would only sit in memory. */
#define MAX_WRITE_BYTES (6u << 20)
/* After Ctrl-C: how long the temp files' removal may take before the link
 * is abandoned (the next run removes what is left). */
#define STOP_GRACE_MS 2000
/* A file this big whose upload is cut (dead link, timeout, Ctrl-C) keeps
 * its temp file on the server and its acknowledged prefix in the state;
 * the next push goes on from there (as a pull does). */
#define PH_PUSH_RESUME_MIN (16u << 20)
/* How much of a kept prefix is read back and compared before going on. */
#define PH_PUSH_RESUME_PROBE 65536
/* Smaller files go whole: the delta's extra round trips (open the old
 * version, read back the checked blocks) cost more than they save. */
#define PH_DELTA_MIN (32u << 10)

enum pstate {
	P_COMPARE,   /* first contact, same size: reading the remote file to
	                compare it with the local one */
	P_OPENING,   /* OPEN of the temp file sent */
	P_WRITING,   /* WRITEs, then fsync and times */
	P_CLOSING,   /* ready to CLOSE */
	P_CLOSEWAIT, /* CLOSE sent */
	P_RENAMING,  /* closed: ready to move into place (or beside) */
	P_GUARDWAIT, /* the LSTAT of the file to replace is awaited */
	P_RENAMEWAIT,/* a rename step's reply is awaited */
	P_DONE
};

struct push;

struct pfile {
	struct push *p;
	size_t ai;
	const struct ph_entry *e;
	int fd;                    /* local source */
	char *rtmp, *rfinal;       /* remote paths */
	char *raside;              /* the old file's aside copy, once moved */
	uint8_t h[PH_SFTP_MAX_HANDLE];
	uint32_t hlen;
	uint64_t next_off;
	unsigned writes;           /* WRITE requests in flight */
	unsigned pending;          /* every request in flight that calls back */
	int state, failed, silent, times_failed;
	int tmp_made;              /* the temp file exists on the server */
	int64_t rmtime;            /* the remote file's mtime, when the server
	                              would not take ours (-1: unknown) */
	XXH3_state_t *hs;          /* XXH3-128 of what was read and sent */
	phsync_sig_gen *sg;        /* block signature of what was sent (NULL:
	                              none, e.g. out of memory: it is optional) */
	uint8_t *sig;
	size_t siglen, sigcap;
	int sigdone;
	int beside;                /* land as a conflict copy beside rfinal */
	int guarded;               /* rfinal was checked just before the rename */
	int new_clash;             /* a new file's name was taken meanwhile */
	uint32_t rename_status;    /* the failed RENAME's status (new_clash) */
	uint8_t *acked;            /* resumable files: WRITE chunks the server
	                              acknowledged (bit per chunk of p->chunk) */
	int keep;                  /* cut: the temp stays for the next run */
	int resumed;               /* went on from a prefix an earlier run kept */
	uint64_t have0;            /* ... of this many bytes */
	char *rbeside;             /* the conflict copy's remote path */
	uint64_t cmp_off;          /* P_COMPARE: next offset to read */
	unsigned cmp_reads;        /* P_COMPARE: reads in flight */
	int cmp_differs;
	/* A delta upload: the temp file is built from copy-data pieces of the
	 * old version (open as bh) and writes of the literal bytes. */
	int delta;
	int dwait;                 /* the old version's OPEN or its checks are
	                              awaited: nothing is sent yet */
	int dstale;                /* the old version is not what the state
	                              signed: sent whole instead */
	int hsig;                  /* the signature comes from the helper (no
	                              usable one in the state) */
	uint64_t bsize;            /* ... of an old version of this size */
	uint8_t *hsig_data;        /* the helper's signature, planned against
	                              by the main loop's next turn (plan_next) */
	size_t hsig_len;
	struct ph_pdelta pd;
	struct ph_state_file rec;  /* the state's record the delta stands on */
	uint8_t rechash[16];
	size_t opi;                /* next op to send */
	uint64_t op_pos;           /* bytes of it sent */
	uint8_t bh[PH_SFTP_MAX_HANDLE];
	uint32_t bhlen;
	uint64_t fill_off;         /* local offset the next WRITE is read from */
	size_t slot;
};

struct push {
	struct ph_job *j;
	struct pfile **active;
	size_t nactive;
	size_t writes;
	uint64_t write_bytes;
	uint32_t chunk;
	struct ph_temp_owner owner;
	phsync_diff *diff;   /* the delta planner's, reused file after file */
	int planned;         /* a delta was planned this turn: the next waits
	                        until its requests are out */
	int fatal, stopping;
};

static void pf_step(struct pfile *f);
static void delta_forget(struct pfile *f);
static void sig_feed(struct pfile *f, const void *data, size_t len, int end);
static uint64_t acked_prefix(const struct pfile *f);

static void
cleanup_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	(void)r;
	f->pending--;
	pf_step(f);
}

/* Queues a request whose answer only releases f (counted, so f lives and
 * the request is sent before the run ends). */
static void
pf_cleanup(struct pfile *f, int rc)
{
	if (rc == 0)
		f->pending++;
}

/* Closes the handle h of f (if open) without waiting for the answer. */
static void
pf_close(struct pfile *f, const uint8_t *h, uint32_t *hlen)
{
	if (*hlen > 0)
		pf_cleanup(f, ph_sftp_close(f->p->j->sftp, h, *hlen, cleanup_cb, f));
	*hlen = 0;
}

static void
pf_fail(struct pfile *f, int err, const char *msg)
{
	struct ph_job *j = f->p->j;

	if (f->failed)
		return;
	f->failed = 1;
	pf_close(f, f->h, &f->hlen);
	pf_close(f, f->bh, &f->bhlen);
	/* Cut (the link died, timed out, or Ctrl-C) while a big file was being
	 * written: its temp stays, for the next run to go on from (pf_free
	 * records how much of it the server acknowledged). */
	if (f->acked != NULL && j->state != NULL && (f->silent || err == PHSYNC_EINTR) &&
	    (f->resumed || (f->tmp_made && f->state == P_WRITING)))
		f->keep = 1;
	if (f->tmp_made && f->state != P_DONE && !f->keep) {
		pf_cleanup(f, ph_sftp_remove(j->sftp, f->rtmp, cleanup_cb, f));
		f->tmp_made = 0;
	}
	if (err == PHSYNC_ENOSPC && !f->p->fatal)
		f->p->fatal = ph_err(j->ctx, PHSYNC_ENOSPC,
		                     "no space left on the server; stopped (partial files "
		                     "were removed, existing files are intact)");
	/* A write taken back unsent after Ctrl-C (sftp.c) is the stop too. */
	if (f->silent || f->p->stopping || err == PHSYNC_EINTR)
		return;
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, f->e->path, NULL, f->e->size, err, msg);
}

static void
pf_free(struct pfile *f)
{
	struct push *p = f->p;

	p->active[f->slot] = p->active[--p->nactive];
	p->active[f->slot]->slot = f->slot;
	if (f->keep) {
		/* Every reply is in: the acknowledged prefix is what the server
		 * holds (the next run checks it before it trusts it). */
		struct ph_job *j = p->j;
		const char *b = strrchr(f->rtmp, '/');
		struct ph_partial pa = { NULL, (char *)(b ? b + 1 : f->rtmp), f->e->size,
		                         acked_prefix(f), f->e->mtime, 0 };
		int rc = pa.have > 0 && pa.have < f->e->size ?
		         ph_state_partial_put(j->state, f->e->path, &pa) :
		         ph_state_partial_drop(j->state, f->e->path);

		if (rc != 0 && j->state_err == 0)
			j->state_err = rc;
	} else if (f->resumed && p->j->state != NULL) {
		/* Done, or failed otherwise (its temp removed): nothing to go on
		 * from any more. */
		int rc = ph_state_partial_drop(p->j->state, f->e->path);

		if (rc != 0 && p->j->state_err == 0)
			p->j->state_err = rc;
	}
	if (f->fd >= 0)
		close(f->fd);
	free(f->rtmp);
	free(f->rfinal);
	free(f->raside);
	free(f->rbeside);
	XXH3_freeState(f->hs);
	phsync_sig_gen_free(f->sg);
	free(f->sig);
	free(f->acked);
	free(f->hsig_data);
	ph_pdelta_free(&f->pd);
	free(f);
}

/* Frees f when it is finished and nothing of it is in flight; returns 1
 * when it did. */
static int
pf_settle(struct pfile *f)
{
	if ((f->failed || f->state == P_DONE) && f->pending == 0) {
		pf_free(f);
		return 1;
	}
	return 0;
}

static const char *
msg_of(const struct ph_sftp_reply *r, const char *dflt)
{
	return r->msg != NULL && r->msg[0] ? r->msg : dflt;
}

static int
status_ok(const struct ph_sftp_reply *r)
{
	return r->type == PH_FXP_STATUS && r->status == PH_FX_OK;
}

static void
reply_err(struct pfile *f, const struct ph_sftp_reply *r, const char *what)
{
	if (r->type == 0)
		f->silent = 1;
	pf_fail(f, r->err ? r->err : PHSYNC_EPROTO, msg_of(r, what));
}

struct wreq {
	struct pfile *f;
	uint64_t off;
	uint32_t len;
};

/* The prefix the server acknowledged without a gap. Chunks count from
 * where this run started writing (f->have0). */
static uint64_t
acked_prefix(const struct pfile *f)
{
	uint64_t c = f->p->chunk, n = (f->e->size - f->have0 + c - 1) / c, i;

	for (i = 0; i < n && (f->acked[i / 8] & (1u << (i % 8))); i++)
		;
	return f->have0 + i * c < f->e->size ? f->have0 + i * c : f->e->size;
}

static void
write_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct wreq *w = arg;
	struct pfile *f = w->f;

	(void)s;
	f->writes--;
	f->pending--;
	f->p->writes--;
	f->p->write_bytes -= w->len;
	f->p->j->busy = f->e->path;   /* the progress line names it */
	if (f->acked != NULL && status_ok(r)) {
		uint64_t i = (w->off - f->have0) / f->p->chunk;

		f->acked[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	free(w);
	if (!f->failed && !status_ok(r))
		reply_err(f, r, "the server refused a write");
	pf_step(f);
}

static void
fsync_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (!f->failed && !status_ok(r))
		reply_err(f, r, "the server could not fsync the file");
	pf_step(f);
}

static void
fstat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_ACMODTIME) &&
	    (!(r->attrs.flags & PH_ATTR_SIZE) || r->attrs.size == f->e->size))
		f->rmtime = r->attrs.mtime;
	/* A file built from pieces of the old version must come out at the
	 * size planned; else it is not put in place. */
	if (f->delta && !f->failed && r->type != 0 &&
	    !(r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_SIZE) &&
	      r->attrs.size == f->e->size)) {
		delta_forget(f);
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
	f->pending--;
	if (r->type == 0) {
		reply_err(f, r, "connection lost");
	} else if (!status_ok(r) && !f->failed) {
		/* Many phones cannot set times: warn and go on; the FSTAT sent
		 * behind this request learns the time the server gave the file,
		 * so the state can tell next time that it is unchanged (not sent
		 * again and again). */
		f->times_failed = 1;
	}
	pf_step(f);
}

static void
close_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	f->hlen = 0;
	if (!f->failed && !status_ok(r))
		reply_err(f, r, "the server could not close the file");
	/* Ctrl-C before the rename started: the file is abandoned (its temp
	 * removed), never half-way through a replace. */
	if (!f->failed && f->p->stopping)
		pf_fail(f, PHSYNC_EINTR, "interrupted");
	if (!f->failed)
		f->state = P_RENAMING;
	pf_step(f);
}

/* Releases f after a cleanup step of a replace; a refusal is a warning
 * (msg says what is left and that the next run deals with it). */
static void
aside_step_done(struct pfile *f, const struct ph_sftp_reply *r, const char *msg)
{
	f->pending--;
	if (r->type != 0 && !status_ok(r))
		ph_job_event(f->p->j, PHSYNC_EV_WARNING, f->e->path, NULL, 0,
		             r->err ? r->err : PHSYNC_EREMOTE, msg);
	pf_step(f);
}

static void
unaside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	aside_step_done(arg, r, "the old version could not be put back; it is kept beside "
	                "the file as .NAME.phsync-o.* and the next run puts it back");
}

static void
drop_aside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	aside_step_done(arg, r, "the old version, set aside during the replace, could not "
	                "be removed; the next run removes it");
}

static void new_clash_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

static void
rename_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	struct ph_job *j = f->p->j;

	f->pending--;
	if (status_ok(r) && !f->failed) {
		f->state = P_DONE;
		f->tmp_made = 0;
		j->st.files_done++;
		j->st.bytes_committed += f->e->size;
		if (f->delta)
			j->st.bytes_matched += f->pd.copy_bytes;
		/* Where the server refused our time, the one it gave (-1: not
		 * learned, which never matches: the file is compared as before). */
		{
			XXH128_canonical_t c;

			XXH128_canonicalFromHash(&c, XXH3_128bits_digest(f->hs));
			/* The time the server shows (-1: not learned while the
			 * SETSTAT failed, which never matches: compared as before). */
			if (!f->sigdone)
				sig_feed(f, NULL, 0, 1); /* an empty file */
			ph_job_record_pushed(j, f->e->path, f->e->size, f->e->mtime,
			                     f->rmtime != -1 ? f->rmtime :
			                     f->times_failed ? -1 : f->e->mtime, c.digest,
			                     f->sigdone ? f->sig : NULL, f->sigdone ? f->siglen : 0);
		}
		ph_job_touch_parent(j, f->e->path);
		if (f->times_failed)
			ph_job_event(j, PHSYNC_EV_WARNING, f->e->path, NULL, 0, PHSYNC_EREMOTE,
			             "the server would not set this file's time or mode");
		ph_job_event(j, PHSYNC_EV_FILE_DONE, f->e->path,
		             f->resumed ? "resume" : j->plan.v[f->ai].kind == PH_A_NEW ? "new" :
		             "update", f->e->size, 0, NULL);
		if (f->raside != NULL)
			pf_cleanup(f, ph_sftp_remove(s, f->raside, drop_aside_cb, f));
	} else if (r->type == PH_FXP_STATUS && j->plan.v[f->ai].kind == PH_A_NEW &&
	           !f->new_clash && !f->failed &&
	           ph_sftp_stat(s, 1, f->rfinal, new_clash_cb, f) == 0) {
		/* A new file's plain RENAME fails on a name that exists: one made
		 * since the listing, or the same name in another case on a server
		 * that ignores case. Which is it? */
		f->new_clash = 1;
		f->pending++;
		f->state = P_GUARDWAIT;
		f->rename_status = r->status;
	} else {
		/* Not in place: the old version goes back where it was. */
		if (f->raside != NULL && r->type != 0)
			pf_cleanup(f, ph_sftp_rename(s, f->raside, f->rfinal, 0, unaside_cb, f));
		reply_err(f, r, "the server could not rename the file into place");
	}
	pf_step(f);
}

/* After a new file's rename failed: is its name taken? Then it lands
 * beside, as a conflict copy; else the rename's failure stands. */
static void
new_clash_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (r->type == PH_FXP_ATTRS) {
		f->beside = 1;
		if (!f->failed)
			f->state = P_RENAMING;
	} else {
		struct ph_sftp_reply rr = *r;

		if (r->type != 0) {
			rr.type = PH_FXP_STATUS;
			rr.status = f->rename_status;
			rr.err = ph_sftp_status_err(f->rename_status);
			rr.msg = "";
		}
		reply_err(f, &rr, "the server could not rename the file into place");
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
	f->pending--;
	if (status_ok(r) && !f->failed) {
		XXH128_canonical_t c;
		const char *base = strrchr(f->rbeside, '/');

		f->state = P_DONE;
		f->tmp_made = 0;
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(f->hs));
		ph_job_conflict(j, f->e->path, base ? base + 1 : f->rbeside, f->e->size,
		                act->kind == PH_A_UPDATE && act->how == PH_U_FIRST);
		ph_job_record(j, f->e->path, f->e->size, f->e->mtime, f->e->mtime, c.digest, 1);
		ph_job_touch_parent(j, f->e->path);
	} else {
		reply_err(f, r, "the server would not put the incoming version beside the "
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
	f->pending--;
	f->guarded = 1;
	if (r->type == 0) {
		reply_err(f, r, "connection lost");
	} else if (r->type == PH_FXP_ATTRS) {
		if (!(r->attrs.flags & PH_ATTR_SIZE) || r->attrs.size != d->size ||
		    !(r->attrs.flags & PH_ATTR_ACMODTIME) || (int64_t)r->attrs.mtime != d->mtime)
			f->beside = 1; /* changed during the run: kept */
	} else if (!(r->type == PH_FXP_STATUS && r->status == PH_FX_NO_SUCH_FILE)) {
		f->beside = 1; /* cannot tell: never overwrite blind */
	}
	if (!f->failed)
		f->state = P_RENAMING;
	pf_step(f);
}

static void
aside_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;
	int rc;

	f->pending--;
	if (f->failed) {
		/* Cut off while the old file moved: if it did, put it back. */
		if (status_ok(r))
			pf_cleanup(f, ph_sftp_rename(s, f->raside, f->rfinal, 0, unaside_cb, f));
		pf_step(f);
		return;
	}
	if (!status_ok(r) && !(r->type == PH_FXP_STATUS && r->status == PH_FX_NO_SUCH_FILE)) {
		free(f->raside);
		f->raside = NULL;
		reply_err(f, r, "the server would not move the old version aside to replace it");
		pf_step(f);
		return;
	}
	if (!status_ok(r)) {
		/* The old file is gone already: nothing to set aside. */
		free(f->raside);
		f->raside = NULL;
	}
	if ((rc = ph_sftp_rename(s, f->rtmp, f->rfinal, 0, rename_cb, f)) != 0) {
		if (f->raside != NULL)
			pf_cleanup(f, ph_sftp_rename(s, f->raside, f->rfinal, 0, unaside_cb, f));
		pf_fail(f, rc, "cannot queue a rename");
	} else {
		f->pending++;
	}
	pf_step(f);
}

/* The block length of the signature kept for a pushed file: the delta
 * engine's choice, but at most 1024 blocks a file (with 12 bytes a block, a
 * photo's signature stays within 12 KiB of state). Smaller blocks would
 * make a photo's edit cheaper still on the link and its state larger;
 * measured with bench/bench_wire.py (docs/PERFORMANCE.md): 256 blocks of
 * 12 KiB made a photo's typical edit cost more than rsync's whole
 * exchange. */
static uint32_t
sig_block_len(uint64_t size)
{
	uint64_t b = phsync_delta_block_len(size), min = (size / 1024 + 63) / 64 * 64;

	if (b < min)
		b = min;
	return b > PHSYNC_SIG_MAX_BLOCK ? PHSYNC_SIG_MAX_BLOCK : (uint32_t)b;
}

/* Feeds sent bytes to the signature; end with the last of them. */
static void
sig_feed(struct pfile *f, const void *data, size_t len, int end)
{
	struct phsync_in in = { data, len, 0 };
	int done = 0;

	while (f->sg != NULL && (in.pos < in.size || (end && !done))) {
		struct phsync_out out;

		if (f->sigcap - f->siglen < 4096) {
			size_t nc = f->sigcap ? f->sigcap * 2 : 16384;
			uint8_t *nb = realloc(f->sig, nc);

			if (nb == NULL)
				goto drop;
			f->sig = nb;
			f->sigcap = nc;
		}
		out.ptr = f->sig;
		out.size = f->sigcap;
		out.pos = f->siglen;
		if (phsync_sig_gen_stream(f->sg, &out, &in, end, &done) != 0)
			goto drop;
		f->siglen = out.pos;
	}
	if (done)
		f->sigdone = 1;
	return;
drop:
	phsync_sig_gen_free(f->sg);
	f->sg = NULL;
}

/* Reads the next piece of the local file straight into the send buffer. */
static int
fill_from_file(void *arg, void *dst, uint32_t len)
{
	struct pfile *f = arg;
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(f->fd, (uint8_t *)dst + got, len - got, (off_t)(f->fill_off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ph_err_from_errno(errno);
		if (r == 0)
			return PHSYNC_ECORRUPT; /* the file shrank while being sent */
		got += (size_t)r;
	}
	/* Filled in order: the hash and signature of what was sent, with no
	 * second read. (A delta's were made on its planning read.) */
	if (!f->delta) {
		XXH3_128bits_update(f->hs, dst, len);
		sig_feed(f, dst, len, f->fill_off + len == f->e->size);
	}
	return 0;
}

/* Whether f has bytes (or copies) still to queue. */
static int
more_to_send(const struct pfile *f)
{
	return f->delta ? f->opi < f->pd.n : f->next_off < f->e->size;
}

/* The most one copy-data request asks the server to copy: a phone copying
 * a whole video in one request could stay silent past the timeout. */
#define MAX_COPY (64u << 20)

static void
copy_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct wreq *w = arg;
	struct pfile *f = w->f;

	(void)s;
	f->writes--;
	f->pending--;
	f->p->writes--;
	free(w);
	if (!f->failed && !status_ok(r)) {
		if (r->type != 0)
			delta_forget(f);
		reply_err(f, r, "the server could not copy from the old version (sent whole "
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
	struct ph_job *j = p->j;

	if (f->dwait > 0 || f->hlen == 0)
		return 0;
	while (!f->failed && f->opi < f->pd.n && f->writes < MAX_WRITES_FILE &&
	       p->writes < MAX_WRITES && p->write_bytes < MAX_WRITE_BYTES) {
		const struct ph_dop *op = &f->pd.ops[f->opi];
		uint64_t left = op->len - f->op_pos;
		struct wreq *w = malloc(sizeof(*w));
		uint32_t n;
		int rc;

		if (w == NULL)
			return PHSYNC_ENOMEM;
		w->f = f;
		w->off = op->out_off + f->op_pos;
		if (op->copy) {
			n = left < MAX_COPY ? (uint32_t)left : MAX_COPY;
			w->len = 0; /* nothing of it crosses the link */
			rc = ph_sftp_copy_data(j->sftp, f->bh, f->bhlen, op->off + f->op_pos, n, f->h,
			                       f->hlen, w->off, copy_cb, w);
		} else {
			n = left < p->chunk ? (uint32_t)left : p->chunk;
			w->len = n;
			f->fill_off = w->off;
			rc = ph_sftp_write_fill(j->sftp, f->h, f->hlen, w->off, n, fill_from_file, f,
			                        write_cb, w);
		}
		if (rc != 0)
			free(w);
		if (rc == PHSYNC_ECORRUPT) {
			pf_fail(f, PHSYNC_EIO, "the local file shrank while being sent; not sent "
			        "(retried next run)");
			return 0;
		}
		if (rc != 0 && rc != PHSYNC_ENOMEM) {
			pf_fail(f, rc, op->copy ? "cannot queue a copy" : "cannot read the local file");
			return 0;
		}
		if (rc != 0)
			return rc;
		if ((f->op_pos += n) == op->len) {
			f->opi++;
			f->op_pos = 0;
		}
		f->writes++;
		f->pending++;
		p->writes++;
		p->write_bytes += w->len;
		j->st.bytes_done += n;
	}
	return 0;
}

/* Queues writes while there is room. Returns 0, or PHSYNC_ENOMEM when the
 * request table is full (retried later); a file that cannot be read is
 * failed here. */
static int
issue_writes(struct pfile *f)
{
	struct push *p = f->p;

	if (f->delta)
		return issue_delta(f);
	while (!f->failed && f->next_off < f->e->size && f->writes < MAX_WRITES_FILE &&
	       p->writes < MAX_WRITES && p->write_bytes < MAX_WRITE_BYTES) {
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
		rc = ph_sftp_write_fill(p->j->sftp, f->h, f->hlen, f->next_off, n, fill_from_file, f,
		                        write_cb, w);
		if (rc != 0)
			free(w);
		if (rc == PHSYNC_ECORRUPT) {
			pf_fail(f, PHSYNC_EIO, "the local file shrank while being sent; not sent "
			        "(retried next run)");
			return 0;
		}
		if (rc != 0 && rc != PHSYNC_ENOMEM) {
			pf_fail(f, rc, "cannot read the local file");
			return 0;
		}
		if (rc != 0)
			return rc;
		f->next_off += n;
		f->writes++;
		f->pending++;
		p->writes++;
		p->write_bytes += n;
		p->j->st.bytes_done += n;
	}
	return 0;
}

/* Moves a file along once its in-flight requests are answered; frees it
 * when it is done or failed and nothing of it is in flight. */
static void
pf_step(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	const struct ph_action *act = &j->plan.v[f->ai];
	struct ph_sftp_attrs a = { 0 };
	int rc = 0;

	/* Ctrl-C abandons a file until its rename starts; from there the few
	 * requests left finish it (or put the old version back). */
	if (f->p->stopping && !f->failed && f->state < P_RENAMING)
		pf_fail(f, PHSYNC_EINTR, "interrupted");
	if (pf_settle(f) || f->failed || f->state == P_DONE)
		return;
	if (f->pending > 0 && f->state != P_WRITING)
		return;
	switch (f->state) {
	case P_WRITING:
		if ((rc = issue_writes(f)) != 0 || f->failed)
			break;
		if (f->pending > 0 || more_to_send(f) || f->dwait > 0)
			return;
		/* Every copy is answered: the old version is not read again. */
		pf_close(f, f->bh, &f->bhlen);
		/* All of it was sent: if the local file changed meanwhile (a video
		 * still being recorded), what went is not the file; it is not put in
		 * place, and the next run sends it whole. */
		{
			struct stat st;

			if (fstat(f->fd, &st) != 0 || (uint64_t)st.st_size != f->e->size ||
			    (int64_t)st.st_mtime != f->e->mtime) {
				pf_fail(f, PHSYNC_EIO, "the local file changed while it was sent; not "
				        "put in place (retried next run)");
				break;
			}
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
		if (j->o->fsync && (ph_sftp_exts(j->sftp) & PH_EXT_FSYNC)) {
			if ((rc = ph_sftp_fsync(j->sftp, f->h, f->hlen, fsync_cb, f)) != 0)
				break;
			f->pending++;
		}
		if ((rc = ph_sftp_fsetstat(j->sftp, f->h, f->hlen, &a, setstat_cb, f)) != 0)
			break;
		f->pending++;
		/* The time the server kept (FAT: 2 s steps; refused: its own) is
		 * what the state records: read back right behind the SETSTAT. */
		if ((rc = ph_sftp_fstat(j->sftp, f->h, f->hlen, fstat_cb, f)) != 0)
			break;
		f->pending++;
		f->state = P_CLOSING;
		return;
	case P_CLOSING:
		if ((rc = ph_sftp_close(j->sftp, f->h, f->hlen, close_cb, f)) != 0)
			break;
		f->hlen = 0; /* being closed: never closed twice */
		f->pending++;
		f->state = P_CLOSEWAIT; /* close_cb moves on to P_RENAMING */
		return;
	case P_RENAMING:
		if (act->kind == PH_A_UPDATE && !f->beside && !f->guarded) {
			/* Replace only what the plan saw: a file edited on the phone
			 * during the run is kept, the new version put beside. */
			if ((rc = ph_sftp_stat(j->sftp, 1, f->rfinal, guard_cb, f)) != 0)
				break;
			f->pending++;
			f->state = P_GUARDWAIT;
			return;
		}
		if (f->beside) {
			const char *base = strrchr(f->rfinal, '/');
			size_t dl = base ? (size_t)(base - f->rfinal) + 1 : 0;
			char name[256];

			base = base ? base + 1 : f->rfinal;
			if (ph_conflict_name(name, sizeof(name), base, j->started, 1) != 0 ||
			    (f->rbeside = malloc(dl + strlen(name) + 1)) == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			memcpy(f->rbeside, f->rfinal, dl);
			strcpy(f->rbeside + dl, name);
			/* Plain RENAME: never replaces an existing name. */
			if ((rc = ph_sftp_rename(j->sftp, f->rtmp, f->rbeside, 0, beside_cb, f)) != 0)
				break;
		} else if (act->kind == PH_A_UPDATE &&
		           !(ph_sftp_exts(j->sftp) & PH_EXT_POSIX_RENAME)) {
			/* Plain RENAME will not replace: the old file goes aside first. */
			const char *base = strrchr(f->rfinal, '/');
			size_t dl = base ? (size_t)(base - f->rfinal) + 1 : 0;
			char name[256];

			base = base ? base + 1 : f->rfinal;
			if (ph_temp_name(name, sizeof(name), base, PH_TEMP_OLD, &f->p->owner) != 0 ||
			    (f->raside = malloc(dl + strlen(name) + 1)) == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			memcpy(f->raside, f->rfinal, dl);
			strcpy(f->raside + dl, name);
			if ((rc = ph_sftp_rename(j->sftp, f->rfinal, f->raside, 0, aside_cb, f)) != 0)
				break;
		} else if ((rc = ph_sftp_rename(j->sftp, f->rtmp, f->rfinal,
		                                act->kind != PH_A_NEW, rename_cb, f)) != 0) {
			/* A new file: plain RENAME, which never replaces a name taken
			 * since the listing (new_clash_cb). */
			break;
		}
		f->pending++;
		f->state = P_RENAMEWAIT;
		return;
	default:
		return;
	}
	if (!f->failed) {
		free(f->raside);
		f->raside = NULL; /* nothing was moved aside */
		pf_fail(f, rc, "cannot queue a request");
	}
	pf_settle(f);
}

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	f->state = P_WRITING;
	if (r->type != PH_FXP_HANDLE) {
		/* Nothing was created: never remove a file of that name. */
		if (!f->failed)
			reply_err(f, r, "the server would not create the file");
	} else if (f->failed) {
		/* Failed (Ctrl-C) while the OPEN was in flight: the temp exists
		 * now, so close and remove it before the file is let go. */
		memcpy(f->h, r->data, r->len);
		pf_cleanup(f, ph_sftp_close(f->p->j->sftp, f->h, r->len, cleanup_cb, f));
		if (!f->keep) /* a kept upload stays for the next run */
			pf_cleanup(f, ph_sftp_remove(f->p->j->sftp, f->rtmp, cleanup_cb, f));
	} else {
		memcpy(f->h, r->data, r->len);
		f->hlen = r->len;
		f->tmp_made = 1;
	}
	pf_step(f);
}

/* Creates the remote temp file. A new file gets the source's rw bits,
 * which the server's umask trims (as cp and rsync without -p); a
 * replacement gets its old bits at the end, until then only we may read
 * it. */
static int
open_temp(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	struct ph_sftp_attrs a = { 0 };

	a.flags = PH_ATTR_PERMISSIONS;
	a.perm = j->plan.v[f->ai].kind == PH_A_UPDATE ? 0600 : f->e->mode & 0666;
	f->state = P_OPENING;
	return ph_sftp_open(j->sftp, f->rtmp, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_EXCL, &a,
	                    open_cb, f);
}

/* First contact with a remote file of the same size: is it the same
 * content? Read it and compare each piece with the local file's bytes at
 * the same offset (replies may come in any order). The same: only its
 * time is set. Else the local version goes beside it. */
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
	if ((rc = ph_sftp_read(f->p->j->sftp, f->h, f->hlen, off, len, cmp_read_cb, q)) != 0) {
		free(q);
		return rc;
	}
	f->cmp_reads++;
	f->pending++;
	return 0;
}

static void
same_set_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (r->type != 0 && !status_ok(r))
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
	struct stat st;
	int64_t rmtime = f->times_failed ? d->mtime : f->e->mtime;

	(void)s;
	f->pending--;
	if (r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_ACMODTIME))
		rmtime = (int64_t)r->attrs.mtime;
	if (r->type == 0) {
		reply_err(f, r, "connection lost");
	} else if (!f->failed) {
		if (fstat(f->fd, &st) != 0 || (uint64_t)st.st_size != f->e->size ||
		    (int64_t)st.st_mtime != f->e->mtime) {
			pf_fail(f, PHSYNC_EIO, "the local file changed while it was compared; "
			        "retried next run");
		} else {
			/* Where the time could not be set, the server's stays. */
			f->state = P_DONE;
			j->st.files_done++;
			ph_job_record(j, f->e->path, f->e->size, f->e->mtime, rmtime, NULL, 0);
			ph_job_event(j, PHSYNC_EV_FILE_DONE, f->e->path, "same", f->e->size, 0, NULL);
		}
	}
	pf_step(f);
}

/* Reads on while the content agrees; settles once nothing is in flight. */
static void
cmp_step(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	struct ph_sftp_attrs a = { 0 };
	uint32_t chunk = ph_sftp_max_read(j->sftp);

	while (!f->failed && !f->cmp_differs && f->cmp_off < f->e->size &&
	       f->cmp_reads < MAX_WRITES_FILE) {
		uint64_t left = f->e->size - f->cmp_off;
		uint32_t n = left < chunk ? (uint32_t)left : chunk;

		if (cmp_queue(f, f->cmp_off, n) != 0) {
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a read");
			return;
		}
		f->cmp_off += n;
	}
	if (f->failed || f->cmp_reads > 0 || f->state != P_COMPARE)
		return;
	pf_close(f, f->h, &f->hlen);
	if (f->cmp_differs) {
		f->beside = 1;
		if (open_temp(f) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
		else
			f->pending++;
		return;
	}
	a.flags = PH_ATTR_ACMODTIME;
	a.atime = (uint32_t)f->e->mtime;
	a.mtime = (uint32_t)f->e->mtime;
	f->state = P_RENAMEWAIT;
	if (ph_sftp_setstat(j->sftp, f->rfinal, &a, same_set_cb, f) != 0 ||
	    (f->pending++, ph_sftp_stat(j->sftp, 1, f->rfinal, same_cb, f)) != 0)
		pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
	else
		f->pending++;
}

static void
cmp_read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct creq *q = arg;
	struct pfile *f = q->f;

	(void)s;
	f->pending--;
	f->cmp_reads--;
	if (r->type == 0) {
		reply_err(f, r, "connection lost");
	} else if (f->failed || f->cmp_differs) {
		/* nothing more to learn */
	} else if (r->type == PH_FXP_DATA && r->len > 0 && r->len <= q->len) {
		uint8_t *mine = malloc(r->len);
		ssize_t n = mine ? pread(f->fd, mine, r->len, (off_t)q->off) : -1;

		if (mine == NULL)
			pf_fail(f, PHSYNC_ENOMEM, "out of memory");
		else if (n != (ssize_t)r->len || memcmp(mine, r->data, r->len) != 0)
			f->cmp_differs = 1;
		else if (r->len < q->len && cmp_queue(f, q->off + r->len, q->len - r->len) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a read");
		free(mine);
	} else {
		/* Shorter than listed, more than asked, unreadable: not the same. */
		f->cmp_differs = 1;
	}
	free(q);
	cmp_step(f);
	pf_step(f);
}

static void
cmp_open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (r->type == PH_FXP_HANDLE) {
		memcpy(f->h, r->data, r->len);
		f->hlen = r->len;
		if (f->failed) /* interrupted meanwhile */
			pf_close(f, f->h, &f->hlen);
	} else if (r->type == 0) {
		reply_err(f, r, "connection lost");
	} else {
		f->cmp_differs = 1; /* unreadable: never taken as the same */
	}
	if (!f->failed)
		cmp_step(f);
	pf_step(f);
}

/* Hashes and signs the first n bytes of the local file (a kept prefix the
 * server holds): as if they had been sent now. */
static int
feed_prefix(struct pfile *f, uint64_t n)
{
	uint8_t *buf = malloc(1u << 20);
	uint64_t off = 0;

	if (buf == NULL)
		return PHSYNC_ENOMEM;
	while (off < n) {
		size_t want = n - off < (1u << 20) ? (size_t)(n - off) : (1u << 20);
		ssize_t r = pread(f->fd, buf, want, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return r < 0 ? ph_err_from_errno(errno) : PHSYNC_EIO;
		}
		XXH3_128bits_update(f->hs, buf, (size_t)r);
		sig_feed(f, buf, (size_t)r, 0);
		off += (uint64_t)r;
	}
	free(buf);
	return 0;
}

/* Does the server's temp file rp hold the local file's bytes at
 * [off, off + len)? */
static int
same_on_server(struct ph_job *j, const char *rp, int fd, uint64_t off, uint32_t len)
{
	uint8_t *a = malloc(2 * (size_t)len), *b[1];
	uint32_t got = 0;
	size_t have = 0;
	int ok = 0;

	if (a == NULL)
		return 0;
	b[0] = a;
	if (ph_sftp_read_ranges_sync(j->sftp, rp, &off, &len, b, &got, 1) == 0 && got == len) {
		while (have < len) {
			ssize_t r = pread(fd, a + len + have, len - have, (off_t)(off + have));

			if (r <= 0)
				break;
			have += (size_t)r;
		}
		ok = have == len && memcmp(a, a + len, len) == 0;
	}
	free(a);
	return ok;
}

/* Which uploads an earlier run kept (cut) may go on: the file is still to
 * send with the size and time it had, the temp is still on the server with
 * at least the kept bytes, and its first and last 64 KiB of them read back
 * as the local file's. The others' temps are removed and their records
 * dropped: a changed file starts over. */
static void
check_partials(struct ph_job *j)
{
	size_t i, k;

	for (i = 0; i < j->npartials && j->state != NULL; i++) {
		struct ph_partial *pa = &j->partials[i];
		const struct ph_entry *e = ph_tree_find(&j->src, pa->path);
		const char *dp = e ? ph_entry_dpath(e) : pa->path, *slash = strrchr(dp, '/');
		size_t dl = slash ? (size_t)(slash - dp) + 1 : 0;
		char *rel = malloc(dl + strlen(pa->tmp) + 1), *rp = NULL;
		struct ph_sftp_attrs a;
		int ok = 0, rc;

		if (rel == NULL)
			continue;
		memcpy(rel, dp, dl);
		strcpy(rel + dl, pa->tmp);
		rp = ph_job_rpath(j, rel);
		for (k = 0; e != NULL && k < j->plan.n && !ok; k++) {
			const struct ph_action *act = &j->plan.v[k];

			ok = &j->src.v[act->src] == e &&
			     (act->kind == PH_A_NEW || act->kind == PH_A_UPDATE);
		}
		ok = ok && e->size == pa->size && e->mtime == pa->mtime && pa->have > 0 &&
		     pa->have < e->size && rp != NULL &&
		     ph_sftp_stat_sync(j->sftp, 1, rp, &a) == 0 && (a.flags & PH_ATTR_SIZE) &&
		     a.size >= pa->have;
		if (ok) {
			char *dir;
			const char *base;
			int dfd, fd = -1;
			uint32_t n = pa->have < PH_PUSH_RESUME_PROBE ? (uint32_t)pa->have :
			             PH_PUSH_RESUME_PROBE;

			if (ph_local_split(ph_entry_raw(e), &dir, &base) == 0) {
				if (ph_local_opendir(j->lroot, dir, &dfd) == 0) {
					fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
					close(dfd);
				}
				free(dir);
			}
			ok = fd >= 0 && same_on_server(j, rp, fd, 0, n) &&
			     same_on_server(j, rp, fd, pa->have - n, n);
			if (fd >= 0)
				close(fd);
		}
		if (ok) {
			pa->ready = 1;
		} else {
			if (rp != NULL)
				ph_sftp_remove_sync(j->sftp, rp);
			if ((rc = ph_state_partial_drop(j->state, pa->path)) != 0 && j->state_err == 0)
				j->state_err = rc;
			free(pa->path);
			pa->path = NULL;
		}
		free(rp);
		free(rel);
	}
}

/* ---- Delta uploads ---------------------------------------------------- */

/* The planning read's bytes: hashed and signed as a whole upload's are. */
static void
delta_feed(void *arg, const void *p, size_t n, int end)
{
	struct pfile *f = arg;

	XXH3_128bits_update(f->hs, p, n);
	sig_feed(f, p, n, end);
}

/* Goes back to a whole upload (nothing of the delta was sent yet). */
static void
delta_drop(struct pfile *f)
{
	struct ph_job *j = f->p->j;

	pf_close(f, f->bh, &f->bhlen);
	ph_pdelta_free(&f->pd);
	f->delta = 0;
	f->dwait = 0;
	XXH3_128bits_reset(f->hs);
	phsync_sig_gen_free(f->sg);
	f->siglen = 0;
	f->sigdone = 0;
	if (phsync_sig_gen_new(j->ctx, f->e->size, sig_block_len(f->e->size), 0, &f->sg) != 0)
		f->sg = NULL;
}

/* The server's old version did not take the delta (a copy failed, the
 * result came out wrong): the state forgets its signature, so the next run
 * sends the file whole. */
static void
delta_forget(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	int rc;

	if (f->hsig)
		return;   /* the state had no signature to forget */
	f->rec.sig = NULL;
	f->rec.siglen = 0;
	if (j->state != NULL && (rc = ph_state_file_done(j->state, f->e->path, &f->rec)) != 0 &&
	    j->state_err == 0)
		j->state_err = rc;
}

/* Plans f as a delta when the state kept the signature of what phsync last
 * wrote to this remote file and the file still shows the size and time
 * recorded then; else f goes whole. */
static void
delta_prepare(struct pfile *f, const struct ph_entry *d)
{
	struct ph_job *j = f->p->j;
	uint8_t *sig = NULL;

	if (!(ph_sftp_exts(j->sftp) & PH_EXT_COPY_DATA) || f->e->size < PH_DELTA_MIN ||
	    d->nosize || d->size < PH_DELTA_MIN)
		return;
	if (j->state == NULL ||
	    ph_state_file_get_sig(j->state, f->e->path, &f->rec, f->rechash, &sig) != 1 ||
	    sig == NULL || f->rec.rsize != d->size || f->rec.rmtime != d->mtime) {
		free(sig);
		memset(&f->rec, 0, sizeof(f->rec));
		/* With the helper the signature of the old version is made where
		 * it lies, fresh (bopen_cb asks for it). */
		if (ph_sftp_helper(j->sftp) >= 1) {
			f->delta = 1;
			f->hsig = 1;
			f->bsize = d->size;
		}
		return;
	}
	f->delta = 1;
	f->p->planned = 1;
	if (ph_pdelta_plan(j->ctx, &f->p->diff, f->fd, f->e->size, sig, f->rec.siglen, d->size,
	                   delta_feed, f, &f->pd) != 0 || f->pd.copy_bytes < f->e->size / 16) {
		/* Unusable, or hardly anything in common (every block changed: no
		 * delta penalty): whole. */
		delta_drop(f);
	}
	free(sig);
	f->rec.sig = NULL;
	f->rec.siglen = 0;
}

/* One READ of a checked block (a block may take several). */
struct chk {
	struct pfile *f;
	uint64_t blk;
	uint8_t *buf;
	uint32_t len;
	unsigned parts;            /* READs of it in flight */
	int bad;
};

struct chkpart {
	struct chk *c;
	uint32_t at, want;
};

static void
chk_done(struct pfile *f)
{
	if (--f->dwait > 0 || f->failed || !f->dstale)
		return;
	if (f->dstale == 1)
		ph_job_event(f->p->j, PHSYNC_EV_WARNING, f->e->path, NULL, 0, PHSYNC_EREMOTE,
		             "the server's copy is not what phsync last wrote there, though its "
		             "size and time are; sent whole");
	delta_drop(f);
}

static void
chk_read_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct chkpart *q = arg;
	struct chk *c = q->c;
	struct pfile *f = c->f;

	(void)s;
	f->pending--;
	if (r->type == 0)
		reply_err(f, r, "connection lost");
	else if (r->type == PH_FXP_DATA && r->len == q->want)
		memcpy(c->buf + q->at, r->data, r->len);
	else
		c->bad = 1; /* short, long or refused: not trusted */
	free(q);
	if (--c->parts == 0) {
		if (c->bad || !ph_pdelta_block_ok(&f->pd, c->blk, c->buf, c->len))
			f->dstale = 1;
		free(c->buf);
		free(c);
		chk_done(f);
	}
	pf_step(f);
}

/* Reads the blocks of the old version the plan checks. Returns the number
 * of blocks queued; a block that cannot be queued makes the file whole. */
static unsigned
chk_queue(struct pfile *f)
{
	struct ph_job *j = f->p->j;
	uint32_t max = ph_sftp_max_read(j->sftp);
	unsigned i, queued = 0;

	for (i = 0; i < f->pd.nchecks; i++) {
		struct chk *c = calloc(1, sizeof(*c));
		uint64_t off;
		uint32_t at;

		if (c == NULL) {
			f->dstale = 2;
			break;
		}
		c->f = f;
		c->blk = f->pd.check[i];
		ph_pdelta_block(&f->pd, c->blk, &off, &c->len);
		if ((c->buf = malloc(c->len)) == NULL) {
			free(c);
			f->dstale = 2;
			break;
		}
		for (at = 0; at < c->len; at += max) {
			struct chkpart *q = malloc(sizeof(*q));

			if (q == NULL) {
				c->bad = 1;
				break;
			}
			q->c = c;
			q->at = at;
			q->want = c->len - at < max ? c->len - at : max;
			if (ph_sftp_read(j->sftp, f->bh, f->bhlen, off + at, q->want, chk_read_cb, q) != 0) {
				free(q);
				c->bad = 1;
				break;
			}
			c->parts++;
			f->pending++;
		}
		if (c->parts == 0) {
			free(c->buf);
			free(c);
			f->dstale = 2;
			break;
		}
		queued++;
	}
	return queued;
}

/* The helper's signature of the old version: kept for the main loop,
 * which plans one delta a turn (plan_next). Planned here, in the reply
 * callback, a burst of 60 signatures was planned in a row (0.15 s of the
 * client's CPU for the bench's photos) with nothing sent to the helper
 * until the last: it sat idle, then wrote and made durable every file
 * after that. The file's share of pending stays until it is planned. */
static void
hsig_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	if (r->type == 0)
		reply_err(f, r, "connection lost");
	/* Only the old version's signature, of exactly its length, is kept
	 * (dbound.h): 64 files could otherwise hold 4 MiB each. */
	if (!f->failed && r->type == PH_FXP_EXTENDED_REPLY && r->len > 0 &&
	    r->len == ph_dbound_sig_len(f->bsize) && (f->hsig_data = malloc(r->len)) != NULL) {
		memcpy(f->hsig_data, r->data, r->len);
		f->hsig_len = r->len;
		return;
	}
	/* Refused, failed, or no memory: plan_next sends it whole. */
	f->hsig_data = NULL;
	f->hsig_len = 1;
}

/* Plans the next file whose helper signature came (hsig_cb), then makes
 * its temp file. Returns 1 when one was taken. */
static int
plan_next(struct push *p)
{
	size_t i;

	if (p->planned)
		return 0;
	for (i = 0; i < p->nactive; i++) {
		struct pfile *f = p->active[i];
		struct ph_job *j = p->j;

		if (f->hsig_len == 0)
			continue;
		f->pending--;
		if (!f->failed && !p->stopping) {
			p->planned = 1;
			if (f->hsig_data == NULL ||
			    ph_pdelta_plan(j->ctx, &p->diff, f->fd, f->e->size, f->hsig_data,
			                   f->hsig_len, f->bsize, delta_feed, f, &f->pd) != 0 ||
			    f->pd.copy_bytes < f->e->size / 16)
				delta_drop(f); /* refused, changed size, or little in common */
			else
				f->dwait = 0;
			if (open_temp(f) != 0)
				pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
			else
				f->pending++;
		}
		free(f->hsig_data);
		f->hsig_data = NULL;
		f->hsig_len = 0;
		pf_step(f);
		return 1;
	}
	return 0;
}

static void
bopen_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pfile *f = arg;

	(void)s;
	f->pending--;
	if (r->type == PH_FXP_HANDLE) {
		memcpy(f->bh, r->data, r->len);
		f->bhlen = r->len;
		if (f->failed) /* interrupted meanwhile */
			pf_close(f, f->bh, &f->bhlen);
	} else if (r->type == 0) {
		reply_err(f, r, "connection lost");
	}
	if (!f->failed) {
		if (f->bhlen == 0) {
			delta_drop(f); /* unreadable: whole, without a word */
		} else if (f->hsig) {
			if (ph_sftp_helper_sig(f->p->j->sftp, f->bh, f->bhlen, 0, hsig_cb, f) == 0) {
				f->pending++;
				pf_step(f);
				return;   /* the temp file is made once the plan is */
			}
			delta_drop(f);
		} else {
			f->dwait += chk_queue(f);
			chk_done(f); /* the OPEN's share */
		}
		if (open_temp(f) != 0)
			pf_fail(f, PHSYNC_ENOMEM, "cannot queue a request");
		else
			f->pending++;
	}
	pf_step(f);
}

static int
start_file(struct push *p, size_t ai)
{
	struct ph_job *j = p->j;
	const struct ph_action *act = &j->plan.v[ai];
	const struct ph_entry *e = &j->src.v[act->src];
	struct pfile *f = calloc(1, sizeof(*f));
	struct stat st;
	char *dir = NULL, tmpname[256], *tmprel = NULL;
	const char *base;
	struct ph_partial *pa;
	int dfd = -1, rc, resumable;

	if (f == NULL)
		return PHSYNC_ENOMEM;
	f->p = p;
	f->ai = ai;
	f->e = e;
	f->fd = -1;
	f->rmtime = -1;
	f->state = P_OPENING;
	if ((rc = ph_local_split(ph_entry_raw(e), &dir, &base)) != 0)
		goto out;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	if (rc == 0 && (f->fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = ph_err_from_errno(errno);
	/* From here on: where it goes on the server. */
	free(dir);
	dir = NULL;
	if (rc == 0)
		rc = ph_local_split(ph_entry_dpath(e), &dir, &base);
	if (rc == 0 && (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)))
		rc = PHSYNC_EUNSAFE;
	if (dfd >= 0)
		close(dfd);
	if (rc != 0) {
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, rc,
		             rc == PHSYNC_EUNSAFE ? "changed into a non-file or a symlink is in the way" :
		             phsync_strerror(rc));
		rc = 0;
		goto out;
	}
	/* Resumable: big, with a state; a first contact or a conflict (compared,
	 * or put beside) never takes over a kept upload. */
	resumable = e->size >= PH_PUSH_RESUME_MIN && j->state != NULL &&
	            (act->kind == PH_A_NEW || act->how == PH_U_REPLACE);
	pa = resumable ? ph_job_partial(j, e->path) : NULL;
	if (pa != NULL && !pa->ready)
		pa = NULL;
	if (pa != NULL && strlen(pa->tmp) < sizeof(tmpname))
		memcpy(tmpname, pa->tmp, strlen(pa->tmp) + 1);
	else if ((pa = NULL, ph_temp_name(tmpname, sizeof(tmpname), base, PH_TEMP_NEW,
	                                  &p->owner)) != 0)
		tmpname[0] = '\0';
	if (tmpname[0] == '\0' || (tmprel = malloc(strlen(dir) + strlen(tmpname) + 2)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	sprintf(tmprel, "%s%s%s", dir, dir[0] ? "/" : "", tmpname);
	f->rtmp = ph_job_rpath(j, tmprel);
	f->rfinal = ph_job_rpath(j, ph_entry_dpath(e));
	if (f->rtmp == NULL || f->rfinal == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	if ((f->hs = XXH3_createState()) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	XXH3_128bits_reset(f->hs);
	if (phsync_sig_gen_new(j->ctx, e->size, sig_block_len(e->size), 0, &f->sg) != 0)
		f->sg = NULL;
	if (act->kind == PH_A_UPDATE && act->how != PH_U_REPLACE) {
		const struct ph_entry *d = &j->dst.v[act->dst];

		/* A conflict goes beside; on first contact so does a file of
		 * another size, and one of the same size is compared first. */
		if (act->how == PH_U_CONFLICT || d->nosize || d->size != e->size)
			f->beside = 1;
		else
			f->state = P_COMPARE;
	}
	if (pa == NULL && act->kind == PH_A_UPDATE && act->how == PH_U_REPLACE && !f->beside)
		delta_prepare(f, &j->dst.v[act->dst]);
	if (resumable && !f->delta) /* if cut: count the acknowledged chunks */
		f->acked = calloc((e->size / p->chunk + 1) / 8 + 1, 1);
	if (pa != NULL && f->acked != NULL) {
		/* Go on from the prefix an earlier run left (checked against the
		 * bytes here by check_partials): hash and sign it from the local
		 * file, then write the rest into the same temp. */
		if ((rc = feed_prefix(f, pa->have)) != 0) {
			j->st.files_failed++;
			ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, rc,
			             "cannot read the local file");
			rc = 0;
			goto out;
		}
		f->next_off = f->have0 = pa->have;
		f->resumed = 1;
		j->st.bytes_todo -= pa->have;
		f->state = P_OPENING;
		rc = ph_sftp_open(j->sftp, f->rtmp, PH_FXF_WRITE, NULL, open_cb, f);
	} else if (f->delta) {
		/* The old version first (its blocks are checked while the temp
		 * file is made), then the temp (bopen_cb). */
		f->dwait = 1;
		rc = ph_sftp_open(j->sftp, f->rfinal, PH_FXF_READ, NULL, bopen_cb, f);
	} else {
		rc = f->state == P_COMPARE ?
		     ph_sftp_open(j->sftp, f->rfinal, PH_FXF_READ, NULL, cmp_open_cb, f) :
		     open_temp(f);
	}
	if (rc != 0)
		goto out;
	f->pending = 1;
	f->slot = p->nactive;
	p->active[p->nactive++] = f;
	f = NULL;
out:
	if (f != NULL) {
		if (f->fd >= 0)
			close(f->fd);
		free(f->rtmp);
		free(f->rfinal);
		XXH3_freeState(f->hs);
		phsync_sig_gen_free(f->sg);
		free(f->sig);
		free(f->acked);
		ph_pdelta_free(&f->pd);
		free(f);
	}
	free(tmprel);
	free(dir);
	return rc;
}

struct waiter {
	struct push *p;
	size_t ai;
	int *left;
};

static void
mkdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct waiter *w = arg;
	struct ph_job *j = w->p->j;
	struct ph_action *a = &j->plan.v[w->ai];
	const struct ph_entry *e = &j->src.v[a->src];

	(void)s;
	(*w->left)--;
	if (status_ok(r)) {
		ph_job_dir_made(j, a->src);
	} else if (r->type != 0) {
		ph_plan_block_subtree(&j->plan, &j->src, w->ai);
		j->st.files_failed++;
		ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, "mkdir", 0,
		             r->err ? r->err : PHSYNC_EPROTO, msg_of(r, "cannot create this folder"));
	}
	free(w);
}

/* Folders first. Sent in order and awaited level by level, so a server that
 * answers out of order still sees a parent before its child. */
static int
make_dirs(struct push *p)
{
	struct ph_job *j = p->j;
	size_t i;
	int left = 0, rc = 0;

	for (i = 0; i < j->plan.n && rc == 0; i++) {
		struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];
		struct ph_sftp_attrs at = { 0 };
		struct waiter *w;
		char *rp;

		if (a->kind != PH_A_MKDIR)
			continue;
		if (j->o->dry_run) {
			ph_job_dir_made(j, a->src);
			continue;
		}
		/* One at a time: a server may answer out of order, and a child
		 * must not be asked before its parent exists. */
		while (left > 0 && (rc = ph_sftp_pump(j->sftp, -1)) == 0)
			;
		if (rc != 0 || a->kind != PH_A_MKDIR)
			continue;
		at.flags = PH_ATTR_PERMISSIONS;
		at.perm = (e->mode & 0777) | 0700;
		if ((w = malloc(sizeof(*w))) == NULL ||
		    (rp = ph_job_rpath(j, ph_entry_dpath(e))) == NULL) {
			free(w);
			rc = PHSYNC_ENOMEM;
			break;
		}
		w->p = p;
		w->ai = i;
		w->left = &left;
		rc = ph_sftp_mkdir(j->sftp, rp, &at, mkdir_cb, w);
		free(rp);
		if (rc != 0)
			free(w);
		else
			left++;
	}
	while (rc == 0 && left > 0)
		rc = ph_sftp_pump(j->sftp, -1);
	/* Leaving early (Ctrl-C, no memory): the MKDIRs in flight hold
	 * pointers to left and p; run their callbacks now. */
	if (left > 0)
		ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EINTR);
	return rc;
}

struct dirwait {
	struct ph_job *j;
	int *left;
	char *path;        /* relative, for the warning */
};

static void
dirtime_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct dirwait *w = arg;

	(void)s;
	(*w->left)--;
	if (r->type != 0 && !status_ok(r))
		ph_job_event(w->j, PHSYNC_EV_WARNING, w->path, NULL, 0,
		             r->err ? r->err : PHSYNC_EREMOTE,
		             msg_of(r, "the server would not set this folder's time"));
	free(w->path);
	free(w);
}

/* Gives touched folders their source times on the server, deepest first.
 * Their modes are left as made (the server's umask on the source's bits)
 * or as they were. A refusal is a warning (many phones cannot set times). */
static int
finish_dirs(struct push *p)
{
	struct ph_job *j = p->j;
	size_t i = j->src.n + 1;
	int left = 0, rc = 0;
	struct ph_sftp_attrs a = { 0 };

	a.flags = PH_ATTR_ACMODTIME;
	while (i-- > 0 && rc == 0) {
		const struct ph_entry *e = i < j->src.n ? &j->src.v[i] : NULL;
		struct dirwait *w;
		char *rp;

		if (e != NULL && (e->type != PH_T_DIR || !j->dirty[i]))
			continue;
		if (e == NULL && !j->root_dirty)
			continue;
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
			rc = PHSYNC_ENOMEM;
			break;
		}
		w->j = j;
		w->left = &left;
		rc = ph_sftp_setstat(j->sftp, rp, &a, dirtime_cb, w);
		free(rp);
		if (rc == 0) {
			left++;
		} else {
			free(w->path);
			free(w);
		}
	}
	while (left > 0 && ph_sftp_pump(j->sftp, -1) == 0)
		;
	if (left > 0)
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

int
ph_push_run(struct ph_job *j)
{
	struct push p;
	size_t ai = 0, i;
	uint64_t stop_at = 0;
	int rc, took;

	memset(&p, 0, sizeof(p));
	p.j = j;
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
	check_partials(j);
	p.active = calloc(MAX_FILES, sizeof(*p.active));
	if (p.active == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	while (rc == 0) {
		if (j->ctx->interrupted && !p.stopping) {
			/* Remove the temp files, finish the renames under way, and
			 * give that a short while: a hung server is abandoned. */
			p.stopping = 1;
			stop_at = ph_now_ms() + STOP_GRACE_MS;
			for (i = p.nactive; i-- > 0;)
				if (p.active[i]->state < P_RENAMING)
					pf_fail(p.active[i], PHSYNC_EINTR, "interrupted");
		}
		settle_all(&p);
		if (p.stopping && ph_now_ms() >= stop_at)
			break;
		p.planned = 0;
		took = plan_next(&p);
		while (!p.fatal && !p.stopping && !p.planned && ai < j->plan.n &&
		       p.nactive < MAX_FILES && p.writes < MAX_WRITES) {
			uint8_t k = j->plan.v[ai].kind;

			if ((k == PH_A_NEW || k == PH_A_UPDATE) && (rc = start_file(&p, ai)) != 0)
				break;
			ai++;
		}
		if (rc != 0)
			break;
		/* Files that hit the global write cap get their turn again; one
		 * that fails here is freed once its cleanup is answered. */
		for (i = 0; i < p.nactive && p.writes < MAX_WRITES; i++) {
			struct pfile *f = p.active[i];

			if (f->state == P_WRITING && !f->failed && more_to_send(f) &&
			    issue_writes(f) != 0)
				pf_fail(f, PHSYNC_ENOMEM, "cannot queue a write");
		}
		settle_all(&p);
		ph_job_progress(j);
		if (p.nactive == 0 && (ai >= j->plan.n || p.fatal || p.stopping))
			break;
		/* After a plan (or a file let go of in a stop) its requests go out,
		 * and replies are taken, without waiting before the next. */
		rc = ph_sftp_pump(j->sftp, took || p.planned ? 0 : p.stopping ? 100 : 200);
		if (rc == PHSYNC_EINTR)
			rc = 0;
	}
	if (rc == 0 && !p.stopping)
		rc = finish_dirs(&p);
	if (rc == 0)
		rc = p.fatal;
	if (rc == 0 && p.stopping)
		rc = PHSYNC_EINTR;
out:
	/* Leaving early (link lost, interrupted): run the callbacks still
	 * pending so each file and request is released exactly once. */
	if (p.nactive > 0) {
		for (i = 0; i < p.nactive; i++)
			p.active[i]->silent = 1;
		ph_sftp_abort(j->sftp, rc ? rc : PHSYNC_EINTR);
	}
	while (p.nactive > 0) {
		struct pfile *f = p.active[p.nactive - 1];

		f->failed = 1;
		pf_free(f);
	}
	free(p.active);
	phsync_diff_free(p.diff);
	return rc;
}
