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
#include "sftp_int.h"

#define SLOTS PH_SFTP_SLOTS
#define DEFAULT_IO (32u * 1024)
#define MAX_IO (256u * 1024)
#define READ_CHUNK (1u << 20)
#define MAX_EXTS 64
/* What limits@openssh.com says from a helper of protocol version 1. */
#define HELPER1_IO (256u * 1024)
#define HELPER1_HANDLES 256
/* The pump sends what its callbacks queued once it fills most of an SSH
 * packet (32 KiB), or once fewer than LAZY_LOW requests sent are still
 * unanswered: see flush_lazy. */
#define LAZY_BYTES (16u * 1024)
#define LAZY_LOW 16
/* After Ctrl-C, how long a send may wait on a server that takes nothing
 * before the link is given up (the README promises a second or two). */
#define STOP_SEND_MS 2000

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

/* Runs the callback of a request taken off the table (sl, a copy: the
 * callback may queue a request into its slot), then counts it out of its
 * group; a group left with nothing in flight is told so (its owner may
 * free it then: nothing touches g afterwards). */
static void
settle(struct ph_sftp *s, struct ph_sftp_slot sl, const struct ph_sftp_reply *rep)
{
	struct ph_sftp_group *g = sl.group;

	if (sl.cb != NULL)
		sl.cb(s, rep, sl.arg);
	if (g != NULL && --g->inflight == 0 && g->idle != NULL)
		g->idle(g->arg);
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
		struct ph_sftp_slot *sl = &s->slots[i];

		if (!sl->used)
			continue;
		sl->used = 0;
		s->inflight--;
		settle(s, *sl, &rep);
	}
	return s->dead;
}

int
ph_sftp_req_begin(struct ph_sftp *s, uint8_t type, ph_sftp_cb cb, void *arg, size_t *start)
{
	struct ph_sftp_group *g = s->next_group;
	struct ph_sftp_slot *sl;
	uint32_t id;
	int rc;

	s->next_group = NULL;
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
	sl->group = g;
	return 0;
}

int
ph_sftp_req_end(struct ph_sftp *s, size_t start, int rc)
{
	struct ph_sftp_slot *sl;
	uint32_t id;

	if (rc != 0) {
		s->out.len = start;
		return rc;
	}
	ph_be32_put(s->out.data + start, (uint32_t)(s->out.len - start - 4));
	id = ph_be32_get(s->out.data + start + 5);
	sl = &s->slots[id & (SLOTS - 1)];
	sl->used = 1;
	if (sl->group != NULL)
		sl->group->inflight++;
	if (s->inflight++ == 0)
		s->last_rx_ms = now_ms(); /* nothing was owed until now */
	s->unsent++;
	return 0;
}

int
ph_sftp_req_refuse(struct ph_sftp *s, int rc)
{
	s->next_group = NULL;
	return rc;
}

