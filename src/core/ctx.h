/* SPDX-License-Identifier: ISC */
/* Internal context: the error buffer and the interrupt flag. */
#ifndef PH_CTX_H
#define PH_CTX_H

#include <stdarg.h>
#include <stdatomic.h>
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

/* Set from a signal handler (phsync_ctx_interrupt) and from other threads
 * (a watcher's, a run's stopping its walk), read at each safe point: an
 * atomic, and one a handler may store to without a lock. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the interrupt flag needs a lock-free int");

struct phsync_ctx {
	char err[1024];
	atomic_int errbusy;      /* a message being written (ph_err) */
	atomic_int interrupted;
};

/* Records a formatted message as the context's error and returns code, so
 * callers can write `return ph_err(ctx, PHSYNC_EIO, "...", ...)`.
 * ctx may be NULL (the message is dropped). Threads of one run may fail
 * at once (the records' half and the listing): each message is written
 * whole, the last one stays. */
int ph_err(phsync_ctx *ctx, int code, const char *fmt, ...) PH_PRINTF(3, 4);

/* Maps an errno value to the nearest PHSYNC_E* code. */
int ph_err_from_errno(int e);

#endif
