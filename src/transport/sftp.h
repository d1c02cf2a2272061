/* SPDX-License-Identifier: ISC */
/* A pipelined SFTP v3 client over any byte channel (an SSH channel in
 * production, pipes to sftp-server in tests). Requests are asynchronous:
 * each takes a callback that runs from ph_sftp_pump() when the reply comes.
 * Every length and count the server sends is checked before use. */
#ifndef PH_SFTP_H
#define PH_SFTP_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"
#include "sftpwire.h"   /* the wire's constants and struct ph_sftp_attrs */

struct ph_sftp;

/* The byte pipe under SFTP. write sends all n bytes or fails; read waits
 * up to timeout_ms (-1: forever) and sets *got (0 on timeout). Both return
 * 0 or a negative PHSYNC_E* (PHSYNC_ECONNECT when the peer is gone). */
struct ph_chan {
	int (*write)(void *arg, const void *p, size_t n);
	/* (Given room for PH_CHAN_READ_ROOM bytes, as the client gives it
	 * whenever its buffer has that much free: ssh.c asks for that much
	 * now and then, which keeps libssh's receive window open.) */
	int (*read)(void *arg, void *p, size_t n, int timeout_ms, size_t *got);
	void *arg;
	int silence_ms;   /* give up on a server silent this long (0: 60 s) */
	/* Optional (both or neither): write_some sends what the peer takes now
	 * without waiting (*put may be 0: its window is shut); wait returns
	 * once bytes arrive from the peer or timeout_ms passed. With them the
	 * client reads replies while it cannot write, so it never waits on a
	 * server that waits on it. */
	int (*write_some)(void *arg, const void *p, size_t n, size_t *put);
	int (*wait)(void *arg, int timeout_ms);
	/* Optional: as wait, but returns once bytes came for any channel of
	 * the same connection (ph_sftp_pump_set). */
	int (*wait_any)(void *arg, int timeout_ms);
};

/* Extensions the server offered (bits of ph_sftp_exts()). */
enum {
	PH_EXT_POSIX_RENAME = 1 << 0, PH_EXT_FSYNC = 1 << 1,
	PH_EXT_LIMITS = 1 << 2, PH_EXT_STATVFS = 1 << 3,
	PH_EXT_HARDLINK = 1 << 4, PH_EXT_COPY_DATA = 1 << 5,
	PH_EXT_LSETSTAT = 1 << 6, PH_EXT_CHECK_FILE = 1 << 7
};

#define PH_SFTP_MAX_PACKET (4u << 20) /* largest packet we accept */
#define PH_CHAN_READ_ROOM (4u << 20)  /* see struct ph_chan's read */

struct ph_sftp_reply {
	uint8_t type;          /* PH_FXP_*, or 0 when the request died with the link */
	int err;               /* 0, or PHSYNC_E* for a failure status / dead link */
	uint32_t status;       /* PH_FX_* for STATUS replies */
	const char *msg;       /* server's message for STATUS (terminated, may be "") */
	const uint8_t *data;   /* DATA bytes, HANDLE bytes, EXTENDED_REPLY or NAME body */
	uint32_t len;
	uint32_t count;        /* NAME: number of entries in data */
	struct ph_sftp_attrs attrs; /* ATTRS */
};

typedef void (*ph_sftp_cb)(struct ph_sftp *s, const struct ph_sftp_reply *r,
                           void *arg);

/* Iterates over the entries of a NAME reply. Returns 1 with an entry, 0 at
 * the end, or PHSYNC_EPROTO when the body is malformed. name is not
 * terminated; namelen is its length. */
struct ph_sftp_names {
	const uint8_t *p;
	size_t left;
	uint32_t remaining;
};
void ph_sftp_names_init(struct ph_sftp_names *it, const struct ph_sftp_reply *r);
int ph_sftp_names_next(struct ph_sftp_names *it, const uint8_t **name,
                       uint32_t *namelen, struct ph_sftp_attrs *attrs);

/* Starts SFTP on chan: sends INIT, reads VERSION and the extensions, and
 * asks limits@openssh.com where offered. Returns 0 or PHSYNC_E* with the
 * message in ctx. */
int ph_sftp_new(phsync_ctx *ctx, const struct ph_chan *chan, struct ph_sftp **out);
/* The same over a channel to `phsync serve`: INIT offers helper protocol
 * versions up to offer (docs/PROTOCOL.md); ph_sftp_helper() then says
 * which one the helper agreed to (0: none, plain SFTP). */