struct ph_sftp *
ph_sftp_in_group(struct ph_sftp *s, struct ph_sftp_group *g)
{
	s->next_group = g;
	return s;
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
	struct ph_sftp_slot *gone;
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
		struct ph_sftp_slot *sl = &s->slots[id & (SLOTS - 1)];

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
		settle(s, gone[i], &rep);
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
		s->unsent = 0;
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
	s->unsent = 0;
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

/* The pump's send: what callbacks queued waits while the server still has
 * LAZY_LOW requests of ours to answer and the queue is small, so that a
 * run of replies is answered by one packet of requests, not one each: on
 * a phone every packet the SSH server takes costs CPU (a wakeup of sshd to
 * decrypt it, a pipe write, a wakeup of the SFTP server to read it; the
 * weak-phone row of docs/PERFORMANCE.md, section 7). The server never
 * runs dry for it: while we wait for replies at least LAZY_LOW are owed,
 * each of which frees this wait. After a stop everything goes at once. */
static int
flush_lazy(struct ph_sftp *s)
{
	size_t wire = s->inflight > s->unsent ? s->inflight - s->unsent : 0;

	if (s->out.len < LAZY_BYTES && wire >= LAZY_LOW &&
	    (s->ctx == NULL || !s->ctx->interrupted))
		return 0;
	return ph_sftp_flush(s);
}

/* Dispatches one complete packet (type + body, length prefix removed). */
static int
dispatch(struct ph_sftp *s, const uint8_t *p, uint32_t len)
{
	struct ph_rd r = { p, len };
	struct ph_sftp_reply rep;
	struct ph_sftp_slot *sl;
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
	settle(s, *sl, &rep);
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
	if (s->inoff > 0 &&
	    (s->inoff >= READ_CHUNK || s->incap - s->inoff - s->inlen < PH_CHAN_READ_ROOM)) {
		memmove(s->in, s->in + s->inoff, s->inlen);
		s->inoff = 0;
	}
	room = s->incap - s->inoff - s->inlen;
	if (room > PH_CHAN_READ_ROOM)
		room = PH_CHAN_READ_ROOM;
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

/* What is queued sent (lazily) and the replies already in the buffer
 * dispatched, before and after (their callbacks queue more). */
static int
take_buffered(struct ph_sftp *s)
{
	int rc;

	if ((rc = flush_lazy(s)) != 0)
		return rc;
	if ((rc = drain(s)) != 0)
		return kill_link(s, rc);
	return flush_lazy(s);
}

/* Everything s holds or its channel has now, without waiting: queued
 * requests sent, buffered replies dispatched. *got: bytes read. */
static int
pump_now(struct ph_sftp *s, size_t *got)
{
	int rc;

	*got = 0;
	do {
		size_t n;

		if ((rc = take_buffered(s)) != 0)
			return rc;
		if (s->inflight == 0)
			return 0;
		if ((rc = fill(s, 0, &n)) != 0)
			return kill_link(s, ph_err(s->ctx, rc, "the server closed the connection"));
		*got += n;
		if (n == 0)
			return 0;
	} while (*got < (16u << 20)); /* (then the caller's turn: other
	                                   clients, a stop) */
	return drain(s) != 0 ? kill_link(s, PHSYNC_EPROTO) : 0;
}

int
ph_sftp_pump(struct ph_sftp *s, int timeout_ms)
{
	uint64_t start = now_ms();
	size_t got;
	int rc;

	/* Replies may already sit in the buffer (read with an earlier packet). */
	if ((rc = take_buffered(s)) != 0)
		return rc;
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
	 * callbacks queue goes out between reads (in batches: flush_lazy), so
	 * the server is never left idle while replies stream in (a delta's
	 * next read, the next file). */
	return pump_now(s, &got);
}

int
ph_sftp_pump_set(struct ph_sftp *const *v, size_t n, int timeout_ms)
{
	uint64_t start = now_ms();
	size_t i, got, busy;
	int rc, any;

	if (n == 1)
		return ph_sftp_pump(v[0], timeout_ms);
	for (;;) {
		struct ph_sftp *wait = NULL;

		any = 0;
		busy = 0;
		for (i = 0; i < n; i++) {
			if ((rc = pump_now(v[i], &got)) != 0)
				return rc;
			any |= got > 0;
			if (v[i]->inflight == 0)
				continue;
			busy++;
			if (wait == NULL)
				wait = v[i];
			/* The silence clock of each: a hung server ends the run
			 * whichever channel it is on. */
			if (now_ms() - v[i]->last_rx_ms >= (uint64_t)v[i]->timeout_ms)
				return kill_link(v[i], ph_err(v[i]->ctx, PHSYNC_ECONNECT,
				                              "the server sent nothing for %d s; "
				                              "gave up (--timeout)",
				                              v[i]->timeout_ms / 1000));
		}
		if (any || busy == 0)
			return 0;
		if (v[0]->ctx != NULL && v[0]->ctx->interrupted)
			return PHSYNC_EINTR;
		if (timeout_ms >= 0 && now_ms() - start >= (uint64_t)timeout_ms)
			return 0;
		/* Channels of one connection wait on it together; others (no
		 * wait_any) in turns of a few ms on the first that owes. */
		if (wait->chan.wait_any == NULL) {
			if ((rc = ph_sftp_pump(wait, 5)) != 0)
				return rc;
		} else if ((rc = wait->chan.wait_any(wait->chan.arg, timeout_ms < 0 ||
		                                     timeout_ms > 250 ? 250 : timeout_ms)) != 0) {
			return kill_link(wait, rc);
		}
	}
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
	s->incap = PH_SFTP_MAX_PACKET + 4 + PH_CHAN_READ_ROOM;
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
	if (s->helper >= 1) {
		/* The helper's limits are those of its protocol version
		 * (docs/PROTOCOL.md): no round trip to ask. */
		s->max_read = s->max_write = HELPER1_IO;
		s->max_handles = HELPER1_HANDLES;
	} else if (s->exts & PH_EXT_LIMITS) {
		if ((rc = ph_sftp_req_begin(s, PH_FXP_EXTENDED, limits_cb, &done, &start)) != 0)
			goto out;
		rc = ph_sftp_req_end(s, start, ph_buf_put_cstr(&s->out, PH_XN_LIMITS));
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

size_t
ph_sftp_awaited(const struct ph_sftp *s)
{
	size_t i, n = 0;

	for (i = 0; i < SLOTS && n < s->inflight; i++)
		if (s->slots[i].used && s->slots[i].cb != NULL)
			n++;
	return n;
}
