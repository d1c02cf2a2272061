/* SPDX-License-Identifier: ISC */
/* Unicode forms, case folding and name collisions; see names.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>
#include <xxhash.h>

#include "phsync/error.h"
#include "buf.h"
#include "names.h"
#include "winname.h"

static int
ascii(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p != 0 && *p < 0x80)
		p++;
	return *p == 0;
}

/* The NFC (or, with fold, the case-folded NFC) form of s: *out is s itself
 * when nothing changes (or s is not UTF-8), else malloc'd. 0 or ENOMEM. */
static int
form(const char *s, int fold, char **out)
{
	utf8proc_uint8_t *d = NULL;
	utf8proc_ssize_t n;

	*out = (char *)s;
	if (ascii(s)) {
		const char *p;
		char *c, *q;

		if (!fold)
			return 0;
		for (p = s; *p != '\0' && !(*p >= 'A' && *p <= 'Z'); p++)
			;
		if (*p == '\0')
			return 0;
		if ((c = strdup(s)) == NULL)
			return PHSYNC_ENOMEM;
		for (q = c; *q != '\0'; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q - 'A' + 'a');
		*out = c;
		return 0;
	}
	n = utf8proc_map((const utf8proc_uint8_t *)s, 0, &d, UTF8PROC_NULLTERM |
	                 UTF8PROC_STABLE | UTF8PROC_COMPOSE | (fold ? UTF8PROC_CASEFOLD : 0));
	if (n == UTF8PROC_ERROR_NOMEM)
		return PHSYNC_ENOMEM;
	if (n < 0)              /* not UTF-8: the bytes are the name */
		return 0;
	if (strcmp((char *)d, s) == 0) {
		free(d);
		return 0;
	}
	*out = (char *)d;
	return 0;
}

static void
form_free(const char *s, char *f)
{
	if (f != s)
		free(f);
}

int
ph_names_normalize(struct ph_tree *t)
{
	size_t i;
	int rc, changed = 0;

	for (i = 0; i < t->n; i++) {
		char *k;

		if ((rc = form(t->v[i].path, 0, &k)) != 0)
			return rc;
		if (k == t->v[i].path)
			continue;
		rc = ph_tree_rename(t, i, k, t->v[i].path, NULL);
		free(k);
		if (rc != 0)
			return rc;
		changed = 1;
	}
	if (changed)
		ph_tree_sort(t);
	return 0;
}

/* A set of folded keys: open addressing on their 64-bit hashes, each slot
 * naming the first source entry that folds to it. */
struct fset {
	uint64_t *h;
	uint32_t *idx;     /* entry index + 1; 0: empty */
	size_t mask;
};

static int
fset_init(struct fset *s, size_t n)
{
	size_t cap = 16;

	while (cap < n * 2)
		cap *= 2;
	s->mask = cap - 1;
	s->h = calloc(cap, sizeof(*s->h));
	s->idx = calloc(cap, sizeof(*s->idx));
	return s->h && s->idx ? 0 : PHSYNC_ENOMEM;
}

static void
fset_free(struct fset *s)
{
	free(s->h);
	free(s->idx);
}

/* The entry folding to f (hash h), or -1; with add, f becomes i's when
 * absent. Entries are compared by their folded keys, never by hash alone. */
static int64_t
fset_find(struct fset *s, const struct ph_tree *t, const char *f, uint64_t h, int fold,
          int64_t add)
{
	size_t k;

	for (k = h & s->mask; s->idx[k] != 0; k = (k + 1) & s->mask) {
		if (s->h[k] == h) {
			uint32_t o = s->idx[k] - 1;
			char *of;
			int same;

			if (form(t->v[o].path, fold, &of) != 0)
				return -2;
			same = strcmp(of, f) == 0;
			form_free(t->v[o].path, of);
			if (same)
				return o;
		}
	}
	if (add >= 0) {
		s->h[k] = h;
		s->idx[k] = (uint32_t)add + 1;
	}
	return -1;
}

static uint64_t
fhash(const char *f)
{
	return XXH3_64bits(f, strlen(f));
}

/* The key "PARENT/STEM (n).EXT" for key. Caller frees. */
static char *
numbered(const char *key, unsigned n)
{
	const char *slash = strrchr(key, '/'), *base = slash ? slash + 1 : key;
	const char *dot = strrchr(base, '.');
	size_t stem, len;
	char *s;

	if (dot == NULL || dot == base)   /* no extension, or a dot file */
		dot = base + strlen(base);
	stem = (size_t)(dot - key);
	len = strlen(key) + 16;
	if ((s = malloc(len)) == NULL)
		return NULL;
	snprintf(s, len, "%.*s (%u)%s", (int)stem, key, n, dot);
	return s;
}

