/* SPDX-License-Identifier: ISC */
/* The cheap remote poll of a kept connection (phsync_conn_poll): every
 * folder's listing summed into a digest, after the first poll only the
 * folders whose mtime moved (or moved lately) listed again. Names are
 * judged by the scanners' own rule (a name a sync refuses is no change). */
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "buf.h"
#include "ctx.h"
#include "rpoll.h"
#include "tree.h"

#define MAX_DIRS 1000000u
#define MAX_DEPTH 256
#define MAX_PATH 4095
#define STAT_WINDOW 256

struct pdir {
	char *rel;          /* "" = the root */
	uint64_t digest;    /* sum of its entries' hashes */
	uint32_t mtime;
	uint8_t hot;        /* its mtime moved at the last poll: list again */
	uint8_t gone;
	uint32_t depth;
};

struct ph_rpoll {
	/* This poll's link (borrowed from the caller). */
	phsync_ctx *ctx;
	struct ph_sftp *sftp;
	const char *host;
	const char *rroot;
	/* Kept from poll to poll. */
	struct pdir *d;     /* the folders known, sorted by rel */
	size_t nd, capd;
	int listed;
};

static void
free_dirs(struct pdir *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(d[i].rel);
	free(d);
}

/* The server's path of rel ("" = the root). */
static char *
rpath(const struct ph_rpoll *c, const char *rel)
{
	return ph_rpath_join(c->rroot, rel);
}

/* -- listing one folder ------------------------------------------------ */

struct lwait {
	int done, err;
	struct ph_sftp_handle h;
	int eof;
	uint64_t digest;
	char **sub;         /* folder names met (malloc'ed) */
	uint32_t *submt;    /* and their mtimes */
	size_t nsub, capsub;
};

static void
open_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lwait *w = arg;

	(void)s;
	w->done = 1;
	if (r->err != 0)
		w->err = r->err;
	else if (ph_sftp_handle_set(&w->h, r) != 0)
		w->err = PHSYNC_EPROTO;
}

static void
readdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lwait *w = arg;
	struct ph_sftp_names it;
	struct ph_sftp_attrs a;
	const uint8_t *name;
	uint32_t nl;
	int k;

	(void)s;
	w->done = 1;
	if (r->err == PHSYNC_ENOENT || (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF)) {
		w->eof = 1;
		return;
	}
	if (r->err != 0) {
		w->err = r->err;
		return;
	}
	if (r->type != PH_FXP_NAME) {
		w->err = PHSYNC_EPROTO;
		return;
	}
	ph_sftp_names_init(&it, r);
	while ((k = ph_sftp_names_next(&it, &name, &nl, &a)) == 1) {
		char tmp[256];
		uint64_t seed;
		uint32_t type = (a.flags & PH_ATTR_PERMISSIONS) ? a.perm & 0170000 : 0;

		/* The scanners' own rule: a name a sync refuses is no change. */
		if (!ph_name_safe(name, nl))
			continue;
		memcpy(tmp, name, nl);
		tmp[nl] = '\0';
		if (phsync_is_temp_name(tmp))
			continue;
		seed = ((a.flags & PH_ATTR_SIZE) ? a.size : 0) * 0x9E3779B97F4A7C15ull ^
		       ((uint64_t)((a.flags & PH_ATTR_ACMODTIME) ? a.mtime : 0) << 20) ^ type;
		w->digest += XXH3_64bits_withSeed(name, nl, seed);
		if (type == 0040000) {
			if (w->nsub == w->capsub) {
				size_t nc = w->capsub ? w->capsub * 2 : 16;
				char **v = realloc(w->sub, nc * sizeof(*v));
				uint32_t *m;

				if (v != NULL)
					w->sub = v;
				m = v ? realloc(w->submt, nc * sizeof(*m)) : NULL;
				if (m == NULL) {
					w->err = PHSYNC_ENOMEM;
					return;
				}
				w->submt = m;
				w->capsub = nc;
			}
			w->submt[w->nsub] = (a.flags & PH_ATTR_ACMODTIME) ? a.mtime : 0;
			if ((w->sub[w->nsub] = strdup(tmp)) == NULL) {
				w->err = PHSYNC_ENOMEM;
				return;
			}
			w->nsub++;
		}
	}
	if (k < 0)
		w->err = k;
}

