/* SPDX-License-Identifier: ISC */
/* The local I/O thread; see lio.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "phsync/error.h"
#include "ctx.h"
#include "lio.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "str.h"
#include "tempname.h"
#include "tree.h"
#include "whole.h"

#define MAX_QUEUED_BYTES (4u << 20)   /* queued ops' memory: copied data and each
                                         op's own cost (OP_COST) */
#define COMMIT_AT 512                 /* files made durable together when the
                                         committer keeps up */
#define MAX_BATCH 4096                /* ... and when it does not: the batch grows
                                         while it is busy (fewer syncs a file; three
                                         batches in flight, 5 fds a file at most) */
#define FD_SPARE 320                  /* fds left to the rest of the run: the
                                         files a pull has open at once before
                                         they reach a batch (64, each with its
                                         folder and a delta's basis), the
                                         reaper's queue (64), the state, the
                                         link, the walk */
#define MAX_BATCH_BYTES (256u << 20)
#define WRITEBACK_STEP (8u << 20)
#define SMALL_HINT (256u << 10)       /* smaller files get no write-back hint */
#define COPY_PIECE (256u << 10)       /* a COPY is read and written in these */

struct op {
	struct op *next;
	struct ph_lio_file *f;
	uint64_t off;
	size_t len;          /* 0 with f->commit set by finish: the end op */
	int end;
	int copy;            /* the bytes are f->basis's at src_off, not data */
	uint64_t src_off;
	size_t held;         /* what this op costs the queue (data + OP_COST) */
	uint8_t data[];
};

/* What one queued op costs besides its data: the record and the
 * allocator's header. A COPY holds no data but costs this too, so a
 * helper's delta of one-byte COPY ops (17 wire bytes each) fills the
 * queue's budget like any other bytes and the network thread waits
 * (issue 22, item 7: uncounted, they grew the queue by 1.5 GB in 20 s). */
#define OP_COST (sizeof(struct op) + 32)

/* Files made durable and placed together; the I/O thread fills one while
 * the committer commits another, and the one before, placed, waits for the
 * sync that makes its renames durable (see commit_batch). */
struct batch {
	struct ph_lio_file *v[MAX_BATCH];
	int fds[2 * MAX_BATCH];      /* the files, then the placed batch's folders */
	int dirfds[MAX_BATCH];       /* one per folder of the batch */
	struct ph_lio_file *dirof[MAX_BATCH]; /* ... and a file in it */
	size_t n;
	uint64_t bytes;
};

struct ph_lio {
	pthread_mutex_t mu;
	pthread_cond_t work, room, done_cv;
	pthread_cond_t commit_cv;    /* the committer: a batch to commit, or stop */
	pthread_cond_t cdone_cv;     /* the I/O thread: the committer is free */
	struct op *head, *tail;
	size_t queued_bytes;
	struct ph_lio_file *done_head, *done_tail; /* finished, for the caller */
	size_t pending;              /* finished by the caller, not yet popped */
	int root, durable, stop, error;
	struct ph_temp_owner owner;  /* for the temp names */
	pthread_t th, cth;
	struct batch *to_commit;     /* the committer's, NULL when it is free */
	struct batch *placed;        /* committed and renamed, its folders not
	                                durable yet: not handed back */
	int cstop;                   /* the committer ends when free */
	int io_idle;                 /* the I/O thread waits for work, its batch
	                                empty: nothing comes to go with placed */
	struct batch bufs[3];
	size_t max_batch;            /* files a batch: MAX_BATCH, fewer under a
	                                low open-file limit */
	/* thread-only state */
	char *cur_dir;               /* folder cache: consecutive files share it */
	int cur_dirfd;
	struct op *cbuf;             /* a piece of a COPY, on its way */
	struct batch *fill;          /* the batch being filled (one of bufs; the
	                                committer may take it: changed under mu) */
};

static void
deliver(struct ph_lio *l, struct ph_lio_file **v, size_t n)
{
	size_t i;

	/* Its folder's fd goes now, not when the caller frees it: files
	 * handed back and not yet taken would hold fds the batches count on
	 * (a 100,000-file pull under a limit of 5,000 failed files with
	 * EMFILE). */
	for (i = 0; i < n; i++) {
		if (v[i]->dirfd >= 0)
			ph_close(v[i]->dirfd);
		v[i]->dirfd = -1;
	}
	pthread_mutex_lock(&l->mu);
	for (i = 0; i < n; i++) {
		v[i]->next_done = NULL;
		if (l->done_tail != NULL)
			l->done_tail->next_done = v[i];
		else
			l->done_head = v[i];
		l->done_tail = v[i];
	}
	pthread_cond_broadcast(&l->done_cv);
	pthread_mutex_unlock(&l->mu);
}

/* Do a and b lie in the same folder (the same rel up to the last '/')? */
static int
same_folder(const struct ph_lio_file *a, const struct ph_lio_file *b)
{
	size_t dl = (size_t)(a->final - a->rel);

	return (size_t)(b->final - b->rel) == dl && memcmp(a->rel, b->rel, dl) == 0;
}

/* Is the guarded final name still as the plan saw it, and (guard_content)
 * of the same content as f? Returns PH_LIO_PLACED to replace it,
 * PH_LIO_SAME when the content is the same, PH_LIO_BESIDE otherwise. A
 * final name that is gone is simply taken. -EBUSY when another program
 * holds it so that it cannot be read (Windows' share modes): the file
 * then fails, as its replace would, rather than landing beside a file
 * that did not change. */
static int
guard_check(struct ph_lio_file *f)
{
	struct ph_stat st;
	uint8_t h[16];
	uint64_t n;
	int rc;

	if ((rc = ph_fstatat(f->dirfd, f->final, &st)) != 0)
		return rc == -ENOENT ? PH_LIO_PLACED : rc == -EBUSY ? rc : PH_LIO_BESIDE;
	if (st.type != PH_FT_REG || st.size != f->guard_size || st.mtime_sec != f->guard_mtime)
		return PH_LIO_BESIDE;
	if (!f->guard_content)
		return PH_LIO_PLACED;
	if (st.size != f->size)
		return PH_LIO_BESIDE;
	if ((rc = ph_whole_hash_at(f->dirfd, f->final, h, &n)) == -EBUSY)
		return rc;
	if (rc != 0 || n != f->size || memcmp(h, f->hash, 16) != 0)
		return PH_LIO_BESIDE;
	return PH_LIO_SAME;
}

/* Renames f's temp file to a free conflict name beside its final name. */
static int
land_beside(struct ph_lio_file *f)
{
	unsigned n;
	int rc = -EEXIST;

	if ((f->beside = malloc(256)) == NULL)
		return -ENOMEM;
	for (n = 1; n < 100 && rc == -EEXIST; n++) {
		if (ph_conflict_name(f->beside, 256, f->final, f->conflict_time, n) != 0)
			return -EINVAL;
		rc = ph_rename_noreplace(f->dirfd, f->tmp, f->dirfd, f->beside);
	}
	return rc;
}

/* Closes f (NFS reports write errors there) and puts it in place: under
 * its final name, or beside a guarded file that changed. A placed file's
 * identity is taken here, through the folder it was renamed in (no path
 * walk), for the state (ident.c). */
static void
place(struct ph_lio_file *f, int sync_err)
{
	int rc;

	if (f->err == 0 && sync_err != 0)
		f->err = sync_err;
	if ((rc = ph_close(f->fd)) != 0 && f->err == 0 && rc != -EINTR)
		f->err = rc;
	f->fd = -1;
	if (f->err == 0 && f->guard && (rc = guard_check(f)) < 0)
		f->err = rc;
	else if (f->err == 0 && f->guard)
		f->landed = rc;
	if (f->err == 0 && f->landed == PH_LIO_BESIDE) {
		f->err = land_beside(f);
	} else if (f->err == 0 && !f->guard) {
		/* A new file: its name may have been taken since the scan (or
		 * is taken in another case on a file system that ignores
		 * case): never replaced, it lands beside. */
		f->err = ph_rename_noreplace(f->dirfd, f->tmp, f->dirfd, f->final);
		if (f->err == -EEXIST) {
			f->landed = PH_LIO_BESIDE;
			f->err = land_beside(f);
		}
	} else if (f->err == 0) {
		if (f->basis >= 0 && ph_open_blocks_replace()) {
			ph_close(f->basis); /* the delta's old copy, replaced now */
			f->basis = -1;
		}
		f->err = ph_renameat(f->dirfd, f->tmp, f->dirfd, f->final);
	}
	if (f->err != 0)
		ph_unlinkat(f->dirfd, f->tmp, 0);
	else if (f->landed != PH_LIO_BESIDE)
		f->has_st = ph_fstatat(f->dirfd, f->final, &f->st) == 0 && f->st.type == PH_FT_REG;
}

/* Batch b's folders (each once, of the files placed) into b->dirfds: how
 * many. Each file is compared with the folders found so far, the last one
 * first (a batch's files come folder by folder), not with every file
 * before it: with 4,096 files that was 8 million comparisons a batch, a
 * quarter of a 100,000-file pull's CPU. */
static size_t
batch_folders(struct batch *b)
{
	size_t i, k, nd = 0;

	for (i = 0; i < b->n; i++) {
		struct ph_lio_file *f = b->v[i];

		if (f->err != 0)
			continue;
		for (k = nd; k > 0 && !same_folder(b->dirof[k - 1], f); k--)
			;
		if (k > 0)
			continue;
		b->dirof[nd] = f;
		b->dirfds[nd++] = f->dirfd;
	}
	return nd;
}

/* The renames of batch b durable: its nd folders (batch_folders) together,
 * one syncfs per file system where there is one (platform/durable.c); on a
 * failure each folder on its own, so an error marks only its files. */
static void
sync_folders(struct batch *b, size_t nd)
{
	size_t i, k;
	int e;

	if (nd == 0 || ph_durable_sync(b->dirfds, nd) == 0)
		return;
	for (k = 0; k < nd; k++) {
		if ((e = ph_dir_sync(b->dirfds[k])) == 0)
			continue;
		for (i = 0; i < b->n; i++)
			if (b->v[i]->err == 0 && b->v[i] != b->dirof[k] &&
			    same_folder(b->dirof[k], b->v[i]))
				b->v[i]->err = e;
		b->dirof[k]->err = e;
	}
}

/* Batch b handed back, its nd folders (batch_folders) made durable on
 * their own first. */
static void
settle(struct ph_lio *l, struct batch *b, size_t nd)
{
	sync_folders(b, nd);
	deliver(l, b->v, b->n);
	b->n = 0;
	b->bytes = 0;
}

/* On the committer thread, while the I/O thread fills the next batch:
 * makes batch b's data durable, then places each file. A file is handed
 * back as committed (the state records it on that promise) only once its
 * rename is durable too: without durable writes at once; else by the next
 * sync of its file system, which is the next batch's data sync when one
 * follows at once (p, the batch placed before b: one sync a batch for both
 * its data and the renames before it, instead of two), else settle's (on
 * Windows, where a rename is written through, at once). A
 * failed combined sync is done again apart, so an error marks only the
 * files it belongs to. Returns 1 when b waits placed for the next sync. */
static int
commit_batch(struct ph_lio *l, struct batch *b, struct batch *p)
{
	size_t i, nd = 0;
	int e = 0;

	if (l->durable) {
		/* (p is NULL where renames need no folder sync: see below.) */
		if (p != NULL && (nd = batch_folders(p)) > 0)
			memcpy(b->fds + b->n, p->dirfds, nd * sizeof(*p->dirfds));
		if ((e = ph_durable_sync(b->fds, b->n + nd)) != 0 && p != NULL) {
			settle(l, p, nd);
			p = NULL;
			e = ph_durable_sync(b->fds, b->n);
		}
	}
	if (p != NULL) {
		deliver(l, p->v, p->n);
		p->n = 0;
		p->bytes = 0;
	}
	for (i = 0; i < b->n; i++)
		place(b->v[i], e);
	/* Windows writes a rename through: nothing to wait for. */
	if (l->durable && ph_dir_sync_needed())
		return 1;
	deliver(l, b->v, b->n);
	b->n = 0;
	b->bytes = 0;
	return 0;
}

/* A buffer neither filled, committed nor waiting placed. Called with l->mu
 * held, to_commit already the batch being handed over. */
static struct batch *
spare(struct ph_lio *l)
{
	size_t i;

	for (i = 0; i < 3; i++)
		if (&l->bufs[i] != l->to_commit && &l->bufs[i] != l->placed)
			return &l->bufs[i];
	abort(); /* three buffers, at most two of them taken */
}

static void *
commit_run(void *arg)
{
	struct ph_lio *l = arg;
	struct batch *b, *p;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		if (l->to_commit == NULL && l->placed != NULL) {
			/* The next batch goes with the placed one's renames in one
			 * sync: taken here once it is a batch's worth, else handed
			 * over by the I/O thread when it runs out of work. With
			 * nothing to come, the renames are synced on their own. */
			if (l->fill->n >= COMMIT_AT) {
				l->to_commit = l->fill;
				l->fill = spare(l);
				pthread_cond_signal(&l->cdone_cv);
			} else if (l->cstop || (l->io_idle && l->fill->n == 0)) {
				b = l->placed;
				pthread_mutex_unlock(&l->mu);
				settle(l, b, batch_folders(b));
				pthread_mutex_lock(&l->mu);
				l->placed = NULL;
				continue;
			} else {
				pthread_cond_wait(&l->commit_cv, &l->mu);
				continue;
			}
		}
		if (l->to_commit == NULL) {
			if (l->cstop)
				break;
			pthread_cond_wait(&l->commit_cv, &l->mu);
			continue;
		}
		b = l->to_commit;
		p = l->placed;
		pthread_mutex_unlock(&l->mu);
		b = commit_batch(l, b, p) ? b : NULL;
		pthread_mutex_lock(&l->mu);
		l->placed = b;
		l->to_commit = NULL;
		pthread_cond_signal(&l->cdone_cv);
		pthread_cond_signal(&l->work); /* an idle I/O thread's partial batch */
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Hands the filled batch to the committer; with wait, first waits until
 * the committer is free or has taken the batch itself (else returns 0
 * when it is busy). Returns 1 when handed over. Called with l->mu held. */
static int
hand_off(struct ph_lio *l, int wait)
{
	struct batch *full = l->fill;

	while (wait && l->to_commit != NULL && l->fill == full)
		pthread_cond_wait(&l->cdone_cv, &l->mu);
	if (l->fill != full)
		return 1;
	if (l->to_commit != NULL)
		return 0;
	l->to_commit = l->fill;
	l->fill = spare(l);
	pthread_cond_signal(&l->commit_cv);
	return 1;
}

/* Opens a partial download to go on with: its first resume_have bytes are
 * kept (and hashed, a local read), the rest cut off. */
static void
resume_open(struct ph_lio_file *f)
{
	struct ph_stat st;
	uint8_t *buf;

	snprintf(f->tmp, 256, "%s", f->resume_name);
	if ((f->fd = ph_openat(f->dirfd, f->tmp, PH_O_RDWR | PH_O_NOFOLLOW, 0)) < 0) {
		f->err = f->fd;
		f->fd = -1;
		return;
	}
	/* One link: a temp phsync made, never a hard link to a file elsewhere. */
	if (ph_fstat(f->fd, &st) != 0 || st.type != PH_FT_REG || st.nlink != 1 ||
	    st.size < f->resume_have || ph_ftruncate(f->fd, f->resume_have) != 0) {
		f->err = -EIO;
		return;
	}
	if ((buf = malloc(1u << 18)) == NULL) {
		f->err = -ENOMEM;
		return;
	}
	while (f->hashed < f->resume_have) {
		size_t want = f->resume_have - f->hashed < (1u << 18) ?
		              (size_t)(f->resume_have - f->hashed) : (1u << 18);
		int64_t n = ph_pread(f->fd, buf, want, f->hashed);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			f->err = n < 0 ? (int)n : -EIO;
			break;
		}
		XXH3_128bits_update(f->hs, buf, (size_t)n);
		f->hashed += (uint64_t)n;
	}
	free(buf);
}

/* A cut download: its good prefix (the bytes hashed in order) is kept
 * under a partial name, durable, for the next run to resume. Returns 1
 * when kept. */
static int
keep_partial(struct ph_lio *l, struct ph_lio_file *f)
{
	if (f->fd < 0 || f->hashed < PH_RESUME_MIN_PREFIX || ph_ftruncate(f->fd, f->hashed) != 0 ||
	    ph_durable_sync(&f->fd, 1) != 0 ||
	    ph_temp_name(f->kept_name, sizeof(f->kept_name), f->final, PH_TEMP_PARTIAL,
	                 &l->owner) != 0 ||
	    ph_renameat(f->dirfd, f->tmp, f->dirfd, f->kept_name) != 0)
		return 0;
	ph_dir_sync(f->dirfd);
	f->kept = f->hashed;
	ph_close(f->fd);
	f->fd = -1;
	return 1;
}

/* Creates f's temp file beside its final place, beneath the root. */
static void
open_file(struct ph_lio *l, struct ph_lio_file *f)
{
	const char *slash = strrchr(f->rel, '/');
	size_t dl = slash ? (size_t)(slash - f->rel) : 0;
	int tries, rc, e = -EINVAL;

	f->opened = 1;
	if (l->cur_dir == NULL || strlen(l->cur_dir) != dl || memcmp(l->cur_dir, f->rel, dl) != 0) {
		char *dir = ph_strndup(f->rel, dl);
		int nfd;

		if (dir == NULL) {
			f->err = -ENOMEM;
			return;
		}
		if ((rc = ph_local_opendir(l->root, dir, &nfd)) != 0) {
			free(dir);
			/* Kept as -errno like every other failure of the file. */
			f->err = rc == PHSYNC_EUNSAFE ? -ELOOP : rc == PHSYNC_ENOENT ? -ENOENT :
			         rc == PHSYNC_ENOTDIR ? -ENOTDIR : rc == PHSYNC_EPERM ? -EACCES :
			         rc == PHSYNC_ENOMEM ? -ENOMEM : -EIO;
			return;
		}
		if (l->cur_dirfd >= 0)
			ph_close(l->cur_dirfd);
		free(l->cur_dir);
		l->cur_dir = dir;
		l->cur_dirfd = nfd;
	}
	if ((f->dirfd = dup(l->cur_dirfd)) < 0 || (f->tmp = malloc(256)) == NULL) {
		f->err = -ENOMEM;
		return;
	}
	if (f->resume_name != NULL) {
		resume_open(f);
		return;
	}
	for (tries = 0; tries < 16; tries++) {
		if (ph_temp_name(f->tmp, 256, f->final, PH_TEMP_NEW, &l->owner) != 0) {
			e = -EINVAL;
			break;
		}
		/* A new file is created with the source's rw bits under the
		 * umask, as cp does; a replaced one gets its old bits at the end. */
		e = ph_openat(f->dirfd, f->tmp, PH_O_RDWR | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW,
		              f->exact_mode ? 0600 : f->mode & 0666);
		if (e != -EEXIST)
			break;
	}
	if (e >= 0)
		f->fd = e;
	else
		f->err = e;
}

static void do_write(struct ph_lio *l, struct op *o);

static void
fail_write(struct ph_lio *l, struct ph_lio_file *f, int err)
{
	f->err = err;
	pthread_mutex_lock(&l->mu);
	if (l->error == 0)
		l->error = f->err;
	pthread_mutex_unlock(&l->mu);
}

/* A COPY of the old copy's bytes: read here, in pieces, and written as a
 * write op's bytes would be (the network thread never touches them). */
static void
do_copy(struct ph_lio *l, struct op *o)
{
	struct ph_lio_file *f = o->f;
	struct op *piece;
	uint64_t done = 0;

	if (l->cbuf == NULL && (l->cbuf = malloc(sizeof(*piece) + COPY_PIECE)) == NULL) {
		fail_write(l, f, -ENOMEM);
		return;
	}
	piece = l->cbuf;
	while (done < o->len && f->err == 0) {
		size_t want = o->len - done < COPY_PIECE ? (size_t)(o->len - done) : COPY_PIECE;
		int64_t n = ph_pread(f->basis, piece->data, want, o->src_off + done);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			/* The old copy shrank under us: the result cannot be right. */
			f->err = n < 0 ? (int)n : -EIO;
			return;
		}
		piece->f = f;
		piece->off = o->off + done;
		piece->len = (size_t)n;
		piece->copy = 0;
		do_write(l, piece);
		done += (uint64_t)n;
	}
}

