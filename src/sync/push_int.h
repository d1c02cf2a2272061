/* SPDX-License-Identifier: ISC */
/* The push executor's insides, shared by its files: push.c (the driver:
 * folders, files started, the main loop), push_file.c (a file's life:
 * states, failure, freeing, stepping), push_send.c (the temp file:
 * opened, written, made durable, closed), push_commit.c (the temp moved
 * into place, replaced aside or put beside), push_compare.c (first
 * contact: the same content?), push_delta.c (uploads built from the old
 * version), push_resume.c (uploads cut and gone on with) and
 * push_fsm.c (the state tables). Internal to src/sync/push*.c.
 *
 * The files call downwards only: push.c (the driver) uses the others,
 * push_compare.c and push_delta.c use push_send.c, all use push_file.c
 * and push_fsm.c; pf_step reaches the work above it through p->steps.
 *
 * Each file being pushed has one state (enum pf_state) for its life, and
 * its mode's own machine beside it: compare (enum cmp_state), delta
 * (enum dl_state); the commit (enum cm_state) runs in PF_COMMIT. Every
 * change goes through pf_state / pf_cmp_state / pf_dl_state /
 * pf_cm_state, which check it against push_fsm.c's tables. The requests
 * a file has in flight are counted by the SFTP client (f->grp, sftp.h);
 * f is freed once it is finished and that count is 0. */
#ifndef PH_PUSH_INT_H
#define PH_PUSH_INT_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#include "phsync/delta.h"
#include "job.h"
#include "pdelta.h"
#include "push_fsm.h"
#include "tempname.h"

#define MAX_FILES 64
#define MAX_WRITES 96
#define MAX_WRITES_FILE 32
/* Bytes of WRITE requests in flight: the server's channel window (2 MiB
 * on OpenSSH) bounds what moves anyway; more would only sit in memory. */
#define MAX_WRITE_BYTES (6u << 20)
/* A file this big whose upload is cut (dead link, timeout, Ctrl-C) keeps
 * its temp file on the server and its acknowledged prefix in the state;
 * the next push goes on from there (as a pull does). */
#define PH_PUSH_RESUME_MIN (16u << 20)

/* How a file's bytes reach its temp file. */
enum pf_mode {
	PM_WHOLE,    /* every byte sent (new, replaced, or put beside) */
	PM_RESUME,   /* the rest sent into the temp an earlier run kept */
	PM_COMPARE,  /* first contact, same size: compared first (struct pf_cmp) */
	PM_DELTA,    /* from the old version, planned on the state's signature */
	PM_HDELTA    /* ... planned on the helper's fresh signature */
};

struct push;

/* PM_COMPARE: the remote file read and compared with the local one. */
struct pf_cmp {
	uint8_t state;             /* enum cmp_state */
	uint64_t off;              /* next offset to read */
	unsigned reads;            /* READs in flight */
};

/* PM_DELTA, PM_HDELTA: copy-data pieces of the old version (open as bh)
 * and writes of the literal bytes. */
struct pf_delta {
	uint8_t state;             /* enum dl_state */
	int stale;                 /* the checks found the old version is not
	                              what the state signed (1), or could not
	                              be queued (2): sent whole */
	unsigned checks;           /* checked blocks not yet answered */
	uint64_t bsize;            /* PM_HDELTA: the old version's size */
	uint8_t *hsig_data;        /* PM_HDELTA: the helper's signature (NULL in
	                              DL_PLAN: refused; plan_next sends whole) */
	size_t hsig_len;
	struct ph_pdelta pd;
	struct ph_state_file rec;  /* PM_DELTA: the state's record it stands on */
	uint8_t rechash[16];
	size_t opi;                /* next op to send */
	uint64_t op_pos;           /* bytes of it sent */
	struct ph_sftp_handle bh;
};

/* The commit: where the closed temp file goes, and how. */
struct pf_commit {
	uint8_t state;             /* enum cm_state */
	int beside;                /* land as a conflict copy beside rfinal */
	uint32_t rename_status;    /* CM_CLASH: the failed RENAME's status */
	char *raside;              /* the old file's aside copy, once moved */
	char *rbeside;             /* the conflict copy's remote path */
};

/* A resumable upload (big, with a state): WRITE chunks the server
 * acknowledged, so a cut one keeps its prefix for the next run. */
struct pf_resume {
	uint8_t *acked;            /* bit per chunk of p->chunk from have0 (NULL:
	                              not resumable) */
	uint64_t have0;            /* PM_RESUME: the prefix an earlier run kept */
	int keep;                  /* cut: the temp stays for the next run */
};

