/* SPDX-License-Identifier: ISC */
/* Pipelined listing of the remote tree: many folders are read at once so
 * a tree of thousands of folders does not pay one round trip each; the
 * entries go to the tree in its order as they come (rorder.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "ctx.h"
#include "remote.h"
#include "rorder.h"
#include "str.h"
#include "tempname.h"

#define MAX_LISTERS 32          /* folders open at once, a channel */
/* A listing that has come upon this many folders asks for the server's
 * other channels (ph_rscan.more): a tree of a few folders never pays
 * their opening. */
#define MORE_AFTER 64
#define MAX_QUEUE_PATHS (1u << 22)   /* entries waiting for their LSTAT */
/* A server whose tree loops (a folder listing itself, a bind mount of a
 * parent) would be listed forever: these caps end it with a clear error. */
#define MAX_DEPTH 256
#define MAX_ENTRIES 20000000u
#define MAX_PATH 4095
#define MAX_PATH_BYTES (2ull << 30)
#define MAX_STATS 1024     /* LSTATs in flight */

struct rscan;

struct lister {
	struct rscan *rs;
	struct ph_rfolder *f; /* held while listed */
	size_t ch;            /* its channel: rs->sv[ch] */
	struct ph_sftp_handle h;
};

/* An entry whose type, size or time the listing did not give: asked
 * with LSTAT, its folder held meanwhile. */
struct pending_stat {
	struct rscan *rs;
	char *rel;
	struct ph_rfolder *f;
};

/* An aside copy of a replaced file a dead run left (see tempname.h):
 * resolved once the whole tree is known. */
struct aside {
	char *rel;          /* the aside copy */
	char *final;        /* the file it stands for */
	struct ph_sftp_attrs a;
};

struct rscan {
	const struct ph_rscan *in;
	struct ph_sftp *sv[1 + PH_RSCAN_MORE]; /* in->sftp, then any more */
	size_t nsv;
	size_t nlist[1 + PH_RSCAN_MORE]; /* folders open on each (a server's
	                                    handles: MAX_LISTERS at most) */
	int asked;         /* in->more asked */
	size_t nlisted;    /* folders whose listing started */
	struct ph_tree *t;
	struct ph_rorder *ord; /* t, in order as the folders come */
	int remove_temps;
	size_t active;     /* listers and stats in flight */
	int fatal;         /* a failure that stops the run */
	struct ph_temp_owner self;
	int64_t now;
	struct aside *asides;
	size_t nasides, capasides;
	struct pending_stat *statq; /* entries to LSTAT (their listing lacked
	                               attributes) */
	size_t nstatq, capstatq;
	uint64_t path_bytes; /* bytes of paths listed (a memory cap) */
	char rel[MAX_PATH + 1]; /* the entry at hand's path: built here, copied
	                           only for a folder to list or an entry to stat */
};

/* Doubles the queue of entries to stat unless that would take it past
 * MAX_QUEUE_PATHS. Returns 0 or PHSYNC_ENOMEM. */
static int
statq_grow(struct rscan *rs)
{
	if (rs->capstatq * 2 > MAX_QUEUE_PATHS)
		return PHSYNC_ENOMEM;
	return ph_grow(&rs->statq, &rs->capstatq, sizeof(*rs->statq), 256);
}

static void
fail(struct rscan *rs, const char *rel, int err, const char *msg)
{
	rs->in->ev->st->files_failed++;
	if (rs->in->failed != NULL)
		rs->in->failed(rs->in->arg, rel);
	ph_emit(rs->in->ev, PHSYNC_EV_FILE_FAILED, rel[0] ? rel : ".", NULL, 0, err, msg);
}

static uint8_t
type_of(uint32_t perm)
{
	switch (perm & 0170000) {
	case 0100000:
		return PH_T_FILE;
	case 0040000:
		return PH_T_DIR;
	case 0120000:
		return PH_T_LINK;
	default:
		return PH_T_OTHER;
	}
}

static char *
join(const char *dir, const uint8_t *name, size_t nl)
{
	size_t dl = strlen(dir);
	char *p = malloc(dl + nl + 2);

	if (p == NULL)
		return NULL;
	memcpy(p, dir, dl);
	if (dl)
		p[dl++] = '/';
	memcpy(p + dl, name, nl);
	p[dl + nl] = '\0';
	return p;
}

