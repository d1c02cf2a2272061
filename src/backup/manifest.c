/* SPDX-License-Identifier: ISC */
/* The archive manifest: format and parse (manifest.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apath.h"
#include "buf.h"
#include "manifest.h"
#include "phsync/error.h"
#include "str.h"

int
ph_mf_add(struct ph_manifest *m, const struct ph_mf_file *f)
{
	if (m->n == m->cap && ph_grow(&m->v, &m->cap, sizeof(*m->v), 256) != 0)
		return PHSYNC_ENOMEM;
	m->v[m->n] = *f;
	if ((m->v[m->n].path = strdup(f->path)) == NULL)
		return PHSYNC_ENOMEM;
	m->n++;
	return 0;
}

int
ph_mf_add_del(struct ph_manifest *m, const char *path)
{
	if (m->ndel == m->capdel && ph_grow(&m->del, &m->capdel, sizeof(*m->del), 64) != 0)
		return PHSYNC_ENOMEM;
	if ((m->del[m->ndel] = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	m->ndel++;
	return 0;
}

void
ph_mf_free(struct ph_manifest *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	for (i = 0; i < m->ndel; i++)
		free(m->del[i]);
	free(m->v);
	free(m->del);
	free(m->source);
	memset(m, 0, sizeof(*m));
}

static int
esc_needed(unsigned char c)
{
	return c < 0x21 || c == 0x7f || c == '%';
}

static int
put_esc(struct ph_buf *b, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		if (esc_needed((unsigned char)*s))
			rc = ph_buf_printf(b, "%%%02X", (unsigned char)*s);
		else
			rc = ph_buf_put(b, s, 1);
	}
	return rc;
}

/* One entry's line. */
static int
put_entry(struct ph_buf *b, const struct ph_mf_file *e)
{
	int rc, k;

	if (e->dir) {
		rc = ph_buf_printf(b, "d %" PRId64 " %u %o ", e->mtime, e->nsec, e->mode);
	} else {
		rc = ph_buf_printf(b, "f %" PRIu64 " %" PRId64 " %u %o ", e->size, e->mtime, e->nsec,
		                   e->mode);
		for (k = 0; k < 16 && rc == 0; k++)
			rc = ph_buf_printf(b, "%02x", e->hash[k]);
		if (rc == 0)
			rc = ph_buf_put(b, " ", 1);
	}
	if (rc == 0)
		rc = put_esc(b, e->path);
	return rc != 0 ? rc : ph_buf_put(b, "\n", 1);
}

