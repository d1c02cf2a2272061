/* SPDX-License-Identifier: ISC */
/* phsync_restore: a chain of archives applied in order into a folder, with
 * a pull's safety: every file through a temp file beside its place,
 * renamed only once the whole archive read back right; nothing outside the
 * folder; no symlink followed or made. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "phsync/backup.h"
#include "apath.h"
#include "aread.h"
#include "chain.h"
#include "ctx.h"
#include "buf.h"
#include "brun.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "pset.h"
#include "psys.h"
#include "tempname.h"

#define ZBUF 65536

/* A file written to its temp, renamed when its archive checked out. */
struct staged {
	char *path;
	char tmp[PH_NAME_MAX + 1];
	uint64_t size, dev, ino;
	uint8_t hash[16];
};

struct dtime {
	char *path;
	int64_t mtime;
	uint32_t nsec;
};

struct rs {
	struct ph_brun *run;
	int root;
	mode_t mask;
	struct ph_temp_owner self;
	struct staged *sv;
	size_t ns, caps;
	struct dtime *dv;
	size_t nd, capd;
	struct ph_pset put;        /* what this run put in place */
	unsigned gen;              /* the archive being applied (1, 2...) */
};

/* Opens (making what is missing) folder rel beneath the root, one part at
 * a time, never following a symlink. */
static int
mkdirs(struct rs *r, const char *rel, uint32_t mode, int *out)
{
	char part[PH_NAME_MAX + 1], sofar[PH_APATH_MAX];
	const char *p = rel;
	struct ph_stat st;
	int fd = dup(r->root), nfd, made, rc = 0, e;

	if (fd < 0)
		return ph_err_from_errno(errno);
	while (*p) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);

		if (n > PH_NAME_MAX) {
			ph_close(fd);
			return PHSYNC_EINVAL;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		made = 0;
		nfd = ph_openat(fd, part, PH_O_DIR | PH_O_NOFOLLOW, 0);
		if (nfd == -ENOENT) {
			if ((e = ph_mkdirat(fd, part, (mode & 0777) | 0700)) == 0)
				made = 1;
			else if (e != -EEXIST) {
				ph_close(fd);
				return ph_err_from_errno(-e);
			}
			nfd = ph_openat(fd, part, PH_O_DIR | PH_O_NOFOLLOW, 0);
		}
		if (nfd < 0) {
			ph_close(fd);
			return nfd == -ELOOP || nfd == -ENOTDIR ? PHSYNC_EUNSAFE :
			       ph_err_from_errno(-nfd);
		}
		ph_close(fd);
		fd = nfd;
		p += n + (s != NULL);
		/* A folder this run made is its own: a later deletion may remove
		 * it, a failed archive takes it back. */
		if (made) {
			size_t len = (size_t)(p - rel) - (s != NULL);

			if (len >= sizeof(sofar))
				rc = PHSYNC_EINVAL;
			else if ((e = ph_fstat(fd, &st)) != 0)
				rc = ph_err_from_errno(-e);
			else {
				memcpy(sofar, rel, len);
				sofar[len] = '\0';
				rc = ph_pset_put(&r->put, sofar, st.dev, st.ino, 1, r->gen);
			}
			if (rc != 0) {
				ph_close(fd);
				return rc;
			}
		}
	}
	*out = fd;
	return 0;
}

static void
refuse(struct rs *r, const char *path, int err, const char *why)
{
	r->run->st.files_failed++;
	ph_emit(&r->run->ev, PHSYNC_EV_FILE_FAILED, path, NULL, 0, err, why);
}