/* Gives entry i of t the key nk, and its subtree the same prefix (each
 * keeping its raw name); renamed: mark i as given a name of our own. */
static int
rekey_subtree(struct ph_tree *t, size_t i, const char *nk, int renamed)
{
	char *old = strdup(t->v[i].path);
	size_t ol, nl = strlen(nk), j;
	int rc;

	if (old == NULL)
		return PHSYNC_ENOMEM;
	ol = strlen(old);
	rc = ph_tree_rename(t, i, nk, NULL, NULL);
	if (renamed)
		t->v[i].flags |= PH_E_RENAMED;
	for (j = i + 1; rc == 0 && j < t->n; j++) {
		const char *p = t->v[j].path;
		char *k;

		if (strncmp(p, old, ol) != 0 || p[ol] != '/')
			break;
		if ((k = malloc(nl + strlen(p + ol) + 1)) == NULL) {
			rc = PHSYNC_ENOMEM;
			break;
		}
		memcpy(k, nk, nl);
		strcpy(k + nl, p + ol);
		rc = ph_tree_rename(t, j, k, NULL, NULL);
		free(k);
	}
	free(old);
	return rc;
}

int
ph_names_fold_collide(const struct ph_tree *t)
{
	struct fset s;
	size_t i;
	int rc = 0;

	if (fset_init(&s, t->n) != 0) {
		fset_free(&s);
		return PHSYNC_ENOMEM;
	}
	for (i = 0; i < t->n && rc == 0; i++) {
		char *f;
		int64_t o;

		if (form(t->v[i].path, 1, &f) != 0) {
			rc = PHSYNC_ENOMEM;
			break;
		}
		o = fset_find(&s, t, f, fhash(f), 1, (int64_t)i);
		form_free(t->v[i].path, f);
		if (o == -2)
			rc = PHSYNC_ENOMEM;
		else if (o >= 0)
			rc = 1;
	}
	fset_free(&s);
	return rc;
}

int
ph_names_separate(struct ph_tree *src, struct ph_tree *dst, int fold,
                  ph_names_report_fn *report, void *arg)
{
	struct fset s;
	size_t i;
	int rc = 0, renamed = 0, rekeyed = 0;
	char *f = NULL;

	/* Without folding only equal keys collide, and only a name that was
	 * not in NFC can make one. */
	if (!fold && src->nraw == 0)
		return 0;
	if (src->n >= UINT32_MAX)
		return PHSYNC_ENOMEM;
	if (fset_init(&s, src->n) != 0) {
		fset_free(&s);
		return PHSYNC_ENOMEM;
	}
	/* Every real name first, so a made-up one never takes a real one's. */
	for (i = 0; i < src->n; i++) {
		if ((rc = form(src->v[i].path, fold, &f)) != 0)
			goto out;
		if (fset_find(&s, src, f, fhash(f), fold, (int64_t)i) == -2)
			rc = PHSYNC_ENOMEM;
		form_free(src->v[i].path, f);
		if (rc != 0)
			goto out;
	}
	for (i = 0; i < src->n; i++) {
		int64_t o;
		unsigned n;

		if ((rc = form(src->v[i].path, fold, &f)) != 0)
			goto out;
		o = fset_find(&s, src, f, fhash(f), fold, (int64_t)i);
		form_free(src->v[i].path, f);
		if (o == -2) {
			rc = PHSYNC_ENOMEM;
			goto out;
		}
		if (o < 0 || (size_t)o == i)
			continue;
		/* Another entry holds this name: take the first free number. */
		for (n = 2;; n++) {
			char *k = numbered(src->v[i].path, n), *kf;
			int64_t taken;

			if (k == NULL || form(k, fold, &kf) != 0) {
				free(k);
				rc = PHSYNC_ENOMEM;
				goto out;
			}
			taken = fset_find(&s, src, kf, fhash(kf), fold, -1);
			if (taken == -1) {
				rc = rekey_subtree(src, i, k, 1);
				if (rc == 0)
					fset_find(&s, src, kf, fhash(kf), fold, (int64_t)i);
				if (rc == 0 && report != NULL && fold)
					report(arg, src->v[i].path, ph_entry_raw(&src->v[i]));
			}
			form_free(k, kf);
			free(k);
			if (taken == -2)
				rc = PHSYNC_ENOMEM;
			if (rc != 0)
				goto out;
			if (taken == -1)
				break;
		}
		renamed = 1;
	}
	/* The destination's names for the same files (it ignores case); a
	 * folder's subtree with it, so that a file only the destination has
	 * stays under its folder's key ("ALBUM/y.jpg" is "Album/y.jpg" when the
	 * source's "Album" is the destination's "ALBUM"). The subtree follows
	 * its folder in dst's order and is looked at after it. */
	for (i = 0; fold && dst != NULL && i < dst->n; i++) {
		int64_t o;

		if ((rc = form(dst->v[i].path, 1, &f)) != 0)
			goto out;
		o = fset_find(&s, src, f, fhash(f), 1, -1);
		form_free(dst->v[i].path, f);
		if (o == -2) {
			rc = PHSYNC_ENOMEM;
			goto out;
		}
		if (o >= 0 && strcmp(src->v[o].path, dst->v[i].path) != 0) {
			if ((rc = rekey_subtree(dst, i, src->v[o].path, 0)) != 0)
				goto out;
			rekeyed = 1;
		}
	}
out:
	fset_free(&s);
	if (renamed)
		ph_tree_sort(src);
	if (rekeyed)
		ph_tree_sort(dst);
	return rc;
}