/* The server's path of rel (a tree path, "" = the root). */
static char *
rpath(const struct rscan *rs, const char *rel)
{
	return ph_rpath_join(rs->in->rroot, rel);
}

static int
depth_of(const char *rel)
{
	int d = 1;

	for (; *rel; rel++)
		d += *rel == '/';
	return d;
}

/* Adds a listed entry of folder f to the tree (a folder to list too): rel
 * (len bytes) is borrowed. */
static void
add_entry(struct rscan *rs, struct ph_rfolder *f, const char *rel, size_t len,
          const struct ph_sftp_attrs *a)
{
	struct ph_entry e = { 0 };

	e.type = type_of(a->perm);
	if (!ph_filter_match(rs->in->filter, rel, e.type == PH_T_DIR))
		return;
	rs->path_bytes += len + 1;
	/* (t->nkept: every entry added, placed in t or still held.) */
	if (rs->t->nkept >= MAX_ENTRIES || rs->path_bytes > MAX_PATH_BYTES) {
		rs->fatal = ph_err(rs->in->ctx, PHSYNC_ENOMEM,
		                   "the remote tree has more than %u entries or 2 GiB of "
		                   "names; stopped (does the server's tree loop back on "
		                   "itself?)", MAX_ENTRIES);
		return;
	}
	if (e.type == PH_T_DIR && depth_of(rel) > MAX_DEPTH) {
		rs->fatal = ph_err(rs->in->ctx, PHSYNC_EUNSAFE,
		                   "the remote tree is nested deeper than %d folders; stopped "
		                   "(does the server's tree loop back on itself?)", MAX_DEPTH);
		return;
	}
	e.nosize = e.type == PH_T_FILE && !(a->flags & PH_ATTR_SIZE);
	e.size = (a->flags & PH_ATTR_SIZE) && e.type == PH_T_FILE ? a->size : 0;
	e.mtime = (a->flags & PH_ATTR_ACMODTIME) ? a->mtime : 0;
	e.mode = a->perm & 07777;
	/* A single-file run lists one folder: what has its name is never
	 * walked (a folder there is the destination's, left alone). */
	if (ph_rorder_add(rs->ord, f, rel, len, &e,
	                  e.type == PH_T_DIR && rs->in->filter->only == NULL) != 0)
		rs->fatal = PHSYNC_ENOMEM;
}

/* Folder f waits for one thing less (see rorder.h). */
static void
release(struct rscan *rs, struct ph_rfolder *f)
{
	if (ph_rorder_release(rs->ord, f) != 0 && !rs->fatal)
		rs->fatal = PHSYNC_ENOMEM;
}

static void
stat_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct pending_stat *ps = arg;
	struct rscan *rs = ps->rs;

	(void)s;
	rs->active--;
	if (r->type == PH_FXP_ATTRS && (r->attrs.flags & PH_ATTR_PERMISSIONS))
		add_entry(rs, ps->f, ps->rel, strlen(ps->rel), &r->attrs);
	else if (r->type != 0)
		fail(rs, ps->rel, r->err ? r->err : PHSYNC_EPROTO,
		     "the server gave no file type for this entry");
	release(rs, ps->f);
	free(ps->rel);
	free(ps);
}

static void lister_done(struct lister *l);

static void
count_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	(void)s;
	(void)r;
	((struct rscan *)arg)->active--;
}

/* Removes a dead run's temp file (rel is borrowed). */
static void
remove_temp(struct rscan *rs, const char *rel, int dir)
{
	char *full = rpath(rs, rel);

	/* A folder: a killed run's case probe (probe.c), empty. */
	if (full != NULL && (dir ? ph_sftp_rmdir(rs->in->sftp, full, count_cb, rs) :
	                     ph_sftp_remove(rs->in->sftp, full, count_cb, rs)) == 0)
		rs->active++;
	free(full);
}