static void
do_write(struct ph_lio *l, struct op *o)
{
	struct ph_lio_file *f = o->f;
	const uint8_t *p = o->data;
	uint64_t off = o->off;
	size_t left = o->len;

	if (!f->opened)
		open_file(l, f);
	if (f->err != 0)
		return;
	if (o->copy) {
		do_copy(l, o);
		return;
	}
	while (left > 0) {
		int64_t w = ph_pwrite(f->fd, p, left, off);

		if (w == -EINTR)
			continue;
		if (w <= 0) {
			fail_write(l, f, w < 0 ? (int)w : -ENOSPC);
			return;
		}
		p += w;
		off += (uint64_t)w;
		left -= (size_t)w;
	}
	/* Hashed as the bytes arrive in order; a range that came early (after
	 * a short read) is read back from the temp file at the end. */
	if (o->off == f->hashed) {
		XXH3_128bits_update(f->hs, o->data, o->len);
		f->hashed += o->len;
	}
	if (l->durable && off / WRITEBACK_STEP != o->off / WRITEBACK_STEP)
		ph_writeback_hint(f->fd, (off / WRITEBACK_STEP - 1) * WRITEBACK_STEP, WRITEBACK_STEP);
}

/* Completes f's hash: the part not hashed in order is read back. */
static int
finish_hash(struct ph_lio_file *f)
{
	XXH128_canonical_t c;
	uint8_t *buf = NULL;
	size_t cap = 1u << 18;

	if (f->hashed < f->size && (buf = malloc(cap)) == NULL)
		return -ENOMEM;
	while (f->hashed < f->size) {
		size_t want = f->size - f->hashed < cap ? (size_t)(f->size - f->hashed) : cap;
		int64_t n = ph_pread(f->fd, buf, want, f->hashed);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? (int)n : -EIO;
		}
		XXH3_128bits_update(f->hs, buf, (size_t)n);
		f->hashed += (uint64_t)n;
	}
	free(buf);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(f->hs));
	memcpy(f->hash, c.digest, 16);
	return 0;
}

