/* SPDX-License-Identifier: ISC */
/* Local output on a thread of its own: the network thread hands over the
 * bytes of each file (copied) and, at the end, a commit or an abort; the
 * I/O thread writes, sets mode and times, makes a batch durable (one
 * syncfs for many small files) and renames each temp file into place.
 * A batch is made durable, renamed and its folders synced on a second
 * (committer) thread while the I/O thread writes the next batch; files
 * are handed back only after their batch's folders are durable.
 * Decryption and the kernel's page-cache copy then run on two cores, as
 * ssh and rsync's receiver do. Operations of one file run in order. */
#ifndef PH_LIO_H
#define PH_LIO_H

#include <stddef.h>
#include <stdint.h>

#include "pfs.h"

struct ph_lio;

enum { PH_LIO_ABORT = 0, PH_LIO_COMMIT = 1, PH_LIO_KEEP = 2 };   /* ph_lio_finish */
#define PH_RESUME_MIN_PREFIX (1u << 20)

enum { PH_LIO_PLACED = 0,   /* under its final name (new, or replaced) */
       PH_LIO_SAME,         /* the file there had the same content: replaced */
       PH_LIO_BESIDE };     /* beside it, under conflict_name */

/* One file being written. The caller fills rel, mode, times and cookie;
 * the I/O thread creates the temp file beside rel's final place on the
 * first operation (so the network thread makes no file system calls).
 * Owned by the I/O thread from ph_lio_finish() on, handed back by
 * ph_lio_pop(). */
struct ph_lio_file {
	char *rel;           /* path below the root, '/'-separated (owned) */
	int fd;              /* the temp file, -1 until created */
	int dirfd;           /* its folder, -1 until opened */
	char *tmp;           /* temp name in dirfd */
	const char *final;   /* last component of rel */
	int opened;          /* creation was tried */
	uint32_t mode;       /* permission bits: created with mode & 0666 under
	                        the umask, as cp does for a new file */
	int exact_mode;      /* set mode exactly (replacing a file: keep its bits) */
	int64_t mtime;       /* also its access time (none is kept) */
	size_t cookie;       /* caller's (plan index) */
	uint64_t matched;    /* caller's (bytes taken from the old copy) */
	/* With check_hash, a commit also needs the content's XXH3-128 to be
	 * want_hash (a delta's end says what the source held): else the file
	 * is aborted with -EBADMSG, never renamed into place. */
	int check_hash;
	uint8_t want_hash[16];
	/* The old copy a delta's COPY ops read (ph_lio_copy), owned: closed
	 * with the file. -1 when none. */
	int basis;
	uint64_t size;       /* bytes written */
	uint64_t expect;     /* the size a commit must find on disk */
	void *hs;            /* XXH3-128 state of the bytes written in order */
	uint64_t hashed;     /* bytes [0, hashed) are in hs */
	uint8_t hash[16];    /* on commit: XXH3-128 of the content (canonical) */
	int64_t dst_mtime;   /* on commit: the mtime the file system kept */
	/* On commit under its final name (PLACED, SAME): the file's stat
	 * once renamed, through its folder's fd (the state's identity,
	 * ident.h), when has_st. */
	struct ph_stat st;
	int has_st;
	/* Replacing an existing file (set by the caller): with guard, the
	 * final name must still hold what the plan saw there (guard_size,
	 * guard_mtime), else the new content lands beside it under a conflict
	 * name (tempname.h) made with conflict_time. With guard_content, a
	 * file there of other content than the new one also sends the new one
	 * beside it (first contact: no record to go by). */
	int guard, guard_content;
	uint64_t guard_size;
	int64_t guard_mtime;
	int64_t conflict_time;
	char *beside;        /* result: the conflict name used (owned) */
	int landed;          /* result: PH_LIO_PLACED, PH_LIO_SAME or PH_LIO_BESIDE */
	/* Resume: the caller sets resume_name (a partial download in rel's
	 * folder, owned) and resume_have; the I/O thread opens it instead of
	 * a new temp file, keeps its first resume_have bytes (hashing them)
	 * and the writes go on from there. */
	char *resume_name;
	uint64_t resume_have;
	/* Keep (ph_lio_finish with PH_LIO_KEEP): a cut download of at least
	 * PH_RESUME_MIN_PREFIX good bytes is kept under a partial name; kept is
	 * then that many bytes and kept_name the name (else kept is 0). */
	uint64_t kept;
	char kept_name[256];
	int err;             /* result: 0 or -errno (-ELOOP: a symlink in the way) */
	int commit;          /* 1: commit, 0: abort (set by ph_lio_finish) */
	void *end_op;        /* preallocated: finishing never allocates */
	struct ph_lio_file *next_done; /* the finished list (no allocation) */
};


/* Starts the I/O thread for files beneath root (an fd the caller keeps
 * open); durable asks for fsync before rename. */
int ph_lio_new(int root, int durable, struct ph_lio **out);
/* A new file record for rel (copied), fds unset. NULL on ENOMEM. */
struct ph_lio_file *ph_lio_file_new(const char *rel);
/* Queues a copy of len bytes for offset off of f. Blocks while too much
 * is queued (4 MiB: the data plus every op's own cost). Returns 0 or
 * PHSYNC_ENOMEM. */
int ph_lio_write(struct ph_lio *l, struct ph_lio_file *f, uint64_t off, const void *data,
                 size_t len);
/* Queues len bytes of f->basis from src_off for offset off of f: the I/O
 * thread reads and writes them (a delta's COPY). Counts against the same
 * budget as a write (the op's cost) and blocks likewise. Returns 0,
 * PHSYNC_EINVAL without a basis, PHSYNC_ENOMEM. */
int ph_lio_copy(struct ph_lio *l, struct ph_lio_file *f, uint64_t off, uint64_t src_off,
                size_t len);
/* Queues the end of f: commit (rename into place), abort (remove) or keep
 * (PH_LIO_KEEP: the good prefix kept for a later resume, see kept). A
 * commit checks that the temp file holds exactly f->expect bytes and that
 * every write, the sync and the close succeeded; anything else aborts.
 * The caller must not touch f until ph_lio_pop() returns it. */
void ph_lio_finish(struct ph_lio *l, struct ph_lio_file *f, int commit);
/* Takes up to max finished files; with wait, blocks until one is ready or
 * none is pending. Returns how many. */
size_t ph_lio_pop(struct ph_lio *l, struct ph_lio_file **out, size_t max, int wait);
/* Files handed to ph_lio_finish() and not yet popped. */
size_t ph_lio_pending(struct ph_lio *l);
/* The first write error seen (-errno), sticky; 0 if none. */
int ph_lio_error(struct ph_lio *l);
/* Frees a finished file's names and fds. NULL is a no-op. */
void ph_lio_file_free(struct ph_lio_file *f);
/* Drains the queue, stops the thread, frees; NULL is a no-op. */
void ph_lio_free(struct ph_lio *l);

#endif
