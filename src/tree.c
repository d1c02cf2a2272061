/* Trees, name rules, escaping, filters. */
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phsync/phsync.h"
#include "tree.h"

#define BLOCK (256u * 1024)

int
ph_tree_add(struct ph_tree *t, const char *path, size_t pathlen, const struct ph_entry *e)
{
	char *s;

	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct ph_entry *v = realloc(t->v, ncap * sizeof(*v));

		if (v == NULL)
			return PHSYNC_ENOMEM;
		t->v = v;
		t->cap = ncap;
	}
	if (t->nblocks == 0 || t->block_cap - t->block_used < pathlen + 1) {
		size_t sz = pathlen + 1 > BLOCK ? pathlen + 1 : BLOCK;
		char **b = realloc(t->blocks, (t->nblocks + 1) * sizeof(*b));

		if (b == NULL)
			return PHSYNC_ENOMEM;
		t->blocks = b;
		if ((b[t->nblocks] = malloc(sz)) == NULL)
			return PHSYNC_ENOMEM;
		t->nblocks++;
		t->block_used = 0;
		t->block_cap = sz;
	}
	s = t->blocks[t->nblocks - 1] + t->block_used;
	memcpy(s, path, pathlen);
	s[pathlen] = '\0';
	t->block_used += pathlen + 1;
	t->v[t->n] = *e;
	t->v[t->n].path = s;
	t->n++;
	return 0;
}

int
ph_path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

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

static int
entry_cmp(const void *a, const void *b)
{
	return ph_path_cmp(((const struct ph_entry *)a)->path, ((const struct ph_entry *)b)->path);
}

void
ph_tree_sort(struct ph_tree *t)
{
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), entry_cmp);
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
	memset(t, 0, sizeof(*t));
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

/* Length of a valid UTF-8 sequence at p (max n bytes), 0 if invalid. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t need, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		need = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		need = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		need = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* C1 controls (U+0080..U+009F) can act as terminal escapes too. */
	if (cp >= 0x80 && cp <= 0x9f)
		return 0;
	return need;
}

void
phsync_escape(char *buf, size_t len, const char *s)
{
	ph_escape(buf, len, s);
}

void
ph_escape(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n = strlen(s);

	if (len == 0)
		return;
	while (*p && o + 5 < len) {
		size_t k = utf8_len(p, n);

		if (k == 1 && *p >= 0x20 && *p != 0x7f && *p != '\\') {
			buf[o++] = (char)*p;
		} else if (k > 1) {
			if (o + k + 1 > len)
				break;
			memcpy(buf + o, p, k);
			o += k;
		} else {
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
			k = 1;
		}
		p += k;
		n -= k;
	}
	buf[o] = '\0';
}

static int
rule_match(const char *pat, const char *path, int is_dir)
{
	size_t pl = strlen(pat);
	char tmp[1024];
	const char *base;

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
	if (strchr(tmp, '/') == NULL) { /* no '/': the name at any depth */
		base = strrchr(path, '/');
		return fnmatch(tmp, base ? base + 1 : path, 0) == 0;
	}
	/* A '/' anchors the pattern at the root; '*' stops at '/', '**' not. */
	if (strstr(tmp, "**") != NULL)
		return fnmatch(tmp + (tmp[0] == '/'), path, 0) == 0;
	return fnmatch(tmp + (tmp[0] == '/'), path, FNM_PATHNAME) == 0;
}

int
ph_filter_match(const struct ph_filter *f, const char *path, int is_dir)
{
	size_t i;

	if (f == NULL)
		return 1;
	for (i = 0; i < f->n; i++)
		if (rule_match(f->pat[i], path, is_dir))
			return f->incl[i];
	return 1;
}