static void
do_end(struct ph_lio *l, struct ph_lio_file *f)
{
	struct ph_stat st;

	if (!f->opened && f->commit)
		open_file(l, f); /* an empty file: nothing was written */
	if (f->commit == PH_LIO_KEEP && f->err == 0 && keep_partial(l, f)) {
		f->err = -ECANCELED;
		deliver(l, &f, 1);
		return;
	}
	if (f->commit != PH_LIO_COMMIT && f->err == 0)
		f->err = -ECANCELED;
	if (f->err == 0) {
		/* No access time is kept: as mtime. The time read back after
		 * setting it is what gets recorded: a FAT/exFAT disk keeps it in
		 * 2 s steps. */
		if ((f->exact_mode && (f->err = ph_fchmod(f->fd, f->mode & 07777)) != 0) ||
		    (f->err = ph_set_times(f->fd, f->mtime, 0)) != 0 ||
		    (f->err = ph_fstat(f->fd, &st)) != 0)
			st.mtime_sec = 0;
		else if (st.size != f->expect || f->size != f->expect)
			f->err = -EIO; /* never a file of another length than what came */
		else if ((f->err = finish_hash(f)) == 0 && f->check_hash &&
		         memcmp(f->hash, f->want_hash, 16) != 0)
			f->err = -EBADMSG;
		f->dst_mtime = st.mtime_sec;
	}
	if (f->err != 0) {
		if (f->fd >= 0) {
			ph_unlinkat(f->dirfd, f->tmp, 0);
			ph_close(f->fd);
			f->fd = -1;
		}
		deliver(l, &f, 1);
		return;
	}
	/* Its hash is final: the state (about 600 bytes) is not kept while
	 * the file waits in a batch of up to MAX_BATCH. */
	XXH3_freeState(f->hs);
	f->hs = NULL;
	/* The disk starts on it now, while the next files arrive, rather than
	 * all at once in the batch's sync (writes hint each 8 MiB step as it
	 * fills: here the rest, all of a photo). A small file's is left to
	 * the batch's syncfs, on the committer: submitting each on its own
	 * costs this thread more than the disk gains. */
	if (l->durable && f->size >= SMALL_HINT)
		ph_writeback_hint(f->fd, f->size / WRITEBACK_STEP * WRITEBACK_STEP, 0);
	pthread_mutex_lock(&l->mu);
	l->fill->fds[l->fill->n] = f->fd;
	l->fill->v[l->fill->n++] = f;
	l->fill->bytes += f->size;
	if (l->fill->n >= l->max_batch || l->fill->bytes >= MAX_BATCH_BYTES)
		hand_off(l, 1);
	else if (l->fill->n >= COMMIT_AT)
		/* A busy committer: go on filling this one (each sync waits
		 * for the disk's cache flush, whatever the batch's size). */
		hand_off(l, 0);
	pthread_mutex_unlock(&l->mu);
}

