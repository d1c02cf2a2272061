/* SPDX-License-Identifier: ISC */
/* Pipelined SFTP v3 client. See sftp.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "ctx.h"
#include "sftp.h"

#define SLOTS 4096 /* requests in flight at most; a power of two */
#define DEFAULT_IO (32u * 1024)
#define MAX_IO (256u * 1024)
#define READ_CHUNK (1u << 20)
#define MAX_EXTS 64
/* After Ctrl-C, how long a send may wait on a server that takes nothing
 * before the link is given up (the README promises a second or two). */
#define STOP_SEND_MS 2000

struct slot {
	uint32_t id;
	uint8_t used;
	ph_sftp_cb cb;
	void *arg;
};

struct ph_sftp {
	phsync_ctx *ctx;
	struct ph_chan chan;
	struct ph_buf out;
	uint8_t *in;       /* receive buffer, inlen bytes valid from inoff */
	size_t incap, inlen, inoff;
	int flushing;      /* a flush is under way (its drain ran callbacks) */
	struct slot *slots;
	uint32_t next_id;
	size_t inflight;
	uint32_t exts;
	uint32_t max_read, max_write;
	uint64_t max_handles;
	int timeout_ms;
	uint64_t last_rx_ms; /* when the server last sent bytes, or when a wait
	                        for it began (the silence clock) */
	int dead;          /* sticky link error */
	uint64_t intr_ms;  /* when a send first saw the stop (0: not yet) */
	unsigned offer;    /* helper protocol version offered in INIT (0: none) */
	unsigned helper;   /* ... and agreed in VERSION (0: plain SFTP) */
	unsigned helper_seen; /* the value the server announced, even if refused */
	char msg[256];     /* STATUS message of the reply being dispatched */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
ph_sftp_status_err(uint32_t status)
{
	switch (status) {
	case PH_FX_OK:
	case PH_FX_EOF:
		return 0;
	case PH_FX_NO_SUCH_FILE:
		return PHSYNC_ENOENT;
	case PH_FX_PERMISSION_DENIED:
		return PHSYNC_EPERM;
	case PH_FX_BAD_MESSAGE:
		return PHSYNC_EPROTO;
	case PH_FX_NO_CONNECTION:
	case PH_FX_CONNECTION_LOST:
		return PHSYNC_ECONNECT;
	case PH_FX_OP_UNSUPPORTED:
		return PHSYNC_EUNSUPPORTED;
	default:
		return PHSYNC_EREMOTE;
	}
}

void
ph_sftp_names_init(struct ph_sftp_names *it, const struct ph_sftp_reply *r)
{
	it->p = r->data;
	it->left = r->len;
	it->remaining = r->type == PH_FXP_NAME ? r->count : 0;
}

int
ph_sftp_names_next(struct ph_sftp_names *it, const uint8_t **name,
                   uint32_t *namelen, struct ph_sftp_attrs *attrs)
{
	struct ph_rd r = { it->p, it->left };
	const uint8_t *lname;
	uint32_t llen;

	if (it->remaining == 0)
		return 0;
	if (ph_rd_str(&r, name, namelen) != 0 || ph_rd_str(&r, &lname, &llen) != 0 ||
	    ph_wire_get_attrs(&r, attrs) != 0)
		return PHSYNC_EPROTO;
	it->p = r.p;
	it->left = r.left;
	it->remaining--;
	return 1;
}

/* Fails every pending request with err; the link is unusable afterwards. */
static int
kill_link(struct ph_sftp *s, int err)
{
	struct ph_sftp_reply rep;
	size_t i;

	if (!s->dead)
		s->dead = err;
	memset(&rep, 0, sizeof(rep));
	rep.err = s->dead;
	rep.msg = "";
	for (i = 0; i < SLOTS && s->inflight > 0; i++) {
		struct slot *sl = &s->slots[i];

		if (!sl->used)
			continue;
		sl->used = 0;
		s->inflight--;
		if (sl->cb != NULL)
			sl->cb(s, &rep, sl->arg);
	}
	return s->dead;
}

/* Starts a request packet: length placeholder, type, id. Returns the
 * packet's offset in the out buffer through *start. */
static int
begin(struct ph_sftp *s, uint8_t type, ph_sftp_cb cb, void *arg, size_t *start)
{
	struct slot *sl;
	uint32_t id;
	int rc;

	if (s->dead)
		return s->dead;
	if (s->inflight >= SLOTS)
		return ph_err(s->ctx, PHSYNC_ENOMEM, "too many SFTP requests in flight");
	do
		id = s->next_id++;
	while (s->slots[id & (SLOTS - 1)].used);
	*start = s->out.len;
	if ((rc = ph_buf_put_u32(&s->out, 0)) != 0 || (rc = ph_buf_put_u8(&s->out, type)) != 0 ||
	    (rc = ph_buf_put_u32(&s->out, id)) != 0) {
		s->out.len = *start;
		return rc;
	}
	sl = &s->slots[id & (SLOTS - 1)];
	sl->id = id;
	sl->cb = cb;
	sl->arg = arg;
	return 0;
}

/* Finishes the packet begun at start (rc from the field writes). */
static int
end(struct ph_sftp *s, size_t start, int rc)
{
	uint32_t id;

	if (rc != 0) {
		s->out.len = start;
		return rc;
	}
	ph_be32_put(s->out.data + start, (uint32_t)(s->out.len - start - 4));
	id = ph_be32_get(s->out.data + start + 5);
	s->slots[id & (SLOTS - 1)].used = 1;
	if (s->inflight++ == 0)
		s->last_rx_ms = now_ms(); /* nothing was owed until now */
	return 0;
}

int
ph_sftp_dead(const struct ph_sftp *s)
{
	return s->dead;
}

void
ph_sftp_abort(struct ph_sftp *s, int err)
{
	kill_link(s, err);
}

static int fill(struct ph_sftp *s, int timeout_ms, size_t *got);
static int drain(struct ph_sftp *s);

/* After a stop (Ctrl-C): takes back every WRITE queued behind the packet
 * the channel is in the middle of (sent up to `sent`), so the requests that
 * clean up (CLOSE, REMOVE of a temp) go out at once instead of behind
 * megabytes of data a slow link would take seconds to carry. A request is
 * never cut in two; every other request (a rename under way) still goes.
 * The callbacks of the writes taken back get PHSYNC_EINTR. */
static void
cancel_writes(struct ph_sftp *s, size_t sent)
{
	struct ph_sftp_reply rep;
	struct slot *gone;
	size_t off = 0, start, put, n = 0, i;

	/* Skip what went out, whole or in part. */
	while (off < sent && off + 4 <= s->out.len)
		off += 4 + (size_t)ph_be32_get(s->out.data + off);
	start = off;
	for (; off + 9 <= s->out.len; off += 4 + (size_t)ph_be32_get(s->out.data + off))
		n += s->out.data[off + 4] == PH_FXP_WRITE;
	if (n == 0 || (gone = malloc(n * sizeof(*gone))) == NULL)
		return; /* (without memory they go out as they would have) */
	n = 0;
	for (off = put = start; off + 9 <= s->out.len;) {
		size_t len = 4 + (size_t)ph_be32_get(s->out.data + off);
		uint32_t id = ph_be32_get(s->out.data + off + 5);
		struct slot *sl = &s->slots[id & (SLOTS - 1)];

		if (s->out.data[off + 4] == PH_FXP_WRITE && sl->used && sl->id == id) {
			gone[n++] = *sl;
			sl->used = 0;
			s->inflight--;
		} else {
			if (put != off)
				memmove(s->out.data + put, s->out.data + off, len);
			put += len;
		}
		off += len;
	}
	s->out.len = put;
	memset(&rep, 0, sizeof(rep));
	rep.type = PH_FXP_STATUS;
	rep.status = PH_FX_FAILURE;
	rep.err = PHSYNC_EINTR;
	rep.msg = "interrupted";
	/* Their callbacks may queue more (a CLOSE, a REMOVE): after the rest. */
	for (i = 0; i < n; i++)
		if (gone[i].cb != NULL)
			gone[i].cb(s, &rep, gone[i].arg);
	free(gone);
}

/* A send that goes on after a stop: the writes not yet sent are taken
 * back, and a server that takes nothing for STOP_SEND_MS is given up. */
static int
send_stopping(struct ph_sftp *s, size_t sent)
{
	if (s->ctx == NULL || !s->ctx->interrupted)
		return 0;
	if (s->intr_ms == 0)
		s->intr_ms = now_ms();
	cancel_writes(s, sent);
	if (now_ms() - s->intr_ms >= STOP_SEND_MS)
		return kill_link(s, ph_err(s->ctx, PHSYNC_EINTR, "interrupted; the server took "
		                           "nothing more for %d s: the link was given up",
		                           STOP_SEND_MS / 1000));
	return 0;
}

/* Sends what is queued. Over a channel that can say when the server's
 * window is shut (write_some), the replies are read meanwhile: a server
 * waits for us to take its replies before it takes more requests, and a
 * client blocked in a write with the replies piling up would wait for it
 * forever (reads of blocks while writes stream, through a slow link). */
static int
flush_out(struct ph_sftp *s)
{
	size_t sent = 0, put, got;
	int rc = 0;

	if (s->chan.write_some == NULL) {
		rc = s->chan.write(s->chan.arg, s->out.data, s->out.len);
		s->out.len = 0;
		if (rc != 0)
			return kill_link(s, ph_err(s->ctx, rc, "lost the connection while sending"));
		return 0;
	}
	while (sent < s->out.len) {
		if ((rc = send_stopping(s, sent)) != 0)
			return rc;
		if (sent >= s->out.len)
			break;
		if ((rc = s->chan.write_some(s->chan.arg, s->out.data + sent, s->out.len - sent,
		                             &put)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "lost the connection while sending"));
		sent += put;
		if (put > 0)
			continue;
		/* The window is shut: take the replies (dispatched only when the
		 * buffer is full; their callbacks may queue more to send). */
		if (s->incap - s->inlen < READ_CHUNK && (rc = drain(s)) != 0)
			return kill_link(s, rc);
		if ((rc = fill(s, 0, &got)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "the server closed the connection"));
		if (got > 0)
			continue;
		if (now_ms() - s->last_rx_ms >= (uint64_t)s->timeout_ms)
			return kill_link(s, ph_err(s->ctx, PHSYNC_ECONNECT,
			                           "the server took nothing for %d s; gave up "
			                           "(--timeout)", s->timeout_ms / 1000));
		/* Wakes when the window opens or a reply comes (ssh.c). */
		if ((rc = s->chan.wait(s->chan.arg, 100)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "lost the connection while sending"));
	}
	s->out.len = 0;
	return 0;
}

int
ph_sftp_flush(struct ph_sftp *s)
{
	int rc;

	if (s->dead)
		return s->dead;
	/* A callback run while a flush waits on the window (drain) may queue
	 * requests, never send: the flush under way sends them too. */
	if (s->out.len == 0 || s->flushing)
		return 0;
	s->flushing = 1;
	rc = flush_out(s);
	s->flushing = 0;
	return rc;
}

/* Dispatches one complete packet (type + body, length prefix removed). */
static int
dispatch(struct ph_sftp *s, const uint8_t *p, uint32_t len)
{
	struct ph_rd r = { p, len };
	struct ph_sftp_reply rep;
	struct slot *sl;
	uint8_t type;
	uint32_t id, n;
	const uint8_t *str;

	memset(&rep, 0, sizeof(rep));
	rep.msg = "";
	if (ph_rd_u8(&r, &type) != 0 || ph_rd_u32(&r, &id) != 0)
		return ph_err(s->ctx, PHSYNC_EPROTO, "server sent a truncated SFTP packet");
	sl = &s->slots[id & (SLOTS - 1)];
	if (!sl->used || sl->id != id)
		return ph_err(s->ctx, PHSYNC_EPROTO,
		              "server answered SFTP request %u that is not pending", id);
	rep.type = type;
	switch (type) {
	case PH_FXP_STATUS:
		if (ph_rd_u32(&r, &rep.status) != 0)
			goto bad;
		/* The message and language tag are optional in practice. */
		if (ph_rd_str(&r, &str, &n) == 0) {
			if (n >= sizeof(s->msg))
				n = sizeof(s->msg) - 1;
			memcpy(s->msg, str, n);
			s->msg[n] = '\0';
			rep.msg = s->msg;
		}
		rep.err = ph_sftp_status_err(rep.status);
		break;
	case PH_FXP_HANDLE:
		if (ph_rd_str(&r, &rep.data, &rep.len) != 0 || rep.len == 0 ||
		    rep.len > PH_SFTP_MAX_HANDLE)
			goto bad;
		break;
	case PH_FXP_DATA:
		if (ph_rd_str(&r, &rep.data, &rep.len) != 0)
			goto bad;
		break;
	case PH_FXP_NAME:
		if (ph_rd_u32(&r, &rep.count) != 0)
			goto bad;
		/* An entry takes at least 12 bytes: reject impossible counts now. */
		if (rep.count > r.left / 12)
			goto bad;
		rep.data = r.p;
		rep.len = (uint32_t)r.left;
		break;
	case PH_FXP_ATTRS:
		if (ph_wire_get_attrs(&r, &rep.attrs) != 0)
			goto bad;
		break;
	case PH_FXP_EXTENDED_REPLY:
		rep.data = r.p;
		rep.len = (uint32_t)r.left;
		break;
	default:
		goto bad;
	}
	sl->used = 0;
	s->inflight--;
	if (sl->cb != NULL)
		sl->cb(s, &rep, sl->arg);
	return 0;
bad:
	return ph_err(s->ctx, PHSYNC_EPROTO, "server sent a malformed SFTP reply (type %u)",
	              type);
}

/* Runs the callbacks of every complete packet in the receive buffer. */
static int
drain(struct ph_sftp *s)
{
	while (s->inlen >= 4) {
		const uint8_t *p = s->in + s->inoff;
		uint32_t plen = ph_be32_get(p);
		int rc;

		if (plen < 5 || plen > PH_SFTP_MAX_PACKET)
			return ph_err(s->ctx, PHSYNC_EPROTO,
			              "server sent an SFTP packet of %u bytes (allowed 5 to %u)",
			              plen, PH_SFTP_MAX_PACKET);
		if (s->inlen - 4 < plen)
			break;
		s->inoff += 4 + (size_t)plen;
		s->inlen -= 4 + (size_t)plen;
		if ((rc = dispatch(s, p + 4, plen)) != 0)
			return rc;
	}
	if (s->inlen == 0)
		s->inoff = 0;
	return 0;
}

/* Reads what the channel has (waiting up to timeout_ms). *got tells. */
static int
fill(struct ph_sftp *s, int timeout_ms, size_t *got)
{
	int rc;

	size_t room;

	/* Keep the bytes near the front, so the memory this buffer touches
	 * stays about two reads' worth unless a packet really is larger. */
	if (s->inoff > 0 && (s->inoff >= READ_CHUNK || s->incap - s->inoff - s->inlen < READ_CHUNK)) {
		memmove(s->in, s->in + s->inoff, s->inlen);
		s->inoff = 0;
	}
	room = s->incap - s->inoff - s->inlen;
	if (room > READ_CHUNK)
		room = READ_CHUNK;
	*got = 0;
	rc = s->chan.read(s->chan.arg, s->in + s->inoff + s->inlen, room, timeout_ms, got);
	if (rc != 0)
		return rc;
	/* Only whole packets are ever parsed, and only bytes that arrived. */
	if (*got > room)
		return ph_err(s->ctx, PHSYNC_EPROTO, "the channel returned more bytes than asked");
	if (*got > 0)
		s->last_rx_ms = now_ms();
	s->inlen += *got;
	return 0;
}

int
ph_sftp_pump(struct ph_sftp *s, int timeout_ms)
{
	uint64_t start = now_ms();
	size_t got;
	int rc;

	if ((rc = ph_sftp_flush(s)) != 0)
		return rc;
	/* Replies may already sit in the buffer (read with an earlier packet). */
	if ((rc = drain(s)) != 0)
		return kill_link(s, rc);
	if (s->inflight == 0)
		return 0;
	for (;;) {
		int wait = timeout_ms;

		if (wait < 0 || wait > 250)
			wait = 250;
		if ((rc = fill(s, wait, &got)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "the server closed the connection"));
		if (got > 0)
			break;
		if (s->ctx != NULL && s->ctx->interrupted)
			return PHSYNC_EINTR;
		/* The silence clock runs across calls: callers pump in short
		 * slices, and a hung server must still end the run. */
		if (now_ms() - s->last_rx_ms >= (uint64_t)s->timeout_ms)
			return kill_link(s, ph_err(s->ctx, PHSYNC_ECONNECT,
			                           "the server sent nothing for %d s; gave up "
			                           "(--timeout)", s->timeout_ms / 1000));
		if (timeout_ms >= 0 && now_ms() - start >= (uint64_t)timeout_ms)
			return 0;
	}
	/* Take everything already buffered without waiting again; what the
	 * callbacks queue goes out between reads, so the server is never left
	 * idle while replies stream in (a delta's next read, the next file). */
	do {
		if ((rc = drain(s)) != 0)
			return kill_link(s, rc);
		if ((rc = ph_sftp_flush(s)) != 0)
			return rc;
		if (s->inflight == 0)
			break;
		if ((rc = fill(s, 0, &got)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "the server closed the connection"));
	} while (got > 0);
	return drain(s) != 0 ? kill_link(s, PHSYNC_EPROTO) : 0;
}

int
ph_sftp_wait(struct ph_sftp *s, const int *flag)
{
	int rc;

	while (!*flag) {
		if ((rc = ph_sftp_pump(s, -1)) != 0)
			return rc;
	}
	return 0;
}

static int
simple_path(struct ph_sftp *s, uint8_t type, const char *path,
            const struct ph_sftp_attrs *a, int with_attrs, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin(s, type, cb, arg, &start);

	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, path);
	if (rc == 0 && with_attrs)
		rc = ph_wire_put_attrs(&s->out, a);
	return end(s, start, rc);
}

