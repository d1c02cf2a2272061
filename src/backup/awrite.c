/* SPDX-License-Identifier: ISC */
/* The archive writer: libarchive's pax writer into a temp file, .tar.zst
 * through our own zstd frames so media is stored, not recompressed. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "awrite.h"
#include "ctx.h"
#include "platform.h"
#include "tempname.h"

#define RAW_BLOCK (128u << 10)   /* zstd's largest block */
#define ZOUT (256u << 10)
#define ZJOB (2u << 20)          /* zstd worker job size: bounds its memory */
#define MAX_WORKERS 8

struct ph_aw {
	phsync_ctx *ctx;
	struct archive *a;
	int kind, fd, dfd, do_fsync, err, open;
	locale_t utf8;              /* C.UTF-8 for libarchive's name conversions, or 0 */
	size_t extlen;
	char final[PATH_MAX];       /* as given */
	char tmp[NAME_MAX + 1];     /* in dfd */
	char tmppath[PATH_MAX + NAME_MAX + 2];
	uint64_t bytes;
	/* .tar.zst */
	ZSTD_CCtx *cc;
	int store;                  /* stored bytes go in raw frames */
	int in_cframe, in_rframe;
	uint8_t *zout;
	uint8_t *raw;               /* the raw block being filled */
	size_t rawn;
	XXH64_state_t *rawsum;
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

/* Writes all n bytes to the file (a short write is retried; ENOSPC and
 * EIO are kept for the message). */
static int
fd_write(struct ph_aw *aw, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(aw->fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			aw->err = w < 0 ? errno : EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
		aw->bytes += (uint64_t)w;
	}
	return 0;
}

static int
zfail(struct ph_aw *aw, size_t r)
{
	aw->err = EIO;
	ph_err(aw->ctx, PHSYNC_EIO, "zstd: %s", ZSTD_getErrorName(r));
	return -1;
}

/* Ends the compressed frame in progress, if any. */
static int
zend_cframe(struct ph_aw *aw)
{
	ZSTD_inBuffer in = { NULL, 0, 0 };
	size_t r;

	if (!aw->in_cframe)
		return 0;
	do {
		ZSTD_outBuffer out = { aw->zout, ZOUT, 0 };

		r = ZSTD_compressStream2(aw->cc, &out, &in, ZSTD_e_end);
		if (ZSTD_isError(r))
			return zfail(aw, r);
		if (out.pos > 0 && fd_write(aw, aw->zout, out.pos) != 0)
			return -1;
	} while (r != 0);
	aw->in_cframe = 0;
	return 0;
}

static void
le24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
}

/* A raw block: 3-byte header (last flag, type 0 = raw, size), the bytes. */
static int
raw_block(struct ph_aw *aw, int last)
{
	uint8_t h[3];

	le24(h, (uint32_t)(aw->rawn << 3) | (last ? 1u : 0u));
	if (fd_write(aw, h, 3) != 0 || (aw->rawn > 0 && fd_write(aw, aw->raw, aw->rawn) != 0))
		return -1;
	aw->rawn = 0;
	return 0;
}

/* Ends the raw frame in progress: its last block, then the content
 * checksum (low 32 bits of XXH64, as zstd's own frames carry). */
static int
zend_rframe(struct ph_aw *aw)
{
	uint32_t sum;
	uint8_t c[4];

	if (!aw->in_rframe)
		return 0;
	if (raw_block(aw, 1) != 0)
		return -1;
	sum = (uint32_t)XXH64_digest(aw->rawsum);
	c[0] = (uint8_t)sum;
	c[1] = (uint8_t)(sum >> 8);
	c[2] = (uint8_t)(sum >> 16);
	c[3] = (uint8_t)(sum >> 24);
	aw->in_rframe = 0;
	return fd_write(aw, c, 4);
}

/* Stored bytes: zstd frames of raw blocks (RFC 8878: magic, a frame
 * header with a 128 KiB window and the checksum flag, blocks of at most
 * 128 KiB, checksum). Any zstd decoder reads them; no CPU is spent on
 * trying to compress a JPEG or an MP4. */