static void *
run(void *arg)
{
	struct ph_lio *l = arg;
	struct op *o;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		if (l->head == NULL) {
			/* Idle: a good moment to commit the batch, once the
			 * committer is free (it wakes us then). */
			if (l->fill->n > 0 && hand_off(l, 0))
				continue;
			if (l->fill->n == 0 && l->stop)
				break;
			if (l->fill->n == 0 && !l->io_idle) {
				l->io_idle = 1;  /* a placed batch settles now */
				pthread_cond_signal(&l->commit_cv);
			}
			pthread_cond_wait(&l->work, &l->mu);
			continue;
		}
		l->io_idle = 0;
		o = l->head;
		l->head = o->next;
		if (l->head == NULL)
			l->tail = NULL;
		pthread_mutex_unlock(&l->mu);
		if (o->end)
			do_end(l, o->f);
		else
			do_write(l, o);
		pthread_mutex_lock(&l->mu);
		l->queued_bytes -= o->held;
		pthread_cond_broadcast(&l->room);
		free(o);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct ph_lio_file *
ph_lio_file_new(const char *rel)
{
	struct ph_lio_file *f = calloc(1, sizeof(*f));
	const char *slash;

	if (f == NULL || (f->rel = strdup(rel)) == NULL ||
	    (f->end_op = malloc(sizeof(struct op))) == NULL ||
	    (f->hs = XXH3_createState()) == NULL) {
		if (f != NULL) {
			free(f->rel);
			free(f->end_op);
		}
		free(f);
		return NULL;
	}
	XXH3_128bits_reset(f->hs);
	slash = strrchr(f->rel, '/');
	f->final = slash ? slash + 1 : f->rel;
	f->fd = f->dirfd = f->basis = -1;
	return f;
}

static void
destroy(struct ph_lio *l)
{
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->room);
	pthread_cond_destroy(&l->done_cv);
	pthread_cond_destroy(&l->commit_cv);
	pthread_cond_destroy(&l->cdone_cv);
	free(l);
}

