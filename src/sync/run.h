/* SPDX-License-Identifier: ISC */
/* A run's steps (sync.c), which phsync_sync (entry.c) takes one way and
 * twoway.c both ways. Internal. */
#ifndef PH_RUN_H
#define PH_RUN_H

#include <stdint.h>

#include "job.h"
#include "known.h"
#include "lscan.h"
#include "sftp.h"
#include "ssh.h"
#include "strpool.h"

/* One pull or push: the job and what phsync_sync holds beside it. */
struct run {
	struct ph_job j;
	struct phsync_options defaults;
	struct ph_ssh *ssh;
	struct ph_sftp_attrs ra;       /* the remote root's */
	struct ph_strpool pool;        /* both trees' paths, once */
	char *user, *host, *rpath;
	char *ldir, *single;           /* a single file's folder here, its name */
	const char **pat;              /* the filter's rules */
	uint8_t *incl;
	struct ph_known_set known;
	uint64_t scan_failed;          /* files the scans could not read */
	uint64_t del_failed;           /* those that refuse deletes (a two-way
	                                  pass: its source side's only) */
	int pull, remote_missing;      /* a dry push to a folder not made yet */
	int known_ready;               /* known filled by ph_run_known_both */
	int fold;                      /* the destination ignores case */
	/* The local walk, started as soon as the local root is open (it then
	 * runs while the login happens) and joined by ph_run_scan. */
	struct ph_lscan ls;
	int ls_on;                     /* started, not joined yet */
	struct ph_filter ls_filter;    /* the filter it was started with */
	struct ph_tree stale;          /* dead runs' leftovers it found (a pull) */
	/* A one-way pull's records, their local half merged after the walk
	 * while the server is listed (known.h). */
	struct ph_known_early ke;
	/* A pull's trees taken from as they fill (pairs.h): the walk's feed
	 * attached when it starts, the listing's with the taker. */
	struct ph_feed lfeed, rfeed;
	int lfeed_on, rfeed_on;
	struct ph_pairs *pairs;
};

/* The steps, in their order; each returns 0 or a negative PHSYNC_E* with
 * the message in the context. begin: settings checked, the remote spec
 * read (on a failure nothing is held and no event was sent). local: the
 * filter and the local root, whose walk starts on its thread. connect:
 * logged in, the remote root known. state: the pair's state open. scan:
 * the server listed, the local walk joined. plan:
 * names matched, the records merged, j.plan made. pass: the plan carried
 * out (files, renewed records, deletes, offload). */
int ph_run_begin(struct run *r, phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
                 const struct phsync_options *opts, const char *local_dir);
int ph_run_local(struct run *r, const char *remote);
int ph_run_connect(struct run *r, const char *remote);
int ph_run_state(struct run *r);
int ph_run_scan(struct run *r);
int ph_run_plan(struct run *r);
/* A two-way run's name matching, each orientation before either plan
 * (ph_run_plan does it itself in a one-way run). */
int ph_run_names(struct run *r);
/* A two-way run, after both orientations' matching (the pull's leaves
 * its destination paths to this): the push's (the second) may have given
 * phone names the laptop's keys (a phone that ignores case takes its
 * "PHOTO.JPG" for the laptop's "photo.jpg", and a laptop name it
 * numbered, "img.jpg" as "img (2).jpg", is keyed so), so the pull's
 * destination paths are set from the keys as they are then: the phone's
 * file lands in the laptop's file of that key, not beside it under the
 * phone's spelling. r is the pull, other the push (its tree of the phone
 * is r's source, given back after). */
int ph_run_dest_again(struct run *r, struct run *other);
/* A two-way run's records, read once and merged for both orientations
 * (each local file's identity checked once); then ph_run_plan reads none.
 * r is the pull, other the push, their trees each other's swapped. */
int ph_run_known_both(struct run *r, struct run *other);
int ph_run_pass(struct run *r);
/* The run's counts of what is to do (j->st) from its plan: the plan
 * step's, and again once a two-way run reconciled or made a plan. */
void ph_run_counts(struct ph_job *j);
/* A pass's result rc, or (when 0) EPARTIAL for failed files, ECONFLICT
 * for conflicts kept. */
int ph_run_result(struct ph_job *j, int rc);
/* The run's result said (the summary event, the state closed with it) and
 * everything it held let go. Returns the result. */
int ph_run_end(struct run *r, int rc, struct phsync_stats *stats);

/* The one-way run (sync.c) and the two-way run (twoway.c). */
int ph_sync_oneway(phsync_ctx *ctx, enum phsync_direction dir, const char *remote,
                   const char *local_dir, const struct phsync_options *opts,
                   struct phsync_stats *stats);
int ph_sync_twoway(phsync_ctx *ctx, const char *remote, const char *local_dir,
                   const struct phsync_options *opts, struct phsync_stats *stats);

#endif