/* Keeps a dead run's aside copy for resolve_asides() (rel is borrowed). */
static void
keep_aside(struct rscan *rs, const char *rel, const struct ph_temp_info *ti,
           const struct ph_sftp_attrs *a)
{
	const char *base = strrchr(rel, '/');
	size_t dl = base ? (size_t)(base - rel) + 1 : 0;
	struct aside *as;

	if (ti->truncated) {
		/* The name it stands for was shortened: cannot be put back. */
		ph_emit(rs->in->ev, PHSYNC_EV_WARNING, rel, NULL, 0, PHSYNC_EUNSAFE,
		             "an old copy an interrupted run set aside; its full name is "
		             "unknown, so it is left for you to check");
		return;
	}
	if (rs->nasides == rs->capasides &&
	    ph_grow(&rs->asides, &rs->capasides, sizeof(*rs->asides), 8) != 0) {
		rs->fatal = PHSYNC_ENOMEM;
		return;
	}
	as = &rs->asides[rs->nasides];
	as->rel = strdup(rel);
	as->final = malloc(dl + ti->final_len + 1);
	if (as->rel == NULL || as->final == NULL) {
		free(as->rel);
		free(as->final);
		rs->fatal = PHSYNC_ENOMEM;
		return;
	}
	memcpy(as->final, rel, dl);
	memcpy(as->final + dl, rel + dl + ti->final_off, ti->final_len);
	as->final[dl + ti->final_len] = '\0';
	as->a = *a;
	rs->nasides++;
}

/* Reports a name the server sent that is unsafe here (dir: its folder):
 * a skip, counted as a failure (the run is partial). 0, or ENOMEM (then
 * rs->fatal). */
static int
refuse_unsafe(struct rscan *rs, const char *dir, const uint8_t *name, size_t nl)
{
	char shown[256 * 4 + 1], raw[256];
	size_t n = nl < sizeof(raw) - 1 ? nl : sizeof(raw) - 1;
	char *rel;

	memcpy(raw, name, n);
	raw[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (raw[i] == '\0')
			raw[i] = '?';
	ph_escape(shown, sizeof(shown), raw);
	if ((rel = join(dir, (const uint8_t *)shown, strlen(shown))) == NULL)
		return rs->fatal = PHSYNC_ENOMEM;
	rs->in->ev->st->files_failed++;
	ph_emit(rs->in->ev, PHSYNC_EV_SKIPPED, rel, "unsafe name", 0, PHSYNC_EUNSAFE,
	        "the server sent an unsafe name (empty, '.', '..', or with "
	        "'/', '\\' or control characters); refused");
	free(rel);
	return 0;
}

static void
readdir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lister *l = arg;
	struct rscan *rs = l->rs;
	struct ph_sftp_names it;
	const uint8_t *name;
	uint32_t nl;
	struct ph_sftp_attrs a;
	struct ph_temp_info ti;
	const char *dir;
	size_t dl;
	int k;

	if (r->type == 0) { /* the link died; the pump reports it */
		lister_done(l);
		return;
	}
	if (r->type == PH_FXP_STATUS) {
		if (r->status != PH_FX_EOF)
			fail(rs, ph_rorder_rel(l->f), r->err ? r->err : PHSYNC_EPROTO,
			     "cannot list this folder");
		ph_sftp_close(s, &l->h, NULL, NULL);
		lister_done(l);
		return;
	}
	if (r->type != PH_FXP_NAME) {
		rs->fatal = ph_err(rs->in->ctx, PHSYNC_EPROTO,
		                   "the server answered READDIR with packet type %u", r->type);
		lister_done(l);
		return;
	}
	dir = ph_rorder_rel(l->f);
	dl = strlen(dir);
	ph_sftp_names_init(&it, r);
	while ((k = ph_sftp_names_next(&it, &name, &nl, &a)) == 1) {
		char *rel = rs->rel;
		size_t len;

		if ((nl == 1 && name[0] == '.') || (nl == 2 && name[0] == '.' && name[1] == '.'))
			continue;
		if (!ph_filter_only_name(rs->in->filter, (const char *)name, nl))
			continue;
		if (!ph_name_safe(name, nl)) {
			if (refuse_unsafe(rs, dir, name, nl) != 0)
				break;
			continue;
		}
		if (dl + 1 + nl > MAX_PATH) {
			fail(rs, dir, PHSYNC_EUNSAFE, "a name in this folder makes a path "
			     "longer than 4095 bytes; left out");
			continue;
		}
		memcpy(rel, dir, dl);
		len = dl + (dl > 0);
		if (dl > 0)
			rel[dl] = '/';
		memcpy(rel + len, name, nl);
		len += nl;
		rel[len] = '\0';
		if (ph_temp_parse((const char *)name, nl, &ti)) {
			/* Ours: never listed. A dead run's leftovers are cleared on the
			 * destination side only. */
			/* A cut upload the state keeps (push resume) stays; so do
			 * the other files' temps in a single-file run. */
			if (rs->remove_temps && ph_temp_stale(&ti, &rs->self, rs->now) &&
			    ph_filter_temp(rs->in->filter, (const char *)name, &ti) &&
			    (rs->in->keep_temp == NULL ||
			     !rs->in->keep_temp(rs->in->arg, rel + strlen(rel) - nl))) {
				if (ti.kind == PH_TEMP_OLD)
					keep_aside(rs, rel, &ti, &a);
				else
					remove_temp(rs, rel, (a.flags & PH_ATTR_PERMISSIONS) &&
					            type_of(a.perm) == PH_T_DIR);
			}
			continue;
		}
		if (!(a.flags & PH_ATTR_PERMISSIONS) ||
		    (type_of(a.perm) == PH_T_FILE &&
		     (a.flags & (PH_ATTR_SIZE | PH_ATTR_ACMODTIME)) !=
		     (PH_ATTR_SIZE | PH_ATTR_ACMODTIME))) {
			/* Asked later, a bounded number at a time: one NAME reply can
			 * name hundreds of thousands of such entries. */
			if (rs->nstatq == rs->capstatq && statq_grow(rs) != 0) {
				rs->fatal = PHSYNC_ENOMEM;
				break;
			}
			if ((rs->statq[rs->nstatq].rel = ph_strndup(rel, len)) == NULL) {
				rs->fatal = PHSYNC_ENOMEM;
				break;
			}
			rs->statq[rs->nstatq++].f = l->f;
			ph_rorder_hold(l->f);
			continue;
		}
		add_entry(rs, l->f, rel, len, &a);
	}
	if (k < 0) {
		rs->fatal = ph_err(rs->in->ctx, PHSYNC_EPROTO,
		                   "the server sent a malformed folder listing");
		lister_done(l);
		return;
	}
	if (rs->fatal || ph_sftp_readdir(s, &l->h, readdir_cb, l) != 0) {
		lister_done(l);
		return;
	}
}