/* Ends the committer once it has committed what it was handed. */
static void
stop_committer(struct ph_lio *l)
{
	pthread_mutex_lock(&l->mu);
	l->cstop = 1;
	pthread_cond_signal(&l->commit_cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->cth, NULL);
}

int
ph_lio_new(int root, int durable, struct ph_lio **out)
{
	struct ph_lio *l = calloc(1, sizeof(*l));
	uint64_t lim = ph_nofile_limit();

	if (l == NULL)
		return PHSYNC_ENOMEM;
	l->root = root;
	l->cur_dirfd = -1;
	l->durable = durable;
	ph_temp_owner_self(&l->owner);
	l->fill = &l->bufs[0];
	l->max_batch = MAX_BATCH;
	/* Three batches in flight: two hold a file and a folder fd per file
	 * (a delta's basis besides), the placed one a folder fd: a low limit
	 * shrinks them rather than failing files with EMFILE. */
	if (lim < 5 * MAX_BATCH + FD_SPARE)
		l->max_batch = lim > 5 * 8 + FD_SPARE ? (size_t)(lim - FD_SPARE) / 5 : 8;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->room, NULL);
	pthread_cond_init(&l->done_cv, NULL);
	pthread_cond_init(&l->commit_cv, NULL);
	pthread_cond_init(&l->cdone_cv, NULL);
	if (pthread_create(&l->cth, NULL, commit_run, l) != 0) {
		destroy(l);
		return PHSYNC_ENOMEM;
	}
	if (pthread_create(&l->th, NULL, run, l) != 0) {
		stop_committer(l);
		destroy(l);
		return PHSYNC_ENOMEM;
	}
	*out = l;
	return 0;
}