static int
simple_handle(struct ph_sftp *s, uint8_t type, const uint8_t *h, uint32_t hlen,
              ph_sftp_cb cb, void *arg, size_t *start)
{
	int rc = begin(s, type, cb, arg, start);

	if (rc != 0)
		return rc;
	return ph_buf_put_str(&s->out, h, hlen);
}

/* A request whose only field is the handle. */
static int
handle_only(struct ph_sftp *s, uint8_t type, const uint8_t *h, uint32_t hlen, ph_sftp_cb cb,
            void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, type, h, hlen, cb, arg, &start);

	return end(s, start, rc);
}

int
ph_sftp_open(struct ph_sftp *s, const char *path, uint32_t pflags,
             const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin(s, PH_FXP_OPEN, cb, arg, &start);

	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, path);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, pflags);
	if (rc == 0)
		rc = ph_wire_put_attrs(&s->out, a);
	return end(s, start, rc);
}

int
ph_sftp_opendir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_OPENDIR, path, NULL, 0, cb, arg);
}

int
ph_sftp_readdir(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, ph_sftp_cb cb,
                void *arg)
{
	return handle_only(s, PH_FXP_READDIR, h, hlen, cb, arg);
}

int
ph_sftp_close(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, ph_sftp_cb cb,
              void *arg)
{
	return handle_only(s, PH_FXP_CLOSE, h, hlen, cb, arg);
}

