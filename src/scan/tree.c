/* SPDX-License-Identifier: ISC */
/* Trees, name rules, escaping, filters. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "pattern.h"
#include "phsync/phsync.h"
#include "strpool.h"
#include "tempname.h"
#include "tree.h"
#include "winname.h"

#define BLOCK (256u * 1024)

/* Two trees of a million entries each live in memory at once: keep an
 * entry at 24 bytes (its path lives in the string block or the pool). */
_Static_assert(sizeof(struct ph_entry) == 24, "ph_entry is not 24 bytes");
_Static_assert(PH_E_HOLD < (1 << 6), "the PH_E_ flags do not fit ph_entry.flags");

/* Room for len bytes in the string block, or NULL. */
static char *
strings_take(struct ph_tree *t, size_t len)
{
	char *s;

	if (t->nblocks == 0 || t->block_cap - t->block_used < len) {
		size_t sz = len > BLOCK ? len : BLOCK;
		char **b = realloc(t->blocks, (t->nblocks + 1) * sizeof(*b));

		if (b == NULL)
			return NULL;
		t->blocks = b;
		if ((b[t->nblocks] = malloc(sz)) == NULL)
			return NULL;
		t->nblocks++;
		t->block_used = 0;
		t->block_cap = sz;
	}
	s = t->blocks[t->nblocks - 1] + t->block_used;
	t->block_used += len;
	return s;
}

int
ph_tree_keep(struct ph_tree *t, const char *path, size_t pathlen, char **kept)
{
	char *s;

	/* A small tree keeps its own copies: below PH_POOL_FROM entries the
	 * pool saves under 2 MB, and its lookups (a cache miss or two each, the
	 * two scans' threads taking turns at its lock) were a fifth of a
	 * 50,000-file no-change run's CPU. */
	if (t->pool == NULL || t->nkept < PH_POOL_FROM ||
	    (s = (char *)ph_strpool_get(t->pool, &t->pcur, path, pathlen)) == NULL) {
		if ((s = strings_take(t, pathlen + 1)) == NULL)
			return PHSYNC_ENOMEM;
		memcpy(s, path, pathlen);
		s[pathlen] = '\0';
	}
	t->nkept++;
	if (t->count_winnames) {
		size_t b = pathlen;

		while (b > 0 && path[b - 1] != '/')
			b--;
		t->nwinbad += ph_winname_check_n(path + b, pathlen - b) != PH_WINNAME_OK;
	}
	*kept = s;
	return 0;
}

/* Appends e (and id beside it), the feed's lock held when there is one. */
static int
push(struct ph_tree *t, const struct ph_entry *e, uint64_t id)
{
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct ph_entry *v = realloc(t->v, ncap * sizeof(*v));

		if (v == NULL)
			return PHSYNC_ENOMEM;
		t->v = v;
		if (t->want_ids) {
			uint64_t *ids = realloc(t->ids, ncap * sizeof(*ids));

			if (ids == NULL)
				return PHSYNC_ENOMEM;
			t->ids = ids;
			t->ids_ok = t->n == 0 || t->ids_ok;
		}
		t->cap = ncap;
	}
	if (t->want_ids && t->ids_ok)
		t->ids[t->n] = id;
	t->v[t->n] = *e;
	t->v[t->n].flags = 0;
	t->n++;
	return 0;
}

/* The feed's staged entries appended, its lock held. */
static int
unstage(struct ph_tree *t)
{
	struct ph_feed *f = t->feed;
	size_t i;
	int rc = 0;

	for (i = 0; i < f->nstage && rc == 0; i++)
		rc = push(t, &f->stage[i], f->stage_id[i]);
	f->nstage = 0;
	return rc;
}

