/* SPDX-License-Identifier: ISC */
/* Internal context: the error buffer and the interrupt flag. */
#ifndef PH_CTX_H
#define PH_CTX_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "phsync/phsync.h"

/* The format attribute of a printf-like function whose text the C
 * library's printf family makes (f: the format's argument, a: the first
 * value's), so formats are checked against that library's dialect.
 * mingw-w64's <stdio.h> names it: gnu_printf when C99 mode gives its own
 * printf, which takes %zu and %lld (phsync's case), ms_printf for
 * Microsoft's. Elsewhere the C library's printf is the compiler's. */
#ifdef __MINGW_PRINTF_FORMAT
#define PH_PRINTF(f, a) __attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#else
#define PH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#endif

struct phsync_ctx {
	char err[1024];
	volatile sig_atomic_t interrupted;
};

/* Records a formatted message as the context's error and returns code, so
 * callers can write `return ph_err(ctx, PHSYNC_EIO, "...", ...)`.
 * ctx may be NULL (the message is dropped). */
int ph_err(phsync_ctx *ctx, int code, const char *fmt, ...) PH_PRINTF(3, 4);

/* Maps an errno value to the nearest PHSYNC_E* code. */
int ph_err_from_errno(int e);

#endif