static void
opendir_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct lister *l = arg;
	struct rscan *rs = l->rs;

	if (r->type == PH_FXP_HANDLE) {
		(void)ph_sftp_handle_set(&l->h, r);
		if (ph_sftp_readdir(s, &l->h, readdir_cb, l) == 0)
			return;
	} else if (r->type != 0) {
		if (ph_rorder_rel(l->f)[0] == '\0')
			rs->fatal = ph_err(rs->in->ctx, r->err ? r->err : PHSYNC_EPROTO,
			                   "cannot list the remote folder: %s",
			                   r->msg[0] ? r->msg : phsync_strerror(r->err));
		else
			fail(rs, ph_rorder_rel(l->f), r->err ? r->err : PHSYNC_EPROTO,
			     "cannot open this folder");
	}
	lister_done(l);
}

static void
lister_done(struct lister *l)
{
	struct rscan *rs = l->rs;

	rs->active--;
	rs->nlist[l->ch]--;
	release(rs, l->f);
	free(l);
}

/* The channel to open the next folder on: the one with the fewest open,
 * or -1 when each has MAX_LISTERS (the folder's READDIRs and CLOSE then
 * follow its handle there, in the callbacks). */
static int
lister_channel(const struct rscan *rs)
{
	size_t i, best = 0;

	for (i = 1; i < rs->nsv; i++)
		if (rs->nlist[i] < rs->nlist[best])
			best = i;
	return rs->nlist[best] < MAX_LISTERS ? (int)best : -1;
}

/* The channel to send an LSTAT on: the one that owes the fewest replies. */
static struct ph_sftp *
pick(const struct rscan *rs)
{
	struct ph_sftp *best = rs->sv[0];
	size_t i;

	for (i = 1; i < rs->nsv; i++)
		if (ph_sftp_inflight(rs->sv[i]) < ph_sftp_inflight(best))
			best = rs->sv[i];
	return best;
}

/* Requests in flight over every channel. */
static size_t
inflight(const struct rscan *rs)
{
	size_t i, n = 0;

	for (i = 0; i < rs->nsv; i++)
		n += ph_sftp_inflight(rs->sv[i]);
	return n;
}