static int
add_dtime(struct rs *r, const char *path, int64_t mtime, uint32_t nsec)
{
	if (r->nd == r->capd && ph_grow(&r->dv, &r->capd, sizeof(*r->dv), 64) != 0)
		return PHSYNC_ENOMEM;
	if ((r->dv[r->nd].path = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	r->dv[r->nd].mtime = mtime;
	r->dv[r->nd].nsec = nsec;
	r->nd++;
	return 0;
}

/* Opens the entry's folder beneath the root (making what is missing) and
 * checks its disk has room for the entry. Returns 0 (*dfd open, *base the
 * entry's name in it), 1 (refused and reported), or a PHSYNC_E* that
 * stops. */
static int
open_place(struct rs *r, const struct ph_ar_entry *e, int *dfd, const char **base)
{
	struct ph_brun *run = r->run;
	uint64_t space;
	char *dir = NULL;
	int rc;

	if ((rc = ph_local_split(e->path, &dir, base)) != 0)
		return rc;
	rc = mkdirs(r, dir, 0755, dfd);
	free(dir);
	if (rc == PHSYNC_EUNSAFE) {
		refuse(r, e->path, rc, "a symlink or a file is in the way of its folder; "
		       "not followed");
		return 1;
	}
	if (rc != 0)
		return ph_err(run->ctx, rc, "%s: cannot make its folder: %s", e->path,
		              phsync_strerror(rc));
	/* A size that cannot fit is refused before a byte is written. */
	if (ph_free_space(*dfd, &space) == 0 && e->size / 2 > space / 2) {
		ph_close(*dfd);
		*dfd = -1;
		return ph_err(run->ctx, PHSYNC_ENOSPC, "%s: %llu bytes do not fit on the disk (no "
		              "space left); the restore stopped, nothing of this archive was put "
		              "in place", e->path, (unsigned long long)e->size);
	}
	return 0;
}

/* Creates a new temp file (a name of this run's, into tmp) beside base in
 * dfd, into *fd. */
static int
open_temp(struct rs *r, int dfd, const char *base, const char *path, char *tmp, size_t len,
          int *fd)
{
	int tries, e = 0;

	*fd = -1;
	for (tries = 0; *fd < 0 && tries < 16; tries++) {
		ph_temp_name(tmp, len, base, PH_TEMP_NEW, &r->self);
		e = ph_openat(dfd, tmp, PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW, 0600);
		if (e >= 0)
			*fd = e;
		else if (e != -EEXIST)
			break;
	}
	if (*fd < 0)
		return ph_err(r->run->ctx, ph_err_from_errno(-e), "%s: cannot create its temp "
		              "file: %s", path, strerror(-e));
	return 0;
}

/* Hashes the zeros from *pos up to end (a hole, or the sparse tail). */
static void
hash_zeros(XXH3_state_t *h, uint64_t *pos, uint64_t end)
{
	static const uint8_t zeros[ZBUF];

	while (*pos < end) {
		size_t k = end - *pos < ZBUF ? (size_t)(end - *pos) : ZBUF;

		XXH3_128bits_update(h, zeros, k);
		*pos += k;
	}
}

/* Writes all n bytes of p at off in fd. */
static int
put_bytes(struct rs *r, int fd, const char *path, const void *p, size_t n, int64_t off)
{
	while (n > 0) {
		int64_t w = ph_pwrite(fd, p, n, (uint64_t)off);

		if (w == -EINTR)
			continue;
		if (w <= 0) {
			int e2 = w < 0 ? (int)-w : EIO;

			return ph_err(r->run->ctx, ph_err_from_errno(e2), "%s: %s%s", path,
			              strerror(e2), e2 == ENOSPC ? " (no space left); the restore "
			              "stopped, nothing of this archive was put in place" : "");
		}
		p = (const uint8_t *)p + w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Copies the entry's data (sparse or not) from the archive into fd,
 * hashing the whole file, holes as zeros, into h. */
static int
copy_data(struct rs *r, struct ph_ar *ar, const struct ph_ar_entry *e, int fd,
          XXH3_state_t *h)
{
	const void *p;
	uint64_t pos = 0;
	int64_t off;
	size_t n;
	int rc;

	while ((rc = ph_ar_data(ar, &p, &n, &off)) == 1) {
		if (off < 0 || (uint64_t)off < pos || (uint64_t)off + n > e->size)
			return ph_err(r->run->ctx, PHSYNC_ECORRUPT, "%s: data outside its size",
			              e->path);
		hash_zeros(h, &pos, (uint64_t)off);   /* a hole (sparse entry) */
		XXH3_128bits_update(h, p, n);
		if ((rc = put_bytes(r, fd, e->path, p, n, off)) != 0)
			return rc;
		pos = (uint64_t)off + n;
	}
	if (rc < 0)
		return rc;
	hash_zeros(h, &pos, e->size);
	return 0;
}

/* Gives the temp file its size, mode and time, syncs it when asked, reads
 * its identity into st and closes it (*fd -1 after). */
static int
seal_temp(struct rs *r, const struct ph_ar_entry *e, int *fd, struct ph_stat *st)
{
	struct ph_brun *run = r->run;
	int rc;

	if ((rc = ph_ftruncate(*fd, e->size)) != 0 ||
	    (rc = ph_fchmod(*fd, (e->mode & 0666) & ~(unsigned)r->mask)) != 0 ||
	    (rc = ph_set_times(*fd, e->mtime, e->nsec)) != 0 ||
	    (run->o->fsync && (rc = ph_durable_sync(fd, 1)) != 0) || (rc = ph_fstat(*fd, st)) != 0)
		return ph_err(run->ctx, ph_err_from_errno(-rc), "%s: %s", e->path, strerror(-rc));
	rc = ph_close(*fd);
	*fd = -1;
	if (rc != 0)
		return ph_err(run->ctx, ph_err_from_errno(-rc), "%s: %s", e->path, strerror(-rc));
	return 0;
}

/* Adds sg, for path, to the files renamed when the archive checks out. */
static int
add_staged(struct rs *r, struct staged *sg, const char *path)
{
	if ((sg->path = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	if (r->ns == r->caps) {
		size_t nc = r->caps ? r->caps * 2 : 256;
		struct staged *nv = realloc(r->sv, nc * sizeof(*nv));

		if (nv == NULL) {
			free(sg->path);
			return PHSYNC_ENOMEM;
		}
		r->sv = nv;
		r->caps = nc;
	}
	r->sv[r->ns++] = *sg;
	return 0;
}

/* Writes the entry's bytes to a new temp file beside its place. Returns 0
 * (staged), 1 (refused and reported), or a PHSYNC_E* that stops. */
static int
stage_file(struct rs *r, struct ph_ar *ar, const struct ph_ar_entry *e)
{
	struct staged sg;
	struct ph_stat st;
	XXH3_state_t *h = NULL;
	XXH128_canonical_t c;
	const char *base;
	int dfd = -1, fd = -1, rc;

	memset(&sg, 0, sizeof(sg));
	if ((rc = open_place(r, e, &dfd, &base)) != 0)
		return rc;
	if ((rc = open_temp(r, dfd, base, e->path, sg.tmp, sizeof(sg.tmp), &fd)) != 0) {
		ph_close(dfd);
		return rc;
	}
	if ((h = XXH3_createState()) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto fail;
	}
	XXH3_128bits_reset(h);
	if ((rc = copy_data(r, ar, e, fd, h)) != 0 || (rc = seal_temp(r, e, &fd, &st)) != 0)
		goto fail;
	sg.dev = st.dev;
	sg.ino = st.ino;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
	memcpy(sg.hash, c.digest, 16);
	XXH3_freeState(h);
	ph_close(dfd);
	sg.size = e->size;
	return add_staged(r, &sg, e->path);
fail:
	XXH3_freeState(h);
	if (fd >= 0)
		ph_close(fd);
	ph_unlinkat(dfd, sg.tmp, 0);
	ph_close(dfd);
	return rc;
}

/* Removes every staged temp (an archive that did not check out). */
static void
unstage(struct rs *r)
{
	size_t i;

	for (i = 0; i < r->ns; i++) {
		const char *base;
		char *dir;
		int dfd;

		if (ph_local_split(r->sv[i].path, &dir, &base) == 0) {
			if (ph_local_opendir(r->root, dir, &dfd) == 0) {
				ph_unlinkat(dfd, r->sv[i].tmp, 0);
				ph_close(dfd);
			}
			free(dir);
		}
		free(r->sv[i].path);
	}
	r->ns = 0;
}

static int
staged_cmp(const void *a, const void *b)
{
	return strcmp(((const struct staged *)a)->path, ((const struct staged *)b)->path);
}

/* Does what was staged match the manifest, file for file? (The staged
 * files sorted by path; each manifest file looked up.) */
static int
check_manifest(struct rs *r, const char *name, const struct ph_manifest *m)
{
	size_t i, nfiles = 0;

	if (r->ns > 1)
		qsort(r->sv, r->ns, sizeof(*r->sv), staged_cmp);
	for (i = 0; i + 1 < r->ns; i++)
		if (strcmp(r->sv[i].path, r->sv[i + 1].path) == 0)
			return ph_err(r->run->ctx, PHSYNC_ECORRUPT, "%s: holds %s twice; nothing of this "
			              "archive was put in place", name, r->sv[i].path);
	for (i = 0; i < m->n; i++) {
		const struct ph_mf_file *f = &m->v[i];
		struct staged key, *s;

		if (f->dir)
			continue;
		nfiles++;
		key.path = f->path;
		s = r->ns ? bsearch(&key, r->sv, r->ns, sizeof(*r->sv), staged_cmp) : NULL;
		if (s == NULL || s->size != f->size || memcmp(s->hash, f->hash, 16) != 0)
			return ph_err(r->run->ctx, PHSYNC_ECORRUPT, "%s: %s does not match its manifest "
			              "(damaged archive); nothing of this archive was put in place",
			              name, f->path);
	}
	if (nfiles != r->ns)
		return ph_err(r->run->ctx, PHSYNC_ECORRUPT, "%s: holds files its manifest does not "
		              "name; nothing of this archive was put in place", name);
	return 0;
}

/* Applies one deletion of the chain: removes path only when what is
 * there now is what this run put there (same device and inode); a file
 * or folder that was there before the restore is left alone, and said. */
static void
delete_one(struct rs *r, const char *path)
{
	struct ph_brun *run = r->run;
	struct ph_pset_e *pe = ph_pset_get(&r->put, path);
	const char *base;
	struct ph_stat st;
	char *dir;
	int dfd;

	if (ph_local_split(path, &dir, &base) != 0)
		return;
	if (ph_local_opendir(r->root, dir, &dfd) != 0) {
		free(dir);
		return;
	}
	free(dir);
	if (ph_fstatat(dfd, base, &st) != 0)
		;   /* nothing there: nothing to do */
	else if (pe == NULL || pe->dev != st.dev || pe->ino != st.ino)
		ph_emit(&run->ev, PHSYNC_EV_WARNING, path, NULL, 0, 0, "deleted at the source, but "
		             "not put here by this restore: left alone");
	else if (ph_unlinkat(dfd, base, pe->dir ? PH_AT_REMOVEDIR : 0) == 0) {
		pe->live = 0;
		run->st.files_deleted++;
		ph_emit(&run->ev, PHSYNC_EV_DELETED, path, "deleted", 0, 0, NULL);
		if (run->o->fsync)
			ph_dir_sync(dfd);
	} else
		ph_emit(&run->ev, PHSYNC_EV_WARNING, path, NULL, 0, PHSYNC_EIO, "deleted at the "
		             "source by then, but cannot be removed here (a folder not empty?)");
	ph_close(dfd);
}

static int
by_len_desc(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

/* Takes back the folders the current archive made (it applied nothing):
 * deepest first, each only while empty and still the one it made. */
static void
unmake(struct rs *r)
{
	char **v = NULL;
	size_t i, n = 0;

	for (i = 0; i < r->put.cap; i++) {
		struct ph_pset_e *pe = &r->put.v[i];

		if (pe->path == NULL || !pe->live || !pe->dir || pe->gen != r->gen)
			continue;
		if (v == NULL && (v = calloc(r->put.n, sizeof(*v))) == NULL)
			return;
		v[n++] = pe->path;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_len_desc);
	for (i = 0; i < n; i++) {
		struct ph_pset_e *pe = ph_pset_get(&r->put, v[i]);
		const char *base;
		struct ph_stat st;
		char *dir;
		int dfd;

		if (ph_local_split(v[i], &dir, &base) != 0)
			continue;
		if (ph_local_opendir(r->root, dir, &dfd) == 0) {
			if (ph_fstatat(dfd, base, &st) == 0 && pe->dev == st.dev && pe->ino == st.ino &&
			    ph_unlinkat(dfd, base, PH_AT_REMOVEDIR) == 0)
				pe->live = 0;
			ph_close(dfd);
		}
		free(dir);
	}
	free(v);
}

/* Renames every staged file into place (replacing an older version; a
 * folder in the way is a failure) and applies the deletions. */
static int
apply(struct rs *r, const struct ph_manifest *m)
{
	struct ph_brun *run = r->run;
	size_t i;
	int lastfd = -1, rc = 0;
	char lastdir[PATH_MAX] = "";

	for (i = 0; i < r->ns; i++) {
		struct staged *s = &r->sv[i];
		const char *base;
		char *dir;
		int dfd;

		if ((rc = ph_local_split(s->path, &dir, &base)) != 0)
			break;
		if (lastfd >= 0 && strcmp(dir, lastdir) == 0)
			dfd = lastfd;
		else {
			if (lastfd >= 0) {
				if (run->o->fsync)
					ph_dir_sync(lastfd);
				ph_close(lastfd);
				lastfd = -1;
			}
			if ((rc = ph_local_opendir(r->root, dir, &dfd)) != 0) {
				free(dir);
				break;
			}
			lastfd = dfd;
			snprintf(lastdir, sizeof(lastdir), "%s", dir);
		}
		free(dir);
		if ((rc = ph_renameat(dfd, s->tmp, dfd, base)) != 0) {
			char msg[200];
			int e = -rc;

			rc = 0;
			snprintf(msg, sizeof(msg), "cannot be put in place: %s", strerror(e));
			ph_unlinkat(dfd, s->tmp, 0);
			refuse(r, s->path, ph_err_from_errno(e), msg);
			continue;
		}
		if ((rc = ph_pset_put(&r->put, s->path, s->dev, s->ino, 0, r->gen)) != 0)
			break;
		run->st.files_done++;
		run->st.bytes_committed += s->size;
		run->st.bytes_done += s->size;
		ph_emit(&run->ev, PHSYNC_EV_FILE_DONE, s->path, "restored", s->size, 0, NULL);
	}
	if (lastfd >= 0) {
		if (run->o->fsync)
			ph_dir_sync(lastfd);
		ph_close(lastfd);
	}
	if (rc != 0) {
		unstage(r);
		return ph_err(run->ctx, rc, "the restore stopped while putting files in place "
		              "(a folder it cannot reach?): %s", phsync_strerror(rc));
	}
	for (i = 0; i < r->ns; i++)
		free(r->sv[i].path);
	r->ns = 0;
	/* Deletions in reverse tree order: a folder's files before it. */
	for (i = m != NULL ? m->ndel : 0; i-- > 0;)
		delete_one(r, m->del[i]);
	return 0;
}

/* One archive: staged whole, checked against its manifest, applied. l
 * is what ph_chain_order read of it: its place in the chain was checked
 * then; it must still be the same archive. */
static int
restore_one(struct rs *r, const struct ph_chain_link *l)
{
	struct ph_brun *run = r->run;
	struct ph_ar *ar = NULL;
	struct ph_ar_entry e;
	const struct ph_manifest *head;
	const char *name = l->name;
	size_t nd0 = r->nd;
	int rc, n = 0;

	if ((rc = ph_ar_open(run->ctx, name, &ar)) != 0)
		return rc;
	while ((rc = ph_ar_next(ar, &e)) == 1) {
		rc = 0;
		if (run->ctx->interrupted) {
			rc = PHSYNC_EINTR;
			break;
		}
		head = ph_ar_head(ar);
		if (n++ == 0 && (l->phsync != (head != NULL) ||
		                 (head != NULL && (strcmp(head->series, l->series) != 0 ||
		                                   head->seq != l->seq || head->full != l->full ||
		                                   head->base != l->base)))) {
			rc = ph_err(run->ctx, PHSYNC_ECORRUPT, "%s changed since the restore first read "
			            "it; nothing of it was put in place", name);
			break;
		}
		switch (e.type) {
		case PH_AR_MANIFEST:
		case PH_AR_ROOT:
			break;
		case PH_AR_REFUSED: {
			char msg[300];

			snprintf(msg, sizeof(msg), "refused: %s; nothing written for it", e.reason);
			refuse(r, e.path, PHSYNC_EUNSAFE, msg);
			break;
		}
		case PH_AR_DIR: {
			int dfd;

			if ((rc = mkdirs(r, e.path, e.mode, &dfd)) == PHSYNC_EUNSAFE) {
				refuse(r, e.path, rc, "a symlink or a file is in the way; not followed");
				rc = 0;
				break;
			}
			if (rc != 0) {
				rc = ph_err(run->ctx, rc, "%s: cannot make the folder: %s", e.path,
				            phsync_strerror(rc));
				break;
			}
			ph_close(dfd);
			rc = add_dtime(r, e.path, e.mtime, e.nsec);
			break;
		}
		case PH_AR_FILE:
			rc = stage_file(r, ar, &e);
			if (rc == 1)
				rc = 0;
			break;
		}
		if (rc != 0)
			break;
	}
	if (rc == 0 && l->phsync && n == 0)
		rc = ph_err(run->ctx, PHSYNC_ECORRUPT, "%s changed since the restore first read it "
		            "(it is empty now); nothing of it was put in place", name);
	if (rc == 0 && ph_ar_head(ar) != NULL && ph_ar_manifest(ar) == NULL)
		rc = ph_err(run->ctx, PHSYNC_ECORRUPT, "%s: cut short (its manifest, which ends a "
		            "complete archive, is missing); nothing of it was put in place", name);
	if (rc == 0 && ph_ar_manifest(ar) != NULL)
		rc = check_manifest(r, name, ph_ar_manifest(ar));
	if (rc == 0 && ph_ar_head(ar) == NULL)
		ph_emit(&run->ev, PHSYNC_EV_WARNING, name, NULL, 0, 0, "no phsync manifest: restored "
		             "as a plain archive (its content cannot be checked)");
	if (rc == 0)
		rc = apply(r, ph_ar_manifest(ar));
	else {
		unstage(r);
		unmake(r);
		/* Its folders' times are not applied either. */
		while (r->nd > nd0)
			free(r->dv[--r->nd].path);
	}
	ph_ar_close(ar);
	return rc;
}

static int
by_depth(const void *a, const void *b)
{
	size_t la = strlen(((const struct dtime *)a)->path);
	size_t lb = strlen(((const struct dtime *)b)->path);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

int
phsync_restore(phsync_ctx *ctx, const char *const *archives, size_t n, const char *dir,
               const struct phsync_options *opts, struct phsync_stats *stats)
{
	struct phsync_options defaults;
	struct ph_chain_link *chain = NULL;
	struct ph_brun run;
	struct rs r;
	struct ph_stat st;
	size_t i;
	int rc = 0, made_root = 0;

	ctx->err[0] = '\0';
	ctx->interrupted = 0;
	if (opts == NULL) {
		phsync_options_init(&defaults);
		opts = &defaults;
	}
	ph_brun_init(&run, ctx, opts);
	memset(&r, 0, sizeof(r));
	r.run = &run;
	r.root = -1;
	r.mask = umask(022);
	umask(r.mask);
	ph_temp_owner_self(&r.self);
	if (n == 0) {
		rc = ph_err(ctx, PHSYNC_EINVAL, "no archive to restore");
		goto out;
	}
	/* ph_path_access: access(2) on POSIX; on Windows access() reads the
	 * name in the ANSI code page, the platform's takes any UTF-8 name. */
	for (i = 0; i < n; i++)
		if ((rc = ph_path_access(archives[i], 1)) != 0) {
			rc = ph_err(ctx, ph_err_from_errno(-rc), "%s: %s", archives[i], strerror(-rc));
			goto out;
		}
	/* The whole chain in order before a byte is written. */
	if ((chain = calloc(n, sizeof(*chain))) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	if ((rc = ph_chain_order(ctx, archives, n, chain)) != 0)
		goto out;
	made_root = ph_fstatat(PH_AT_CWD, dir, &st) == -ENOENT;
	if ((rc = ph_local_open_root(ctx, dir, PH_ROOT_MAKE, &r.root)) != 0)
		goto out;
	for (i = 0; i < n && rc == 0; i++) {
		r.gen = (unsigned)i + 1;
		rc = restore_one(&r, &chain[i]);
	}
	/* Folder times last, deepest first (their files' renames moved them). */
	if (r.nd > 1)
		qsort(r.dv, r.nd, sizeof(*r.dv), by_depth);
	for (i = 0; i < r.nd; i++) {
		int dfd;

		if (ph_local_opendir(r.root, r.dv[i].path, &dfd) != 0)
			continue;
		ph_set_times(dfd, r.dv[i].mtime, r.dv[i].nsec);
		ph_close(dfd);
	}
	if (rc == 0 && run.st.files_failed > 0)
		rc = ph_err(ctx, PHSYNC_EPARTIAL, "%llu entr%s refused or failed (named above); the "
		            "rest was restored", (unsigned long long)run.st.files_failed,
		            run.st.files_failed == 1 ? "y was" : "ies were");
out:
	if (rc != 0 && rc != PHSYNC_EINTR && ctx->interrupted)
		rc = PHSYNC_EINTR;
	ph_emit_elapsed(&run.ev);
	if (stats != NULL)
		*stats = run.st;
	ph_emit(&run.ev, PHSYNC_EV_SUMMARY, NULL, NULL, 0, rc, rc ? ctx->err : NULL);
	for (i = 0; i < r.nd; i++)
		free(r.dv[i].path);
	free(r.dv);
	free(r.sv);
	free(chain);
	ph_pset_free(&r.put);
	if (r.root >= 0)
		ph_close(r.root);
	/* A folder the failed restore made and left empty goes too. */
	if (rc != 0 && made_root)
		ph_unlinkat(PH_AT_CWD, dir, PH_AT_REMOVEDIR);
	return rc;
}
