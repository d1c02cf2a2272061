/* SPDX-License-Identifier: ISC */
/* One pull or push run: what the executors share. Internal. */
#ifndef PH_JOB_H
#define PH_JOB_H

#include <stdatomic.h>
#include <stdint.h>

#include "phsync/phsync.h"
#include "emit.h"
#include "plan.h"
#include "sftp.h"
#include "state.h"
#include "tree.h"

struct ph_ssh;    /* transport/ssh.h */

/* The message of a local file another program holds open so that it can be
 * neither replaced nor read (-EBUSY: Windows' share modes). */
#define PH_HELD_MSG "in use: another program has it open and does not share it; " \
	"left as it was (run again once that program has closed it)"

/* A file this run copied, for --remove-source-files. */
struct ph_offload {
	uint32_t src;              /* source index */
	uint8_t hash[16];          /* XXH3-128 of what was read */
};

struct ph_job {
	phsync_ctx *ctx;
	const struct phsync_options *o;
	enum phsync_direction dir;
	struct ph_sftp *sftp;
	struct ph_ssh *ssh;        /* its connection (more channels for a
	                              listing), or NULL */
	char *rroot;               /* remote root, no trailing '/' ("" = "/") */
	int lroot;                 /* local root fd, -1 when absent (dry run) */
	struct ph_filter filter;
	struct ph_tree src, dst;
	struct ph_plan plan;
	uint8_t *dirty;            /* per source entry: a folder whose times to set */
	uint8_t *nofit;            /* pull, per plan index: refused for want of
	                              room (pull_space.c), or NULL */
	uint8_t *reached;          /* per source entry: a file event named it
	                              (unreached.h) */
	int root_dirty;            /* the root folder's times to set */
	int64_t root_mtime, root_atime;
	struct phsync_stats st;
	struct ph_emit ev;         /* the run's events (emit.h), counting into st */
	struct ph_state *state;    /* NULL on a dry run */
	int state_err;             /* first failure to record in it */
	const char *busy;          /* the file whose bytes moved last: the
	                              progress event names it (a tree path) */
	int64_t started;           /* wall clock at the start (conflict names) */
	const char *local_dir;     /* the local folder as the user named it */
	struct ph_partial *partials; /* pull: cut downloads to resume (state) */
	struct ph_tree found_partials; /* pull: the partial files the scan met */
	size_t npartials;
	struct ph_offload *off;    /* --remove-source-files: files copied this run */
	size_t noff, capoff;
	uint64_t src_failed;       /* source entries or folders the scan could not list */
	uint64_t paired;           /* files exactly as recorded on both sides, taken
	                              out of both trees by the scan (pairs.h) */
	struct ph_tree dst_failed; /* destination paths the scan could not list:
	                              what lies there is unknown */
	int dst_unlisted;          /* ... the whole destination is */
	struct ph_tree known_paths;/* paths of state records gone from the
	                              source (the plan points into them) */
	struct ph_reap *reap;      /* closes replaced old copies (core/reap.c),
	                              ended last, after the link */
	struct ph_renew *renew;    /* records whose identity moved, content
	                              the same: renewed (ident.c) */
	size_t nrenew, caprenew;
	char *idir;                /* the folder ident.c has open (idfd), or NULL */
	int idfd;
	int twoway;                /* one of a two-way run's passes (twoway.c):
	                              deletes are listed, guarded per side */
	struct ph_tree src_failed_at; /* two-way: where the source's listing
	                              failed (the push pass's dst_failed) */
	int src_unlisted;          /* ... the whole source */
	/* Told of each conflict copy put beside path (NULL: nobody asks). */
	void (*beside_fn)(void *arg, const char *path, const char *beside);
	void *beside_arg;
	const struct ph_stat *lid_st; /* the recorded file's stat, taken already
	                              (the pull's I/O thread), or NULL */
};

/* Notes a failed listing of path ("" or ".": the root) on side t of j. */
void ph_job_scan_failed(struct ph_job *j, const struct ph_tree *t, const char *path);

/* Sets j up as another pass of from's run (a two-way run's push pass,
 * its last pass): the context, the connection, the roots, the filter, the
 * state, the start time, the root's times and whether two-way are from's
 * (borrowed: freed by from's owner); j's options o, its direction dir, its
 * own events counting into j->st. */
void ph_job_borrow(struct ph_job *j, const struct ph_job *from, const struct phsync_options *o,
                   enum phsync_direction dir);

/* Sends an event to the caller (stats are attached); a file's outcome
 * marks it reached (unreached.h). */
void ph_job_event(struct ph_job *j, enum phsync_event_type type, const char *path,
                  const char *action, uint64_t size, int err, const char *msg);