int
ph_sftp_read(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint64_t off,
             uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_READ, h, hlen, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, len);
	return end(s, start, rc);
}

int
ph_sftp_write(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint64_t off,
              const void *data, uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_WRITE, h, hlen, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, data, len);
	return end(s, start, rc);
}

int
ph_sftp_write_fill(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint64_t off,
                   uint32_t len, ph_sftp_fill_fn fill_fn, void *fill_arg, ph_sftp_cb cb,
                   void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_WRITE, h, hlen, cb, arg, &start);

	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, len);
	if (rc == 0)
		rc = ph_buf_reserve(&s->out, len);
	if (rc == 0 && (rc = fill_fn(fill_arg, s->out.data + s->out.len, len)) == 0)
		s->out.len += len;
	return end(s, start, rc);
}

int
ph_sftp_stat(struct ph_sftp *s, int lstat, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, lstat ? PH_FXP_LSTAT : PH_FXP_STAT, path, NULL, 0, cb, arg);
}

int
ph_sftp_fstat(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, ph_sftp_cb cb, void *arg)
{
	return handle_only(s, PH_FXP_FSTAT, h, hlen, cb, arg);
}

int
ph_sftp_setstat(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a,
                ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_SETSTAT, path, a, 1, cb, arg);
}

int
ph_sftp_fsetstat(struct ph_sftp *s, const uint8_t *h, uint32_t hlen,
                 const struct ph_sftp_attrs *a, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = simple_handle(s, PH_FXP_FSETSTAT, h, hlen, cb, arg, &start);

	if (rc == 0)
		rc = ph_wire_put_attrs(&s->out, a);
	return end(s, start, rc);
}

