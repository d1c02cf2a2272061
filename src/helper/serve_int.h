/* SPDX-License-Identifier: ISC */
/* What the files of the remote helper share: the server (struct ph_serve),
 * its handle table, and the functions each file offers the others. Calls go
 * one way: serve.c (the session, the packet loop and the dispatch) calls
 * serve_fs.c (the SFTP v3 file requests), serve_ext.c (the OpenSSH
 * extensions) and serve_delta.c (phsync's signature and delta requests);
 * those call serve_handle.c (the handle table, writes through a handle),
 * which calls serve_reply.c (the reply builders and a request's path).
 * Internal to src/helper. */
#ifndef PH_SERVE_INT_H
#define PH_SERVE_INT_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "phsync/delta.h"
#include "buf.h"
#include "confine.h"
#include "reap.h"
#include "serve.h"
#include "sftpwire.h"

#define SERVE_MAX_HANDLES 256
#define SERVE_MAX_DELTAS 64            /* deltas under way at once (memory bound) */
#define SERVE_MAX_NAMES 512            /* entries in one READDIR reply */
#define SERVE_NAMES_BYTES (64u << 10)  /* ... and bytes */
#define SERVE_WRITEBACK_STEP (1u << 20) /* writeback starts per this much written */
#define SERVE_SPLICE_MIN (64u << 10)   /* smaller READs are copied: a move costs
                                          three calls, a copy goes out with the
                                          next replies in one write */

struct delta {
	phsync_sig *sig;
	phsync_diff *diff;
	uint64_t file_off;           /* next file offset to read */
	uint64_t file_end;           /* its size at delta-start: read no further */
	uint64_t out_off;            /* delta bytes produced so far */
	int eof, done;
};

struct handle {
	int used;
	uint32_t gen;
	int fd;                      /* a file, or -1 */
	DIR *dir;                    /* a folder, or NULL */
	int readable, writable;
	int nosplice;                /* its file system (or the OS) moves no pages */
	uint64_t wb_lo, wb_hi;       /* written, its writeback not started yet */
	struct delta *delta;
};

struct ph_serve {
	char root[PH_CONFINE_MAX_PATH];
	size_t rootlen;
	int inited;
	unsigned version;            /* helper protocol agreed, 0: plain SFTP */
	struct handle h[SERVE_MAX_HANDLES];
	uint32_t gen;
	unsigned ndeltas;
	struct ph_reap *reap;        /* closes what renames and removes replaced */
	int out_fd;                  /* the sink (ph_serve_sink), or -1 */
	int spipe[2];                /* READ's pages on their way to out_fd, or -1 */
};

/* The request handlers below take the request's id and the reader after
 * it, append their reply (a STATUS on any failure the client may hear) to
 * out, and return 0, or -1 when not even that could be written. */

/* ---- serve_reply.c: replies and a request's path ------------------------ */

/* Starts a reply (its length patched by ph_serve_end): where it starts, or
 * SIZE_MAX when out is full. */
size_t ph_serve_begin(struct ph_buf *out, uint8_t type, uint32_t id);
/* Ends the reply begun at start; rc != 0 (a put failed) takes it back and
 * returns -1. */
int ph_serve_end(struct ph_buf *out, size_t start, int rc);
/* Starts a DATA reply of at most len bytes, to be written at out->data +
 * *at: where it starts, or SIZE_MAX (out as it was) when out cannot hold
 * it. Until ph_serve_data_end, out->len = start takes it back. */
size_t ph_serve_data_begin(struct ph_buf *out, uint32_t id, uint32_t len, size_t *at);
/* Ends the DATA reply begun at start with the n bytes written at *at. */
int ph_serve_data_end(struct ph_buf *out, size_t start, size_t n);
/* Appends the whole header of a DATA reply whose n bytes follow it outside
 * out (moved to the sink from a pipe): 0, or -1 when out is full. */
int ph_serve_data_head(struct ph_buf *out, uint32_t id, size_t n);
/* Writes out's replies to fd and empties out: 0, or -1 when fd takes no
 * more (the client left). */
int ph_serve_flush(int fd, struct ph_buf *out);
/* A STATUS reply with code and message. */
int ph_serve_status(struct ph_buf *out, uint32_t id, uint32_t code, const char *msg);
/* A STATUS reply for the errno (or PH_CONFINE_E*) e. */
int ph_serve_status_errno(struct ph_buf *out, uint32_t id, int e);
/* A stat as the wire's attributes (times clamped to what the fields hold). */
int ph_serve_put_attrs(struct ph_buf *out, const struct stat *st);
/* An ATTRS reply. */
int ph_serve_attrs_reply(struct ph_buf *out, uint32_t id, const struct stat *st);
/* Reads a path and resolves it beneath the root: -1 when the field is
 * malformed, else 0 with *err the resolution's errno (0: l holds it). l is
 * always safe to ph_loc_close. */
int ph_serve_rd_loc(struct ph_serve *s, struct ph_rd *r, struct ph_loc *l, int *err);
/* Reads and resolves a request's leading path; 0 with *replied 0 and l
 * resolved, or with *replied 1 after the error reply (what names a
 * malformed request); -1 when even that could not be written. */
int ph_serve_take_path(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                       const char *what, struct ph_loc *l, int *replied);

/* ---- serve_handle.c: the handle table ----------------------------------- */

/* The open handle a request names, or NULL (malformed, unknown or stale). */
struct handle *ph_serve_handle_get(struct ph_serve *s, struct ph_rd *r);
/* A free slot, cleared, with a new generation (*idx its index); NULL when
 * all are taken. */
struct handle *ph_serve_handle_new(struct ph_serve *s, uint32_t *idx);
/* A HANDLE reply naming slot idx. */
int ph_serve_handle_reply(struct ph_buf *out, uint32_t id, uint32_t idx, const struct handle *h);
/* Frees a delta and counts it gone; NULL is a no-op. */
void ph_serve_delta_free(struct ph_serve *s, struct delta *d);
/* Closes h's file or folder, frees its delta and clears the slot. */
void ph_serve_handle_close(struct ph_serve *s, struct handle *h);
/* Writes all of p at off: 0 or an errno. */
int ph_serve_write_all(int fd, const uint8_t *p, size_t n, uint64_t off);
/* Bytes [off, off + n) of h were written: starts their writeback in steps
 * (a hint, nothing depends on it). */
void ph_serve_wrote(struct handle *h, uint64_t off, uint64_t n);

/* ---- serve_fs.c: the SFTP v3 file requests ------------------------------ */

int ph_serve_open(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_opendir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_readdir(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_write(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
/* STAT and LSTAT alike (no symlink is followed below the root). */
int ph_serve_stat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_fstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
/* SETSTAT, or FSETSTAT when byhandle. */
int ph_serve_setstat(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                     int byhandle);
/* REMOVE, MKDIR or RMDIR (type). */
int ph_serve_path_op(struct ph_serve *s, uint8_t type, uint32_t id, struct ph_rd *r,
                     struct ph_buf *out);
/* RENAME (never replaces), or posix-rename@openssh.com when posix. */
int ph_serve_rename(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out,
                    int posix);

/* ---- serve_ext.c: the OpenSSH extensions -------------------------------- */

int ph_serve_statvfs(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_limits(uint32_t id, struct ph_buf *out);
int ph_serve_copy_data(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_fsync(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);

/* ---- serve_delta.c: phsync's signatures and deltas ---------------------- */

int ph_serve_sig(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_delta_start(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);
int ph_serve_delta_read(struct ph_serve *s, uint32_t id, struct ph_rd *r, struct ph_buf *out);

#endif
