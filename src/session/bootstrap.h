/* SPDX-License-Identifier: ISC */
/* A helper phsync brings to a phone without phsync (docs/PROTOCOL.md,
 * "Bootstrap"); the checks of its start-up are bootcheck.h's. Internal. */
#ifndef PH_BOOTSTRAP_H
#define PH_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "bootcheck.h"
#include "phsync/phsync.h"
#include "ssh.h"

struct ph_boot {
	char path[128];     /* its cache path: .cache/phsync/phsync-helper-VERSION-ARCH,
	                       relative to the login folder */
	uint8_t *data;      /* the local static helper's bytes */
	size_t len;
	unsigned timeout_s; /* SFTP silence for the upload */
	int silence_ms;     /* the start-up script's silence */
	char arch[16];      /* the phone's, as this phsync names its helpers */
	char build[17];     /* XXH3-64 of data, hex: which helper build a memo's
	                       identity was checked against */
	/* The cached copy's identity (bootcheck.h) remembered from the last
	 * full byte check of it with this build (in: "" none): while the open
	 * file still shows it, its bytes are not sent back. */
	char known[PH_BOOT_IDENT_MAX];
	/* Out of ph_helper_boot_exec: the identity the start relied on, for
	 * the caller's memo: the one its bytes were just compared in full
	 * with, or known when it matched ("" when the phone has no stat). */
	char seen[PH_BOOT_IDENT_MAX];
	/* Out of ph_helper_boot_first: the script named the phone's machine
	 * (so the phone has no phsync of its own on its PATH, or it was not
	 * asked). */
	int named;
};

/* Reads this phsync's static helper for arch (one of ph_boot_arches'
 * names: the phone's, from the memo of an earlier run or from the
 * start-up script) into b (ph_helper_boot_free frees it). Nothing runs on
 * the phone. Returns 0, or PHSYNC_EUNSUPPORTED (no helpers here, no such
 * arch), PHSYNC_ENOENT (none for it here) or another error, with the
 * message in ctx. */
int ph_helper_boot_arch(phsync_ctx *ctx, const struct phsync_options *opts, const char *arch,
                        struct ph_boot *b);

/* Which static helpers this phsync can bring: *offer bit i for
 * ph_boot_arches[i]. 0, or PHSYNC_EUNSUPPORTED (no helper folder) or
 * PHSYNC_ENOENT (none in it) with the message in ctx. */
int ph_helper_boot_offer(phsync_ctx *ctx, unsigned *offer);

/* ph_helper_boot_first: the phone's own phsync runs on the channel. */
#define PH_BOOT_OWN 2

/* First contact in one exec channel (docs/PROTOCOL.md, "Bootstrap"): with
 * own set, the phone's own `phsync serve rroot` where its PATH has one
 * (PH_BOOT_OWN: chan is open, its helper protocol still to be agreed);
 * else the phone's machine named by `uname -m` and, for one of this
 * phsync's helpers, its cached copy checked and run as ph_helper_boot_exec
 * does (0: b holds that helper, b->seen as there, chan carries it). b is
 * zeroed, or filled by ph_helper_boot_arch with a remembered identity
 * (b->known), which holds only if the phone names that same helper (else b
 * is refilled). A missing or stale copy is uploaded and checked in full
 * through a second exec. Errors as ph_helper_boot_exec's, and
 * PHSYNC_EUNSUPPORTED / PHSYNC_ENOENT: no helper for its machine. The
 * channel is left to the caller (closed by it on an error). */
int ph_helper_boot_first(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                         const char *rroot, int own, struct ph_boot *b, struct ph_chan *chan);

/* Starts b's helper serving rroot over an exec channel, filling chan: a
 * script opens the cached copy once, phsync checks its folders (the login
 * user's, no symlink, not group/other-writable), that open file (owner,
 * mode, size) and its bytes (equal to b's), and the script executes that
 * same open file. Its bytes are not sent back when b->known is set and
 * the open file's identity is exactly that (device, inode, size, mode,
 * owner, ctime, mtime: docs/PROTOCOL.md, "Bootstrap"); otherwise they are,
 * and b->seen says the identity they were checked with. A missing or
 * different copy is uploaded (temp file, rename) and checked again first. Returns 0, PHSYNC_EUNSAFE (a folder
 * refused: nothing written, nothing run) or another error, with the message
 * in ctx. */
int ph_helper_boot_exec(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b,
                        const char *rroot, struct ph_chan *chan);

/* One more start of b's helper beside the one the session's channel runs
 * (another process for a long listing), on a channel of its own
 * (ph_ssh_open_exec_more), checked as ph_helper_boot_exec checks it; a
 * copy now missing or not exactly ours is refused (PHSYNC_EUNSUPPORTED),
 * never replaced: that is the first start's to do. Errors as there. */
int ph_helper_boot_exec_more(phsync_ctx *ctx, struct ph_ssh *ssh, struct ph_boot *b,
                             const char *rroot, struct ph_chan *chan);
void ph_helper_boot_free(struct ph_boot *b);

#endif
