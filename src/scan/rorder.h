/* SPDX-License-Identifier: ISC */
/* The remote listing put in subtree order while it comes (remote.c), so
 * that no sort of the whole tree waits after it: each folder's entries are
 * held until the folder is whole (its listing and its entries' LSTATs
 * done), then sorted by name and placed in the tree as soon as everything
 * before them is. Folders are listed in the tree's order (the first
 * waiting first, each as soon as its name comes), so what the tree needs
 * next is what is being listed and few folders wait. Internal. */
#ifndef PH_RORDER_H
#define PH_RORDER_H

#include <stddef.h>

#include "tree.h"

struct ph_rorder;
struct ph_rfolder;

/* A listing into t (empty), its root folder ("") waiting to be listed.
 * NULL: no memory. */
struct ph_rorder *ph_rorder_new(struct ph_tree *t);
/* The next folder to list, the first in the tree's order of those waiting
 * (the caller holds it while it lists), or NULL: none waits now. */
struct ph_rfolder *ph_rorder_next(struct ph_rorder *o);
/* Folders waiting to be listed. */
size_t ph_rorder_waiting(const struct ph_rorder *o);
/* The folder's path ("" the root). */
const char *ph_rorder_rel(const struct ph_rfolder *f);
/* Adds an entry of folder f, which the caller holds: path (len bytes, its
 * whole path) is kept in the tree's strings now, the entry placed when it
 * is in order; list: it is a folder to list. 0 or PHSYNC_ENOMEM. */
int ph_rorder_add(struct ph_rorder *o, struct ph_rfolder *f, const char *path,
                  size_t len, const struct ph_entry *e, int list);
/* One more thing folder f waits for (its lister, an entry's LSTAT) ... */
void ph_rorder_hold(struct ph_rfolder *f);
/* ... and one less: with none left after its listing, f is whole. 0, or
 * PHSYNC_ENOMEM (the tree could not grow). */
int ph_rorder_release(struct ph_rorder *o, struct ph_rfolder *f);
/* Every entry still held goes to the tree (a listing cut short leaves
 * folders that are not whole: those come out of order, and ph_tree_sort
 * puts them right); o is freed. 0 or PHSYNC_ENOMEM. */
int ph_rorder_end(struct ph_rorder *o);

#endif