int
ph_mf_format(const struct ph_manifest *m, int head, char **out, size_t *len)
{
	struct ph_buf b = { 0 };
	uint64_t nfiles = 0, ndirs = 0;
	size_t i;
	int rc;

	*out = NULL;
	*len = 0;
	rc = ph_buf_printf(&b, "phsync-manifest 1\nseries %s\nseq %" PRId64 "\nkind %s\nbase %"
	                   PRId64 "\ncreated %" PRId64 "\nsource ", m->series, m->seq,
	                   m->full ? "full" : "incremental", m->base, m->created);
	if (rc == 0)
		rc = put_esc(&b, m->source ? m->source : "");
	if (rc == 0)
		rc = ph_buf_put(&b, "\n", 1);
	if (rc == 0 && head)
		rc = ph_buf_printf(&b, "head\n");
	for (i = 0; !head && i < m->n && rc == 0; i++) {
		if (m->v[i].dir)
			ndirs++;
		else
			nfiles++;
		rc = put_entry(&b, &m->v[i]);
	}
	for (i = 0; !head && i < m->ndel && rc == 0; i++) {
		rc = ph_buf_put(&b, "x ", 2);
		if (rc == 0)
			rc = put_esc(&b, m->del[i]);
		if (rc == 0)
			rc = ph_buf_put(&b, "\n", 1);
	}
	if (rc == 0 && !head)
		rc = ph_buf_printf(&b, "end %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", nfiles, ndirs,
		                   (uint64_t)m->ndel);
	if (rc == 0)
		rc = ph_buf_reserve(&b, 1);   /* the text's NUL, not counted */
	if (rc != 0) {
		ph_buf_free(&b);
		return PHSYNC_ENOMEM;
	}
	b.data[b.len] = '\0';
	*out = (char *)b.data;
	*len = b.len;
	return 0;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescapes s in place; refuses an empty result, a bad escape, a NUL, and
 * a byte ph_mf_format would have escaped (a line has one form). */
static int
unesc(char *s)
{
	char *w = s, *r = s;

	for (; *r; r++) {
		if (*r != '%') {
			if (esc_needed((unsigned char)*r))
				return -1;
			*w++ = *r;
			continue;
		}
		if (hexval(r[1]) < 0 || hexval(r[2]) < 0 || (hexval(r[1]) | hexval(r[2])) == 0)
			return -1;
		*w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
		r += 2;
	}
	*w = '\0';
	return w == s ? -1 : 0;
}

static int
parse_line(struct ph_manifest *m, char *l, int *ended)
{
	struct ph_mf_file e;
	char path[16384], hash[40];
	long long a;
	unsigned ns, mode;
	unsigned long long sz, x, y, z;
	int n = 0, k;

	memset(&e, 0, sizeof(e));
	if (*ended)
		return -1;
	if (sscanf(l, "series %32[0-9a-f]%n", m->series, &n) == 1 && l[n] == '\0')
		return strlen(m->series) == 32 ? 0 : -1;
	if (sscanf(l, "seq %lld%n", &a, &n) == 1 && l[n] == '\0' && a > 0)
		return m->seq = a, 0;
	if (strcmp(l, "kind full") == 0)
		return m->full = 1, 0;
	if (strcmp(l, "kind incremental") == 0)
		return m->full = 0, 0;
	if (sscanf(l, "base %lld%n", &a, &n) == 1 && l[n] == '\0' && a >= 0)
		return m->base = a, 0;
	if (sscanf(l, "created %lld%n", &a, &n) == 1 && l[n] == '\0')
		return m->created = a, 0;
	if (strncmp(l, "source ", 7) == 0) {
		free(m->source);
		if ((m->source = strdup(l + 7)) == NULL)
			return -1;
		return m->source[0] == '\0' ? 0 : unesc(m->source);
	}
	if (strcmp(l, "head") == 0)
		return m->head = 1, 0;
	if (sscanf(l, "f %llu %lld %u %o %32[0-9a-f] %16383s%n", &sz, &a, &ns, &mode, hash, path,
	           &n) == 6 && l[n] == '\0' && strlen(hash) == 32 && ns < 1000000000u) {
		for (k = 0; k < 16; k++)
			e.hash[k] = (uint8_t)(hexval(hash[2 * k]) * 16 + hexval(hash[2 * k + 1]));
		e.size = sz;
		e.mtime = a;
		e.nsec = ns;
		e.mode = mode & 07777;
		e.path = path;
		return unesc(path) == 0 ? ph_mf_add(m, &e) : -1;
	}
	if (sscanf(l, "d %lld %u %o %16383s%n", &a, &ns, &mode, path, &n) == 4 && l[n] == '\0' &&
	    ns < 1000000000u) {
		e.dir = 1;
		e.mtime = a;
		e.nsec = ns;
		e.mode = mode & 07777;
		e.path = path;
		return unesc(path) == 0 ? ph_mf_add(m, &e) : -1;
	}
	if (sscanf(l, "x %16383s%n", path, &n) == 1 && l[n] == '\0')
		return unesc(path) == 0 ? ph_mf_add_del(m, path) : -1;
	if (sscanf(l, "end %llu %llu %llu%n", &x, &y, &z, &n) == 3 && l[n] == '\0') {
		uint64_t nf = 0, nd = 0;
		size_t i;

		for (i = 0; i < m->n; i++)
			m->v[i].dir ? nd++ : nf++;
		*ended = 1;
		return x == nf && y == nd && z == m->ndel ? 0 : -1;
	}
	return -1;
}

int
ph_mf_parse(const char *buf, size_t len, struct ph_manifest *m)
{
	const char *p = buf, *end = buf + len;
	char *line = NULL;
	int ended = 0, first = 1, rc = 0;

	memset(m, 0, sizeof(*m));
	while (p < end && rc == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (nl == NULL || memchr(p, '\0', (size_t)(nl - p)) != NULL) {
			rc = -1;
			break;
		}
		n = (size_t)(nl - p);
		free(line);
		if ((line = ph_strndup(p, n)) == NULL) {
			rc = -1;
			break;
		}
		if (first)
			rc = strcmp(line, "phsync-manifest 1") == 0 ? 0 : -1;
		else
			rc = parse_line(m, line, &ended);
		first = 0;
		p = nl + 1;
	}
	free(line);
	if (rc == 0 && (first || m->series[0] == '\0' || m->seq == 0 || (!m->head && !ended)))
		rc = -1;
	if (rc != 0) {
		ph_mf_free(m);
		return PHSYNC_ECORRUPT;
	}
	return 0;
}

/* One path of the manifest: checked as an archive member's name, and in
 * the one form a member's name takes once checked. */
static int
check_path(const char *kind, const char *path, char *why, size_t len)
{
	char norm[PH_APATH_MAX];
	const char *bad = ph_apath_check(path, norm, sizeof(norm));

	if (bad == NULL && norm[0] == '\0')
		bad = "the archive's top folder itself";
	if (bad == NULL && strcmp(norm, path) != 0)
		bad = "not in its normal form";
	if (bad == NULL)
		return 0;
	snprintf(why, len, "its manifest names %s %.200s%s: %s", kind, path,
	         strlen(path) > 200 ? "..." : "", bad);
	return PHSYNC_ECORRUPT;
}

int
ph_mf_check(const struct ph_manifest *m, char *why, size_t len)
{
	size_t i;
	int rc;

	if (m->full && m->ndel > 0) {
		snprintf(why, len, "a full archive whose manifest lists %zu deletion%s (a full "
		         "archive carries none)", m->ndel, m->ndel == 1 ? "" : "s");
		return PHSYNC_ECORRUPT;
	}
	if (m->full ? m->base != 0 : m->base <= 0 || m->base >= m->seq) {
		snprintf(why, len, "its manifest says %s archive number %lld is on number %lld",
		         m->full ? "full" : "incremental", (long long)m->seq, (long long)m->base);
		return PHSYNC_ECORRUPT;
	}
	for (i = 0; i < m->n; i++)
		if ((rc = check_path(m->v[i].dir ? "the folder" : "the file", m->v[i].path, why,
		                     len)) != 0)
			return rc;
	for (i = 0; i < m->ndel; i++)
		if ((rc = check_path("the deletion of", m->del[i], why, len)) != 0)
			return rc;
	return 0;
}