int
ph_sftp_mkdir(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a,
              ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_MKDIR, path, a, 1, cb, arg);
}

int
ph_sftp_remove(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_REMOVE, path, NULL, 0, cb, arg);
}

int
ph_sftp_rmdir(struct ph_sftp *s, const char *path, ph_sftp_cb cb, void *arg)
{
	return simple_path(s, PH_FXP_RMDIR, path, NULL, 0, cb, arg);
}

int
ph_sftp_rename(struct ph_sftp *s, const char *from, const char *to, int posix,
               ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (posix && (s->exts & PH_EXT_POSIX_RENAME)) {
		rc = begin(s, PH_FXP_EXTENDED, cb, arg, &start);
		if (rc != 0)
			return rc;
		rc = ph_buf_put_cstr(&s->out, PH_XN_POSIX_RENAME);
	} else {
		rc = begin(s, PH_FXP_RENAME, cb, arg, &start);
		if (rc != 0)
			return rc;
	}
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, from);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, to);
	return end(s, start, rc);
}

int
ph_sftp_fsync(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, ph_sftp_cb cb,
              void *arg)
{
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_FSYNC))
		return PHSYNC_EUNSUPPORTED;
	rc = begin(s, PH_FXP_EXTENDED, cb, arg, &start);
	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_FSYNC);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, h, hlen);
	return end(s, start, rc);
}

int
ph_sftp_copy_data(struct ph_sftp *s, const uint8_t *rh, uint32_t rhlen, uint64_t roff,
                  uint64_t len, const uint8_t *wh, uint32_t whlen, uint64_t woff,
                  ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_COPY_DATA))
		return PHSYNC_EUNSUPPORTED;
	if (len == 0)
		return PHSYNC_EINVAL; /* 0 means "to the end of the file" on the wire */
	rc = begin(s, PH_FXP_EXTENDED, cb, arg, &start);
	if (rc != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_COPY_DATA);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, rh, rhlen);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, roff);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, len);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, wh, whlen);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, woff);
	return end(s, start, rc);
}

