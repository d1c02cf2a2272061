/* SPDX-License-Identifier: ISC */
/* Names across two file systems: one key per name whatever its Unicode
 * form, destinations that ignore case, and source names that would land on
 * one another there. Pure: no I/O (the caller probes the destination). */
#ifndef PH_NAMES_H
#define PH_NAMES_H

#include "tree.h"

/* Gives every entry of t whose path is not in Unicode NFC (a Mac writes
 * names decomposed, Android composed) its NFC form as key, keeping its raw
 * path, then sorts t. Names that are not valid UTF-8 are their own key.
 * Only entries with bytes >= 0x80 cost anything. Returns 0 or
 * PHSYNC_ENOMEM. */
int ph_names_normalize(struct ph_tree *t);

/* Does t hold two keys equal once case is folded (Unicode case folding)?
 * Says whether a destination's case sensitivity matters. Returns 1, 0, or
 * PHSYNC_ENOMEM. */
int ph_names_fold_collide(const struct ph_tree *t);

/* Called for each source entry given a new key (raw: its own path). */
typedef void ph_names_report_fn(void *arg, const char *key, const char *raw);

/* Keeps apart the source entries that would be one file at the
 * destination: keys that are equal (the NFC and the NFD form of one name,
 * both in the source), or equal once case is folded when fold (the
 * destination ignores case). Of each group the first in byte order (a
 * name already in NFC before one that is not) keeps its key; each other
 * one, with its subtree, gets the key "STEM (N).EXT" with the smallest N
 * from 2 that no source name folds to, so the next run maps it the same
 * way. With fold that is also its name at the destination (reported);
 * without, only its key changes: a destination that keeps case apart is
 * taken to keep Unicode forms apart too (ext4, f2fs, btrfs do), and both
 * forms keep their own names there. Then, when fold, each dst entry whose
 * folded key is a source entry's takes that key (the destination's
 * "img.JPG" is the source's "IMG.jpg"). Both trees are sorted again where
 * keys changed. Returns 0 or PHSYNC_ENOMEM. */
int ph_names_separate(struct ph_tree *src, struct ph_tree *dst, int fold,
                      ph_names_report_fn *report, void *arg);

/* Sets each source entry's destination path (ph_entry_dpath) where it is
 * not its raw path: the destination entry's own path when it has one with
 * the same key, else its parent's destination path and its own raw name
 * (or, when fold, its new key's name if it was renamed). Returns 0 or
 * PHSYNC_ENOMEM. */
int ph_names_dest_paths(struct ph_tree *src, const struct ph_tree *dst, int fold);

/* Called for each entry ph_names_drop_unholdable removes because of its own
 * name (raw: its path on its side; why: ph_winname_why's phrase); the
 * entries below a removed folder go with it, unreported. */
typedef void ph_names_drop_fn(void *arg, const char *raw, const char *why);

/* Does any path of t have a name a Windows folder cannot hold (a reserved
 * device name, a trailing dot or space, one of < > : " | ? * \)? 1 or 0.
 * A tree that counted its names as they were added (tree.h's
 * count_winnames: a remote scan's) answers from its count; any other has
 * every path's names looked at. */
int ph_names_any_unholdable(const struct ph_tree *t);

/* Removes from t every entry with such a name in its path, calling fn for
 * each whose own name it is: for a destination that cannot hold them (a
 * pull to Windows, or to a FAT, exFAT or NTFS folder on any OS: ask with
 * ph_probe_winnames), they are reported and skipped, never written under
 * another name. t's order is kept. Returns how many entries went. */
size_t ph_names_drop_unholdable(struct ph_tree *t, ph_names_drop_fn *fn, void *arg);

#endif
