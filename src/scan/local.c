/* SPDX-License-Identifier: ISC */
/* Local file system access beneath a root; see local.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctx.h"
#include "local.h"
#include "pfs.h"
#include "platform.h"
#include "str.h"
#include "strsort.h"
#include "tempname.h"

int
ph_local_open_root(phsync_ctx *ctx, const char *path, int create, int *fd)
{
	char *copy, *p;
	int rc = 0, e;

	*fd = ph_dir_open_path(path);
	if (*fd >= 0)
		return 0;
	if (*fd != -ENOENT || !create)
		return ph_err(ctx, ph_err_from_errno(-*fd), "%s: %s", path, strerror(-*fd));
	if ((copy = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	for (p = copy + 1; rc == 0; p++) {
		if (!ph_path_sep(*p) && *p != '\0')
			continue;
		{
			char c = *p;

			*p = '\0';
			if ((e = ph_mkdirat(PH_AT_CWD, copy, 0777)) != 0 && e != -EEXIST)
				rc = ph_err(ctx, ph_err_from_errno(-e), "cannot create %s: %s", copy,
				            strerror(-e));
			*p = c;
			if (c == '\0')
				break;
		}
	}
	free(copy);
	if (rc != 0)
		return rc;
	*fd = ph_dir_open_path(path);
	if (*fd < 0)
		return ph_err(ctx, ph_err_from_errno(-*fd), "%s: %s", path, strerror(-*fd));
	return 0;
}

static int
opendir_walk(int root, const char *rel, int *fd)
{
	const char *p = rel, *e;
	char name[256];
	int cur = dup(root), next;

	if (cur < 0)
		return ph_err_from_errno(errno);
	while (*p != '\0') {
		size_t n;

		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || n >= sizeof(name) || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			ph_close(cur);
			return PHSYNC_EUNSAFE;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		next = ph_openat(cur, name, PH_O_DIR | PH_O_NOFOLLOW, 0);
		ph_close(cur);
		if (next < 0)
			/* NOFOLLOW on a symlink gives ELOOP (Linux, and pfs.h on
			 * Windows for a link or junction) or ENOTDIR. */
			return next == -ELOOP ? PHSYNC_EUNSAFE : ph_err_from_errno(-next);
		cur = next;
		p += n;
		if (*p == '/')
			p++;
	}
	*fd = cur;
	return 0;
}

int
ph_local_opendir(int root, const char *rel, int *fd)
{
	int r;

	if (rel[0] == '\0')
		return opendir_walk(root, rel, fd);
	if ((r = ph_open_beneath_dir(root, rel)) >= 0) {
		*fd = r;
		return 0;
	}
	if (r == -ELOOP || r == -EXDEV)
		return PHSYNC_EUNSAFE;
	if (r != -ENOSYS)
		return ph_err_from_errno(-r);
	/* No openat2 here (or not allowed): walk it by hand. */
	return opendir_walk(root, rel, fd);
}

int
ph_local_split(const char *rel, char **dir, const char **base)
{
	const char *s = strrchr(rel, '/');

	*dir = s ? ph_strndup(rel, (size_t)(s - rel)) : strdup("");
	*base = s ? s + 1 : rel;
	return *dir ? 0 : PHSYNC_ENOMEM;
}

struct scan {
	phsync_ctx *ctx;
	const struct ph_filter *filter;
	int remove_temps, check_names;
	struct ph_temp_owner self;
	int64_t now;
	char shown[4096 * 4 + 1]; /* an escaped path (here: not on the
	                             recursion's stack frames) */
	struct ph_tree *t;
	struct ph_tree *partials;
	struct ph_tree *stale;    /* stale leftovers listed here, not removed */
	atomic_size_t *found;     /* kept at t->n at each folder's end, or NULL */
	phsync_event_fn on_event;
	void *event_arg;
	uint64_t *failed;
	char path[4096];
};

static void
scan_fail(struct scan *s, const char *path, int err, const char *msg)
{
	struct phsync_event ev = { 0 };

	(*s->failed)++;
	if (s->on_event == NULL)
		return;
	ev.type = PHSYNC_EV_FILE_FAILED;
	ev.path = path;
	ev.err = err;
	ev.message = msg;
	s->on_event(&ev, s->event_arg);
}

