/* SPDX-License-Identifier: ISC */
/* A scanned tree: a flat array of entries sorted so that every folder's
 * subtree directly follows it ('/' sorts before every other byte). Also
 * the name rules every side applies and the include/exclude filter. */
#ifndef PH_TREE_H
#define PH_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "escape.h"
#include "strpool.h"

enum ph_type { PH_T_FILE = 1, PH_T_DIR, PH_T_LINK, PH_T_OTHER };

/* An entry's names. path is its key: the relative, '/'-separated path
 * (never empty) in Unicode NFC, which both sides are compared by and the
 * state records. The bytes the entry really has on its side (raw) follow
 * the key in the string block when they differ (PH_E_RAW: a name in NFD
 * from a Mac, or one renamed to keep it apart from another), and after
 * them, for a source entry, the path it has or will get at the
 * destination when that differs from raw (PH_E_DPATH): see names.h. */
#define PH_E_RAW     0x01
#define PH_E_DPATH   0x02
#define PH_E_RENAMED 0x04 /* the key was changed to keep the entry apart
                             from another that folds to the same name */
#define PH_E_KNOWN   0x08 /* (source) the state has a record of it */
#define PH_E_ASREC   0x10 /* (source) ... and both sides are exactly as
                             recorded: the record is not kept in memory */
#define PH_E_HOLD    0x20 /* (source) still being written, the caller says
                             (phsync_options.hold_paths): left for later */

/* 24 bytes: a no-change run over 1,000,000 files holds two trees of them
 * (see docs/PERFORMANCE.md section 3), so the small fields share one word
 * with the time. */
struct ph_entry {
	char *path;      /* the key (above) */
	uint64_t size;
	int64_t mtime : 42; /* seconds, within +-69,000 years of 1970 (see
	                       ph_mtime_fit; a copy's access time is set to it
	                       too: an access time is not kept, as rsync keeps
	                       none by default) */
	uint64_t mode : 12; /* permission bits (07777) */
	uint64_t type : 3;  /* enum ph_type */
	uint64_t nosize : 1; /* a file whose size the server would not tell:
	                        read to EOF, and never taken as unchanged */
	uint64_t flags : 6; /* PH_E_* */
};

#define PH_MTIME_MAX (((int64_t)1 << 41) - 1)
#define PH_MTIME_MIN (-((int64_t)1 << 41))

/* A time as an entry can hold it: one outside +-69,000 years (only a
 * local file can claim one; SFTP carries 32 bits) is held at the nearest
 * end, on both sides alike. */
static inline int64_t
ph_mtime_fit(int64_t t)
{
	return t > PH_MTIME_MAX ? PH_MTIME_MAX : t < PH_MTIME_MIN ? PH_MTIME_MIN : t;
}

/* The entry's path on its own side (what I/O on that side uses). */
static inline const char *
ph_entry_raw(const struct ph_entry *e)
{
	const char *p = e->path;

	while ((e->flags & PH_E_RAW) && *p != '\0')
		p++;
	return e->flags & PH_E_RAW ? p + 1 : e->path;
}

/* A source entry's path at the destination (what I/O there uses). */
static inline const char *
ph_entry_dpath(const struct ph_entry *e)
{
	const char *p = ph_entry_raw(e);

	if (!(e->flags & PH_E_DPATH))
		return p;
	while (*p != '\0')
		p++;
	return p + 1;
}

/* Entries a tree holds before its paths go to its pool (tree.c). */
#define PH_POOL_FROM 65536

/* A tree one thread fills (a scan) while another takes entries out of it
 * as they come (sync/pairs.c: the files both sides hold exactly as
 * recorded leave both trees): each push, and the taker's turn, under mu. */
struct ph_feed {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* the scan placed a folder's entries or ended; the
	                        taker took some, or is gone */
	size_t taken;        /* the entries before it are the taker's */
	int ended;           /* the scan adds no more */
	int closed;          /* the taker is gone: the scan waits for nothing */
	/* The scan's own: entries pushed, appended to the tree under mu a
	 * batch at a time (when full, and at each ph_feed_ call). */
	struct ph_entry stage[256];
	uint64_t stage_id[256];
	size_t nstage;
};

struct ph_tree {
	struct ph_entry *v;
	size_t n, cap;
	size_t nraw;     /* entries whose raw name differs from the key */
	char **blocks;   /* string storage */
	size_t nblocks;
	size_t block_used, block_cap;
	struct ph_strpool *pool; /* when set, ph_tree_add keeps paths there,
	                            once for this tree and its twin (strpool.h),
	                            from its PH_POOL_FROM-th entry on */
	struct ph_strcur pcur;  /* ... and its place there */
	size_t nkept;    /* paths kept (ph_tree_keep), placed or not yet */
	/* With count_winnames set (the remote scan sets it), ph_tree_add
	 * counts in nwinbad the entries whose own (last) name Windows cannot
	 * hold (winname.h). A listed entry's folders are entries too, so
	 * nwinbad > 0 says whether any path has such a name without walking
	 * every path's names (ph_names_any_unholdable). ph_tree_rename leaves
	 * it as it is: the count is of the names as listed. */
	int count_winnames;
	size_t nwinbad;
	/* With want_ids set (a local scan's tree), ids holds beside each
	 * entry the digest of the identity the walk saw (ph_tree_ident_sum; 0
	 * for a non-file), valid while ids_ok: a sort that moves entries, or a
	 * drop, clears it. The state merge then trusts an unchanged identity
	 * without a second stat of each file (sync/ident.c). */
	int want_ids, ids_ok;
	uint64_t *ids;
	struct ph_feed *feed;   /* NULL, or while another thread takes from it */
};