int
ph_sftp_check_file(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, const char *algs,
                   uint64_t off, uint64_t len, uint32_t block, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (block < 256 || len == 0 || len % block != 0)
		return PHSYNC_EINVAL; /* 0 would mean "the whole file" on the wire */
	if ((rc = begin(s, PH_FXP_EXTENDED, cb, arg, &start)) != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_CHECK_FILE_HANDLE);
	if (rc == 0)
		rc = ph_buf_put_str(&s->out, h, hlen);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, algs);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, off);
	if (rc == 0)
		rc = ph_buf_put_u64(&s->out, len);
	if (rc == 0)
		rc = ph_buf_put_u32(&s->out, block);
	return end(s, start, rc);
}

int
ph_sftp_check_file_parse(const struct ph_sftp_reply *r, const uint8_t **alg,
                         uint32_t *alglen, uint32_t (*dlen_of)(const uint8_t *alg,
                                                                uint32_t alglen),
                         uint32_t n, uint8_t *out)
{
	struct ph_rd rd = { r->data, r->len };
	const uint8_t *a, *d;
	uint32_t al, dl, len, i;

	if (r->type != PH_FXP_EXTENDED_REPLY || ph_rd_str(&rd, &a, &al) != 0)
		return PHSYNC_EPROTO;
	if (al == 10 && memcmp(a, PH_XN_CHECK_FILE, 10) == 0 && ph_rd_str(&rd, &a, &al) != 0)
		return PHSYNC_EPROTO;
	if ((len = dlen_of(a, al)) == 0)
		return PHSYNC_EPROTO;   /* not an algorithm we asked for */
	*alg = a;
	*alglen = al;
	if (rd.left == (uint64_t)n * len) {
		memcpy(out, rd.p, rd.left);
		return 0;
	}
	if (rd.left != (uint64_t)n * (4 + len))
		return PHSYNC_EPROTO;
	for (i = 0; i < n; i++) {
		if (ph_rd_str(&rd, &d, &dl) != 0 || dl != len)
			return PHSYNC_EPROTO;
		memcpy(out + (size_t)i * len, d, len);
	}
	return 0;
}

/* Starts a helper request: EXTENDED with its name and the handle. */
static int
begin_helper(struct ph_sftp *s, const char *name, const uint8_t *h, uint32_t hlen,
             ph_sftp_cb cb, void *arg, size_t *start)
{
	int rc;

	if (s->helper < 1)
		return PHSYNC_EUNSUPPORTED;
	if ((rc = begin(s, PH_FXP_EXTENDED, cb, arg, start)) != 0)
		return rc;
	if ((rc = ph_buf_put_cstr(&s->out, name)) == 0)
		rc = ph_buf_put_str(&s->out, h, hlen);
	return rc == 0 ? 0 : end(s, *start, rc);   /* a failure leaves nothing queued */
}

int
ph_sftp_helper_sig(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint32_t block_len,
                   ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin_helper(s, PH_HELPER_SIG, h, hlen, cb, arg, &start);

	if (rc != 0)
		return rc;
	return end(s, start, ph_buf_put_u32(&s->out, block_len));
}

int
ph_sftp_helper_delta_start(struct ph_sftp *s, const uint8_t *h, uint32_t hlen,
                           const void *sig, size_t siglen, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc;

	if (siglen > PH_SFTP_MAX_PACKET - 1024)
		return PHSYNC_EINVAL;
	if ((rc = begin_helper(s, PH_HELPER_DSTART, h, hlen, cb, arg, &start)) != 0)
		return rc;
	return end(s, start, ph_buf_put_str(&s->out, sig, siglen));
}

int
ph_sftp_helper_delta_read(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint64_t doff,
                          uint32_t len, ph_sftp_cb cb, void *arg)
{
	size_t start = 0;
	int rc = begin_helper(s, PH_HELPER_DREAD, h, hlen, cb, arg, &start);

	if (rc != 0)
		return rc;
	if ((rc = ph_buf_put_u64(&s->out, doff)) == 0)
		rc = ph_buf_put_u32(&s->out, len);
	return end(s, start, rc);
}

/* Synchronous wrappers: a reply is copied out before the buffer moves on.
 * They expect STATUS or ATTRS; any other reply type is a protocol error. */
struct sync_wait {
	int done;
	int err;
	uint8_t type;
	struct ph_sftp_attrs attrs;
};

static void
sync_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct sync_wait *w = arg;

	(void)s;
	w->done = 1;
	w->type = r->type;
	w->err = r->err;
	if (r->type == PH_FXP_STATUS && r->err == 0)
		w->err = r->status == PH_FX_OK ? 0 : PHSYNC_EPROTO;
	else if (r->type == PH_FXP_ATTRS)
		w->attrs = r->attrs;
	else if (r->type != PH_FXP_STATUS && r->err == 0)
		w->err = PHSYNC_EPROTO;
}

/* Waits for a STATUS reply to a request queued with sync_cb. */
static int
sync_status(struct ph_sftp *s, int rc, struct sync_wait *w)
{
	if (rc != 0)
		return rc; /* never queued: nothing owed to w */
	rc = ph_sftp_wait(s, &w->done);
	/* Interrupted: the reply is still owed to w, which lives on the
	 * caller's stack; settle it now (the link is given up). */
	if (rc != 0 && !w->done)
		ph_sftp_abort(s, rc);
	if (rc == 0 && w->err == 0 && w->type != PH_FXP_STATUS)
		rc = PHSYNC_EPROTO;
	return rc != 0 ? rc : w->err;
}

/* One READ of ph_sftp_read_ranges_sync. */
struct range_wait {
	int done, err;
	uint8_t *buf;
	uint32_t want, got;
};

