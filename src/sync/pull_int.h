/* SPDX-License-Identifier: ISC */
/* What the files of the pull executor share: the run (struct pull), one
 * file in flight (struct xfer) with its state (pull_state.h) and the data
 * of each mode in its own struct, and the functions each file offers the
 * others. pull.c drives the run and the states; pull_whole.c reads a file
 * whole or from a kept prefix; pull_delta.c builds it from the helper's
 * delta; pull_cf.c from the server's check-file digests; pull_resume.c
 * keeps and takes up cut downloads; pull_done.c reports what the I/O
 * thread finished; pull_dirs.c makes folders and gives them their times.
 * Internal to those files. */
#ifndef PH_PULL_INT_H
#define PH_PULL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/delta.h"

#include "job.h"
#include "lio.h"
#include "pull_state.h"
#include "sftp.h"

#define PULL_MAX_FILES 64          /* files open at once */
#define PULL_MAX_READS 96          /* read requests in flight, all files */
#define PULL_MAX_READS_FILE 32     /* read requests in flight, one file */
#define PULL_DELTA_MIN (32u << 10)  /* smaller files come whole */
#define PULL_DELTA_READS_FILE 8     /* delta reads in flight, one file */
#define PULL_COPY_BUF (256u << 10)
/* A file whose size the server did not list may not take the local disk
 * below a floor: the smaller of PULL_FLOOR_MAX and half of what was free
 * when its first bytes came, checked each PULL_FLOOR_EVERY bytes
 * (pull_whole.c; the reasons in docs/phsync-pull.1). */
#define PULL_FLOOR_MAX (1ull << 30)
#define PULL_FLOOR_EVERY (4u << 20)

struct pull;

/* Plain reads (whole, resume, and the blocks a check-file delta did not
 * find): the listed size is a hint, never trusted. */
struct xfer_read {
	uint64_t next_off;         /* next offset to ask for */
	uint64_t got;              /* bytes that arrived, in complete replies */
	uint64_t hi;               /* end of the furthest bytes that arrived */
	uint64_t eof_at;           /* lowest offset the server said EOF at */
	int probed;                /* the read at the listed size was sent */
	uint64_t floor;            /* size unknown: free bytes the disk keeps
	                              (0: none), set with its first bytes */
	uint64_t floor_next;       /* got at which free space is checked next */
	int floor_set;             /* floor was chosen */
};

/* A delta through the helper (docs/PROTOCOL.md): the signature of the
 * local old copy went out with phsync-delta-start; the delta comes back in
 * order, COPY ops are read from the old copy, LITERAL ops written as sent,
 * and END's hash must match what was built. The three facts of the stream
 * (short, eof, end) only stop the asking; the replies still drain. */
struct xfer_delta {
	phsync_delta_reader *dr;
	uint64_t next;             /* next delta offset to ask for */
	unsigned win;              /* delta reads it may have in flight */
	uint64_t fed;              /* delta bytes received, in order */
	uint64_t copies;           /* COPY ops applied */
	uint32_t block;            /* the signature's block length: with the
	                              listed size, the bounds on copies and fed
	                              (dbound.h) */
	int shorted, eof, end;     /* a short reply / EOF / END came */
	uint64_t len;              /* END: the new file's length and hash */
	uint8_t hash[16];
};

/* A delta through check-file (cfdelta.c), when no helper runs: the
 * server's digests of the new file's blocks come first, then the main loop
 * hashes the old copy where those blocks may be, then the blocks found are
 * copied from the old copy and the rest read as in a plain pull. */
struct xfer_cf {
	struct ph_cf *cf;
	int probe;                 /* its check-file is the run's first (probe) */
};

struct xfer {
	struct pull *p;
	size_t ai;                 /* plan index */
	const struct ph_entry *e;
	struct ph_sftp_handle h;
	uint8_t state;             /* enum ph_xs: changed by ph_pull_state only */
	int quiet;                 /* failed by a lost link or a stop: not reported */
	unsigned reads;            /* read requests in flight: the file's share of
	                              the read windows (ph_pull_sent/back) */
	struct ph_sftp_group grp;  /* every request of x that calls back, counted
	                              by the SFTP client: x lives while any is in
	                              flight (ph_pull_idle ends it after the last) */
	size_t slot;               /* index in p->active */
	struct ph_lio_file *wf;    /* the local temp file, until finished */
	int basis;                 /* a delta's local old copy, -1 */
	uint64_t matched;          /* bytes taken from the old copy */
	uint64_t need;             /* bytes it writes to the disk, checked
	                              before it started (pull_space.c) */
	uint64_t put;              /* bytes handed to the I/O thread so far */
	struct xfer_read r;
	struct xfer_delta d;
	struct xfer_cf c;
};