/* The feed made (0, or PHSYNC_ENOMEM) and attached to t, and detached from
 * it once both threads are done with it (ph_feed_free). */
int ph_feed_init(struct ph_feed *f, struct ph_tree *t);
void ph_feed_free(struct ph_feed *f, struct ph_tree *t);
/* The scan's side (its thread's only): a batch placed (the taker woken),
 * the scan's end, and the walk held back while more than ahead of its
 * entries wait for the taker (never once it is gone). Each a no-op
 * without a feed. Until the first two, the scan's last entries may not be
 * in the tree yet; they return 0, or PHSYNC_ENOMEM when those could not be
 * added. */
int ph_feed_batch(struct ph_tree *t);
int ph_feed_end(struct ph_tree *t);
void ph_feed_pace(struct ph_tree *t, size_t ahead);
/* Wakes whoever waits on t's feed (from any thread). */
void ph_feed_wake(struct ph_tree *t);
/* Entries the scan added that the taker has not taken yet (0 without a
 * taker, or once it is gone). */
size_t ph_feed_ahead(struct ph_tree *t);
/* The taker's side: gone (the scan no longer waits for it). */
void ph_feed_close(struct ph_tree *t);

/* Frees ids once nothing will ask them (a later look stats the file). */
void ph_tree_drop_ids(struct ph_tree *t);
/* The digest of a local file's identity (inode, device, ctime in ns) as
 * ids holds it: 64 bits of XXH3, never 0. */
uint64_t ph_tree_ident_sum(uint64_t ino, uint64_t dev, int64_t ctime_ns);

/* Adds an entry; path is copied (into the pool when the tree has one: the
 * key is then shared and never written to). Returns 0 or PHSYNC_ENOMEM. */
int ph_tree_add(struct ph_tree *t, const char *path, size_t pathlen,
                const struct ph_entry *e);
/* ... with id beside it (want_ids: the walk's identity digest). */
int ph_tree_add_id(struct ph_tree *t, const char *path, size_t pathlen,
                   const struct ph_entry *e, uint64_t id);
/* ph_tree_add in two steps, for an entry placed later than it is known
 * (the remote listing puts its entries in order, rorder.h): the path kept
 * as ph_tree_add keeps it (*kept, valid while the tree lives; its name
 * counted in nwinbad), then the entry appended, its path one kept so and
 * its flags cleared. Each returns 0 or PHSYNC_ENOMEM. */
int ph_tree_keep(struct ph_tree *t, const char *path, size_t pathlen, char **kept);
int ph_tree_push(struct ph_tree *t, const struct ph_entry *e);
/* Gives entry i new names (key, raw and dpath, each NULL when it is the
 * one before it: raw the key, dpath raw), copied into the string block; the
 * old ones are left unused. Returns 0 or PHSYNC_ENOMEM. */
int ph_tree_rename(struct ph_tree *t, size_t i, const char *key, const char *raw,
                   const char *dpath);
/* Sorts into subtree order (see above). */
void ph_tree_sort(struct ph_tree *t);
/* Compares two relative paths in subtree order. */
int ph_path_cmp(const char *a, const char *b);
/* Binary search in a sorted tree; NULL when absent. */
const struct ph_entry *ph_tree_find(const struct ph_tree *t, const char *path);
void ph_tree_free(struct ph_tree *t);

/* Is name (len bytes, one path component) safe to create locally? Refuses
 * "", ".", "..", and names with '/', '\\', NUL or control characters.
 * Returns 1 when safe. */
int ph_name_safe(const uint8_t *name, size_t len);

/* The server's path of rel (a tree path, "" = the root) below root as
 * ph_remote_root gives it ("" = the server's "/"): malloc'ed, or NULL. */
char *ph_rpath_join(const char *root, const char *rel);


/* --include/--exclude rules, first match wins; no match means include. */
struct ph_filter {
	const char *const *pat;
	const uint8_t *incl;  /* per rule: 1 include, 0 exclude */
	size_t n;
	size_t ndef;          /* the last ndef rules are the default excludes */
	const char *only;     /* a single-file run: the one name at the root
	                         that is synced (nothing else, nothing below
	                         it), or NULL. The default excludes do not
	                         apply to it (the user named it); the user's
	                         own --exclude rules do, as rsync's do. */
};
/* Sets f's rules from o: its includes, its excludes, then the default
 * excludes (phsync_default_excludes, unless o says none); *pat and *incl
 * hold the arrays f points into, for the caller to free. Returns 0 or
 * PHSYNC_ENOMEM. */
struct phsync_options;
int ph_filter_options(struct ph_filter *f, const struct phsync_options *o, const char ***pat,
                      uint8_t **incl);
/* Returns 1 when path (is_dir tells the type) is to be synced. */
int ph_filter_match(const struct ph_filter *f, const char *path, int is_dir);
/* Is the temp file whose name ti describes (tempname.h) one made for a
 * path f syncs? Always with no f->only; else only one made for that name
 * (a shortened name: for a name it could be the start of). A single-file
 * run leaves the other files' temps and kept transfers alone. */
struct ph_temp_info;
/* May the scan of a root look at the entry name (nl bytes) at all? Always
 * with no f->only; else only for that name or a temp made for it: a single
 * file's run neither reports nor checks its folder's other entries. */
int ph_filter_only_name(const struct ph_filter *f, const char *name, size_t nl);
int ph_filter_temp(const struct ph_filter *f, const char *name,
                   const struct ph_temp_info *ti);

#endif