static int
zraw(struct ph_aw *aw, const uint8_t *p, size_t n)
{
	static const uint8_t hdr[6] = { 0x28, 0xb5, 0x2f, 0xfd, 0x04, (17 - 10) << 3 };

	if (!aw->in_rframe) {
		if (fd_write(aw, hdr, sizeof(hdr)) != 0)
			return -1;
		XXH64_reset(aw->rawsum, 0);
		aw->in_rframe = 1;
	}
	XXH64_update(aw->rawsum, p, n);
	while (n > 0) {
		size_t k = RAW_BLOCK - aw->rawn < n ? RAW_BLOCK - aw->rawn : n;

		memcpy(aw->raw + aw->rawn, p, k);
		aw->rawn += k;
		p += k;
		n -= k;
		if (aw->rawn == RAW_BLOCK && raw_block(aw, 0) != 0)
			return -1;
	}
	return 0;
}

static int
zcompress(struct ph_aw *aw, const void *p, size_t n)
{
	ZSTD_inBuffer in = { p, n, 0 };

	aw->in_cframe = 1;
	while (in.pos < in.size) {
		ZSTD_outBuffer out = { aw->zout, ZOUT, 0 };
		size_t r = ZSTD_compressStream2(aw->cc, &out, &in, ZSTD_e_continue);

		if (ZSTD_isError(r))
			return zfail(aw, r);
		if (out.pos > 0 && fd_write(aw, aw->zout, out.pos) != 0)
			return -1;
	}
	return 0;
}

static la_ssize_t
write_cb(struct archive *a, void *arg, const void *p, size_t n)
{
	struct ph_aw *aw = arg;
	int rc;

	if (aw->kind != PH_AW_ZSTD)
		rc = fd_write(aw, p, n);
	else if (aw->store)
		rc = zend_cframe(aw) == 0 ? zraw(aw, p, n) : -1;
	else
		rc = zend_rframe(aw) == 0 ? zcompress(aw, p, n) : -1;
	if (rc != 0) {
		archive_set_error(a, aw->err ? aw->err : EIO, "%s", strerror(aw->err ? aw->err : EIO));
		return -1;
	}
	return (la_ssize_t)n;
}

static int
close_cb(struct archive *a, void *arg)
{
	struct ph_aw *aw = arg;

	if (aw->kind == PH_AW_ZSTD && (zend_cframe(aw) != 0 || zend_rframe(aw) != 0)) {
		archive_set_error(a, aw->err ? aw->err : EIO, "%s", strerror(aw->err ? aw->err : EIO));
		return ARCHIVE_FATAL;
	}
	return ARCHIVE_OK;
}