int ph_sftp_new_helper(phsync_ctx *ctx, const struct ph_chan *chan, unsigned offer,
                       struct ph_sftp **out);
/* The helper protocol version in use (0: plain SFTP), and the value the
 * server announced even when it was refused (0: none, UINT_MAX: garbage). */
unsigned ph_sftp_helper(const struct ph_sftp *s);
/* Gives up on a server silent this long from now on (ms > 0). */
void ph_sftp_set_timeout(struct ph_sftp *s, int ms);
unsigned ph_sftp_helper_seen(const struct ph_sftp *s);
/* Frees the client; pending callbacks are not run. NULL is a no-op. */
void ph_sftp_free(struct ph_sftp *s);

uint32_t ph_sftp_exts(const struct ph_sftp *s);
/* Request sizes negotiated from limits@openssh.com (else 32 KiB). */
uint32_t ph_sftp_max_read(const struct ph_sftp *s);
uint32_t ph_sftp_max_write(const struct ph_sftp *s);
/* Open-handle limit the server announced (0 = not announced). */
uint64_t ph_sftp_max_handles(const struct ph_sftp *s);
/* 0 while the link is usable, else the PHSYNC_E* it failed with. */
int ph_sftp_dead(const struct ph_sftp *s);
/* Requests sent and not yet answered. */
size_t ph_sftp_inflight(const struct ph_sftp *s);
/* Of those, the ones whose reply has a callback waiting for it. */
size_t ph_sftp_awaited(const struct ph_sftp *s);

/* Sends what is queued, then waits up to timeout_ms for replies and runs
 * their callbacks. Returns 0, or a PHSYNC_E* when the link failed (then every
 * pending callback has run with type 0 and err set). */
int ph_sftp_pump(struct ph_sftp *s, int timeout_ms);
/* ph_sftp_pump over n clients: returns once replies came on any, or
 * timeout_ms passed with none. Clients on channels of one connection
 * (chan.wait_any set) wait on it together; others in turns of 5 ms. A failed link fails its own
 * client's callbacks and is returned; the others are left to the caller
 * (ph_sftp_abort). */
int ph_sftp_pump_set(struct ph_sftp *const *v, size_t n, int timeout_ms);
/* Sends what is queued. */
int ph_sftp_flush(struct ph_sftp *s);
/* Gives up on the link: every pending callback runs now with type 0 and
 * err, and later requests fail with err. For leaving a run early. */
void ph_sftp_abort(struct ph_sftp *s, int err);

/* Request groups: the requests one owner (a file being pushed) has in
 * flight, counted by the client so the owner never counts by hand.
 *
 *   rc = ph_sftp_close(ph_sftp_in_group(s, &f->grp), &f->h, close_cb, f);
 *
 * ph_sftp_in_group(s, g) gives g to the next request queued on s and
 * returns s. When that request is queued (its function returns 0), g's
 * inflight goes up by one; when it is refused (any other return) g is not
 * counted and is let go of all the same: it never reaches a later request.
 * inflight goes down once the request's callback has returned, however
 * the request ended: a reply, the link's death or ph_sftp_abort (type 0),
 * or a write taken back after a stop (PHSYNC_EINTR). So inside a callback
 * its own request still counts, and the owner cannot be let go of there.
 * When inflight falls to 0 this way, idle(arg) runs (when set): there the
 * owner may free g, which the client does not touch afterwards. An owner
 * whose requests may still be in flight must not be freed; ph_sftp_free
 * runs no callbacks and settles no group. A group's requests are ordinary
 * requests otherwise: the same wire bytes, order and callbacks. */
struct ph_sftp_group {
	unsigned inflight;         /* requests queued whose callback has not returned */
	void (*idle)(void *arg);   /* optional: inflight fell to 0 after a callback */
	void *arg;
};
struct ph_sftp *ph_sftp_in_group(struct ph_sftp *s, struct ph_sftp_group *g);

/* A server's file or directory handle, as an OPEN or OPENDIR reply gave it
 * (len 0: none held). Every request on an open file takes one. */
struct ph_sftp_handle {
	uint32_t len;
	uint8_t b[PH_SFTP_MAX_HANDLE];
};
/* Copies the handle of a HANDLE reply into h. Returns 0, or PHSYNC_EPROTO
 * (h untouched) when r is not a HANDLE reply of 1 to PH_SFTP_MAX_HANDLE
 * bytes. */
