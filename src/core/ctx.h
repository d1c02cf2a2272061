/* SPDX-License-Identifier: ISC */
/* Internal context: the error buffer and the interrupt flag. */
#ifndef PH_CTX_H
#define PH_CTX_H

#include <signal.h>
#include <stdarg.h>

#include "phsync/phsync.h"

struct phsync_ctx {
	char err[1024];
	volatile sig_atomic_t interrupted;
};

/* Records a formatted message as the context's error and returns code, so
 * callers can write `return ph_err(ctx, PHSYNC_EIO, "...", ...)`.
 * ctx may be NULL (the message is dropped). */
int ph_err(phsync_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Maps an errno value to the nearest PHSYNC_E* code. */
int ph_err_from_errno(int e);

#endif