static int
push_fed(struct ph_tree *t, const struct ph_entry *e, uint64_t id)
{
	struct ph_feed *f = t->feed;
	int rc = 0;

	if (f == NULL)
		return push(t, e, id);
	f->stage[f->nstage] = *e;
	f->stage_id[f->nstage] = id;
	if (++f->nstage == sizeof(f->stage) / sizeof(f->stage[0])) {
		pthread_mutex_lock(&f->mu);
		rc = unstage(t);
		pthread_mutex_unlock(&f->mu);
	}
	return rc;
}

int
ph_tree_push(struct ph_tree *t, const struct ph_entry *e)
{
	return push_fed(t, e, 0);
}

int
ph_tree_add_id(struct ph_tree *t, const char *path, size_t pathlen, const struct ph_entry *e,
               uint64_t id)
{
	struct ph_entry x = *e;
	char *s;
	int rc;

	if ((rc = ph_tree_keep(t, path, pathlen, &s)) != 0)
		return rc;
	x.path = s;
	return push_fed(t, &x, id);
}

int
ph_tree_add(struct ph_tree *t, const char *path, size_t pathlen, const struct ph_entry *e)
{
	return ph_tree_add_id(t, path, pathlen, e, 0);
}

int
ph_feed_init(struct ph_feed *f, struct ph_tree *t)
{
	memset(f, 0, sizeof(*f));
	if (pthread_mutex_init(&f->mu, NULL) != 0)
		return PHSYNC_ENOMEM;
	if (pthread_cond_init(&f->cv, NULL) != 0) {
		pthread_mutex_destroy(&f->mu);
		return PHSYNC_ENOMEM;
	}
	t->feed = f;
	return 0;
}

void
ph_feed_free(struct ph_feed *f, struct ph_tree *t)
{
	/* (Both threads are done: nothing staged is left, but for a scan
	 * whose end was never said.) */
	if (t->feed == f) {
		(void)unstage(t);
		t->feed = NULL;
	}
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
}

/* Sets *flag (when not NULL) and wakes whoever waits on t's feed; the
 * scan's staged entries appended first (unstage: only from the scan's
 * thread). An append that finds no memory is the scan's to say: 0 or
 * PHSYNC_ENOMEM. */
static int
feed_wake(struct ph_tree *t, int *flag, int unstage_too)
{
	struct ph_feed *f = t->feed;
	int rc = 0;

	if (f == NULL)
		return 0;
	pthread_mutex_lock(&f->mu);
	if (unstage_too)
		rc = unstage(t);
	if (flag != NULL)
		*flag = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int
ph_feed_batch(struct ph_tree *t)
{
	return feed_wake(t, NULL, 1);
}

int
ph_feed_end(struct ph_tree *t)
{
	return feed_wake(t, t->feed != NULL ? &t->feed->ended : NULL, 1);
}

void
ph_feed_wake(struct ph_tree *t)
{
	(void)feed_wake(t, NULL, 0);
}

void
ph_feed_close(struct ph_tree *t)
{
	(void)feed_wake(t, t->feed != NULL ? &t->feed->closed : NULL, 0);
}

size_t
ph_feed_ahead(struct ph_tree *t)
{
	struct ph_feed *f = t->feed;
	size_t n;

	if (f == NULL)
		return 0;
	pthread_mutex_lock(&f->mu);
	n = f->closed ? 0 : t->n - f->taken;
	pthread_mutex_unlock(&f->mu);
	return n;
}

void
ph_feed_pace(struct ph_tree *t, size_t ahead)
{
	struct ph_feed *f = t->feed;

	if (f == NULL)
		return;
	pthread_mutex_lock(&f->mu);
	while (!f->closed && t->n - f->taken > ahead)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
}

int
ph_tree_rename(struct ph_tree *t, size_t i, const char *key, const char *raw,
               const char *dpath)
{
	struct ph_entry *e = &t->v[i];
	const char *k = key ? key : e->path;
	const char *r = raw ? raw : ph_entry_raw(e);
	const char *d = dpath ? dpath : ph_entry_dpath(e);
	int has_raw = strcmp(r, k) != 0, has_d = strcmp(d, r) != 0;
	size_t kl = strlen(k) + 1, rl = has_raw ? strlen(r) + 1 : 0;
	size_t dl = has_d ? strlen(d) + 1 : 0;
	char *s;

	if ((s = strings_take(t, kl + rl + dl)) == NULL)
		return PHSYNC_ENOMEM;
	/* k, r and d may point into the old strings: copy before moving on. */
	memcpy(s, k, kl);
	if (has_raw)
		memcpy(s + kl, r, rl);
	if (has_d)
		memcpy(s + kl + rl, d, dl);
	if ((e->flags & PH_E_RAW) && !has_raw)
		t->nraw--;
	else if (!(e->flags & PH_E_RAW) && has_raw)
		t->nraw++;
	e->flags = (uint8_t)((e->flags & ~(PH_E_RAW | PH_E_DPATH)) |
	                     (has_raw ? PH_E_RAW : 0) | (has_d ? PH_E_DPATH : 0));
	e->path = s;
	return 0;
}

int
ph_path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	if (a == b) /* one string: two trees' entries sharing the pool's copy */
		return 0;
	while (*x && *x == *y) {
		x++;
		y++;
	}
	if (*x == *y)
		return 0;
	/* '/' ranks just above the terminator so "a/..." follows "a" at once. */
	{
		int cx = *x == '/' ? 1 : *x == 0 ? 0 : *x + 1;
		int cy = *y == '/' ? 1 : *y == 0 ? 0 : *y + 1;

		return cx - cy;
	}
}