static void
close_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	((struct lwait *)arg)->done = 1;
}

/* Waits for w; a wait cut short (stop asked, link lost) ends the link so
 * no callback can outlive w. */
static int
wait_for(struct ph_sftp *s, int *done)
{
	int rc = ph_sftp_wait(s, done);

	if (rc != 0 && !*done)
		ph_sftp_abort(s, rc);
	return rc;
}

static void
lwait_free(struct lwait *w)
{
	size_t i;

	for (i = 0; i < w->nsub; i++)
		free(w->sub[i]);
	free(w->sub);
	free(w->submt);
}

/* A folder changed this recently may change again within its mtime's
 * second after we listed it: it is listed again at the next poll. (The
 * phone's clock may differ from ours; a miss then waits for a full poll.) */
static int
recent(uint32_t mtime)
{
	return (int64_t)mtime + 10 >= (int64_t)time(NULL);
}

/* Lists rel: the sum of its entries' hashes and its subfolders' names.
 * PHSYNC_ENOENT when it is gone. */
static int
list_dir(struct ph_rpoll *c, const char *rel, struct lwait *w)
{
	char *p = rpath(c, rel);
	int rc;

	memset(w, 0, sizeof(*w));
	if (p == NULL)
		return PHSYNC_ENOMEM;
	rc = ph_sftp_opendir(c->sftp, p, open_cb, w);
	free(p);
	if (rc != 0 || (rc = wait_for(c->sftp, &w->done)) != 0)
		return rc;
	if (w->err != 0)
		return w->err;
	while (!w->eof && w->err == 0) {
		w->done = 0;
		if ((rc = ph_sftp_readdir(c->sftp, &w->h, readdir_cb, w)) != 0 ||
		    (rc = wait_for(c->sftp, &w->done)) != 0)
			return rc;
	}
	w->done = 0;
	if ((rc = ph_sftp_close(c->sftp, &w->h, close_cb, w)) != 0 ||
	    (rc = wait_for(c->sftp, &w->done)) != 0)
		return rc;
	return w->err;
}

/* -- the known folders --------------------------------------------------- */

static int
pdir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pdir *)a)->rel, ((const struct pdir *)b)->rel);
}

static struct pdir *
find_dir(struct pdir *d, size_t n, const char *rel)
{
	struct pdir key;

	key.rel = (char *)rel;
	return n ? bsearch(&key, d, n, sizeof(*d), pdir_cmp) : NULL;
}

static int
add_dir(struct pdir **d, size_t *n, size_t *cap, const char *parent, const char *name,
        uint32_t depth, uint32_t mtime)
{
	size_t pl = strlen(parent), nl = strlen(name);
	struct pdir *e;

	if (*n >= MAX_DIRS || depth > MAX_DEPTH || pl + nl + 1 > MAX_PATH)
		return 0; /* beyond the caps: not watched (a full sync still lists it) */
	if (*n == *cap && ph_grow(d, cap, sizeof(**d), 64) != 0)
		return PHSYNC_ENOMEM;
	e = &(*d)[*n];
	memset(e, 0, sizeof(*e));
	if ((e->rel = malloc(pl + nl + 2)) == NULL)
		return PHSYNC_ENOMEM;
	if (pl) {
		memcpy(e->rel, parent, pl);
		e->rel[pl] = '/';
		memcpy(e->rel + pl + 1, name, nl + 1);
	} else {
		memcpy(e->rel, name, nl + 1);
	}
	e->depth = depth;
	e->mtime = mtime;
	(*n)++;
	return 0;
}