static void
range_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct range_wait *w = arg;

	(void)s;
	w->done = 1;
	if (r->type == PH_FXP_DATA && r->len <= w->want) {
		memcpy(w->buf, r->data, r->len);
		w->got = r->len;
	} else if (r->type == PH_FXP_STATUS && r->status == PH_FX_EOF) {
		w->got = 0;
	} else {
		w->err = r->err ? r->err : PHSYNC_EPROTO;
	}
}

static void
open_cb_sync(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct range_wait *w = arg;

	(void)s;
	w->done = 1;
	if (r->type == PH_FXP_HANDLE && r->len <= PH_SFTP_MAX_HANDLE) {
		memcpy(w->buf, r->data, r->len);
		w->got = r->len;
	} else {
		w->err = r->err ? r->err : PHSYNC_EPROTO;
	}
}

int
ph_sftp_read_ranges_sync(struct ph_sftp *s, const char *path, const uint64_t *off,
                         const uint32_t *len, uint8_t *const *buf, uint32_t *got, size_t n)
{
	uint8_t h[PH_SFTP_MAX_HANDLE];
	struct range_wait ow = { 0, 0, h, 0, 0 }, w[4];
	struct sync_wait cw = { 0 };
	size_t i;
	int rc;

	if (n > 4)
		return PHSYNC_EINVAL;
	rc = ph_sftp_open(s, path, PH_FXF_READ, NULL, open_cb_sync, &ow);
	if (rc == 0)
		rc = ph_sftp_wait(s, &ow.done);
	if (rc != 0) {
		if (!ow.done)
			ph_sftp_abort(s, rc);
		return rc;
	}
	if (ow.err != 0)
		return ow.err;
	memset(w, 0, sizeof(w));
	for (i = 0; i < n && rc == 0; i++) {
		w[i].buf = buf[i];
		w[i].want = len[i];
		if ((rc = ph_sftp_read(s, h, ow.got, off[i], len[i], range_cb, &w[i])) != 0)
			w[i].done = 1; /* never queued */
	}
	for (i = 0; i < n && rc == 0; i++)
		rc = ph_sftp_wait(s, &w[i].done);
	for (i = 0; i < n && rc != 0; i++)
		if (!w[i].done) {
			ph_sftp_abort(s, rc);
			return rc;
		}
	if (rc == 0) {
		for (i = 0; i < n; i++) {
			if (w[i].err != 0 && rc == 0)
				rc = w[i].err;
			got[i] = w[i].got;
		}
	}
	{
		int crc = sync_status(s, ph_sftp_close(s, h, ow.got, sync_cb, &cw), &cw);

		if (rc == 0 && (crc == PHSYNC_ECONNECT || crc == PHSYNC_EINTR))
			rc = crc; /* a refused CLOSE of a read handle is no loss */
	}
	return rc;
}

int
ph_sftp_remove_sync(struct ph_sftp *s, const char *path)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_remove(s, path, sync_cb, &w), &w);
}

int
ph_sftp_rmdir_sync(struct ph_sftp *s, const char *path)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_rmdir(s, path, sync_cb, &w), &w);
}

int
ph_sftp_rename_sync(struct ph_sftp *s, const char *from, const char *to)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_rename(s, from, to, 0, sync_cb, &w), &w);
}

int
ph_sftp_stat_sync(struct ph_sftp *s, int lstat, const char *path,
                  struct ph_sftp_attrs *a)
{
	struct sync_wait w = { 0 };
	int rc = ph_sftp_stat(s, lstat, path, sync_cb, &w);

	if (rc != 0)
		return rc; /* never queued */
	if ((rc = ph_sftp_wait(s, &w.done)) != 0) {
		if (!w.done)
			ph_sftp_abort(s, rc); /* w must not outlive this call */
		return rc;
	}
	if (w.err != 0)
		return w.err;
	if (w.type != PH_FXP_ATTRS)
		return PHSYNC_EPROTO;
	*a = w.attrs;
	return 0;
}

int
ph_sftp_mkdir_sync(struct ph_sftp *s, const char *path, uint32_t mode)
{
	struct ph_sftp_attrs a = { .flags = PH_ATTR_PERMISSIONS, .perm = mode };
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_mkdir(s, path, &a, sync_cb, &w), &w);
}

/* Reads exactly one packet outside the request table (VERSION). */
static int
read_packet(struct ph_sftp *s, const uint8_t **p, uint32_t *len)
{
	uint64_t start = now_ms();
	size_t got;
	int rc;

	for (;;) {
		if (s->inlen >= 4) {
			uint32_t plen = ph_be32_get(s->in + s->inoff);

			if (plen < 1 || plen > 256 * 1024)
				return ph_err(s->ctx, PHSYNC_EPROTO,
				              "the server's SFTP greeting is %u bytes long; is "
				              "the remote shell printing text on login?", plen);
			if (s->inlen - 4 >= plen) {
				*p = s->in + s->inoff + 4;
				*len = plen;
				s->inoff += 4 + (size_t)plen;
				s->inlen -= 4 + (size_t)plen;
				return 0;
			}
		}
		if ((rc = fill(s, 250, &got)) != 0)
			return ph_err(s->ctx, rc, "the server closed the SFTP channel "
			              "during the greeting");
		if (s->ctx != NULL && s->ctx->interrupted)
			return PHSYNC_EINTR;
		if (got == 0 && now_ms() - start > (uint64_t)s->timeout_ms)
			return ph_err(s->ctx, PHSYNC_ECONNECT, "no SFTP greeting from the server");
	}
}

