/* SPDX-License-Identifier: ISC */
/* phsync_backup: scan the source, choose what the archive holds (full, or
 * what changed since the series' last archive), stream it into a tar
 * archive with a manifest, publish it, advance the series, prune. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "phsync/backup.h"
#include "pfs.h"
#include "platform.h"
#include "awrite.h"
#include "buf.h"
#include "ctx.h"
#include "fetch.h"
#include "local.h"
#include "login.h"
#include "manifest.h"
#include "psys.h"
#include "remote.h"
#include "spec.h"
#include "ssh.h"
#include "staterow.h"

#define STORE_MIN (64u << 10)  /* smaller media is compressed with the rest:
                                  switching frames costs more than it saves */

void
phsync_backup_options_init(struct phsync_backup_options *bo)
{
	memset(bo, 0, sizeof(*bo));
}

/* One path the series held at its last archive (loaded from the state). */
struct held {
	char *path;
	int type;
	uint64_t size;
	int64_t mtime;
};

struct bk {
	struct ph_brun *run;
	struct ph_aw *aw;
	struct ph_manifest mf;
	struct ph_fetch_item *items;
	uint8_t *isnew;             /* per item: 1 new to the series, 0 changed */
	size_t nitems;
	XXH3_state_t *h;
	uint64_t left;              /* bytes of the current file still to come */
	uint64_t cur_size;
	int64_t cur_mtime;
	uint32_t cur_nsec;
	struct held *held;
	size_t nheld, capheld;
};

/* Is this the start of a format that does not compress (photos, videos,
 * audio, archives)? By its first bytes; the name's ending when there are
 * none to look at. RAW photos (DNG: TIFF) and text do compress. */
static int
incompressible(const char *path, const uint8_t *p, size_t n)
{
	static const char *const ext[] = { ".jpg", ".jpeg", ".heic", ".heif", ".mp4", ".mov",
		".m4v", ".3gp", ".mkv", ".webm", ".webp", ".png", ".gif", ".mp3", ".m4a", ".aac",
		".ogg", ".opus", ".zip", ".gz", ".zst", ".xz", ".7z", ".apk", ".avif", NULL };
	const char *dot = strrchr(path, '.');
	size_t i;

	if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		return 1;                                   /* JPEG */
	if (n >= 8 && memcmp(p + 4, "ftyp", 4) == 0)
		return 1;                                   /* MP4, MOV, HEIC, 3GP, M4A, AVIF */
	if (n >= 8 && memcmp(p, "\x89PNG", 4) == 0)
		return 1;
	if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && (memcmp(p + 8, "WEBP", 4) == 0 ||
	                                             memcmp(p + 8, "AVI ", 4) == 0))
		return 1;
	if (n >= 4 && (memcmp(p, "GIF8", 4) == 0 || memcmp(p, "\x1a\x45\xdf\xa3", 4) == 0 ||
	               memcmp(p, "OggS", 4) == 0 || memcmp(p, "PK\x03\x04", 4) == 0 ||
	               memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0 || memcmp(p, "\xfd" "7zXZ", 4) == 0 ||
	               memcmp(p, "ID3", 3) == 0 || (p[0] == 0x1f && p[1] == 0x8b)))
		return 1;
	if (n > 0 || dot == NULL)
		return 0;
	for (i = 0; ext[i] != NULL; i++)
		if (strcasecmp(dot, ext[i]) == 0)
			return 1;
	return 0;
}

static int
bk_begin(void *arg, size_t i, uint64_t size, int64_t mtime, uint32_t nsec, const uint8_t *first,
         size_t n)
{
	struct bk *b = arg;
	const struct ph_entry *e = b->items[i].e;
	struct ph_aw_entry ae;

	memset(&ae, 0, sizeof(ae));
	ae.path = ph_entry_raw(e);
	ae.dir = e->type == PH_T_DIR;
	ae.size = size;
	ae.mtime = mtime;
	ae.nsec = nsec;
	ae.mode = ae.dir ? (e->mode & 0777) | 0700 : e->mode & 0666;
	if (!ae.dir)
		ph_aw_store(b->aw, size >= STORE_MIN && incompressible(ae.path, first, n));
	b->left = size;
	b->cur_size = size;
	b->cur_mtime = mtime;
	b->cur_nsec = nsec;
	XXH3_128bits_reset(b->h);
	return ph_aw_header(b->aw, &ae);
}