/* Removes the remains of a dead run named ti in the folder dfd (go: else
 * only says whether it would): a file, or a folder (a killed run's case
 * probe, probe.c: empty) found there now. Returns 1 when it is one. The
 * walk's test, made again on the folder's own descriptor when the removal
 * comes later: the leftover may have gone, or be another file now. */
static int
stale_unlink(int dfd, const char *name, const struct ph_temp_info *ti,
             const struct ph_temp_owner *self, int64_t now, int go)
{
	struct ph_stat st;

	if (ph_fstatat(dfd, name, &st) != 0 || (st.type != PH_FT_REG && st.type != PH_FT_DIR) ||
	    !ph_temp_stale(ti, self, now))
		return 0;
	if (go)
		ph_unlinkat(dfd, name, st.type == PH_FT_DIR ? PH_AT_REMOVEDIR : 0);
	return 1;
}

/* One of our temp names in the folder dfd (s->path[0..plen) its path):
 * never listed; a partial download told to the caller, a stale leftover
 * removed when remove_temps. Returns 0 or PHSYNC_ENOMEM. */
static int
scan_temp(struct scan *s, int dfd, const char *name, size_t plen, size_t nl,
          const struct ph_temp_info *ti)
{
	/* A single-file run: another file's temp is not its own. */
	if (!ph_filter_temp(s->filter, name, ti))
		return 0;
	/* Ours: never listed; a dead run's leftover is removed; a partial
	 * download is told to the caller (resumed, or removed when its state
	 * does not know it). */
	if (ti->kind == PH_TEMP_PARTIAL && s->partials != NULL) {
		struct ph_entry pe;

		memset(&pe, 0, sizeof(pe));
		pe.type = PH_T_FILE;
		return ph_tree_add(s->partials, s->path, plen + (plen > 0) + nl, &pe) != 0 ?
		       PHSYNC_ENOMEM : 0;
	}
	/* A dead run's: removed now, or listed for ph_local_remove_stale. */
	if (!s->remove_temps)
		return 0;
	if (s->stale == NULL) {
		stale_unlink(dfd, name, ti, &s->self, s->now, 1);
	} else if (stale_unlink(dfd, name, ti, &s->self, s->now, 0)) {
		struct ph_entry se = { 0 };

		if (ph_tree_add(s->stale, s->path, plen + (plen > 0) + nl, &se) != 0)
			return PHSYNC_ENOMEM;
	}
	return 0;
}

static void
remove_stale(int root, const char *rel, const struct ph_temp_owner *self, int64_t now)
{
	struct ph_temp_info ti;
	const char *base;
	char *dir;
	int dfd;

	if (ph_local_split(rel, &dir, &base) != 0)
		return;
	if (ph_temp_parse(base, strlen(base), &ti) && ph_local_opendir(root, dir, &dfd) == 0) {
		stale_unlink(dfd, base, &ti, self, now, 1);
		ph_close(dfd);
	}
	free(dir);
}

void
ph_local_remove_stale(int root, const struct ph_tree *stale)
{
	struct ph_temp_owner self;
	int64_t now = (int64_t)time(NULL);
	size_t i;

	ph_temp_owner_self(&self);
	for (i = 0; i < stale->n; i++)
		remove_stale(root, stale->v[i].path, &self, now);
}

/* A name that is not sent (unsafe for the remote): reported as skipped. */
static void
scan_unsafe(struct scan *s)
{
	struct phsync_event ev = { 0 };

	/* The same rule both ways: a name the remote could take for a path
	 * ('\\' on a Windows server) or a terminal command. */
	ph_escape(s->shown, sizeof(s->shown), s->path);
	(*s->failed)++;
	if (s->on_event == NULL)
		return;
	ev.type = PHSYNC_EV_SKIPPED;
	ev.path = s->shown;
	ev.action = "unsafe name";
	ev.err = PHSYNC_EUNSAFE;
	ev.message = "an unsafe name (with '\\' or control characters); not sent";
	s->on_event(&ev, s->event_arg);
}

static int scan_dir(struct scan *s, int dfd, size_t plen, int depth);

/* One entry name of the folder dfd (its path s->path[0..plen)): listed,
 * and walked into when it is a folder. Returns 0 or a code that ends the
 * walk (PHSYNC_ENOMEM, PHSYNC_EUNSAFE). */
