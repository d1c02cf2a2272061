/* SPDX-License-Identifier: ISC */
/* Scripted SFTP servers for the client's unit tests (test_sftp.c,
 * test_sftp_group.c; tests/CMakeLists.txt links ut_sftp.c into both): a
 * channel over descriptors, a server end over a socketpair that the test
 * writes replies into, and a channel in memory whose window the test sets. */
#ifndef UT_SFTP_H
#define UT_SFTP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ctx.h"
#include "sftp.h"

/* A channel over descriptors (arg: struct ut_fds): writes all of a buffer
 * to wfd; reads what rfd has within the timeout (nothing: 0 bytes). */
struct ut_fds {
	int rfd, wfd;
};
int ut_fd_write(void *arg, const void *p, size_t n);
int ut_fd_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got);

/* A client on one end of a socketpair; the test is the server on the
 * other. The server's VERSION 3 with no extensions (so no fsync, and
 * request ids start at 1) is sent before the client is made. SIGPIPE is
 * ignored. */
struct ut_link {
	struct ut_fds fds;   /* the client's end */
	int server;          /* the server's end; -1 once the test closed it */
	phsync_ctx *ctx;
	struct ph_sftp *s;
};
void ut_link_open(struct ut_link *l);
void ut_link_close(struct ut_link *l);
/* The server answers request id with STATUS OK. */
void ut_answer_ok(struct ut_link *l, uint32_t id);

/* A channel in memory (arg: struct ut_mem): the server answers VERSION 3
 * and then nothing; what is sent is kept in sent; write_some takes window
 * bytes and then says "shut"; the wait numbered stop_at_wait "receives"
 * Ctrl-C (ctx->interrupted) and opens the window. */
struct ut_mem {
	struct ph_buf sent;
	size_t window;
	int gave_version;
	int waits;
	int stop_at_wait;
	phsync_ctx *ctx;
};
/* The channel over m. */
struct ph_chan ut_mem_chan(struct ut_mem *m);

#endif