static int
bk_data(void *arg, size_t i, const uint8_t *p, size_t n)
{
	struct bk *b = arg;

	(void)i;
	if (n > b->left)
		return ph_err(b->run->ctx, PHSYNC_EPROTO, "%s: more bytes than listed",
		              ph_entry_raw(b->items[i].e));
	XXH3_128bits_update(b->h, p, n);
	b->left -= n;
	b->run->st.bytes_done += n;
	return ph_aw_data(b->aw, p, n);
}

static int
bk_end(void *arg, size_t i)
{
	struct bk *b = arg;
	const struct ph_entry *e = b->items[i].e;
	struct ph_mf_file f;
	XXH128_canonical_t c;
	int rc;

	if (b->left != 0)
		return ph_err(b->run->ctx, PHSYNC_EPROTO, "%s: fewer bytes than listed", ph_entry_raw(e));
	if ((rc = ph_aw_end(b->aw)) != 0)
		return rc;
	memset(&f, 0, sizeof(f));
	f.path = (char *)ph_entry_raw(e);
	f.dir = e->type == PH_T_DIR;
	f.size = b->cur_size;
	f.mtime = b->cur_mtime;
	f.nsec = b->cur_nsec;
	f.mode = f.dir ? (e->mode & 0777) | 0700 : e->mode & 0666;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(b->h));
	memcpy(f.hash, c.digest, 16);
	if ((rc = ph_mf_add(&b->mf, &f)) != 0)
		return rc;
	if (!f.dir) {
		b->run->st.files_done++;
		b->run->st.bytes_committed += f.size;
		ph_emit(&b->run->ev, PHSYNC_EV_FILE_DONE, f.path, b->isnew[i] ? "new" : "update",
		             f.size, 0, NULL);
	}
	return 0;
}

static void
bk_failed(void *arg, size_t i, int err, const char *msg)
{
	struct bk *b = arg;

	b->run->st.files_failed++;
	ph_emit(&b->run->ev, PHSYNC_EV_FILE_FAILED, ph_entry_raw(b->items[i].e), NULL,
	             b->items[i].e->size, err, msg);
}

static int
bk_mark(void *arg)
{
	struct bk *b = arg;

	return ph_aw_mark(b->aw);
}

/* The file begun after the mark failed: out of the archive and the stats. */
static int
bk_undo(void *arg, size_t i)
{
	struct bk *b = arg;

	(void)i;
	b->run->st.bytes_done -= b->cur_size - b->left;
	return ph_aw_undo(b->aw, b->left);
}

