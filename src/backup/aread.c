/* SPDX-License-Identifier: ISC */
/* Archive reading with checked names (aread.h). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apath.h"
#include "aread.h"
#include "ctx.h"
#include "platform.h"

struct ph_ar {
	phsync_ctx *ctx;
	struct archive *a;
	const char *name;
	char path[PH_APATH_MAX];
	char *uname;               /* the entry's name narrowed from UTF-16 */
	int wide;                  /* names come wide (Windows: ph_narrow_name) */
	int n;                     /* entries read */
	int head_ok, whole_ok;
	struct ph_manifest head, whole;
};

int
ph_ar_open(phsync_ctx *ctx, const char *path, struct ph_ar **out)
{
	struct ph_ar *ar = calloc(1, sizeof(*ar));
	wchar_t *wpath = NULL;
	char *probe = NULL;
	int r;

	*out = NULL;
	if (ar == NULL || (ar->a = archive_read_new()) == NULL) {
		free(ar);
		return PHSYNC_ENOMEM;
	}
	ar->ctx = ctx;
	ar->name = path;
	archive_read_support_filter_all(ar->a);
	archive_read_support_format_tar(ar->a);
	archive_read_support_format_gnutar(ar->a);
	/* Windows: libarchive takes and gives byte names in the ANSI code
	 * page, so the archive's path goes to it wide and the entries' names
	 * come back wide (entry_name); POSIX: bytes both ways. */
	ar->wide = ph_narrow_name(L"", &probe) == 0;
	free(probe);
	if (ph_wide_name(path, &wpath) == 0)
		r = archive_read_open_filename_w(ar->a, wpath, 1 << 16);
	else
		r = archive_read_open_filename(ar->a, path, 1 << 16);
	free(wpath);
	if (r != ARCHIVE_OK) {
		int e = archive_errno(ar->a);
		int rc = ph_err(ctx, e == ENOENT ? PHSYNC_ENOENT : e > 0 ? ph_err_from_errno(e) :
		                PHSYNC_ECORRUPT, "%s: %s", path, archive_error_string(ar->a));

		archive_read_free(ar->a);
		free(ar);
		return rc;
	}
	*out = ar;
	return 0;
}

/* The entry's name as UTF-8: wide and narrowed where libarchive's byte
 * names are in another code page (Windows), else its bytes (the C locale
 * keeps them as they are). NULL when it cannot be read. */
static const char *
entry_name(struct ph_ar *ar, struct archive_entry *ae)
{
	const wchar_t *w;

	free(ar->uname);
	ar->uname = NULL;
	if (!ar->wide)
		return archive_entry_pathname(ae);
	if ((w = archive_entry_pathname_w(ae)) == NULL || ph_narrow_name(w, &ar->uname) != 0)
		return NULL;
	return ar->uname;
}

/* Checks and normalizes name into ar->path (apath.h). Returns NULL or
 * the reason. */
static const char *
check_name(struct ph_ar *ar, const char *name)
{
	return ph_apath_check(name, ar->path, sizeof(ar->path));
}

static int
corrupt(struct ph_ar *ar)
{
	return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: damaged or cut: %s", ar->name,
	              archive_error_string(ar->a) ? archive_error_string(ar->a) : "read error");
}

/* Reads the manifest entry (capped) and parses it as the head or the
 * whole one. */
static int
read_manifest(struct ph_ar *ar, uint64_t size)
{
	struct ph_manifest m;
	char *buf, why[400];
	la_ssize_t r;
	int rc;

	if (size > PH_MANIFEST_MAX)
		return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: its manifest claims %llu bytes",
		              ar->name, (unsigned long long)size);
	if ((buf = malloc(size + 1)) == NULL)
		return PHSYNC_ENOMEM;
	r = archive_read_data(ar->a, buf, size);
	if (r < 0 || (uint64_t)r != size) {
		free(buf);
		return corrupt(ar);
	}
	rc = ph_mf_parse(buf, size, &m);
	free(buf);
	if (rc != 0)
		return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: its manifest is damaged", ar->name);
	if (ph_mf_check(&m, why, sizeof(why)) != 0) {
		ph_mf_free(&m);
		return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: %s; refused, nothing of it applied",
		              ar->name, why);
	}
	if (m.head && ar->n == 1 && !ar->head_ok) {
		ar->head = m;
		ar->head_ok = 1;
	} else if (!m.head && ar->head_ok && !ar->whole_ok) {
		/* The head told the reader what the archive is before its
		 * files; the whole manifest must say the same. */
		if (strcmp(m.series, ar->head.series) != 0 || m.seq != ar->head.seq ||
		    m.full != ar->head.full || m.base != ar->head.base) {
			ph_mf_free(&m);
			return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: its two manifests disagree on "
			              "which archive it is; refused, nothing of it applied", ar->name);
		}
		ar->whole = m;
		ar->whole_ok = 1;
	} else {
		ph_mf_free(&m);
		return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: a manifest out of place%s", ar->name,
		              ar->head_ok ? "" : " (none at its start)");
	}
	return 0;
}