/* The block signature of what was sent (sg NULL: none, e.g. out of
 * memory: it is optional). */
struct pf_sig {
	phsync_sig_gen *sg;
	uint8_t *buf;
	size_t len, cap;
	int done;
};

struct pfile {
	struct push *p;
	struct ph_sftp_group grp;  /* its requests in flight (sftp.h) */
	size_t ai, slot;
	const struct ph_entry *e;
	enum pf_mode mode;
	uint8_t state;             /* enum pf_state */
	int fd;                    /* local source */
	char *rtmp, *rfinal;       /* remote paths */
	struct ph_sftp_handle h;
	uint64_t next_off;         /* whole: the next byte to send */
	uint64_t fill_off;         /* local offset the next WRITE is read from */
	unsigned writes;           /* WRITE and copy requests in flight */
	int silent;                /* failed with the link: no event */
	int tmp_made;              /* the temp file exists on the server */
	int times_failed;          /* the server would not take our time */
	int64_t rmtime;            /* the remote file's mtime, when the server
	                              would not take ours (-1: unknown) */
	XXH3_state_t *hs;          /* XXH3-128 of what was read and sent */
	struct pf_sig sig;
	struct pf_resume rs;
	struct pf_commit cm;
	union {
		struct pf_cmp cmp;     /* PM_COMPARE */
		struct pf_delta dl;    /* PM_DELTA, PM_HDELTA */
	} u;
};

/* What pf_step runs in the states whose work lives above push_file.c: the
 * driver fills it, so no file calls back up into the one that uses it. */
struct pf_steps {
	void (*writing)(struct pfile *f);    /* PF_WRITING, after each reply */
	void (*finished)(struct pfile *f);   /* PF_FINISHING, all answered */
	void (*commit)(struct pfile *f);     /* PF_COMMIT, all answered */
};

struct push {
	struct ph_job *j;
	const struct pf_steps *steps;
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

/* push_file.c: the file's life. */
struct ph_sftp *pf_sftp(struct pfile *f);   /* f's requests: counted in f->grp */
int pf_status_ok(const struct ph_sftp_reply *r);
const char *pf_msg_of(const struct ph_sftp_reply *r, const char *dflt);
int pf_live(const struct pfile *f);
int pf_abandonable(const struct pfile *f);
/* State changes, checked against push_fsm.c's tables: an illegal one
 * fails the file (a bug, said so) and returns PHSYNC_EINVAL. */
int pf_state(struct pfile *f, enum pf_state to);
int pf_cmp_state(struct pfile *f, enum cmp_state to);
int pf_dl_state(struct pfile *f, enum dl_state to);
int pf_cm_state(struct pfile *f, enum cm_state to);
void pf_step(struct pfile *f);
void pf_idle(void *arg);                     /* f->grp's idle hook */
void pf_fail(struct pfile *f, int err, const char *msg);
/* A request of f could not be queued: f fails ("cannot queue a request"). */
void pf_queue_failed(struct pfile *f, int rc);
void pf_reply_err(struct pfile *f, const struct ph_sftp_reply *r, const char *what);
void pf_close(struct pfile *f, struct ph_sftp_handle *h);
void pf_remove_temp(struct pfile *f);
int pf_settle(struct pfile *f);
void pf_free(struct pfile *f);
uint32_t pf_sig_block_len(uint64_t size);
void pf_sig_feed(struct pfile *f, const void *data, size_t len, int end);
int pf_delta_mode(const struct pfile *f);
int pf_delta_live(const struct pfile *f);
void pf_delta_forget(struct pfile *f);
void pf_delta_free(struct pfile *f);
uint64_t pf_acked_prefix(const struct pfile *f);
void pf_resume_cut(struct pfile *f, int err);
void pf_resume_free(struct pfile *f);

/* push_send.c: the temp file (uses push_file.c). */
int pf_open_temp(struct pfile *f);
int pf_issue_writes(struct pfile *f);
int pf_more_to_send(const struct pfile *f);
void pf_send_step(struct pfile *f);
void pf_close_temp(struct pfile *f);

/* push_commit.c: into place (uses push_file.c). */
void pf_commit(struct pfile *f);

/* push_compare.c (uses push_file.c, push_send.c). */
void pf_cmp_open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* push_delta.c (uses push_file.c, push_send.c). */
void pf_delta_prepare(struct pfile *f, const struct ph_entry *d);
int pf_plan_next(struct push *p);
void pf_bopen_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg);

/* push_resume.c (uses push_file.c). */
void pf_check_partials(struct ph_job *j);
int pf_feed_prefix(struct pfile *f, uint64_t n);

#endif