/* Sends the LSTAT of q->rel (owned; freed on failure, its folder then left
 * held: the scan ends). */
static int
start_stat(struct rscan *rs, const struct pending_stat *q)
{
	struct pending_stat *ps = malloc(sizeof(*ps));
	char *full = rpath(rs, q->rel);
	int rc = PHSYNC_ENOMEM;

	if (ps != NULL && full != NULL)
		rc = ph_sftp_stat(pick(rs), PH_LSTAT, full, stat_cb, ps);
	free(full);
	if (rc != 0) {
		free(ps);
		free(q->rel);
		return rc;
	}
	*ps = *q;
	ps->rs = rs;
	rs->active++;
	return 0;
}

/* Opens folder f for listing, held until its listing ends. */
static int
start_lister(struct rscan *rs, struct ph_rfolder *f, size_t ch)
{
	struct lister *l = calloc(1, sizeof(*l));
	char *full = rpath(rs, ph_rorder_rel(f));
	int rc;

	if (l == NULL || full == NULL) {
		free(l);
		free(full);
		return PHSYNC_ENOMEM;
	}
	l->rs = rs;
	l->f = f;
	l->ch = ch;
	rc = ph_sftp_opendir(rs->sv[ch], full, opendir_cb, l);
	free(full);
	if (rc != 0) {
		free(l);
		return rc;
	}
	ph_rorder_hold(f);
	rs->active++;
	rs->nlist[ch]++;
	rs->nlisted++;
	return 0;
}

/* Puts each dead run's aside copy back where its file is missing (that run
 * was cut between moving the old file aside and moving the new one in),
 * and removes it where the file is in place. */
static int
resolve_asides(struct rscan *rs)
{
	const struct ph_rscan *in = rs->in;
	size_t i;
	int rc = 0;

	if (rs->nasides == 0)
		return 0;
	ph_tree_sort(rs->t);
	for (i = 0; i < rs->nasides && rc == 0; i++) {
		struct aside *as = &rs->asides[i];
		char *from = rpath(rs, as->rel), *to = rpath(rs, as->final);
		struct ph_sftp_attrs cur;
		int exists = ph_tree_find(rs->t, as->final) != NULL, r;

		if (from == NULL || to == NULL) {
			rc = PHSYNC_ENOMEM;
		} else if (!exists &&
		           (r = ph_sftp_stat_sync(in->sftp, PH_LSTAT, to, &cur)) != PHSYNC_ENOENT) {
			/* There after all (filtered out of the tree), or unknown. */
			exists = r == 0;
			if (r != 0 && r != PHSYNC_EREMOTE && r != PHSYNC_EPERM)
				rc = r;
		}
		if (rc != 0 || from == NULL || to == NULL) {
			/* stop below */
		} else if (exists) {
			if ((r = ph_sftp_remove_sync(in->sftp, from)) != 0 && r != PHSYNC_ENOENT)
				ph_emit(in->ev, PHSYNC_EV_WARNING, as->rel, NULL, 0, r,
				             "cannot remove an old copy an interrupted run set aside");
		} else if ((r = ph_sftp_rename_sync(in->sftp, from, to)) == 0) {
			struct ph_entry e = { 0 };

			e.type = PH_T_FILE;
			e.size = as->a.size;
			e.nosize = !(as->a.flags & PH_ATTR_SIZE);
			e.mtime = as->a.mtime;
			e.mode = as->a.perm & 07777;
			ph_emit(in->ev, PHSYNC_EV_WARNING, as->final, NULL, 0, 0,
			             "put back the old version an interrupted run had set aside");
			if (ph_filter_match(in->filter, as->final, 0) &&
			    ph_tree_add(rs->t, as->final, strlen(as->final), &e) != 0)
				rc = PHSYNC_ENOMEM;
		} else if (r == PHSYNC_ECONNECT) {
			rc = r;
		} else {
			ph_emit(in->ev, PHSYNC_EV_WARNING, as->rel, NULL, 0, r,
			             "cannot put back an old copy an interrupted run set aside");
		}
		free(from);
		free(to);
	}
	return rc;
}

/* A listing ended by a channel it added (the first still sound): the
 * link's own message says only what the server did ("closed the
 * connection"), so this names which one it was. */
