/* SPDX-License-Identifier: ISC */
/* The archive writer: libarchive's pax writer into a temp file, through
 * the writer thread of aout.c (for .tar.zst, our own zstd frames so media
 * is stored, not recompressed). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aout.h"
#include "awrite.h"
#include "ctx.h"
#include "pfs.h"
#include "platform.h"
#include "tempname.h"

struct ph_aw {
	phsync_ctx *ctx;
	struct archive *a;
	int kind, fd, dfd, do_fsync, err, open;
	void *utf8;                 /* C.UTF-8 for libarchive's name conversions, or NULL */
	size_t extlen;
	char final[PATH_MAX];       /* as given */
	char tmp[PH_NAME_MAX + 1];  /* in dfd */
	char tmppath[PATH_MAX + PH_NAME_MAX + 2];
	struct ph_aout *out;        /* the writer thread */
	int store;                  /* .tar.zst: stored bytes go in raw frames */
};

static const struct {
	const char *ext;
	int kind;
} exts[] = {
	{ ".tar.zst", PH_AW_ZSTD }, { ".tzst", PH_AW_ZSTD }, { ".tar.gz", PH_AW_GZIP },
	{ ".tgz", PH_AW_GZIP }, { ".tar.xz", PH_AW_XZ }, { ".txz", PH_AW_XZ },
	{ ".tar", PH_AW_TAR },
};

int
ph_aw_kind_of(const char *name, size_t *extlen)
{
	size_t n = strlen(name), i;

	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t el = strlen(exts[i].ext);

		if (n > el && strcmp(name + n - el, exts[i].ext) == 0 && name[n - el - 1] != '/') {
			*extlen = el;
			return exts[i].kind;
		}
	}
	return 0;
}

/* The output's failure into aw->err, and zstd's words into the message. */
static void
out_failed(struct ph_aw *aw)
{
	const char *zmsg = NULL;

	aw->err = ph_aout_error(aw->out, &zmsg);
	if (aw->err == 0)
		aw->err = EIO;
	if (zmsg != NULL)
		ph_err(aw->ctx, PHSYNC_EIO, "zstd: %s", zmsg);
}

static la_ssize_t
write_cb(struct archive *a, void *arg, const void *p, size_t n)
{
	struct ph_aw *aw = arg;

	if (ph_aout_write(aw->out, p, n, aw->store) != 0) {
		out_failed(aw);
		archive_set_error(a, aw->err, "%s", strerror(aw->err));
		return -1;
	}
	return (la_ssize_t)n;
}

static int
close_cb(struct archive *a, void *arg)
{
	struct ph_aw *aw = arg;

	if (aw->out != NULL && ph_aout_drain(aw->out, 1) != 0) {
		out_failed(aw);
		archive_set_error(a, aw->err, "%s", strerror(aw->err));
		return ARCHIVE_FATAL;
	}
	return ARCHIVE_OK;
}

/* Over a disk quota: EDQUOT, where the C library has it (mingw has not). */
static int
is_edquot(int e)
{
#ifdef EDQUOT
	return e == EDQUOT;
#else
	(void)e;
	return 0;
#endif
}

/* The message for a failed write: the disk's own words first. */
static int
write_err(struct ph_aw *aw, const char *what)
{
	int e = aw->err ? aw->err : archive_errno(aw->a);

	if (e == ENOSPC || is_edquot(e))
		return ph_err(aw->ctx, PHSYNC_ENOSPC, "%s: no space left on the archive's disk "
		              "(%s); the incomplete archive was removed", aw->final, what);
	if (aw->ctx->err[0] != '\0' && aw->err == EIO && e == EIO)
		return PHSYNC_EIO;  /* zstd's message is in place */
	return ph_err(aw->ctx, e ? ph_err_from_errno(e) : PHSYNC_EIO, "%s: %s: %s", aw->final,
	              what, e ? strerror(e) : archive_error_string(aw->a));
}

/* Removes temps of this kind of archive that a dead run of ours left in
 * the folder (a cron job killed halfway). */