/* Lists d[i] (whose mtime is mtime) and appends its subfolders not yet in
 * d (they are listed when the caller's walk reaches them; d[0..nsorted) is
 * sorted, the rest is looked through; SIZE_MAX: a fresh walk, every
 * subfolder is new). Sets *changed when its entries differ from the last
 * listing. */
static int
relist(struct ph_rpoll *c, struct pdir **d, size_t *n, size_t *cap, size_t nsorted, size_t i,
       uint32_t mtime, int *changed)
{
	struct lwait w;
	size_t k;
	int rc = list_dir(c, (*d)[i].rel, &w);

	if (rc == PHSYNC_ENOENT || rc == PHSYNC_ENOTDIR) {
		(*d)[i].gone = 1;
		*changed = 1;
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	if (w.digest != (*d)[i].digest)
		*changed = 1;
	(*d)[i].hot = (*d)[i].mtime != mtime || recent(mtime);
	(*d)[i].digest = w.digest;
	(*d)[i].mtime = mtime;
	for (k = 0; k < w.nsub; k++) {
		char *rel = (*d)[i].rel;
		size_t pl = strlen(rel), m, known = 0;
		char path[MAX_PATH + 2];

		if (pl + strlen(w.sub[k]) + 1 > MAX_PATH)
			continue;
		snprintf(path, sizeof(path), pl ? "%s/%s" : "%s%s", rel, w.sub[k]);
		if (nsorted != SIZE_MAX) {
			known = find_dir(*d, nsorted, path) != NULL;
			for (m = nsorted; m < *n && !known; m++)
				known = strcmp((*d)[m].rel, path) == 0;
		}
		if (!known) {
			*changed = 1;
			if ((rc = add_dir(d, n, cap, rel, w.sub[k], (*d)[i].depth + 1,
			                  w.submt[k])) != 0)
				goto out;
		}
	}
out:
	lwait_free(&w);
	return rc;
}

struct swait {
	int *pending_zero;
	size_t *pending;
	int err;
	uint32_t mtime;
	int isdir;
};

static void
stat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct swait *w = arg;

	(void)s;
	if (r->err != 0)
		w->err = r->err;
	else if (r->type != PH_FXP_ATTRS)
		w->err = PHSYNC_EPROTO;
	else {
		w->mtime = r->attrs.mtime;
		w->isdir = !(r->attrs.flags & PH_ATTR_PERMISSIONS) ||
		           (r->attrs.perm & 0170000) == 0040000;
	}
	if (--*w->pending == 0)
		*w->pending_zero = 1;
}

/* The mtimes of d[0..n) in sw[], STAT_WINDOW requests in flight. */
static int
stat_all(struct ph_rpoll *c, const struct pdir *d, size_t n, struct swait *sw)
{
	size_t i = 0, pending = 0;
	int zero = 0, rc;

	while (i < n) {
		size_t end = i + STAT_WINDOW < n ? i + STAT_WINDOW : n;

		zero = 0;
		for (; i < end; i++) {
			char *p = rpath(c, d[i].rel);

			sw[i].pending_zero = &zero;
			sw[i].pending = &pending;
			sw[i].err = 0;
			rc = p ? ph_sftp_stat(c->sftp, PH_STAT, p, stat_cb, &sw[i]) : PHSYNC_ENOMEM;
			free(p);
			if (rc != 0) {
				if (pending > 0)
					ph_sftp_abort(c->sftp, rc);
				return rc;
			}
			pending++;
		}
		if ((rc = wait_for(c->sftp, &zero)) != 0)
			return rc;
	}
	return 0;
}

/* Lists the whole tree afresh; *changed when any folder's entries or the
 * set of folders differ from what was known. */
