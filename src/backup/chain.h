/* SPDX-License-Identifier: ISC */
/* The archives of a restore put in chain order before anything is written:
 * each archive's head manifest (its first entry) read, the phsync archives
 * sorted by their number in the series whatever order they were given in,
 * and the chain checked whole. Internal to src/backup/. */
#ifndef PH_CHAIN_H
#define PH_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"

struct ph_chain_link {
	const char *name;          /* the archive, as given */
	int phsync;                /* it starts with a phsync head manifest */
	char series[33];
	int64_t seq, base;
	int full;
};

/* Reads the head of archives[0..n-1] into v[0..n-1] (the caller's array)
 * and orders it: the phsync archives among them are sorted by number into
 * the places they were given in (plain tar archives stay where given), and
 * must form one chain: one series, a full archive first, each next one an
 * incremental on the one before, none twice, none missing. Returns 0, or
 * PHSYNC_EINVAL (the chain is wrong), PHSYNC_ECORRUPT (a damaged head) or
 * the error of opening an archive, with the message in ctx. */
int ph_chain_order(phsync_ctx *ctx, const char *const *archives, size_t n,
                   struct ph_chain_link *v);

#endif