/* The message for a failed write: the disk's own words first. */
static int
write_err(struct ph_aw *aw, const char *what)
{
	int e = aw->err ? aw->err : archive_errno(aw->a);

	if (e == ENOSPC || e == EDQUOT)
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
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int64_t now = (int64_t)time(NULL);

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ph_temp_owner_self(&self);
	while ((de = readdir(d)) != NULL) {
		struct ph_temp_info ti;
		size_t nl = strlen(de->d_name), el = strlen(ext);

		if (!ph_temp_parse(de->d_name, nl, &ti) || ti.kind != PH_TEMP_NEW ||
		    !ph_temp_stale(&ti, &self, now))
			continue;
		if (ti.final_len < el || memcmp(de->d_name + ti.final_off + ti.final_len - el, ext,
		                                el) != 0)
			continue;
		unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
}

static int
setup_zstd(struct ph_aw *aw, int level)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int workers = ncpu < 1 ? 1 : ncpu > MAX_WORKERS ? MAX_WORKERS : (int)ncpu;

	aw->cc = ZSTD_createCCtx();
	aw->zout = malloc(ZOUT);
	aw->raw = malloc(RAW_BLOCK);
	aw->rawsum = XXH64_createState();
	if (aw->cc == NULL || aw->zout == NULL || aw->raw == NULL || aw->rawsum == NULL)
		return PHSYNC_ENOMEM;
	ZSTD_CCtx_setParameter(aw->cc, ZSTD_c_compressionLevel, level ? level : 3);
	ZSTD_CCtx_setParameter(aw->cc, ZSTD_c_checksumFlag, 1);
	/* Several threads where libzstd has them (Debian's has); without, it
	 * refuses the parameter and compresses on this one. */
	if (!ZSTD_isError(ZSTD_CCtx_setParameter(aw->cc, ZSTD_c_nbWorkers, workers)))
		ZSTD_CCtx_setParameter(aw->cc, ZSTD_c_jobSize, ZJOB);
	return 0;
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
	aw->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
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
	if ((aw->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = ph_err(ctx, ph_err_from_errno(errno), "%s: the archive's folder: %s", dir,
		            strerror(errno));
		goto fail;
	}
	clean_stale(aw->dfd, final + strlen(final) - aw->extlen);
	ph_temp_owner_self(&self);
	for (tries = 0; aw->fd < 0 && tries < 16; tries++) {
		if (ph_temp_name(aw->tmp, sizeof(aw->tmp), base, PH_TEMP_NEW, &self) != 0) {
			rc = ph_err(ctx, PHSYNC_EINVAL, "%s: no archive name", final);
			goto fail;
		}
		aw->fd = openat(aw->dfd, aw->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                0600);
		if (aw->fd < 0 && errno != EEXIST) {
			rc = ph_err(ctx, ph_err_from_errno(errno), "%s/%s: %s", dir, aw->tmp,
			            strerror(errno));
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
	if (aw->kind == PH_AW_ZSTD) {
		if ((rc = setup_zstd(aw, level)) != 0)
			goto fail;
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
			long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

			snprintf(opt, sizeof(opt), "%ld", ncpu < 1 ? 1 : ncpu);
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
	locale_t old;
	int r;

	if (ae == NULL)
		return PHSYNC_ENOMEM;
	archive_entry_copy_pathname(ae, e->path);
	archive_entry_set_filetype(ae, e->dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(ae, e->mode & 07777);
	archive_entry_set_size(ae, e->dir ? 0 : (la_int64_t)e->size);
	archive_entry_set_mtime(ae, (time_t)e->mtime, e->nsec);
	old = aw->utf8 != (locale_t)0 ? uselocale(aw->utf8) : (locale_t)0;
	r = archive_write_header(aw->a, ae);
	if (old != (locale_t)0)
		uselocale(old);
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

uint64_t
ph_aw_bytes(const struct ph_aw *aw)
{
	return aw->bytes;
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
	char name[NAME_MAX + 1];
	unsigned k;
	int rc = 0, r = 0;

	if (archive_write_close(aw->a) != ARCHIVE_OK) {
		rc = write_err(aw, "ending the archive");
		goto out;
	}
	if (aw->do_fsync && fsync(aw->fd) != 0) {
		aw->err = errno;
		rc = write_err(aw, "fsync");
		goto out;
	}
	if (close(aw->fd) != 0) {
		aw->fd = -1;
		aw->err = errno;
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
	if (aw->do_fsync && fsync(aw->dfd) != 0) {
		/* The archive is complete under its name; only its name may not
		 * survive a power cut. Said, not hidden. */
		rc = ph_err(aw->ctx, PHSYNC_EIO, "%s: the archive's folder cannot be fsync'ed: %s",
		            aw->final, strerror(errno));
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
	if (aw->fd >= 0)
		close(aw->fd);
	if (aw->open)
		unlinkat(aw->dfd, aw->tmp, 0);
	if (aw->dfd >= 0)
		close(aw->dfd);
	ZSTD_freeCCtx(aw->cc);
	free(aw->zout);
	free(aw->raw);
	if (aw->rawsum != NULL)
		XXH64_freeState(aw->rawsum);
	if (aw->utf8 != (locale_t)0)
		freelocale(aw->utf8);
	free(aw);
}