/* Whether this server answers check-file: asked once by a probe, the
 * files that would also ask wait for its answer (pull_cf.c). */
enum pull_cfs { PULL_CF_UNTRIED = 0, PULL_CF_PROBING, PULL_CF_WORKS, PULL_CF_REFUSED };

/* The modes' entry points the file's life (pull_xfer.c) calls: a table
 * pull.c fills, so the life stays below the modes. */
struct pull_modes {
	int (*whole_want)(const struct xfer *x);
	int (*whole_issue)(struct xfer *x);
	void (*whole_complete)(struct xfer *x);
	int (*delta_want)(const struct xfer *x);
	int (*delta_issue)(struct xfer *x);
	void (*delta_complete)(struct xfer *x);
};

struct pull {
	struct ph_job *j;
	const struct pull_modes *modes;
	struct ph_lio *lio;
	struct xfer **active;      /* files in flight */
	size_t nactive;
	size_t reads;              /* read requests in flight, all files */
	uint32_t chunk;
	size_t max_files;
	int fatal;                 /* stop starting files (full disk, dead link) */
	int stopping;              /* interrupted: drop everything quietly */
	uint8_t cfs;               /* enum pull_cfs */
	uint8_t *cbuf;             /* COPY bytes from an old copy, on their way */
	/* Room on the disk (pull_space.c): */
	int space_known;           /* the free space could be read */
	uint64_t reserve;          /* bytes the run leaves free */
	uint64_t space_free;       /* free bytes at the last look */
	uint64_t space_owed;       /* bytes the files in flight then still had
	                              to write */
	uint64_t space_since;      /* bytes the files started since need */
};

/* One request of x on the wire, for a reply callback. */
struct rreq {
	struct xfer *x;
	uint64_t off;
	uint32_t len;
};

/* pull_xfer.c: the states and the lifecycle */
void ph_pull_state(struct xfer *x, int to);
int ph_pull_reading(const struct xfer *x);
void ph_pull_fail(struct xfer *x, int err, const char *msg);
int ph_pull_maybe_done(struct xfer *x);
int ph_pull_moot(struct xfer *x, const struct ph_sftp_reply *r);
void ph_pull_sent(struct xfer *x);
void ph_pull_back(struct xfer *x);
void ph_pull_idle(void *arg);
int ph_pull_issue(struct xfer *x);
void ph_pull_go_whole(struct xfer *x);
int ph_pull_want_more(const struct xfer *x);
void ph_pull_free(struct xfer *x);
void ph_pull_basis_done(struct xfer *x);

/* pull_whole.c: plain reads */
int ph_pull_whole_want(const struct xfer *x);
int ph_pull_whole_issue(struct xfer *x);
void ph_pull_whole_complete(struct xfer *x);

/* pull_delta.c: the helper's delta, and the old copy both deltas read */
int ph_pull_open_basis(struct pull *p, const struct ph_entry *d);
int ph_pull_delta_wanted(const struct xfer *x, const struct ph_entry *d);
int ph_pull_delta_begin(struct xfer *x, const struct ph_entry *d);
int ph_pull_delta_want(const struct xfer *x);
int ph_pull_delta_issue(struct xfer *x);
void ph_pull_delta_complete(struct xfer *x);

/* pull_cf.c: check-file deltas */
int ph_pull_cf_wanted(const struct xfer *x, const struct ph_entry *d);
int ph_pull_cf_start(struct xfer *x);
void ph_pull_cf_begin(struct xfer *x, const struct ph_entry *d);

/* pull_resume.c: cut downloads */
int ph_pull_resume_try(struct xfer *x);
int ph_pull_resume_keep(const struct xfer *x, int err);
void ph_pull_resume_kept(struct ph_job *j, const struct ph_entry *e, struct ph_lio_file *f);
void ph_pull_partial_done(struct ph_job *j, const char *path);

/* pull_done.c: what the I/O thread finished */
void ph_pull_reap(struct pull *p, int wait);
void ph_pull_drain(struct pull *p);

/* pull_space.c: room on the local disk. _plan, before anything is done:
 * files that alone cannot fit are refused (reported failed, j->nofit set);
 * PHSYNC_ENOSPC with why when the rest cannot fit together. _take, as the
 * file at plan index ai starts: 1 when its need fits (counted in), else
 * 0 with the file refused. _need: what entry e's file writes. */
int ph_pull_space_plan(struct pull *p);
int ph_pull_space_take(struct pull *p, size_t ai, uint64_t need);
uint64_t ph_pull_space_need(struct ph_job *j, const struct ph_entry *e);

/* pull_dirs.c: folders */
void ph_pull_make_dirs(struct pull *p);
void ph_pull_finish_dirs(struct pull *p);

#endif