static void
name_lost_more(const struct rscan *rs, int rc)
{
	phsync_ctx *ctx = rs->in->ctx;
	char msg[sizeof(ctx->err)];
	size_t i;

	if (ph_sftp_dead(rs->sv[0]))
		return;
	for (i = 1; i < rs->nsv && !ph_sftp_dead(rs->sv[i]); i++)
		;
	if (i == rs->nsv)
		return;
	memcpy(msg, ctx->err, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	ph_err(ctx, rc, "the %s a long listing started beside the first: %s",
	       ph_sftp_helper(rs->sv[0]) ? "second helper" : "second SFTP channel", msg);
}

int
ph_remote_scan(const struct ph_rscan *in, struct ph_tree *t)
{
	struct rscan rs;
	struct ph_rfolder *f;
	size_t i;
	int rc = 0, rc2, ch, held;

	memset(&rs, 0, sizeof(rs));
	rs.in = in;
	rs.t = t;
	rs.sv[0] = in->sftp;
	rs.nsv = 1;
	/* Each listed name looked at once here, not every path's names on
	 * every pull (ph_names_any_unholdable). */
	t->count_winnames = 1;
	rs.remove_temps = in->remove_temps;
	ph_temp_owner_self(&rs.self);
	rs.now = (int64_t)time(NULL);
	if ((rs.ord = ph_rorder_new(t)) == NULL)
		return PHSYNC_ENOMEM;
	while (rc == 0 && !rs.fatal &&
	       (ph_rorder_waiting(rs.ord) > 0 || rs.active > 0 || rs.nstatq > 0)) {
		if (!rs.asked && in->more != NULL &&
		    rs.nlisted + ph_rorder_waiting(rs.ord) >= MORE_AFTER) {
			size_t got = in->more(in->more_arg, rs.sv + 1, PH_RSCAN_MORE);

			if (got != PH_RSCAN_MORE_LATER) {
				rs.asked = 1;
				rs.nsv += got;
			}
		}
		/* A tree taken from as it fills (tree.h) gets no new folder
		 * while far ahead of its taker; with nothing in flight, the
		 * listing waits for the taker. */
		held = t->feed != NULL && ph_feed_ahead(t) > PH_REMOTE_AHEAD;
		while (rc == 0 && !held && (ch = lister_channel(&rs)) >= 0 &&
		       (f = ph_rorder_next(rs.ord)) != NULL)
			rc = start_lister(&rs, f, (size_t)ch);
		while (rc == 0 && rs.nstatq > 0 && ph_sftp_inflight(pick(&rs)) < MAX_STATS)
			rc = start_stat(&rs, &rs.statq[--rs.nstatq]);
		if (rc == 0 && held && rs.active == 0 && inflight(&rs) == 0)
			ph_feed_pace(t, PH_REMOTE_AHEAD / 2);
		else if (rc == 0)
			rc = ph_sftp_pump_set(rs.sv, rs.nsv, 250);
		if (rc == 0 && in->ctx->interrupted)
			rc = PHSYNC_EINTR;
		/* (nkept: every entry listed, placed in t or still held.) */
		if (rc == 0 && in->tick != NULL)
			in->tick(in->arg, t->nkept);
	}
	if (rc == 0)
		rc = rs.fatal;
	if (rc != 0 && rc != PHSYNC_EINTR)
		name_lost_more(&rs, rc);
	/* Leaving early: give up on what is in flight now, while rs lives, so
	 * no callback outlives it (the run ends; the link is not reused). */
	for (i = 0; i < rs.nsv && rs.active > 0; i++)
		ph_sftp_abort(rs.sv[i], rc ? rc : PHSYNC_EINTR);
	if (rs.nsv > 1)
		in->end_more(in->more_arg, rs.sv + 1, rs.nsv - 1);
	if ((rc2 = ph_rorder_end(rs.ord)) != 0 && rc == 0)
		rc = rc2;
	if (rc == 0 && !in->dry_run)
		rc = resolve_asides(&rs);
	for (i = 0; i < rs.nasides; i++) {
		free(rs.asides[i].rel);
		free(rs.asides[i].final);
	}
	free(rs.asides);
	while (rs.nstatq > 0)
		free(rs.statq[--rs.nstatq].rel);
	free(rs.statq);
	return rc;
}