static int
scan_entry(struct scan *s, int dfd, const char *name, const struct ph_stat *lst, size_t plen,
           int depth)
{
	size_t nl = strlen(name);
	struct ph_entry e = { 0 };
	struct ph_temp_info ti;
	struct ph_stat st;
	int rc, sub;

	if (!ph_filter_only_name(s->filter, name, nl))
		return 0;
	if (plen + 1 + nl >= sizeof(s->path)) {
		s->path[plen] = '\0';
		scan_fail(s, plen ? s->path : ".", PHSYNC_EUNSAFE,
		          "a name in this folder makes a path longer than 4095 bytes; left out");
		return 0;
	}
	if (plen > 0)
		s->path[plen] = '/';
	memcpy(s->path + plen + (plen > 0), name, nl + 1);
	if (ph_temp_parse(name, nl, &ti))
		return scan_temp(s, dfd, name, plen, nl, &ti);
	/* (lst: the listing's own, where it gives one: pfs.h.) */
	if (lst != NULL) {
		st = *lst;
	} else if ((rc = ph_fstatat(dfd, name, &st)) != 0) {
		if (rc != -ENOENT)
			scan_fail(s, s->path, ph_err_from_errno(-rc), strerror(-rc));
		return 0;
	}
	if (s->check_names && !ph_name_safe((const uint8_t *)name, nl)) {
		scan_unsafe(s);
		return 0;
	}
	e.type = st.type == PH_FT_REG ? PH_T_FILE : st.type == PH_FT_DIR ? PH_T_DIR :
	         st.type == PH_FT_LNK ? PH_T_LINK : PH_T_OTHER;
	if (!ph_filter_match(s->filter, s->path, e.type == PH_T_DIR))
		return 0;
	e.size = e.type == PH_T_FILE ? st.size : 0;
	e.mtime = ph_mtime_fit(st.mtime_sec);
	e.mode = st.mode & 07777;
	if ((rc = ph_tree_add_id(s->t, s->path, plen + (plen > 0) + nl, &e,
	                         e.type == PH_T_FILE && s->t->want_ids ?
	                         ph_tree_ident_sum(st.ino, st.dev, st.ctime_ns) : 0)) != 0)
		return rc;
	/* A single-file run walks no folder (a folder with its name is the
	 * destination's, left alone). */
	if (e.type != PH_T_DIR || (s->filter != NULL && s->filter->only != NULL))
		return 0;
	if ((sub = ph_openat(dfd, name, PH_O_DIR | PH_O_NOFOLLOW, 0)) < 0) {
		scan_fail(s, s->path, ph_err_from_errno(-sub), strerror(-sub));
		return 0;
	}
	rc = scan_dir(s, sub, plen + (plen > 0) + nl, depth + 1);
	ph_close(sub);
	if (rc != 0 && rc != PHSYNC_ENOMEM && rc != PHSYNC_EUNSAFE && rc != PHSYNC_EINTR) {
		scan_fail(s, s->path, rc, "cannot read folder");
		rc = 0;
	}
	return rc;
}

/* A folder's names, read whole before any is looked at, each after the
 * index of its stat in st (NO_ST: the listing gave none). */
#define NO_ST UINT32_MAX

struct names {
	char *buf;
	size_t used, cap;
	size_t n;
	struct ph_stat *st;
	size_t nst, capst;
};

static int
names_add(struct names *nm, const char *name, const struct ph_stat *st)
{
	size_t l = strlen(name) + 1, need = sizeof(uint32_t) + l;
	uint32_t k = NO_ST;

	if (nm->cap - nm->used < need) {
		size_t nc = nm->cap ? nm->cap * 2 : 4096;
		char *nb;

		while (nc - nm->used < need)
			nc *= 2;
		if ((nb = realloc(nm->buf, nc)) == NULL)
			return PHSYNC_ENOMEM;
		nm->buf = nb;
		nm->cap = nc;
	}
	if (st != NULL && nm->nst < NO_ST) {
		if (nm->nst == nm->capst && ph_grow(&nm->st, &nm->capst, sizeof(*nm->st), 64) != 0)
			return PHSYNC_ENOMEM;
		nm->st[nm->nst] = *st;
		k = (uint32_t)nm->nst++;
	}
	memcpy(nm->buf + nm->used, &k, sizeof(k));
	memcpy(nm->buf + nm->used + sizeof(k), name, l);
	nm->used += need;
	nm->n++;
	return 0;
}