static int
parse_version(struct ph_sftp *s, const uint8_t *p, uint32_t len)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} known[] = {
		{ PH_XN_POSIX_RENAME, PH_EXT_POSIX_RENAME },
		{ PH_XN_FSYNC, PH_EXT_FSYNC },
		{ PH_XN_LIMITS, PH_EXT_LIMITS },
		{ PH_XN_STATVFS, PH_EXT_STATVFS },
		{ PH_XN_HARDLINK, PH_EXT_HARDLINK },
		{ PH_XN_COPY_DATA, PH_EXT_COPY_DATA },
		{ PH_XN_LSETSTAT, PH_EXT_LSETSTAT },
		{ PH_XN_CHECK_FILE, PH_EXT_CHECK_FILE },
	};
	struct ph_rd r = { p, len };
	uint8_t type;
	uint32_t version, nl, dl;
	const uint8_t *name, *data;
	size_t i;
	int n = 0;

	if (ph_rd_u8(&r, &type) != 0 || type != PH_FXP_VERSION || ph_rd_u32(&r, &version) != 0)
		return ph_err(s->ctx, PHSYNC_EPROTO, "the server did not answer SFTP INIT");
	if (version < 3)
		return ph_err(s->ctx, PHSYNC_EUNSUPPORTED,
		              "the server speaks SFTP version %u; phsync needs 3", version);
	while (r.left > 0 && n++ < MAX_EXTS) {
		if (ph_rd_str(&r, &name, &nl) != 0 || ph_rd_str(&r, &data, &dl) != 0)
			return ph_err(s->ctx, PHSYNC_EPROTO, "malformed SFTP extension list");
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i].name) == nl && memcmp(known[i].name, name, nl) == 0)
				s->exts |= known[i].bit;
		if (nl == strlen(PH_HELPER_EXT) && memcmp(name, PH_HELPER_EXT, nl) == 0) {
			unsigned v = 0;

			/* A decimal version; anything else is no version we speak. */
			for (i = 0; i < dl && i < 6 && data[i] >= '0' && data[i] <= '9'; i++)
				v = v * 10 + (unsigned)(data[i] - '0');
			s->helper_seen = (i == dl && dl > 0) ? (v ? v : UINT_MAX) : UINT_MAX;
			/* Only a version we offered: a helper answering with another
			 * would be misparsed, so it is treated as none. */
			s->helper = (s->helper_seen >= 1 && s->helper_seen <= s->offer) ? v : 0;
		}
	}
	return 0;
}

static void
limits_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct ph_rd rd = { r->data, r->len };
	uint64_t maxpkt, maxread, maxwrite, handles;

	*(int *)arg = 1;
	if (r->type != PH_FXP_EXTENDED_REPLY || ph_rd_u64(&rd, &maxpkt) != 0 ||
	    ph_rd_u64(&rd, &maxread) != 0 || ph_rd_u64(&rd, &maxwrite) != 0 ||
	    ph_rd_u64(&rd, &handles) != 0)
		return; /* keep the safe defaults */
	/* 0 means "no limit"; we still never go past MAX_IO. Reads and writes
	 * smaller than 1 KiB would make no sense: keep the default then. */
	if (maxread == 0 || maxread > MAX_IO)
		maxread = MAX_IO;
	if (maxwrite == 0 || maxwrite > MAX_IO)
		maxwrite = MAX_IO;
	if (maxpkt != 0) {
		if (maxwrite + 1024 > maxpkt)
			maxwrite = maxpkt > 2048 ? maxpkt - 1024 : 0;
	}
	if (maxread >= 1024)
		s->max_read = (uint32_t)maxread;
	if (maxwrite >= 1024)
		s->max_write = (uint32_t)maxwrite;
	s->max_handles = handles;
}

int
ph_sftp_new(phsync_ctx *ctx, const struct ph_chan *chan, struct ph_sftp **out)
{
	return ph_sftp_new_helper(ctx, chan, 0, out);
}