/* Emits a PROGRESS event when the interval has passed. */
void ph_job_progress(struct ph_job *j);
/* Records a file put in place in the state (if any): its size, its time on
 * each side and the XXH3-128 of its content (NULL: unknown). diverged
 * records the destination side as PH_KNOWN_DIVERGED (a conflict kept the
 * destination's own version). A failure is kept in j->state_err and ends
 * the run with it. */
void ph_job_record(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime,
                   int64_t rmtime, const uint8_t *hash, int diverged);
/* The same with the hash's origin said: hread 1 when hash is of the
 * remote path's whole bytes as read from it (a pull's record always is;
 * ph_job_record says so for a pull). */
void ph_job_record_as(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime,
                      int64_t rmtime, const uint8_t *hash, int hread);
/* The same for a file pushed whole, with the block signature of what was
 * written (sig, siglen: the delta engine's serialized form). */
void ph_job_record_pushed(struct ph_job *j, const char *path, uint64_t size, int64_t lmtime,
                          int64_t rmtime, const uint8_t *hash, const uint8_t *sig,
                          size_t siglen);

/* Counts and reports a conflict: the incoming version of path went beside
 * it as beside (a name in the same folder; NULL on a dry run). first: no
 * sync had been recorded (first contact) and the content differed. */
void ph_job_conflict(struct ph_job *j, const char *path, const char *beside, uint64_t size,
                     int first);

/* Marks the folder holding path as needing its times restored. */
void ph_job_touch_parent(struct ph_job *j, const char *path);

/* Counts and reports folder src (a source index) as made, and marks it
 * and its parent for their times to be restored. */
void ph_job_dir_made(struct ph_job *j, size_t src);
/* Dry run: reports every file the plan would copy as done. */
void ph_job_dry_run_files(struct ph_job *j);

/* The partial transfer of path kept by an earlier run, or NULL. */
struct ph_partial *ph_job_partial(struct ph_job *j, const char *path);
/* Is name (a temp file's) one the state keeps to go on from? */
int ph_job_partial_tmp(const struct ph_job *j, const char *name);

/* Builds "root/rel" for the remote side; caller frees. NULL on ENOMEM. */
static inline char *
ph_job_rpath(const struct ph_job *j, const char *rel)
{
	return ph_rpath_join(j->rroot, rel);
}

/* Lists the remote tree under j->rroot into t (j->src or j->dst),
 * pipelined (remote.h); a folder it cannot list is noted on t's side
 * (ph_job_scan_failed), the state's kept uploads are left. Our temp files
 * are removed when remove_temps. */
int ph_job_remote_scan(struct ph_job *j, struct ph_tree *t, int remove_temps,
                       const atomic_int *walking, const atomic_size_t *found);
/* The scan's progress: entries listed so far on the phone and walked here
 * (the stats' listing counts), and a PROGRESS event when one is due. */
void ph_job_scan_progress(struct ph_job *j, uint64_t remote, uint64_t local);

/* Executors: carry out j->plan. They return 0 or a fatal PHSYNC_E*; per
 * file failures are counted in j->st.files_failed. */
int ph_pull_run(struct ph_job *j);
int ph_push_run(struct ph_job *j);
/* Deletes (or moves to the trash) the plan's delete candidates on the
 * destination side, each only if it still shows the recorded size and
 * time, and forgets them in the state. Returns 0 or a fatal PHSYNC_E*. */
int ph_delete_run(struct ph_job *j);
/* What went from the source since the last sync (sync.c's step): the
 * records of files gone from both sides forgotten (unless the scans
 * missed some: scan_failed), and with --delete, or in a two-way run, the
 * destination's copies deleted by ph_delete_run unless a listing failed
 * (del_failed), the source listed empty, or more would go than
 * --max-delete or --max-delete-percent allow: then none goes. */
int ph_delete_gone(struct ph_job *j, uint64_t scan_failed, uint64_t del_failed);
/* Carries out the plan's moves and copies (PH_N_MOVE, PH_N_COPY) once
 * confirmed by content; the rest become plain new files (move.c). */
void ph_move_run(struct ph_job *j);
/* --remove-source-files: removes from the server each file copied this run
 * (j->off) and each unchanged one the state holds a hash for, once the
 * local copy reads back with that hash and the server still lists the
 * same size and time; a hash not read from that server path (hread 0) is
 * first checked by reading the server's file whole. Then forgets its
 * record (the phone's copy is gone on purpose: a later --delete must not
 * take the laptop's). */
int ph_offload_run(struct ph_job *j);

#endif