static void
enqueue(struct ph_lio *l, struct op *o)
{
	pthread_mutex_lock(&l->mu);
	while (o->held > 0 && l->queued_bytes + o->held > MAX_QUEUED_BYTES && l->queued_bytes > 0)
		pthread_cond_wait(&l->room, &l->mu);
	o->next = NULL;
	if (l->tail)
		l->tail->next = o;
	else
		l->head = o;
	l->tail = o;
	l->queued_bytes += o->held;
	if (o->end)
		l->pending++;
	pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&l->mu);
}

int
ph_lio_write(struct ph_lio *l, struct ph_lio_file *f, uint64_t off, const void *data, size_t len)
{
	struct op *o;

	if (len == 0)
		return 0;
	if ((o = malloc(sizeof(*o) + len)) == NULL)
		return PHSYNC_ENOMEM;
	o->f = f;
	o->off = off;
	o->len = len;
	o->end = 0;
	o->copy = 0;
	o->held = len + OP_COST;
	memcpy(o->data, data, len);
	f->size = off + len > f->size ? off + len : f->size;
	enqueue(l, o);
	return 0;
}

int
ph_lio_copy(struct ph_lio *l, struct ph_lio_file *f, uint64_t off, uint64_t src_off, size_t len)
{
	struct op *o;

	if (len == 0)
		return 0;
	if (f->basis < 0)
		return PHSYNC_EINVAL;
	if ((o = malloc(sizeof(*o))) == NULL)
		return PHSYNC_ENOMEM;
	o->f = f;
	o->off = off;
	o->len = len;
	o->end = 0;
	o->copy = 1;
	o->src_off = src_off;
	o->held = OP_COST;
	f->size = off + len > f->size ? off + len : f->size;
	enqueue(l, o);
	return 0;
}