int ph_sftp_handle_set(struct ph_sftp_handle *h, const struct ph_sftp_reply *r);

/* Asynchronous requests: return 0 once queued, or a PHSYNC_E*. A NULL cb
 * means nobody needs the answer. Paths are NUL-terminated byte strings. */
int ph_sftp_open(struct ph_sftp *s, const char *path, uint32_t pflags,
                 const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg);
int ph_sftp_opendir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg);
int ph_sftp_readdir(struct ph_sftp *s, const struct ph_sftp_handle *h,
                    ph_sftp_cb cb, void *arg);
int ph_sftp_close(struct ph_sftp *s, const struct ph_sftp_handle *h,
                  ph_sftp_cb cb, void *arg);
int ph_sftp_read(struct ph_sftp *s, const struct ph_sftp_handle *h,
                 uint64_t off, uint32_t len, ph_sftp_cb cb, void *arg);
int ph_sftp_write(struct ph_sftp *s, const struct ph_sftp_handle *h,
                  uint64_t off, const void *data, uint32_t len, ph_sftp_cb cb,
                  void *arg);
/* A WRITE whose data a callback puts straight into the send buffer (no
 * intermediate copy): fill(fill_arg, dst, len) returns 0, or a PHSYNC_E*
 * that cancels the request (nothing is queued then). */
typedef int (*ph_sftp_fill_fn)(void *fill_arg, void *dst, uint32_t len);
int ph_sftp_write_fill(struct ph_sftp *s, const struct ph_sftp_handle *h,
                       uint64_t off, uint32_t len, ph_sftp_fill_fn fill,
                       void *fill_arg, ph_sftp_cb cb, void *arg);
/* How a stat treats a symlink at the path: PH_STAT follows it, PH_LSTAT
 * describes the link itself. */
enum ph_stat_how { PH_STAT = 0, PH_LSTAT = 1 };
int ph_sftp_stat(struct ph_sftp *s, int lstat, const char *path, ph_sftp_cb cb,
                 void *arg);
int ph_sftp_fstat(struct ph_sftp *s, const struct ph_sftp_handle *h, ph_sftp_cb cb,
                  void *arg);
int ph_sftp_setstat(struct ph_sftp *s, const char *path,
                    const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg);
int ph_sftp_fsetstat(struct ph_sftp *s, const struct ph_sftp_handle *h,
                     const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg);
int ph_sftp_mkdir(struct ph_sftp *s, const char *path,
                  const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg);
int ph_sftp_remove(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg);
int ph_sftp_rmdir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg);
/* RENAME, or posix-rename@openssh.com (replaces the target) when offered
 * and posix is PH_RENAME_POSIX. */
enum { PH_RENAME_PLAIN = 0, PH_RENAME_POSIX = 1 };
int ph_sftp_rename(struct ph_sftp *s, const char *from, const char *to,
                   int posix, ph_sftp_cb cb, void *arg);
/* fsync@openssh.com; PHSYNC_EUNSUPPORTED when the server lacks it. */
int ph_sftp_fsync(struct ph_sftp *s, const struct ph_sftp_handle *h,
                  ph_sftp_cb cb, void *arg);

/* copy-data (draft-ietf-secsh-filexfer-extensions-00 section 7, offered by
 * OpenSSH's sftp-server): the server copies len bytes (> 0) at roff of the
 * file open for reading as rh into the file open for writing as wh at woff,
 * without the bytes crossing the link. A server that meets the end of the
 * read file first answers a failure (OpenSSH: SSH_FX_EOF). Returns
 * PHSYNC_EUNSUPPORTED when the server did not offer it. */
int ph_sftp_copy_data(struct ph_sftp *s, const struct ph_sftp_handle *rh, uint64_t roff,
                      uint64_t len, const struct ph_sftp_handle *wh, uint64_t woff,
                      ph_sftp_cb cb, void *arg);

/* check-file-handle (draft-ietf-secsh-filexfer-extensions-00 section 3;
 * ProFTPD's mod_sftp, Apache MINA SSHD as in Android SFTP server apps,
 * though neither lists it in a v3 VERSION, so a server's first answer is
 * the test): the server hashes open file h from off for len bytes (len a
 * multiple of block, block >= 256) block by block, with the first of the
 * comma-separated algs it knows. Its EXTENDED_REPLY is read with
 * ph_sftp_check_file_parse. */
int ph_sftp_check_file(struct ph_sftp *s, const struct ph_sftp_handle *h, const char *algs,
                       uint64_t off, uint64_t len, uint32_t block, ph_sftp_cb cb, void *arg);
