/* SPDX-License-Identifier: ISC */
/* phsync error codes: every library function returns 0 or one of these
 * negative values; the human message lives in the caller's context. */
#ifndef PHSYNC_ERROR_H
#define PHSYNC_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* No code is -1: a bare -1 (a static helper's "no", a libc failure)
 * that leaks out of a function is then never taken for one of these;
 * phsync_strerror calls it "unknown error". */
enum phsync_error {
	PHSYNC_OK = 0,
	PHSYNC_ENOMEM = -2,      /* out of memory, or a size cap was hit */
	PHSYNC_EIO = -3,         /* local I/O error */
	PHSYNC_ECONNECT = -4,    /* could not reach or lost the server */
	PHSYNC_EAUTH = -5,       /* authentication failed */
	PHSYNC_EHOSTKEY = -6,    /* host key differs from known_hosts */
	PHSYNC_EHOSTUNKNOWN = -7,/* host key unknown and not accepted */
	PHSYNC_EPROTO = -8,      /* the peer broke the protocol */
	PHSYNC_ENOENT = -9,      /* no such file or folder */
	PHSYNC_EPERM = -10,      /* permission denied */
	PHSYNC_ENOSPC = -11,     /* no space left */
	PHSYNC_EUNSAFE = -12,    /* a name or path that would escape the root */
	PHSYNC_EINTR = -13,      /* interrupted by a signal */
	PHSYNC_EPARTIAL = -14,   /* some files failed, the rest synced */
	PHSYNC_ECORRUPT = -15,   /* malformed or mismatching signature/delta */
	PHSYNC_ENOTDIR = -16,    /* expected a folder */
	PHSYNC_EREMOTE = -17,    /* the server reported a failure */
	PHSYNC_EUNSUPPORTED = -18,/* the peer lacks a needed feature */
	PHSYNC_ELOCKED = -19,     /* another run holds this sync pair */
	PHSYNC_ECONFLICT = -20,   /* files changed on both sides: kept beside */
	PHSYNC_EREFUSED = -21,    /* refused for safety (e.g. deletes over the limit) */
	PHSYNC_EINVAL = -22      /* bad argument or usage */
};

/* Returns a constant English description of a phsync error code. */
const char *phsync_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
