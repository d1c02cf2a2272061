/* SPDX-License-Identifier: ISC */
/* A push pair's changed local files waiting for their settle period, and
 * the files this daemon's pulls wrote (so a push pair watching the same
 * folder does not send them back). The timers that use them are in
 * wpair.c. See daemon.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/sys.h"
#include "daemon.h"

#define MAX_PENDING 100000   /* changed files remembered one by one; beyond: all */
#define MAX_OWN 100000       /* files pulls wrote, remembered against echoes */

/* lstat through libuv, whose uv_stat_t names the time st_mtim on every OS
 * (macOS's struct stat says st_mtimespec): 0 with the type, the size and
 * the mtime in ns, or a negative UV_E*. */
static int
lstat_ns(const char *path, uint64_t *mode, uint64_t *size, int64_t *mtime_ns)
{
	uv_fs_t req;
	int rc = uv_fs_lstat(NULL, &req, path, NULL);

	if (rc == 0) {
		*mode = req.statbuf.st_mode;
		*size = req.statbuf.st_size;
		*mtime_ns = (int64_t)req.statbuf.st_mtim.tv_sec * 1000000000 +
		            req.statbuf.st_mtim.tv_nsec;
	}
	uv_fs_req_cleanup(&req);
	return rc;
}

/* Whether a and b agree on their first n bytes, any folder separator
 * matching any other (on Windows a real path says '\\' where the names
 * below it say '/'). */
static int
path_eq(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i] && !(phsync_path_sep((unsigned char)a[i]) &&
		                      phsync_path_sep((unsigned char)b[i])))
			return 0;
	return 1;
}

/* -- files pulls wrote ---------------------------------------------------- */

static void
own_keep(struct pair *p, const char *abs, uint64_t size, int64_t mtime_ns)
{
	struct own *o;

	uv_mutex_lock(&p->wrote_lock);
	if (p->nwrote == p->capwrote && p->nwrote < MAX_OWN) {
		size_t nc = p->capwrote ? p->capwrote * 2 : 64;
		struct own *v = realloc(p->wrote, nc * sizeof(*v));

		if (v != NULL) {
			p->wrote = v;
			p->capwrote = nc;
		}
	}
	if (p->nwrote < p->capwrote && ((o = &p->wrote[p->nwrote])->path = strdup(abs)) != NULL) {
		o->size = size;
		o->mtime_ns = mtime_ns;
		p->nwrote++;
	}
	uv_mutex_unlock(&p->wrote_lock);
}

void
ph_wlocal_remember(struct pair *p, const char *rel)
{
	char path[PATH_MAX], abs[PATH_MAX];
	uint64_t mode, size;
	int64_t mtime_ns;

	if (snprintf(path, sizeof(path), "%s/%s", p->def.local, rel) >= (int)sizeof(path) ||
	    phsync_path_real(path, abs, sizeof(abs)) != 0 || lstat_ns(abs, &mode, &size, &mtime_ns) != 0)
		return;
	own_keep(p, abs, size, mtime_ns);
}

void
ph_wlocal_remember_gone(struct pair *p, const char *rel)
{
	char abs[PATH_MAX];

	/* The name is gone: the folder's resolved path (the watch's own)
	 * with rel, as ph_wlocal_stat makes it. */
	if (p->local_abs[0] == '\0' ||
	    snprintf(abs, sizeof(abs), "%s/%s", p->local_abs, rel) >= (int)sizeof(abs))
		return;
	own_keep(p, abs, UINT64_MAX, INT64_MIN);
}

static void
own_add(struct daemon *d, struct own *o)
{
	struct own *v;

	if (d->nown >= MAX_OWN) {
		free(o->path);
		return;
	}
	if ((v = realloc(d->own, (d->nown + 1) * sizeof(*v))) == NULL) {
		free(o->path);
		return;
	}
	d->own = v;
	d->own[d->nown++] = *o;
}

void
ph_wlocal_take_writes(struct pair *p)
{
	size_t i;

	uv_mutex_lock(&p->wrote_lock);
	for (i = 0; i < p->nwrote; i++)
		own_add(p->d, &p->wrote[i]);
	p->nwrote = 0;
	uv_mutex_unlock(&p->wrote_lock);
}

int
ph_wlocal_own_match(struct daemon *d, const char *abs, uint64_t size, int64_t mtime_ns)
{
	size_t i;

	size_t n = strlen(abs);

	for (i = 0; i < d->nown; i++) {
		if (strlen(d->own[i].path) == n && path_eq(d->own[i].path, abs, n)) {
			int same = d->own[i].size == size && d->own[i].mtime_ns == mtime_ns;

			free(d->own[i].path);
			d->own[i] = d->own[--d->nown];
			return same;
		}
	}
	return 0;
}

int
ph_wlocal_pull_busy(const struct pair *p)
{
	size_t i, n = strlen(p->local_abs);

	for (i = 0; i < p->d->npairs; i++) {
		const struct pair *q = p->d->pairs[i];
		char qa[PATH_MAX];
		size_t m;

		if (q == p || q->def.dir == PHSYNC_PUSH || !q->busy ||
		    phsync_path_real(q->def.local, qa, sizeof(qa)) != 0)
			continue;
		m = strlen(qa);
		if ((m <= n && path_eq(qa, p->local_abs, m) &&
		     (m == n || phsync_path_sep((unsigned char)p->local_abs[m]))) ||
		    (n < m && path_eq(qa, p->local_abs, n) && phsync_path_sep((unsigned char)qa[n])))
			return 1;
	}
	return 0;
}

/* -- pending local changes ------------------------------------------------ */

int
ph_wlocal_stat(const struct pair *p, const char *rel, uint64_t *size, int64_t *mtime_ns,
               char *abs, size_t abslen)
{
	uint64_t mode, sz;
	int64_t mt;

	if ((size_t)snprintf(abs, abslen, "%s/%s", p->local_abs, rel) >= abslen ||
	    lstat_ns(abs, &mode, &sz, &mt) != 0 || !S_ISREG(mode))
		return -1;
	*size = sz;
	*mtime_ns = mt;
	return 0;
}

struct pend *
ph_wlocal_pend_get(struct pair *p, const char *rel)
{
	struct pend *e;
	size_t i;

	for (i = p->npend; i-- > 0;)
		if (strcmp(p->pend[i].rel, rel) == 0)
			return &p->pend[i];
	if (p->npend >= MAX_PENDING) {
		p->dirty = 1; /* too many to follow one by one: a plain sync sees them */
		p->slow = 1;
		return NULL;
	}
	if (p->npend == p->cappend) {
		size_t nc = p->cappend ? p->cappend * 2 : 32;
		struct pend *v = realloc(p->pend, nc * sizeof(*v));

		if (v == NULL) {
			p->dirty = 1;
			return NULL;
		}
		p->pend = v;
		p->cappend = nc;
	}
	e = &p->pend[p->npend];
	memset(e, 0, sizeof(*e));
	if ((e->rel = strdup(rel)) == NULL) {
		p->dirty = 1;
		return NULL;
	}
	p->npend++;
	return e;
}

void
ph_wlocal_pend_drop(struct pair *p, size_t i)
{
	free(p->pend[i].rel);
	p->pend[i] = p->pend[--p->npend];
}

void
ph_wlocal_free(struct pair *p)
{
	size_t i;

	for (i = 0; i < p->npend; i++)
		free(p->pend[i].rel);
	free(p->pend);
	for (i = 0; i < p->nwrote; i++)
		free(p->wrote[i].path);
	free(p->wrote);
}