/* The algorithm and the n digests of a check-file reply, in either shape
 * servers send: ProFTPD "alg, digests" with nothing between them, MINA
 * "check-file, alg, each digest as a string". *alg points into the reply
 * (alglen bytes); the digests (dlen bytes each, the size the caller knows
 * for *alg, so a reply of another length is refused) are copied to out.
 * Returns 0, or PHSYNC_EPROTO for any other shape. */
int ph_sftp_check_file_parse(const struct ph_sftp_reply *r, const uint8_t **alg,
                             uint32_t *alglen, uint32_t (*dlen_of)(const uint8_t *alg,
                                                                    uint32_t alglen),
                             uint32_t n, uint8_t *out);

/* Helper requests (ph_sftp_helper() >= 1; else PHSYNC_EUNSUPPORTED).
 * sig: the block signature of open file h, read now (EXTENDED_REPLY with
 * the signature bytes; block_len 0 lets the helper choose).
 * delta_start: the signature of our old copy; the delta of open file h
 * against it is then read in order with delta_read (DATA replies of at
 * most len bytes from delta offset doff, EOF status at its end). */
int ph_sftp_helper_sig(struct ph_sftp *s, const struct ph_sftp_handle *h, uint32_t block_len,
                       ph_sftp_cb cb, void *arg);
int ph_sftp_helper_delta_start(struct ph_sftp *s, const struct ph_sftp_handle *h,
                               const void *sig, size_t siglen, ph_sftp_cb cb, void *arg);
int ph_sftp_helper_delta_read(struct ph_sftp *s, const struct ph_sftp_handle *h,
                              uint64_t doff, uint32_t len, ph_sftp_cb cb, void *arg);

/* Synchronous helpers for the few one-off calls (setup, tests). */
int ph_sftp_stat_sync(struct ph_sftp *s, int lstat, const char *path,
                      struct ph_sftp_attrs *a);
int ph_sftp_mkdir_sync(struct ph_sftp *s, const char *path, uint32_t mode);
int ph_sftp_remove_sync(struct ph_sftp *s, const char *path);
int ph_sftp_rmdir_sync(struct ph_sftp *s, const char *path);
/* Opens path, reads up to len[i] bytes at off[i] into buf[i] (n <= 4, sent
 * at once), closes. got[i] is what came (0: EOF; a server may send less).
 * Returns 0 or PHSYNC_E*. */
int ph_sftp_read_ranges_sync(struct ph_sftp *s, const char *path, const uint64_t *off,
                             const uint32_t *len, uint8_t *const *buf, uint32_t *got,
                             size_t n);
/* Plain RENAME: never replaces an existing target on OpenSSH's server. */
int ph_sftp_rename_sync(struct ph_sftp *s, const char *from, const char *to);
/* Synchronous one-offs (pair, doctor): OPEN into h, WRITE all of data in
 * max_write pieces, CLOSE, fsync@openssh.com, SETSTAT,
 * posix-rename@openssh.com (PHSYNC_EUNSUPPORTED when not offered). Each returns 0 or PHSYNC_E*. */
int ph_sftp_open_sync(struct ph_sftp *s, const char *path, uint32_t pflags,
                      const struct ph_sftp_attrs *a, struct ph_sftp_handle *h);
int ph_sftp_write_sync(struct ph_sftp *s, const struct ph_sftp_handle *h, uint64_t off,
                       const void *data, size_t len);
int ph_sftp_close_sync(struct ph_sftp *s, const struct ph_sftp_handle *h);
int ph_sftp_fsync_sync(struct ph_sftp *s, const struct ph_sftp_handle *h);
int ph_sftp_setstat_sync(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a);
int ph_sftp_posix_rename_sync(struct ph_sftp *s, const char *from, const char *to);

/* statvfs@openssh.com of the file system holding path: fragment size,
 * blocks, blocks available to the user, longest name. */
struct ph_sftp_statvfs {
	uint64_t frsize, blocks, bavail, namemax;
};
int ph_sftp_statvfs_sync(struct ph_sftp *s, const char *path, struct ph_sftp_statvfs *st);

/* Runs the pump until *flag becomes nonzero. */
int ph_sftp_wait(struct ph_sftp *s, const int *flag);

/* Translates an SFTP status code to PHSYNC_E* (the one place that does). */
int ph_sftp_status_err(uint32_t status);

#endif