static void
clean_stale(int dfd, const char *ext)
{
	struct ph_temp_owner self;
	struct ph_dirent de;
	struct ph_dir *d;
	int64_t now = (int64_t)time(NULL);
	int r;

	/* pfs.h lists through a descriptor of its own: dfd stays as it is. */
	if (ph_dir_list(dfd, &d) != 0)
		return;
	ph_temp_owner_self(&self);
	while ((r = ph_dir_read(d, &de)) != 0) {
		struct ph_temp_info ti;
		size_t nl, el = strlen(ext);

		if (r == -EILSEQ)
			continue;
		if (r < 0)
			break;
		nl = strlen(de.name);
		if (!ph_temp_parse(de.name, nl, &ti) || ti.kind != PH_TEMP_NEW ||
		    !ph_temp_stale(&ti, &self, now))
			continue;
		if (ti.final_len < el || memcmp(de.name + ti.final_off + ti.final_len - el, ext,
		                                el) != 0)
			continue;
		ph_unlinkat(dfd, de.name, 0);
	}
	ph_dir_end(d);
}

int
ph_aw_open(phsync_ctx *ctx, const char *final, int level, int do_fsync, struct ph_aw **out)
{
	struct ph_temp_owner self;
	struct ph_aw *aw;
	const char *base = strrchr(final, '/');
	char dir[PATH_MAX];
	int rc = 0, tries;

	*out = NULL;
	if ((aw = calloc(1, sizeof(*aw))) == NULL)
		return PHSYNC_ENOMEM;
	aw->ctx = ctx;
	aw->fd = aw->dfd = -1;
	aw->do_fsync = do_fsync;
	/* Names are UTF-8 bytes whatever the user's locale: libarchive converts
	 * them from the thread's locale, and in the C locale it cannot, so it
	 * wrote hdrcharset=BINARY records that GNU tar warns about. Only the
	 * writer: under a UTF-8 locale libarchive's reader turns NFD names
	 * into NFC, so aread.c keeps the C locale and gets the bytes. */
	aw->utf8 = ph_utf8_ctype_new();
	snprintf(aw->final, sizeof(aw->final), "%s", final);
	if ((aw->kind = ph_aw_kind_of(final, &aw->extlen)) == 0) {
		rc = ph_err(ctx, PHSYNC_EINVAL, "%s: the archive's name must end in .tar, .tar.zst, "
		            ".tar.gz or .tar.xz", final);
		goto fail;
	}
	if (base == NULL) {
		snprintf(dir, sizeof(dir), ".");
		base = final;
	} else {
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - final), final);
		if (dir[0] == '\0')
			snprintf(dir, sizeof(dir), "/");
		base++;
	}
	if ((aw->dfd = ph_dir_open_path(dir)) < 0) {
		rc = ph_err(ctx, ph_err_from_errno(-aw->dfd), "%s: the archive's folder: %s", dir,
		            strerror(-aw->dfd));
		aw->dfd = -1;
		goto fail;
	}
	clean_stale(aw->dfd, final + strlen(final) - aw->extlen);
	ph_temp_owner_self(&self);
	for (tries = 0; aw->fd < 0 && tries < 16; tries++) {
		if (ph_temp_name(aw->tmp, sizeof(aw->tmp), base, PH_TEMP_NEW, &self) != 0) {
			rc = ph_err(ctx, PHSYNC_EINVAL, "%s: no archive name", final);
			goto fail;
		}
		aw->fd = ph_openat(aw->dfd, aw->tmp,
		                   PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW, 0600);
		if (aw->fd < 0 && aw->fd != -EEXIST) {
			int e = -aw->fd;

			aw->fd = -1;
			rc = ph_err(ctx, ph_err_from_errno(e), "%s/%s: %s", dir, aw->tmp, strerror(e));
			goto fail;
		}
	}
	if (aw->fd < 0) {
		rc = ph_err(ctx, PHSYNC_EIO, "%s: no free temp name", final);
		goto fail;
	}
	aw->open = 1;
	snprintf(aw->tmppath, sizeof(aw->tmppath), "%s/%s", dir, aw->tmp);
	if ((aw->a = archive_write_new()) == NULL ||
	    archive_write_set_format_pax(aw->a) != ARCHIVE_OK) {
		rc = PHSYNC_ENOMEM;
		goto fail;
	}
	if ((rc = ph_aout_open(aw->fd, aw->kind == PH_AW_ZSTD ? (level ? level : 3) : 0, do_fsync,
	                       &aw->out)) != 0)
		goto fail;
	if (aw->kind == PH_AW_ZSTD) {
		/* Unblocked: each entry's bytes reach us as they are written,
		 * so the store/compress switch falls where it is asked. */
		archive_write_set_bytes_per_block(aw->a, 0);
	} else if (aw->kind == PH_AW_GZIP || aw->kind == PH_AW_XZ) {
		char opt[64];

		if ((aw->kind == PH_AW_GZIP ? archive_write_add_filter_gzip(aw->a) :
		     archive_write_add_filter_xz(aw->a)) != ARCHIVE_OK) {
			rc = ph_err(ctx, PHSYNC_EUNSUPPORTED, "libarchive: %s",
			            archive_error_string(aw->a));
			goto fail;
		}
		if (level) {
			snprintf(opt, sizeof(opt), "compression-level=%d", level);
			archive_write_set_filter_option(aw->a, NULL, "compression-level", opt + 18);
		}
		if (aw->kind == PH_AW_XZ) {
			snprintf(opt, sizeof(opt), "%d", ph_cpu_count());
			archive_write_set_filter_option(aw->a, "xz", "threads", opt);
		}
	}
	if (archive_write_open2(aw->a, aw, NULL, write_cb, close_cb, NULL) != ARCHIVE_OK) {
		rc = write_err(aw, "starting the archive");
		goto fail;
	}
	*out = aw;
	return 0;