void
ph_lio_finish(struct ph_lio *l, struct ph_lio_file *f, int commit)
{
	struct op *o = f->end_op;

	f->end_op = NULL;
	f->commit = commit;
	o->f = f;
	o->off = 0;
	o->len = 0;
	o->end = 1;
	o->copy = 0;
	o->held = 0;
	enqueue(l, o);
}

size_t
ph_lio_pop(struct ph_lio *l, struct ph_lio_file **out, size_t max, int wait)
{
	size_t n = 0;

	pthread_mutex_lock(&l->mu);
	while (wait && l->done_head == NULL && l->pending > 0)
		pthread_cond_wait(&l->done_cv, &l->mu);
	while (n < max && l->done_head != NULL) {
		out[n++] = l->done_head;
		l->done_head = l->done_head->next_done;
	}
	if (l->done_head == NULL)
		l->done_tail = NULL;
	l->pending -= n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

size_t
ph_lio_pending(struct ph_lio *l)
{
	size_t n;

	pthread_mutex_lock(&l->mu);
	n = l->pending;
	pthread_mutex_unlock(&l->mu);
	return n;
}

int
ph_lio_error(struct ph_lio *l)
{
	int e;

	pthread_mutex_lock(&l->mu);
	e = l->error;
	pthread_mutex_unlock(&l->mu);
	return e;
}

void
ph_lio_file_free(struct ph_lio_file *f)
{
	if (f == NULL)
		return;
	if (f->fd >= 0)
		ph_close(f->fd);
	if (f->dirfd >= 0)
		ph_close(f->dirfd);
	if (f->basis >= 0)
		ph_close(f->basis);
	free(f->tmp);
	free(f->rel);
	free(f->end_op);
	free(f->beside);
	free(f->resume_name);
	XXH3_freeState(f->hs);
	free(f);
}

void
ph_lio_free(struct ph_lio *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->th, NULL);
	stop_committer(l); /* the I/O thread handed over its last batch */
	if (l->cur_dirfd >= 0)
		ph_close(l->cur_dirfd);
	free(l->cur_dir);
	free(l->cbuf);
	while (l->done_head != NULL) {
		struct ph_lio_file *f = l->done_head;

		l->done_head = f->next_done;
		ph_lio_file_free(f);
	}
	destroy(l);
}