/* The stat the listing gave the name v (one of nm's), or NULL. */
static const struct ph_stat *
names_stat(const struct names *nm, const char *v)
{
	uint32_t k;

	memcpy(&k, v - sizeof(k), sizeof(k));
	return k == NO_ST ? NULL : &nm->st[k];
}

/* Reads the folder's names into nm (the caller frees nm->buf). */
static int
read_names(struct scan *s, int dfd, size_t plen, struct names *nm)
{
	struct ph_dirent de;
	struct ph_dir *d;
	int rc = 0, r;

	if ((r = ph_dir_list(dfd, &d)) != 0)
		return ph_err_from_errno(-r);
	while (rc == 0 && (r = ph_dir_read(d, &de)) != 0) {
		if (r == -EILSEQ) {
			/* Windows: a name UTF-8 cannot hold (an unpaired surrogate). */
			s->path[plen] = '\0';
			scan_fail(s, plen ? s->path : ".", PHSYNC_EUNSAFE,
			          "a name in this folder is not valid Unicode; left out");
			continue;
		}
		if (r < 0) {
			rc = ph_err_from_errno(-r);
			break;
		}
		rc = names_add(nm, de.name, de.st);
	}
	ph_dir_end(d);
	return rc;
}

/* Lists the folder dfd (the caller's, left open), s->path[0..plen) its
 * path, into s->t. Its names are sorted first (bytes, as ph_path_cmp
 * orders names without '/'), so the walk adds every entry in tree order:
 * a folder's subtree right after it, before a name it is a prefix of
 * ('/' ranks below every byte a name holds), and ph_tree_sort finds the
 * tree sorted: one comparison an entry instead of a sort. */
static int
scan_dir(struct scan *s, int dfd, size_t plen, int depth)
{
	struct names nm = { 0 };
	const char **v = NULL;
	size_t i, off;
	int rc;

	if (depth > 256)
		return ph_err(s->ctx, PHSYNC_EUNSAFE, "folders nested deeper than 256 levels");
	/* Told to stop (the run ended before it needed the walk). */
	if (s->ctx->interrupted)
		return ph_err(s->ctx, PHSYNC_EINTR, "interrupted");
	if ((rc = read_names(s, dfd, plen, &nm)) == 0 && nm.n > 0 &&
	    (v = malloc(nm.n * sizeof(*v))) == NULL)
		rc = PHSYNC_ENOMEM;
	for (i = 0, off = 0; rc == 0 && i < nm.n; i++) {
		v[i] = nm.buf + off + sizeof(uint32_t);
		off += sizeof(uint32_t) + strlen(v[i]) + 1;
	}
	if (rc == 0 && nm.n > 1)
		ph_strsort(v, nm.n, sizeof(*v), 0);
	for (i = 0; rc == 0 && i < nm.n; i++) {
		rc = scan_entry(s, dfd, v[i], names_stat(&nm, v[i]), plen, depth);
		s->path[plen] = '\0';
	}
	if (s->found != NULL)
		atomic_store_explicit(s->found, s->t->nkept, memory_order_relaxed);
	/* Taken from as it is walked (tree.h): no further ahead of the taker
	 * than a few folders' worth, so that the tree is never whole. */
	if (s->t->feed != NULL && rc == 0 && (rc = ph_feed_batch(s->t)) == 0)
		ph_feed_pace(s->t, PH_LOCAL_AHEAD);
	free(v);
	free(nm.buf);
	free(nm.st);
	return rc;
}

int
ph_local_scan(phsync_ctx *ctx, int root, const struct ph_filter *filter, int remove_temps,
              int check_names, struct ph_tree *t, struct ph_tree *partials,
              struct ph_tree *stale, phsync_event_fn on_event, void *event_arg,
              uint64_t *failed, atomic_size_t *found)
{
	struct scan s;

	memset(&s, 0, sizeof(s));
	s.ctx = ctx;
	s.filter = filter;
	s.remove_temps = remove_temps;
	s.check_names = check_names;
	ph_temp_owner_self(&s.self);
	s.now = (int64_t)time(NULL);
	s.t = t;
	s.partials = partials;
	s.stale = stale;
	s.on_event = on_event;
	s.event_arg = event_arg;
	s.failed = failed;
	s.found = found;
	/* pfs.h lists through a descriptor of its own: root is left as it is. */
	return scan_dir(&s, root, 0, 0);
}