int
ph_sftp_new_helper(phsync_ctx *ctx, const struct ph_chan *chan, unsigned offer,
                   struct ph_sftp **out)
{
	struct ph_sftp *s;
	const uint8_t *p = NULL;
	uint32_t len = 0;
	size_t start = 0;
	int rc, done = 0;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return PHSYNC_ENOMEM;
	s->ctx = ctx;
	s->chan = *chan;
	s->out.max = 64u << 20;
	s->incap = PH_SFTP_MAX_PACKET + 4 + READ_CHUNK;
	s->in = malloc(s->incap);
	s->slots = calloc(SLOTS, sizeof(*s->slots));
	s->max_read = s->max_write = DEFAULT_IO;
	s->timeout_ms = chan->silence_ms > 0 ? chan->silence_ms : 60000;
	s->next_id = 1;
	if (s->in == NULL || s->slots == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	/* INIT has no request id: write it by hand. A helper is offered the
	 * highest phsync protocol version we speak (docs/PROTOCOL.md). */
	s->offer = offer;
	if ((rc = ph_buf_put_u32(&s->out, 0)) != 0 || (rc = ph_buf_put_u8(&s->out, PH_FXP_INIT)) != 0 ||
	    (rc = ph_buf_put_u32(&s->out, 3)) != 0)
		goto out;
	if (offer > 0) {
		char v[16];

		snprintf(v, sizeof(v), "%u", offer);
		if ((rc = ph_buf_put_cstr(&s->out, PH_HELPER_EXT)) != 0 ||
		    (rc = ph_buf_put_cstr(&s->out, v)) != 0)
			goto out;
	}
	ph_be32_put(s->out.data, (uint32_t)(s->out.len - 4));
	if ((rc = ph_sftp_flush(s)) != 0)
		goto out;
	if ((rc = read_packet(s, &p, &len)) != 0 || (rc = parse_version(s, p, len)) != 0)
		goto out;
	if (s->exts & PH_EXT_LIMITS) {
		if ((rc = begin(s, PH_FXP_EXTENDED, limits_cb, &done, &start)) != 0)
			goto out;
		rc = end(s, start, ph_buf_put_cstr(&s->out, PH_XN_LIMITS));
		if (rc == 0)
			rc = ph_sftp_wait(s, &done);
		if (rc != 0)
			goto out;
	}
	*out = s;
	return 0;
out:
	ph_sftp_free(s);
	return rc;
}

void
ph_sftp_free(struct ph_sftp *s)
{
	if (s == NULL)
		return;
	ph_buf_free(&s->out);
	free(s->in);
	free(s->slots);
	free(s);
}

uint32_t
ph_sftp_exts(const struct ph_sftp *s)
{
	return s->exts;
}

void
ph_sftp_set_timeout(struct ph_sftp *s, int ms)
{
	if (ms > 0)
		s->timeout_ms = ms;
}

unsigned
ph_sftp_helper(const struct ph_sftp *s)
{
	return s->helper;
}

unsigned
ph_sftp_helper_seen(const struct ph_sftp *s)
{
	return s->helper_seen;
}

uint32_t
ph_sftp_max_read(const struct ph_sftp *s)
{
	return s->max_read;
}

uint32_t
ph_sftp_max_write(const struct ph_sftp *s)
{
	return s->max_write;
}

uint64_t
ph_sftp_max_handles(const struct ph_sftp *s)
{
	return s->max_handles;
}

size_t
ph_sftp_inflight(const struct ph_sftp *s)
{
	return s->inflight;
}

/* Synchronous one-offs for pair and doctor: a handle, writes, statvfs. */

/* Waits for a reply owed to a callback whose state lives on the caller's
 * stack; on a failed wait the link is given up, so nothing is owed. */
static int
wait_owed(struct ph_sftp *s, int rc, const int *done)
{
	if (rc != 0)
		return rc; /* never queued */
	rc = ph_sftp_wait(s, done);
	if (rc != 0 && !*done)
		ph_sftp_abort(s, rc);
	return rc;
}

int
ph_sftp_open_sync(struct ph_sftp *s, const char *path, uint32_t pflags,
                  const struct ph_sftp_attrs *a, uint8_t *h, uint32_t *hlen)
{
	struct range_wait w = { 0, 0, h, 0, 0 };
	int rc = wait_owed(s, ph_sftp_open(s, path, pflags, a, open_cb_sync, &w), &w.done);

	if (rc != 0)
		return rc;
	if (w.err != 0)
		return w.err;
	*hlen = w.got;
	return 0;
}

int
ph_sftp_write_sync(struct ph_sftp *s, const uint8_t *h, uint32_t hlen, uint64_t off,
                   const void *data, size_t len)
{
	const uint8_t *p = data;
	int rc = 0;

	while (len > 0 && rc == 0) {
		uint32_t k = len > s->max_write ? s->max_write : (uint32_t)len;
		struct sync_wait w = { 0 };

		rc = sync_status(s, ph_sftp_write(s, h, hlen, off, p, k, sync_cb, &w), &w);
		p += k;
		off += k;
		len -= k;
	}
	return rc;
}

int
ph_sftp_close_sync(struct ph_sftp *s, const uint8_t *h, uint32_t hlen)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_close(s, h, hlen, sync_cb, &w), &w);
}

int
ph_sftp_fsync_sync(struct ph_sftp *s, const uint8_t *h, uint32_t hlen)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_fsync(s, h, hlen, sync_cb, &w), &w);
}

int
ph_sftp_setstat_sync(struct ph_sftp *s, const char *path, const struct ph_sftp_attrs *a)
{
	struct sync_wait w = { 0 };

	return sync_status(s, ph_sftp_setstat(s, path, a, sync_cb, &w), &w);
}

int
ph_sftp_posix_rename_sync(struct ph_sftp *s, const char *from, const char *to)
{
	struct sync_wait w = { 0 };

	if (!(s->exts & PH_EXT_POSIX_RENAME))
		return PHSYNC_EUNSUPPORTED;
	return sync_status(s, ph_sftp_rename(s, from, to, 1, sync_cb, &w), &w);
}

struct statvfs_wait {
	int done, err;
	struct ph_sftp_statvfs *st;
};

static void
statvfs_cb(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct statvfs_wait *w = arg;
	struct ph_rd rd = { r->data, r->len };
	uint64_t v[11];
	size_t i;

	(void)s;
	w->done = 1;
	if (r->type != PH_FXP_EXTENDED_REPLY) {
		w->err = r->err ? r->err : PHSYNC_EPROTO;
		return;
	}
	/* bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid,
	 * flag, namemax: eleven u64 (PROTOCOL, statvfs@openssh.com). */
	for (i = 0; i < 11; i++)
		if (ph_rd_u64(&rd, &v[i]) != 0) {
			w->err = PHSYNC_EPROTO;
			return;
		}
	w->st->frsize = v[1] ? v[1] : v[0];
	w->st->blocks = v[2];
	w->st->bavail = v[4];
	w->st->namemax = v[10];
}

int
ph_sftp_statvfs_sync(struct ph_sftp *s, const char *path, struct ph_sftp_statvfs *st)
{
	struct statvfs_wait w = { 0, 0, st };
	size_t start = 0;
	int rc;

	if (!(s->exts & PH_EXT_STATVFS))
		return PHSYNC_EUNSUPPORTED;
	if ((rc = begin(s, PH_FXP_EXTENDED, statvfs_cb, &w, &start)) != 0)
		return rc;
	rc = ph_buf_put_cstr(&s->out, PH_XN_STATVFS);
	if (rc == 0)
		rc = ph_buf_put_cstr(&s->out, path);
	if ((rc = wait_owed(s, end(s, start, rc), &w.done)) != 0)
		return rc;
	return w.err;
}

size_t
ph_sftp_awaited(const struct ph_sftp *s)
{
	size_t i, n = 0;

	for (i = 0; i < SLOTS && n < s->inflight; i++)
		if (s->slots[i].used && s->slots[i].cb != NULL)
			n++;
	return n;
}