int
ph_names_dest_paths(struct ph_tree *src, const struct ph_tree *dst, int fold)
{
	size_t i, d = 0, depth = 0, cap = 0;
	size_t *stack = NULL;  /* the folders above entry i (source indexes) */
	int rc = 0;

	if (src->nraw == 0 && (dst == NULL || dst->nraw == 0))
		return 0;
	for (i = 0; i < src->n && rc == 0; i++) {
		struct ph_entry *e = &src->v[i];
		const char *key = e->path, *dp, *name;
		size_t kl;
		int c = 1;
		char *buf = NULL;

		/* Leave the folders that do not hold this entry. */
		while (depth > 0) {
			const char *pk = src->v[stack[depth - 1]].path;
			size_t pl = strlen(pk);

			if (strncmp(key, pk, pl) == 0 && key[pl] == '/')
				break;
			depth--;
		}
		while (dst != NULL && d < dst->n && (c = ph_path_cmp(dst->v[d].path, key)) < 0)
			d++;
		if (dst != NULL && d < dst->n && c == 0) {
			dp = ph_entry_raw(&dst->v[d]);
		} else {
			const char *r = (e->flags & PH_E_RENAMED) && fold ? key : ph_entry_raw(e);
			const char *pd = depth > 0 ? ph_entry_dpath(&src->v[stack[depth - 1]]) : NULL;

			name = strrchr(r, '/');
			name = name ? name + 1 : r;
			kl = (pd ? strlen(pd) + 1 : 0) + strlen(name) + 1;
			if ((buf = malloc(kl)) == NULL) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			snprintf(buf, kl, "%s%s%s", pd ? pd : "", pd ? "/" : "", name);
			dp = buf;
		}
		if (strcmp(dp, ph_entry_dpath(e)) != 0)
			rc = ph_tree_rename(src, i, NULL, NULL, dp);
		free(buf);
		if (rc == 0 && src->v[i].type == PH_T_DIR) {
			if (depth == cap && ph_grow(&stack, &cap, sizeof(*stack), 32) != 0) {
				rc = PHSYNC_ENOMEM;
				break;
			}
			stack[depth++] = i;
		}
	}
	free(stack);
	return rc;
}

/* The Windows verdict on path's first unholdable name: *own says whether
 * that name is the last one (the entry's own). PH_WINNAME_OK for none. */
static enum ph_winname
path_verdict(const char *path, int *own)
{
	const char *p = path, *slash;
	enum ph_winname w;

	for (;;) {
		slash = strchr(p, '/');
		w = ph_winname_check_n(p, slash ? (size_t)(slash - p) : strlen(p));
		if (w != PH_WINNAME_OK) {
			*own = slash == NULL;
			return w;
		}
		if (slash == NULL)
			return PH_WINNAME_OK;
		p = slash + 1;
	}
}

int
ph_names_any_unholdable(const struct ph_tree *t)
{
	size_t i;
	int own;

	/* Counted as the entries were listed: one look at each name. */
	if (t->count_winnames)
		return t->nwinbad > 0;
	for (i = 0; i < t->n; i++)
		if (path_verdict(ph_entry_raw(&t->v[i]), &own) != PH_WINNAME_OK)
			return 1;
	return 0;
}

size_t
ph_names_drop_unholdable(struct ph_tree *t, ph_names_drop_fn *fn, void *arg)
{
	size_t i, k = 0;
	enum ph_winname w;
	int own;

	for (i = 0; i < t->n; i++) {
		struct ph_entry *e = &t->v[i];

		if ((w = path_verdict(ph_entry_raw(e), &own)) == PH_WINNAME_OK) {
			t->v[k++] = *e;
			continue;
		}
		if (own && fn != NULL)
			fn(arg, ph_entry_raw(e), ph_winname_why(w));
		if (e->flags & PH_E_RAW)
			t->nraw--;
	}
	i = t->n - k;
	t->n = k;
	t->nwinbad = 0;   /* every such name went, with its subtree */
	if (i > 0)
		t->ids_ok = 0;
	return i;
}