int
ph_ar_next(struct ph_ar *ar, struct ph_ar_entry *e)
{
	struct archive_entry *ae;
	const char *name, *why;
	int r, rc;

	memset(e, 0, sizeof(*e));
	r = archive_read_next_header(ar->a, &ae);
	if (r == ARCHIVE_EOF)
		return 0;
	if (r < ARCHIVE_WARN)
		return corrupt(ar);
	ar->n++;
	if (ar->whole_ok)
		return ph_err(ar->ctx, PHSYNC_ECORRUPT, "%s: entries after its manifest", ar->name);
	name = entry_name(ar, ae);
	e->size = archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0 ?
	          (uint64_t)archive_entry_size(ae) : 0;
	e->mtime = archive_entry_mtime(ae);
	e->nsec = archive_entry_mtime_nsec(ae) >= 0 && archive_entry_mtime_nsec(ae) < 1000000000 ?
	          (uint32_t)archive_entry_mtime_nsec(ae) : 0;
	e->mode = archive_entry_perm(ae) & 07777;
	if (name == NULL) {
		e->type = PH_AR_REFUSED;
		e->path = "?";
		e->reason = "a name that cannot be read";
		return 1;
	}
	if ((why = check_name(ar, name)) != NULL) {
		snprintf(ar->path, sizeof(ar->path), "%s", name);
		e->type = PH_AR_REFUSED;
		e->path = ar->path;
		e->reason = why;
		return 1;
	}
	e->path = ar->path;
	if (archive_entry_hardlink(ae) != NULL) {
		e->type = PH_AR_REFUSED;
		e->reason = "a hard link (never made by a restore)";
	} else if (archive_entry_filetype(ae) == AE_IFLNK) {
		e->type = PH_AR_REFUSED;
		e->reason = "a symlink (never made by a restore)";
	} else if (archive_entry_filetype(ae) == AE_IFDIR) {
		e->type = ar->path[0] ? PH_AR_DIR : PH_AR_ROOT;
	} else if (archive_entry_filetype(ae) == AE_IFREG) {
		e->type = ar->path[0] ? PH_AR_FILE : PH_AR_ROOT;
		if (strcmp(ar->path, PH_MANIFEST_NAME) == 0) {
			if ((rc = read_manifest(ar, e->size)) != 0)
				return rc;
			e->type = PH_AR_MANIFEST;
		}
	} else {
		e->type = PH_AR_REFUSED;
		e->reason = "a device, FIFO or socket (never made by a restore)";
	}
	return 1;
}

int
ph_ar_data(struct ph_ar *ar, const void **p, size_t *n, int64_t *off)
{
	la_int64_t o;
	int r = archive_read_data_block(ar->a, p, n, &o);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r < ARCHIVE_WARN)
		return corrupt(ar);
	*off = o;
	return 1;
}

const struct ph_manifest *
ph_ar_head(const struct ph_ar *ar)
{
	return ar->head_ok ? &ar->head : NULL;
}

const struct ph_manifest *
ph_ar_manifest(const struct ph_ar *ar)
{
	return ar->whole_ok ? &ar->whole : NULL;
}

void
ph_ar_close(struct ph_ar *ar)
{
	if (ar == NULL)
		return;
	archive_read_free(ar->a);
	ph_mf_free(&ar->head);
	ph_mf_free(&ar->whole);
	free(ar->uname);
	free(ar);
}
