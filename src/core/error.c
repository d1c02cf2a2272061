/* SPDX-License-Identifier: ISC */
/* Error codes and the context's error buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"

static const char *const messages[] = {
	[0] = "success",
	[2] = "out of memory or over a size limit",
	[3] = "local input/output error",
	[4] = "connection failed",
	[5] = "authentication failed",
	[6] = "host key mismatch",
	[7] = "unknown host key",
	[8] = "protocol error from peer",
	[9] = "no such file or folder",
	[10] = "permission denied",
	[11] = "no space left on device",
	[12] = "unsafe name or path",
	[13] = "interrupted",
	[14] = "some files failed",
	[15] = "corrupt or mismatching data",
	[16] = "not a folder",
	[17] = "server reported a failure",
	[18] = "not supported by the peer",
	[19] = "another run holds this sync pair",
	[20] = "changed on both sides; the incoming version was kept beside",
	[21] = "refused for safety",
	[22] = "invalid argument",
};

const char *
phsync_strerror(int err)
{
	size_t i = err <= 0 ? (size_t)-(long)err : (size_t)-1;

	if (i < sizeof(messages) / sizeof(messages[0]) && messages[i] != NULL)
		return messages[i];
	return "unknown error";
}

int
ph_err(phsync_ctx *ctx, int code, const char *fmt, ...)
{
	char msg[sizeof(ctx->err)];
	va_list ap;

	if (ctx == NULL)
		return code;
	/* Made apart (an argument may be the old message), then put in
	 * place while no other thread writes one. */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	while (atomic_exchange_explicit(&ctx->errbusy, 1, memory_order_acquire) != 0)
		;
	memcpy(ctx->err, msg, strlen(msg) + 1);
	atomic_store_explicit(&ctx->errbusy, 0, memory_order_release);
	return code;
}

int
ph_err_from_errno(int e)
{
	switch (e) {
	case 0:
		return PHSYNC_OK;
	case ENOMEM:
		return PHSYNC_ENOMEM;
	case ENOENT:
		return PHSYNC_ENOENT;
	case EACCES:
	case EPERM:
	case EROFS:
		return PHSYNC_EPERM;
	case ENOSPC:
#ifdef EDQUOT   /* none on Windows */
	case EDQUOT:
#endif
	case EFBIG:
		return PHSYNC_ENOSPC;
	case ENOTDIR:
		return PHSYNC_ENOTDIR;
	case ELOOP:
	case EXDEV:
		return PHSYNC_EUNSAFE;
	case EINTR:
		return PHSYNC_EINTR;
	case EINVAL:
		return PHSYNC_EINVAL;
	default:
		return PHSYNC_EIO;
	}
}

int
phsync_ctx_new(phsync_ctx **out)
{
	phsync_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return PHSYNC_ENOMEM;
	*out = ctx;
	return 0;
}

void
phsync_ctx_free(phsync_ctx *ctx)
{
	free(ctx);
}

const char *
phsync_ctx_error(const phsync_ctx *ctx)
{
	return ctx != NULL ? ctx->err : "";
}

void
phsync_ctx_interrupt(phsync_ctx *ctx)
{
	ctx->interrupted = 1;
}