const struct ph_entry *
ph_tree_find(const struct ph_tree *t, const char *path)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ph_path_cmp(t->v[mid].path, path);

		if (c == 0)
			return &t->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void
ph_tree_free(struct ph_tree *t)
{
	size_t i;

	for (i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->v);
	free(t->ids);
	memset(t, 0, sizeof(*t));
}

void
ph_tree_drop_ids(struct ph_tree *t)
{
	free(t->ids);
	t->ids = NULL;
	t->ids_ok = 0;
	t->want_ids = 0;
}

uint64_t
ph_tree_ident_sum(uint64_t ino, uint64_t dev, int64_t ctime_ns)
{
	uint64_t k[3] = { ino, dev, (uint64_t)ctime_ns }, h;

	h = XXH3_64bits(k, sizeof(k));
	return h ? h : 1;
}

int
ph_name_safe(const uint8_t *name, size_t len)
{
	size_t i;

	if (len == 0 || len > 255 || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	for (i = 0; i < len; i++)
		if (name[i] < 0x20 || name[i] == 0x7f || name[i] == '/' || name[i] == '\\')
			return 0;
	return 1;
}

char *
ph_rpath_join(const char *root, const char *rel)
{
	size_t a = strlen(root), b = strlen(rel);
	char *p = malloc(a + b + 3);

	if (p == NULL)
		return NULL;
	if (b == 0) {
		memcpy(p, a ? root : "/", a ? a + 1 : 2);
		return p;
	}
	memcpy(p, root, a);
	p[a] = '/';
	memcpy(p + a + 1, rel, b + 1);
	return p;
}

/* A byte a pattern matches as itself ('*', '?', '[' and '\\' do not). */
static int
literal(char c)
{
	return c != '\0' && c != '*' && c != '?' && c != '[' && c != '\\';
}

/* base: path's last name. */
static int
rule_match(const char *pat, const char *path, const char *base, int is_dir)
{
	size_t pl;
	char tmp[1024];

	/* Every pattern is matched from the start of the name (one without a
	 * '/' but a trailing one) or of the path (the others; one beginning
	 * with '/' from its next byte): a first byte the pattern must match as
	 * itself, and neither begins with, answers it here, with no copy
	 * (every path meets every rule; the default excludes all begin with
	 * '.', which few names and paths do). */
	if (literal(pat[0]) && pat[0] != '/' && pat[0] != base[0] && pat[0] != path[0])
		return 0;
	pl = strlen(pat);
	if (pl == 0 || pl >= sizeof(tmp))
		return 0;
	memcpy(tmp, pat, pl + 1);
	if (tmp[pl - 1] == '/') {       /* "dir/" matches folders only */
		if (!is_dir)
			return 0;
		tmp[--pl] = '\0';
		if (pl == 0)
			return 0;
	}
	if (strchr(tmp, '/') == NULL)   /* no '/': the name at any depth */
		return ph_pattern_match(tmp, base, 0);
	/* A '/' anchors the pattern at the root; '*' stops at '/', '**' not.
	 * core/pattern.h: fnmatch's rules, the same on every OS. */
	if (strstr(tmp, "**") != NULL)
		return ph_pattern_match(tmp + (tmp[0] == '/'), path, 0);
	return ph_pattern_match(tmp + (tmp[0] == '/'), path, PH_PATTERN_PATHNAME);
}

int
ph_filter_match(const struct ph_filter *f, const char *path, int is_dir)
{
	const char *base;
	size_t i, n;

	if (f == NULL)
		return 1;
	if (f->only != NULL && strcmp(path, f->only) != 0)
		return 0;
	n = f->only != NULL ? f->n - f->ndef : f->n;
	if (n == 0)
		return 1;
	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	for (i = 0; i < n; i++)
		if (rule_match(f->pat[i], path, base, is_dir))
			return f->incl[i];
	return 1;
}

int
ph_filter_temp(const struct ph_filter *f, const char *name, const struct ph_temp_info *ti)
{
	size_t ol;

	if (f == NULL || f->only == NULL)
		return 1;
	ol = strlen(f->only);
	if (ti->truncated)
		return ti->final_len <= ol && memcmp(f->only, name + ti->final_off, ti->final_len) == 0;
	return ti->final_len == ol && memcmp(f->only, name + ti->final_off, ol) == 0;
}

int
ph_filter_only_name(const struct ph_filter *f, const char *name, size_t nl)
{
	struct ph_temp_info ti;

	if (f == NULL || f->only == NULL)
		return 1;
	if (nl == strlen(f->only) && memcmp(name, f->only, nl) == 0)
		return 1;
	return ph_temp_parse(name, nl, &ti) && ph_filter_temp(f, name, &ti);
}

const char *const phsync_default_excludes[] = {
	".thumbnails/",   /* Android's thumbnail cache folder (DCIM/.thumbnails) */
	".thumbdata*",    /* its cache files */
	".trashed-*",     /* in the gallery's bin: deleted by the user */
	".pending-*",     /* being written by the camera or a download */
	NULL
};

int
ph_filter_options(struct ph_filter *f, const struct phsync_options *o, const char ***pat,
                  uint8_t **incl)
{
	size_t ndef = 0, n, k = 0, i;

	if (!o->no_default_excludes)
		while (phsync_default_excludes[ndef] != NULL)
			ndef++;
	n = o->n_excludes + o->n_includes + ndef;
	*pat = NULL;
	*incl = NULL;
	if (n == 0)
		return 0;
	*pat = calloc(n, sizeof(**pat));
	*incl = calloc(n, 1);
	if (*pat == NULL || *incl == NULL)
		return PHSYNC_ENOMEM;
	/* Includes first: an include re-admits what an exclude would drop,
	 * the default excludes included. */
	for (i = 0; i < o->n_includes; i++, k++) {
		(*pat)[k] = o->includes[i];
		(*incl)[k] = 1;
	}
	for (i = 0; i < o->n_excludes; i++, k++)
		(*pat)[k] = o->excludes[i];
	for (i = 0; i < ndef; i++, k++)
		(*pat)[k] = phsync_default_excludes[i];
	f->pat = *pat;
	f->incl = *incl;
	f->n = n;
	f->ndef = ndef;
	return 0;
}