static int
list_all(struct ph_rpoll *c, int *changed)
{
	struct pdir *d = NULL, *old;
	size_t n = 0, cap = 0, i;
	struct swait root;
	size_t pending = 1;
	int zero = 0, rc;
	char *p = rpath(c, "");

	if (p == NULL)
		return PHSYNC_ENOMEM;
	memset(&root, 0, sizeof(root));
	root.pending = &pending;
	root.pending_zero = &zero;
	rc = ph_sftp_stat(c->sftp, PH_STAT, p, stat_cb, &root);
	free(p);
	if (rc != 0 || (rc = wait_for(c->sftp, &zero)) != 0)
		return rc;
	if (root.err != 0)
		return root.err;
	if ((rc = add_dir(&d, &n, &cap, "", "", 0, root.mtime)) != 0)
		goto out;
	d[0].rel[0] = '\0';
	d[0].mtime = root.mtime;
	for (i = 0; i < n; i++) {
		uint32_t mt = d[i].mtime;

		d[i].digest = 0;
		/* Subfolders are appended unsorted: no lookup among them is
		 * needed, each is met once. */
		if ((rc = relist(c, &d, &n, &cap, SIZE_MAX, i, mt, changed)) != 0)
			goto out;
	}
	qsort(d, n, sizeof(*d), pdir_cmp);
	*changed = !c->listed || n != c->nd;
	for (i = 0; i < n && !*changed; i++) {
		old = find_dir(c->d, c->nd, d[i].rel);
		if (old == NULL || old->digest != d[i].digest || d[i].gone)
			*changed = 1;
	}
	free_dirs(c->d, c->nd);
	c->d = d;
	c->nd = n;
	c->capd = cap;
	d = NULL;
	n = 0;
out:
	free_dirs(d, n);
	return rc;
}

void
ph_rpoll_free(struct ph_rpoll *c)
{
	if (c == NULL)
		return;
	free_dirs(c->d, c->nd);
	free(c);
}

int
ph_rpoll_run(struct ph_rpoll **pp, phsync_ctx *ctx, struct ph_sftp *sftp, const char *host,
             const char *rroot, int full)
{
	struct ph_rpoll *c = *pp;
	struct swait *sw = NULL;
	size_t n, i, k;
	int rc, changed = 0;

	if (c == NULL && (c = *pp = calloc(1, sizeof(*c))) == NULL)
		return PHSYNC_ENOMEM;
	c->ctx = ctx;
	c->sftp = sftp;
	c->host = host;
	c->rroot = rroot;
	if (!c->listed || full) {
		rc = list_all(c, &changed);
		if (rc == 0)
			c->listed = 1;
		goto out;
	}
	n = c->nd;
	if ((sw = calloc(n ? n : 1, sizeof(*sw))) == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = stat_all(c, c->d, n, sw)) != 0)
		goto out;
	if (find_dir(c->d, n, "") == &c->d[0] && sw[0].err != 0) {
		rc = ph_err(c->ctx, sw[0].err, "%s:%s: %s", c->host, c->rroot,
		            sw[0].err == PHSYNC_ENOENT ? "no such folder on the server" :
		            phsync_strerror(sw[0].err));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (sw[i].err != 0 || !sw[i].isdir) {
			c->d[i].gone = 1;
			changed = 1;
		} else if (sw[i].mtime != c->d[i].mtime || c->d[i].hot) {
			if ((rc = relist(c, &c->d, &c->nd, &c->capd, n, i, sw[i].mtime, &changed)) != 0)
				goto out;
		}
	}
	/* New folders (appended by relist): list each, and what they hold. */
	for (i = n; i < c->nd; i++) {
		if ((rc = relist(c, &c->d, &c->nd, &c->capd, n, i, c->d[i].mtime, &changed)) != 0)
			goto out;
	}
	for (i = k = 0; i < c->nd; i++) {
		if (c->d[i].gone)
			free(c->d[i].rel);
		else
			c->d[k++] = c->d[i];
	}
	c->nd = k;
	qsort(c->d, c->nd, sizeof(*c->d), pdir_cmp);
out:
	free(sw);
	if (rc != 0)
		return rc;
	return changed;
}