static int
held_row(void *arg, const char *path, const struct ph_backup_file *f)
{
	struct bk *b = arg;

	if (!ph_staterow_path_ok(path, strlen(path))) {
		/* never a deletion line; the next full archive drops the row */
		ph_emit(&b->run->ev, PHSYNC_EV_WARNING, path, NULL, 0, PHSYNC_EUNSAFE, "the series' "
		             "state holds a name phsync never writes: ignored");
		return 0;
	}
	if (b->nheld == b->capheld && ph_grow(&b->held, &b->capheld, sizeof(*b->held), 256) != 0)
		return PHSYNC_ENOMEM;
	if ((b->held[b->nheld].path = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	b->held[b->nheld].type = f->type;
	b->held[b->nheld].size = f->size;
	b->held[b->nheld].mtime = f->mtime;
	b->nheld++;
	return 0;
}

/* Expands %Y %m %d %H %M and %% in the template's last part. */
static int
expand_name(phsync_ctx *ctx, const char *tmpl, time_t now, char *out, size_t len)
{
	struct tm tm;
	size_t o = 0;
	const char *p;

	if (ph_localtime(now, &tm) != 0)
		memset(&tm, 0, sizeof(tm));
	for (p = tmpl; *p && o + 8 < len; p++) {
		int v = -1, w = 2;

		if (*p != '%') {
			out[o++] = *p;
			continue;
		}
		switch (*++p) {
		case 'Y': v = tm.tm_year + 1900; w = 4; break;
		case 'm': v = tm.tm_mon + 1; break;
		case 'd': v = tm.tm_mday; break;
		case 'H': v = tm.tm_hour; break;
		case 'M': v = tm.tm_min; break;
		case '%': out[o++] = '%'; continue;
		default:
			return ph_err(ctx, PHSYNC_EINVAL, "%s: only %%Y %%m %%d %%H %%M and %%%% may be "
			              "used in an archive name", tmpl);
		}
		o += (size_t)snprintf(out + o, len - o, "%0*d", w, v);
	}
	if (*p != '\0')
		return ph_err(ctx, PHSYNC_EINVAL, "%s: name too long", tmpl);
	out[o] = '\0';
	return 0;
}

/* The series' key in the state: who and what is backed up, and the
 * archive template made absolute (its folder must exist). */
static int
open_series(struct ph_brun *run, struct ph_ssh *ssh, const char *src_abs, const char *tmpl,
            char *absdir, size_t dlen)
{
	struct ph_state_key key;
	char user[256] = "", host[256] = "", dir[PATH_MAX], lpath[PATH_MAX + 300];
	char hk[PH_SSH_HOST_KEY_MAX];
	const char *base = strrchr(tmpl, '/');
	int e;

	snprintf(dir, sizeof(dir), "%.*s", base ? (int)(base - tmpl) : 1, base ? tmpl : ".");
	if (base != NULL && dir[0] == '\0')
		snprintf(dir, sizeof(dir), "/");
	base = base ? base + 1 : tmpl;
	if ((e = ph_realpath(dir, absdir, dlen)) != 0)
		return ph_err(run->ctx, ph_err_from_errno(-e), "%s: the archive's folder: %s", dir,
		              strerror(-e));
	key.port = 0;
	key.hostkey = NULL;   /* a local source: keyed by its folder alone */
	if (ssh != NULL)
		ph_ssh_identity(ssh, user, sizeof(user), host, sizeof(host), &key.port);
	if (ssh != NULL && ph_ssh_host_key(ssh, hk, sizeof(hk)) == 0)
		key.hostkey = hk;     /* a series is the phone's, wherever it is */
	snprintf(lpath, sizeof(lpath), "backup:%s/%s", strcmp(absdir, "/") ? absdir : "", base);
	key.user = user;
	key.host = host;
	key.single = NULL;
	key.rpath = src_abs;
	key.lpath = lpath;
	return ph_state_open(run->ctx, run->o->state_dir, &key,
	                     run->o->reset_state ? PH_STATE_RESET : 0, &run->state);
}

/* What the archive holds: every file and folder (full), or what is new or
 * changed since the series' last archive; the series' paths gone from
 * the source are recorded as deleted. Both lists are in the trees' order. */
static int
choose(struct bk *b, int full)
{
	struct ph_brun *run = b->run;
	size_t i, k = 0;
	int rc;

	if ((b->items = calloc(run->src.n ? run->src.n : 1, sizeof(*b->items))) == NULL ||
	    (b->isnew = calloc(run->src.n ? run->src.n : 1, 1)) == NULL)
		return PHSYNC_ENOMEM;
	for (i = 0; i < run->src.n; i++) {
		const struct ph_entry *e = &run->src.v[i];
		const struct held *h = NULL;
		int c = 1;

		while (k < b->nheld && (c = ph_path_cmp(b->held[k].path, e->path)) < 0) {
			if (!full && (rc = ph_mf_add_del(&b->mf, b->held[k].path)) != 0)
				return rc;
			k++;
		}
		if (k < b->nheld && c == 0)
			h = &b->held[k++];
		if (e->type == PH_T_LINK || e->type == PH_T_OTHER) {
			run->st.files_skipped++;
			ph_emit(&run->ev, PHSYNC_EV_SKIPPED, e->path, e->type == PH_T_LINK ? "symlink" :
			             "special", 0, 0, e->type == PH_T_LINK ?
			             "symlink (never followed nor archived)" :
			             "not a regular file or folder");
			if (h != NULL && !full && (rc = ph_mf_add_del(&b->mf, h->path)) != 0)
				return rc;
			continue;
		}
		if (strcmp(e->path, PH_MANIFEST_NAME) == 0) {
			run->st.files_skipped++;
			ph_emit(&run->ev, PHSYNC_EV_SKIPPED, e->path, "reserved", 0, 0,
			             "this name holds the archive's manifest; not archived");
			continue;
		}
		if (e->type == PH_T_FILE) {
			run->st.files_total++;
			if (e->nosize) {
				run->st.files_failed++;
				ph_emit(&run->ev, PHSYNC_EV_FILE_FAILED, e->path, NULL, 0, PHSYNC_EREMOTE,
				             "the server does not tell its size; not archived");
				continue;
			}
		}
		/* A folder goes in when new or its time moved (its files'
		 * changes are what move it); a file when new or changed. */
		if (!full && h != NULL && h->type == e->type && h->mtime == e->mtime &&
		    (e->type == PH_T_DIR || h->size == e->size))
			continue;
		b->isnew[b->nitems] = h == NULL || h->type != e->type;
		b->items[b->nitems++].e = e;
		if (e->type == PH_T_FILE) {
			run->st.files_todo++;
			run->st.bytes_todo += e->size;
		}
	}
	for (; k < b->nheld && !full; k++)
		if ((rc = ph_mf_add_del(&b->mf, b->held[k].path)) != 0)
			return rc;
	return 0;
}

static int
write_manifest(struct bk *b, int head)
{
	struct ph_aw_entry ae;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if ((rc = ph_mf_format(&b->mf, head, &buf, &len)) != 0)
		return rc;
	memset(&ae, 0, sizeof(ae));
	ae.path = PH_MANIFEST_NAME;
	ae.size = len;
	ae.mtime = b->mf.created;
	ae.mode = 0644;
	ph_aw_store(b->aw, 0);
	if ((rc = ph_aw_header(b->aw, &ae)) == 0 && (rc = ph_aw_data(b->aw, buf, len)) == 0)
		rc = ph_aw_end(b->aw);
	free(buf);
	return rc;
}

/* Advances the series: what it holds now, and the archive, in one
 * transaction (after the archive is in place: a kill before leaves the
 * series where it was). */
static int
record(struct bk *b, const char *published, uint64_t size)
{
	struct ph_state *st = b->run->state;
	struct ph_backup_rec rec;
	size_t i;
	int rc;

	if ((rc = ph_state_backup_begin(st, b->mf.full)) != 0)
		return rc;
	for (i = 0; i < b->mf.n && rc == 0; i++) {
		const struct ph_mf_file *f = &b->mf.v[i];
		struct ph_backup_file bf;

		bf.type = f->dir ? PH_T_DIR : PH_T_FILE;
		bf.size = f->size;
		/* The listing's time (whole seconds over SFTP) is what the next
		 * scan compares against. */
		bf.mtime = f->mtime;
		bf.nsec = f->nsec;
		bf.mode = f->mode;
		bf.hash = f->dir ? NULL : f->hash;
		bf.seq = b->mf.seq;
		rc = ph_state_backup_put(st, f->path, &bf);
	}
	for (i = 0; i < b->mf.ndel && rc == 0; i++)
		rc = ph_state_backup_forget(st, b->mf.del[i]);
	if (rc != 0) {
		ph_state_backup_abort(st);
		return rc;
	}
	memset(&rec, 0, sizeof(rec));
	rec.seq = b->mf.seq;
	rec.name = (char *)published;
	rec.full = b->mf.full;
	rec.base = b->mf.base;
	rec.created = b->mf.created;
	rec.files = b->run->st.files_done;
	rec.bytes = size;
	rec.deleted = b->mf.ndel;
	return ph_state_backup_end(st, &rec);
}

/* --keep N: the oldest chains (a full and the incrementals on it) beyond
 * the newest N are removed. The newest chain, which the next incremental
 * builds on, is never one of them. */
static int
prune(struct ph_brun *run, unsigned keep, const char *absdir)
{
	struct ph_backup_rec *v;
	size_t n, i, chains = 0, drop;
	int rc, e;

	if (keep == 0)
		return 0;
	if ((rc = ph_state_backup_list(run->state, &v, &n)) != 0)
		return rc;
	for (i = 0; i < n; i++)
		if (!v[i].pruned && v[i].full)
			chains++;
	drop = chains > keep ? chains - keep : 0;
	for (i = 0; i < n && rc == 0; i++) {
		if (v[i].pruned)
			continue;
		if (v[i].full) {
			if (drop == 0)
				break;
			drop--;
		}
		if (!ph_staterow_archive_ok(v[i].name, absdir)) {
			/* only ever an archive in the series' folder */
			ph_emit(&run->ev, PHSYNC_EV_WARNING, v[i].name, NULL, 0, PHSYNC_EUNSAFE,
			             "--keep: the series' state names an archive outside its "
			             "folder: not removed");
			continue;
		}
		if ((e = ph_unlinkat(PH_AT_CWD, v[i].name, 0)) != 0 && e != -ENOENT) {
			ph_emit(&run->ev, PHSYNC_EV_WARNING, v[i].name, NULL, 0, PHSYNC_EIO,
			             "--keep: cannot remove this old archive");
			continue;
		}
		rc = ph_state_backup_pruned(run->state, v[i].seq);
		ph_emit(&run->ev, PHSYNC_EV_DELETED, v[i].name, "pruned", v[i].bytes, 0, NULL);
	}
	ph_state_backup_recs_free(v, n);
	return rc;
}

static void
lscan_event(const struct phsync_event *ev, void *arg)
{
	struct ph_brun *run = arg;

	ph_emit(&run->ev, ev->type, ev->path, ev->action, ev->size, ev->err, ev->message);
}

/* Lists a remote source's tree into run->src (its temp files, a sync's,
 * are neither listed nor touched). */
static int
remote_scan(struct ph_brun *run, struct ph_ssh *ssh)
{
	struct ph_login_more m = { run->ctx, run->o, ssh, run->sftp, &run->ev };
	struct ph_rscan in;

	memset(&in, 0, sizeof(in));
	in.ctx = run->ctx;
	in.sftp = run->sftp;
	in.rroot = run->rroot;
	in.filter = &run->filter;
	in.ev = &run->ev;
	in.dry_run = run->o->dry_run;
	in.more = ph_login_more;
	in.end_more = ph_login_end_more;
	in.more_arg = &m;
	return ph_remote_scan(&in, &run->src);
}

/* The archive's file name: the template's last part, which must name a
 * tar kind, with its time fields expanded. */
static int
archive_name(phsync_ctx *ctx, const char *tmpl, time_t now, char *name, size_t len)
{
	const char *base = strrchr(tmpl, '/');
	size_t el;

	base = base ? base + 1 : tmpl;
	if (ph_aw_kind_of(base, &el) == 0)
		return ph_err(ctx, PHSYNC_EINVAL, "%s: the archive's name must end in .tar, "
		              ".tar.zst, .tar.gz or .tar.xz", tmpl);
	return expand_name(ctx, base, now, name, len);
}

/* Logs in to a remote source, checks its root is a folder and lists it
 * into run->src; srcabs gets the remote root. */
static int
scan_remote_source(struct ph_brun *run, const char *src, struct ph_ssh **ssh, char *srcabs,
                   size_t slen)
{
	phsync_ctx *ctx = run->ctx;
	struct ph_sftp_attrs ra;
	char *user = NULL, *host = NULL, *rpath = NULL, *rp;
	int rc;

	if ((rc = ph_spec_remote(ctx, src, &user, &host, &rpath, &run->rroot)) != 0 ||
	    (rc = ph_login_run(ctx, run->o, user, host, run->rroot, &run->ev, ssh,
	                       &run->sftp)) != 0)
		goto out;
	rp = ph_rpath_join(run->rroot, "");
	rc = rp ? ph_sftp_stat_sync(run->sftp, PH_STAT, rp, &ra) : PHSYNC_ENOMEM;
	free(rp);
	if (rc != 0) {
		rc = ph_err(ctx, rc, "%s:%s: %s", host, rpath, rc == PHSYNC_ENOENT ?
		            "no such folder on the server" : phsync_strerror(rc));
		goto out;
	}
	if ((ra.flags & PH_ATTR_PERMISSIONS) && (ra.perm & 0170000) != 0040000) {
		rc = ph_err(ctx, PHSYNC_ENOTDIR, "%s:%s is not a folder", host, rpath);
		goto out;
	}
	snprintf(srcabs, slen, "%s", run->rroot);
	rc = remote_scan(run, *ssh);
out:
	free(user);
	free(host);
	free(rpath);
	return rc;
}

/* Opens a local source beneath its root and lists it into run->src;
 * srcabs gets its real path. */
static int
scan_local_source(struct ph_brun *run, const char *src, char *srcabs)
{
	uint64_t failed = 0;
	int rc;

	if ((rc = ph_local_open_root(run->ctx, src, PH_ROOT_OPEN, &run->lroot)) != 0)
		return rc;
	if ((rc = ph_realpath(src, srcabs, PATH_MAX)) != 0)
		return ph_err(run->ctx, ph_err_from_errno(-rc), "%s: %s", src, strerror(-rc));
	if ((rc = ph_local_scan(run->ctx, run->lroot, &run->filter, 0, 1, &run->src, NULL,
	                        NULL, lscan_event, run, &failed, NULL)) != 0)
		return rc;
	run->st.files_failed += failed;
	return 0;
}

/* The source's tree, sorted, in run->src: from the server when src names
 * one, else from this machine. */
static int
scan_source(struct ph_brun *run, const char *src, struct ph_ssh **ssh, char *srcabs,
            size_t slen)
{
	char *user = NULL, *host = NULL, *rpath = NULL;
	int remote, rc;

	remote = phsync_parse_remote(src, &user, &host, &rpath) == 0;
	free(user);
	free(host);
	free(rpath);
	rc = remote ? scan_remote_source(run, src, ssh, srcabs, slen) :
	              scan_local_source(run, src, srcabs);
	if (rc == 0)
		ph_tree_sort(&run->src);
	return rc;
}

/* The series (locked for this run: two backups of one series never
 * interleave) and what it held: the manifest's head (full or incremental
 * on the last archive, its number, time and source) and, for an
 * incremental, the paths the series holds. */
static int
begin_series(struct bk *b, struct ph_ssh *ssh, const char *src, const char *srcabs,
             const char *tmpl, int mode, time_t now, char *absdir, size_t dlen)
{
	struct ph_brun *run = b->run;
	struct ph_backup_rec *recs = NULL;
	size_t nrecs = 0;
	int rc, full;

	if ((rc = open_series(run, ssh, srcabs, tmpl, absdir, dlen)) != 0 ||
	    (rc = ph_state_series_id(run->state, b->mf.series)) != 0 ||
	    (rc = ph_state_backup_list(run->state, &recs, &nrecs)) != 0)
		goto out;
	full = mode != PHSYNC_BACKUP_INCREMENTAL || nrecs == 0;
	if (!full && ph_path_access(recs[nrecs - 1].name, 0) != 0) {
		ph_emit(&run->ev, PHSYNC_EV_WARNING, recs[nrecs - 1].name, NULL, 0, PHSYNC_ENOENT,
		             "the series' last archive is gone: this one is a full backup");
		full = 1;
	}
	b->mf.full = full;
	b->mf.seq = nrecs ? recs[nrecs - 1].seq + 1 : 1;
	b->mf.base = full ? 0 : recs[nrecs - 1].seq;
	b->mf.created = (int64_t)now;
	if ((b->mf.source = strdup(src)) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	if (!full)
		rc = ph_state_backup_each(run->state, held_row, b);
out:
	ph_state_backup_recs_free(recs, nrecs);
	return rc;
}

/* Streams the chosen items into absdir/name between the manifest's head
 * and its closing copy, publishes the archive (its name into pub) and
 * advances the series. Interrupted, no archive is published. */
static int
write_archive(struct bk *b, const char *absdir, const char *name, int level, char *pub,
              size_t plen)
{
	struct ph_brun *run = b->run;
	struct ph_fetch_ops ops = { bk_begin, bk_data, bk_end, bk_failed, bk_mark, bk_undo, b, 0 };
	char final[PATH_MAX * 2];
	struct ph_aw *aw;
	uint64_t size;
	size_t i;
	int rc;

	snprintf(final, sizeof(final), "%s/%s", strcmp(absdir, "/") ? absdir : "", name);
	if ((rc = ph_aw_open(run->ctx, final, level, run->o->fsync, &b->aw)) != 0)
		return rc;
	ops.undo_ok = ph_aw_can_undo(b->aw);
	if ((rc = write_manifest(b, 1)) != 0 ||
	    (rc = ph_fetch_run(run, b->items, b->nitems, &ops)) != 0)
		return rc;
	for (i = 0; i < b->mf.ndel; i++) {
		run->st.files_deleted++;
		ph_emit(&run->ev, PHSYNC_EV_DELETED, b->mf.del[i], "recorded as deleted", 0, 0, NULL);
	}
	if (run->ctx->interrupted)
		return PHSYNC_EINTR;
	if ((rc = write_manifest(b, 0)) != 0)
		return rc;
	size = ph_aw_bytes(b->aw);
	aw = b->aw;
	b->aw = NULL;
	if ((rc = ph_aw_commit(aw, pub, plen)) != 0)
		return rc;
	return record(b, pub, size);
}

/* Ends the run: an unfinished archive removed, an interruption said as
 * one, the summary event, the stats and the series' state closed. Returns
 * the run's result. */
static int
finish(struct bk *b, int rc, const char *pub, struct phsync_stats *stats)
{
	struct ph_brun *run = b->run;
	phsync_ctx *ctx = run->ctx;

	ph_aw_abort(b->aw);
	b->aw = NULL;
	if (rc != 0 && rc != PHSYNC_EINTR && ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == PHSYNC_EINTR)
		ph_err(ctx, rc, "interrupted; no archive was made (run again)");
	ph_emit_elapsed(&run->ev);
	if (stats != NULL)
		*stats = run->st;
	ph_emit(&run->ev, PHSYNC_EV_SUMMARY, pub[0] ? pub : NULL, NULL, 0, rc, rc ? ctx->err : NULL);
	ph_state_close(run->state, rc, &run->st);
	return rc;
}

static void
bk_free(struct bk *b)
{
	size_t i;

	for (i = 0; i < b->nheld; i++)
		free(b->held[i].path);
	free(b->held);
	free(b->items);
	free(b->isnew);
	ph_mf_free(&b->mf);
	XXH3_freeState(b->h);
}

int
phsync_backup(phsync_ctx *ctx, const char *src, const char *tmpl,
              const struct phsync_backup_options *bo, struct phsync_stats *stats,
              char *published, size_t publen)
{
	struct phsync_options defaults;
	const struct phsync_options *opts;
	struct ph_brun run;
	struct bk b;
	struct ph_ssh *ssh = NULL;
	char srcabs[PATH_MAX + 520], absdir[PATH_MAX], name[PATH_MAX], pub[PATH_MAX * 2] = "";
	const char **pat = NULL;
	uint8_t *incl = NULL;
	int rc;
	time_t now = time(NULL);

	ctx->err[0] = '\0';
	ctx->interrupted = 0;
	opts = bo->sync;
	if (opts == NULL) {
		phsync_options_init(&defaults);
		opts = &defaults;
	}
	ph_brun_init(&run, ctx, opts);
	memset(&b, 0, sizeof(b));
	b.run = &run;
	if ((b.h = XXH3_createState()) == NULL)
		return PHSYNC_ENOMEM;
	if ((rc = archive_name(ctx, tmpl, now, name, sizeof(name))) != 0 ||
	    (rc = ph_filter_options(&run.filter, opts, &pat, &incl)) != 0 ||
	    (rc = scan_source(&run, src, &ssh, srcabs, sizeof(srcabs))) != 0 ||
	    (rc = begin_series(&b, ssh, src, srcabs, tmpl, bo->mode, now, absdir,
	                       sizeof(absdir))) != 0 ||
	    (rc = choose(&b, b.mf.full)) != 0 ||
	    (rc = write_archive(&b, absdir, name, bo->level, pub, sizeof(pub))) != 0)
		goto out;
	if (published != NULL)
		snprintf(published, publen, "%s", pub);
	rc = prune(&run, bo->keep, absdir);
	if (rc == 0 && run.st.files_failed > 0)
		rc = ph_err(ctx, PHSYNC_EPARTIAL, "%llu file(s) could not be read and are not in "
		            "%s; the rest is", (unsigned long long)run.st.files_failed, pub);
out:
	rc = finish(&b, rc, pub, stats);
	bk_free(&b);
	ph_tree_free(&run.src);
	ph_sftp_free(run.sftp);
	ph_ssh_free(ssh);
	if (run.lroot >= 0)
		close(run.lroot);
	free(run.rroot);
	free(pat);
	free(incl);
	return rc;
}