fail:
	ph_aw_abort(aw);
	return rc;
}

void
ph_aw_store(struct ph_aw *aw, int store)
{
	aw->store = aw->kind == PH_AW_ZSTD && store;
}

int
ph_aw_header(struct ph_aw *aw, const struct ph_aw_entry *e)
{
	struct archive_entry *ae = archive_entry_new2(aw->a);
	wchar_t *wide = NULL;
	void *old;
	int r;

	if (ae == NULL)
		return PHSYNC_ENOMEM;
	/* Windows: the name as UTF-16 (libarchive would read bytes in the ANSI
	 * code page); POSIX: as its bytes, under C.UTF-8 below. */
	if (ph_wide_name(e->path, &wide) == 0)
		archive_entry_copy_pathname_w(ae, wide);
	else
		archive_entry_copy_pathname(ae, e->path);
	free(wide);
	archive_entry_set_filetype(ae, e->dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(ae, e->mode & 07777);
	archive_entry_set_size(ae, e->dir ? 0 : (la_int64_t)e->size);
	archive_entry_set_mtime(ae, (time_t)e->mtime, e->nsec);
	old = ph_utf8_ctype_use(aw->utf8);
	r = archive_write_header(aw->a, ae);
	if (old != NULL)
		ph_utf8_ctype_use(old);
	archive_entry_free(ae);
	if (r < ARCHIVE_WARN)
		return write_err(aw, "writing");
	return 0;
}

int
ph_aw_data(struct ph_aw *aw, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		la_ssize_t w = archive_write_data(aw->a, b, n);

		if (w <= 0)
			return write_err(aw, "writing");
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int
ph_aw_end(struct ph_aw *aw)
{
	if (archive_write_finish_entry(aw->a) < ARCHIVE_WARN)
		return write_err(aw, "writing");
	return 0;
}

int
ph_aw_can_undo(const struct ph_aw *aw)
{
	return aw->kind == PH_AW_ZSTD;   /* unblocked: our stream is libarchive's */
}

int
ph_aw_mark(struct ph_aw *aw)
{
	if (ph_aout_mark(aw->out) != 0) {
		out_failed(aw);
		return write_err(aw, "writing");
	}
	return 0;
}

int
ph_aw_undo(struct ph_aw *aw, uint64_t left)
{
	static const uint8_t zero[65536];

	/* libarchive is owed the rest of the entry: it gets zeros, which are
	 * dropped, so its state is "between entries" again; then the file is
	 * cut back to the mark. */
	ph_aout_discard(aw->out);
	while (left > 0) {
		la_ssize_t w = archive_write_data(aw->a, zero, left < sizeof(zero) ? (size_t)left :
		                                  sizeof(zero));

		if (w <= 0)
			return write_err(aw, "writing");
		left -= (uint64_t)w;
	}
	if (archive_write_finish_entry(aw->a) < ARCHIVE_WARN)
		return write_err(aw, "writing");
	if (ph_aout_undo(aw->out) != 0) {
		out_failed(aw);
		return write_err(aw, "writing");
	}
	return 0;
}

uint64_t
ph_aw_bytes(struct ph_aw *aw)
{
	(void)ph_aout_drain(aw->out, 0);   /* a failure is said by the commit */
	return ph_aout_bytes(aw->out);
}

const char *
ph_aw_temp(const struct ph_aw *aw)
{
	return aw->tmppath;
}

/* NAME.EXT, NAME-2.EXT, NAME-3.EXT... (the base name only). */
static void
alt_name(const struct ph_aw *aw, unsigned k, char *buf, size_t len)
{
	const char *base = strrchr(aw->final, '/');
	size_t bl;

	base = base ? base + 1 : aw->final;
	bl = strlen(base);
	if (k <= 1)
		snprintf(buf, len, "%.*s", (int)(len - 1), base);
	else
		snprintf(buf, len, "%.*s-%u%.*s", (int)(bl - aw->extlen < 200 ? bl - aw->extlen : 200),
		         base, k, (int)aw->extlen, base + bl - aw->extlen);
}

int
ph_aw_commit(struct ph_aw *aw, char *published, size_t len)
{
	char name[PH_NAME_MAX + 1];
	unsigned k;
	int rc = 0, r = 0;

	if (archive_write_close(aw->a) != ARCHIVE_OK) {
		rc = write_err(aw, "ending the archive");
		goto out;
	}
	if (aw->do_fsync && (r = ph_durable_sync(&aw->fd, 1)) != 0) {
		aw->err = -r;
		rc = write_err(aw, "fsync");
		goto out;
	}
	if ((r = ph_close(aw->fd)) != 0) {
		aw->fd = -1;
		aw->err = -r;
		rc = write_err(aw, "closing");
		goto out;
	}
	aw->fd = -1;
	for (k = 1; k < 1000; k++) {
		alt_name(aw, k, name, sizeof(name));
		if ((r = ph_rename_noreplace(aw->dfd, aw->tmp, aw->dfd, name)) != -EEXIST)
			break;
	}
	if (r != 0) {
		rc = ph_err(aw->ctx, ph_err_from_errno(-r), "%s: cannot put the archive in place: %s",
		            aw->final, strerror(-r));
		goto out;
	}
	aw->open = 0;
	if (aw->do_fsync && (r = ph_dir_sync(aw->dfd)) != 0) {
		/* The archive is complete under its name; only its name may not
		 * survive a power cut. Said, not hidden. */
		rc = ph_err(aw->ctx, PHSYNC_EIO, "%s: the archive's folder cannot be fsync'ed: %s",
		            aw->final, strerror(-r));
	}
	if (published != NULL) {
		const char *base = strrchr(aw->final, '/');

		snprintf(published, len, "%.*s%s", base ? (int)(base - aw->final + 1) : 0, aw->final,
		         name);
	}
out:
	ph_aw_abort(aw);
	return rc;
}

void
ph_aw_abort(struct ph_aw *aw)
{
	if (aw == NULL)
		return;
	if (aw->a != NULL)
		archive_write_free(aw->a);   /* closes too: harmless on a temp we remove */
	ph_aout_free(aw->out);          /* before the fd closes: it writes to it */
	if (aw->fd >= 0)
		ph_close(aw->fd);
	if (aw->open)
		ph_unlinkat(aw->dfd, aw->tmp, 0);
	if (aw->dfd >= 0)
		ph_close(aw->dfd);
	ph_utf8_ctype_free(aw->utf8);
	free(aw);
}
