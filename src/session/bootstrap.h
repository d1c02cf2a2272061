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
};

/* Picks this phsync's static helper for the remote's architecture (uname
 * -m) and reads it into b (ph_helper_boot_free frees it). Nothing is
 * written on the remote. Returns 0, or PHSYNC_EUNSUPPORTED (no helpers here,
 * no commands or no helper for that machine there) or another error, with
 * the message in ctx. */
int ph_helper_bootstrap(phsync_ctx *ctx, struct ph_ssh *ssh, const struct phsync_options *opts,
                        struct ph_boot *b);
/* The same for an architecture already known (arch as b->arch names it,
 * from the memo of an earlier run): no command runs on the phone. */
int ph_helper_boot_arch(phsync_ctx *ctx, const struct phsync_options *opts, const char *arch,
                        struct ph_boot *b);

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

void ph_helper_boot_free(struct ph_boot *b);

#endif
