/* SPDX-License-Identifier: ISC */
/* The SSH session's channels: the session's own (SFTP, the helper, a
 * command) and the SFTP channels beside it, as struct ph_chan byte pipes;
 * see ssh.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx.h"
#include "platform.h"
#include "psys.h"
#include "ssh_int.h"

/* How long a channel's end may take: our EOF sent, the server's close
 * awaited (its command ended; the helper and sftp-server end on EOF at
 * once) before ours is sent and the next channel opened. */
#define CLOSE_WAIT_MS 5000

/* The receive window. libssh 0.10 grants the server 1.28 MB and tops it
 * up only once it is under half that: through a 10 ms round trip a pull
 * ran at 72 MB/s with the phone idle (the weak row: 0.36 GB in 5.0 s, the
 * server never throttled by its quota). A blocking read that asks for
 * more than libssh holds plus the window grows the window to that much
 * (ssh_channel_read_timeout), so once every RECV_WINDOW / 2 bytes taken a
 * read asks for RECV_WINDOW: one WINDOW_ADJUST a 2 MiB (asking that much
 * every read sent one a read, 5 times as many). Other reads ask for at
 * most READ_ASK. */
#define RECV_WINDOW PH_CHAN_READ_ROOM
#define READ_ASK (1u << 20)

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
chan_write(void *arg, const void *p, size_t n)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	const uint8_t *c = p;

	while (n > 0) {
		uint32_t k = n > (1u << 30) ? (1u << 30) : (uint32_t)n;
		int w = ssh_channel_write(x->chan, c, k);

		if (w <= 0)
			return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s",
			              ssh->host, ssh_get_error(ssh->sess));
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* As much of p as the server's window takes now, without waiting for it to
 * open (ssh_channel_write would, while the server waits for us to read),
 * paced (PACE_CHUNK). */
static int
chan_write_some(void *arg, const void *p, size_t n, size_t *put)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	uint32_t win, k;
	int w;

	*put = 0;
	/* libssh still holds output the socket did not take: nothing more. */
	if ((w = ssh_blocking_flush(ssh->sess, 0)) == SSH_AGAIN)
		return 0;
	if (w == SSH_ERROR)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if ((win = ssh_channel_window_size(x->chan)) == 0)
		return 0;
	k = n < win ? (uint32_t)n : win;
	if (k > PACE_CHUNK)
		k = PACE_CHUNK;
	if ((w = ssh_channel_write(x->chan, p, k)) <= 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	*put = (size_t)w;
	return 0;
}

/* Waits on the session's socket until it has more or libssh's held
 * output can go out, or timeout_ms passed; with own_window, not when
 * nothing is held and x's window is open (x can take more now). */
static int
sock_wait(struct ph_sshx *x, int own_window, int timeout_ms)
{
	struct ph_ssh *ssh = x->ssh;
	int fd, r, held;

	if ((held = ssh_blocking_flush(ssh->sess, 0)) == SSH_ERROR)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if (own_window && held == SSH_OK && ssh_channel_window_size(x->chan) > 0)
		return 0;
	if ((fd = (int)ssh_get_fd(ssh->sess)) < 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost", ssh->host);
	r = ph_poll_sock(fd, PH_POLL_IN | (held == SSH_AGAIN ? PH_POLL_OUT : 0), timeout_ms);
	if (r < 0)
		return ph_err_from_errno(-r);
	/* Take in what came (a window adjustment among it). */
	if (r > 0)
		(void)ssh_channel_poll(x->chan, 0);
	return 0;
}

/* Waits until the channel can take more (the server's window open, and
 * libssh's output written: chan_write_some), or bytes for the channel are
 * buffered (or its end came), or timeout_ms passed. What libssh already
 * read from the socket is processed first: a WINDOW_ADJUST taken in by an
 * earlier read leaves the socket quiet, and polling it then slept the whole
 * timeout each time the window shut (Dropbear's 24 KiB window: 0.27 MB/s,
 * issue 22). */
static int
chan_wait(void *arg, int timeout_ms)
{
	struct ph_sshx *x = arg;

	if (ssh_channel_poll(x->chan, 0) != 0)
		return 0; /* data, end or error: the next read tells */
	return sock_wait(x, 1, timeout_ms);
}

/* Takes what x's standard error holds: the session's channel keeps the
 * start of it (errtext), an SFTP channel beside it drops it. */
static void
drain_stderr(struct ph_sshx *x)
{
	struct ph_ssh *ssh = x->ssh;
	char buf[512];
	int r;

	while ((r = ssh_channel_read_nonblocking(x->chan, buf, sizeof(buf), 1)) > 0) {
		size_t k = (size_t)r, room = sizeof(ssh->errtext) - 1 - ssh->errlen;

		if (x != &ssh->main)
			continue;
		if (k > room)
			k = room;
		memcpy(ssh->errtext + ssh->errlen, buf, k);
		ssh->errlen += k;
		ssh->errtext[ssh->errlen] = '\0';
	}
}

static int
chan_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	uint32_t k = n > (1u << 30) ? (1u << 30) : (uint32_t)n, ask = k;
	int r;

	*got = 0;
	if (timeout_ms == 0) {
		r = ssh_channel_read_nonblocking(x->chan, p, k, 0);
	} else {
		if (ask > READ_ASK)
			ask = READ_ASK;
		if (k >= RECV_WINDOW && x->taken >= RECV_WINDOW / 2) {
			ask = RECV_WINDOW;
			x->taken = 0;
		}
		r = ssh_channel_read_timeout(x->chan, p, ask, 0, timeout_ms);
	}
	if (r > 0)
		x->taken += (uint64_t)r;
	/* Every negative return is the end of the link: SSH_ERROR, and SSH_EOF
	 * (-127) when the server closed its side mid-reply. Passing one on as a
	 * byte count once wrapped the receive buffer's length (issue 6). Only
	 * SSH_AGAIN, from the non-blocking read, means "nothing yet". */
	if (r == SSH_AGAIN)
		return 0;
	/* libssh reports no end of the channel while its standard error holds
	 * unread bytes: take them (an exec'd command's complaint). */
	if (r == 0)
		drain_stderr(x);
	if (r == SSH_EOF || (r == 0 && (ssh_channel_is_eof(x->chan) ||
	                                ssh_channel_is_closed(x->chan))))
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel",
		              ssh->host);
	if (r < 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if ((uint32_t)r > k)
		return ph_err(ssh->ctx, PHSYNC_EPROTO, "%s: the SSH library returned %d bytes for "
		              "a read of %u", ssh->host, r, k);
	*got = (size_t)r;
	return 0;
}

/* Ends ch the way every server copes with, one channel after another:
 * our EOF (the helper and sftp-server end on it), then the server's close
 * awaited (up to CLOSE_WAIT_MS; what ch still holds is read and dropped,
 * standard error kept for the session's channel), then our close, always
 * sent: one never sent leaves the channel open in the server. Dropbear
 * (2022.83) ends a channel opened while it still reaps the previous one's
 * command, and asserts with several half-closed ones in one session
 * (issue 22): the next channel opens only once this one is gone there.
 * A channel on which nothing was started (the request refused: ProFTPD
 * runs no commands) has nothing to end there: closed at once.
 * Returns the exit status of ch's command, or -1 when none came. */
static int
end_channel(struct ph_ssh *ssh, ssh_channel ch, int started)
{
	uint64_t t0 = now_ms();
	ssh_event ev = NULL;
	char buf[4096];
	int evok = 0, status = -1;

	if (ch == NULL)
		return -1;
	if (started && ssh_channel_is_open(ch) && ssh_channel_send_eof(ch) == SSH_OK) {
		while (now_ms() - t0 < CLOSE_WAIT_MS) {
			while (ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 0) > 0)
				;
			if (ch == ssh->main.chan)
				drain_stderr(&ssh->main);
			else
				while (ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 1) > 0)
					;
			if (!ssh_channel_is_open(ch))
				break; /* the server's close came (or the session died) */
			if (ssh->ctx != NULL && ssh->ctx->interrupted)
				break; /* a stop waits for no server */
			/* libssh reads nothing for a channel at its end of file:
			 * an event loop on the session takes in the close. */
			if (ev == NULL) {
				if ((ev = ssh_event_new()) == NULL)
					break;
				if (ssh_event_add_session(ev, ssh->sess) != SSH_OK)
					break;
				evok = 1;
			}
			if (ssh_event_dopoll(ev, 100) == SSH_ERROR)
				break;
		}
	}
	if (ev != NULL) {
		if (evok)
			ssh_event_remove_session(ev, ssh->sess);
		ssh_event_free(ev);
	}
	/* The server's close came (it marks the end of file too; a channel
	 * never opened has neither): its exit status is in, if one was sent
	 * (libssh would wait for it otherwise). */
	if (ssh_is_connected(ssh->sess) && !ssh_channel_is_open(ch) && ssh_channel_is_eof(ch)) {
		status = ssh_channel_get_exit_status(ch);
		ssh_channel_close(ch);
	} else if (ssh_is_connected(ssh->sess) && ssh_channel_is_open(ch)) {
		ssh_channel_close(ch);
	}
	ssh_channel_free(ch);
	return status;
}

/* Waits until bytes are buffered for any channel of x's session, the
 * socket has more, libssh's held output can go out, or timeout_ms passed:
 * what a pump over several channels of one session blocks in (reading one
 * channel takes in the packets of all, so a reply for another may already
 * wait in libssh). A channel's end is not waited for here: the pump's
 * read of each channel that owes replies, before it waits, meets it (one
 * that ended owing nothing would otherwise wake every wait at once). */
static int
chan_wait_any(void *arg, int timeout_ms)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	size_t i;

	if (ssh->main.chan != NULL && ssh_channel_poll(ssh->main.chan, 0) > 0)
		return 0;
	for (i = 0; i < ssh->nmore; i++)
		if (ssh_channel_poll(ssh->more[i]->chan, 0) > 0)
			return 0;
	return sock_wait(x, 0, timeout_ms);
}

static void
set_chan(struct ph_chan *chan, struct ph_sshx *x)
{
	chan->write = chan_write;
	chan->read = chan_read;
	chan->write_some = chan_write_some;
	chan->wait = chan_wait;
	chan->wait_any = chan_wait_any;
	chan->arg = x;
}

/* A new session channel in place of the one open, its end of the pipe in
 * chan (the subsystem or command is requested by the caller). */
static int
new_channel(struct ph_ssh *ssh, struct ph_chan *chan)
{
	if (ssh->main.chan != NULL)
		ph_ssh_close_channel(ssh);
	ssh->errlen = 0;
	ssh->errtext[0] = '\0';
	ssh->started = 0;
	ssh->main.taken = RECV_WINDOW; /* its first blocking read opens the window */
	if ((ssh->main.chan = ssh_channel_new(ssh->sess)) == NULL ||
	    ssh_channel_open_session(ssh->main.chan) != SSH_OK)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: cannot open a channel: %s",
		              ssh->host, ssh_is_connected(ssh->sess) ?
		              ssh_get_error(ssh->sess) : "the connection was lost");
	set_chan(chan, &ssh->main);
	return 0;
}

int
ph_ssh_open_sftp(struct ph_ssh *ssh, struct ph_chan *chan)
{
	int rc = new_channel(ssh, chan);

	if (rc != 0)
		return rc;
	if (ssh_channel_request_subsystem(ssh->main.chan, "sftp") == SSH_OK) {
		ssh->started = 1;
		return 0;
	}
	if (ssh_channel_is_open(ssh->main.chan) && ssh_is_connected(ssh->sess))
		return ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED,
		              "%s: the server offers no SFTP subsystem: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
	              "starting SFTP%s", ssh->host,
	              ssh_is_connected(ssh->sess) ? "" : " (the connection was lost)");
}

int
ph_ssh_server_openssh(const struct ph_ssh *ssh)
{
	return strncmp(ssh->info.banner, "SSH-2.0-OpenSSH_", 16) == 0;
}

/* Another session channel beside the main one: the "sftp" subsystem, or
 * cmd run (ph_ssh_open_sftp_more, ph_ssh_open_exec_more). */
static int
open_more(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan)
{
	struct ph_sshx *x;

	if (ssh->main.chan == NULL || ssh->nmore == MAX_MORE ||
	    (x = calloc(1, sizeof(*x))) == NULL)
		return PHSYNC_ENOMEM;
	x->ssh = ssh;
	x->taken = RECV_WINDOW;
	/* Refused (MaxSessions, a server that takes one channel at a time),
	 * the session stays as it was: only the caller hears of it. */
	if ((x->chan = ssh_channel_new(ssh->sess)) == NULL ||
	    ssh_channel_open_session(x->chan) != SSH_OK ||
	    (cmd != NULL ? ssh_channel_request_exec(x->chan, cmd) :
	     ssh_channel_request_subsystem(x->chan, "sftp")) != SSH_OK) {
		if (x->chan != NULL)
			(void)end_channel(ssh, x->chan, 0);
		free(x);
		return ssh_is_connected(ssh->sess) ? PHSYNC_EUNSUPPORTED : PHSYNC_ECONNECT;
	}
	ssh->more[ssh->nmore++] = x;
	set_chan(chan, x);
	return 0;
}

int
ph_ssh_open_sftp_more(struct ph_ssh *ssh, struct ph_chan *chan)
{
	return open_more(ssh, NULL, chan);
}

int
ph_ssh_open_exec_more(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan)
{
	return open_more(ssh, cmd, chan);
}

void
ph_ssh_close_more(struct ph_ssh *ssh)
{
	while (ssh->nmore > 0) {
		struct ph_sshx *x = ssh->more[--ssh->nmore];

		(void)end_channel(ssh, x->chan, 1);
		free(x);
	}
}

int
ph_ssh_open_exec(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan)
{
	int rc = new_channel(ssh, chan);

	if (rc != 0)
		return rc;
	if (ssh_channel_request_exec(ssh->main.chan, cmd) == SSH_OK) {
		ssh->started = 1;
		return 0;
	}
	/* A refusal (CHANNEL_FAILURE) is the server's answer; a channel the
	 * server ended, or a session gone, is not (issue 22). */
	if (ssh_channel_is_open(ssh->main.chan) && ssh_is_connected(ssh->sess))
		return ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED, "%s: the server runs no commands: %s",
		              ssh->host, ssh_get_error(ssh->sess));
	return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
	              "running the command%s", ssh->host,
	              ssh_is_connected(ssh->sess) ? "" : " (the connection was lost)");
}

uint32_t
ph_ssh_window(const struct ph_ssh *ssh)
{
	return ssh->main.chan != NULL ? ssh_channel_window_size(ssh->main.chan) : 0;
}

size_t
ph_ssh_channel_stderr(struct ph_ssh *ssh, char *out, size_t outlen)
{
	if (outlen == 0)
		return 0;
	if (ssh->main.chan != NULL)
		drain_stderr(&ssh->main);
	snprintf(out, outlen, "%s", ssh->errtext);
	return strlen(out);
}

int
ph_ssh_close_channel(struct ph_ssh *ssh)
{
	int st = end_channel(ssh, ssh->main.chan, ssh->started);

	ssh->main.chan = NULL;
	return st;
}

void
ph_ssh_chans_free(struct ph_ssh *ssh)
{
	while (ssh->nmore > 0) {
		struct ph_sshx *x = ssh->more[--ssh->nmore];

		ssh_channel_free(x->chan);
		free(x);
	}
	if (ssh->main.chan != NULL) {
		/* No wait for the server here: the session ends anyway. */
		if (ssh_channel_is_open(ssh->main.chan)) {
			ssh_channel_send_eof(ssh->main.chan);
			ssh_channel_close(ssh->main.chan);
		}
		ssh_channel_free(ssh->main.chan);
	}
}

int
ph_ssh_exec(struct ph_ssh *ssh, const char *cmd, char *out, size_t outlen, int *status)
{
	ssh_channel ch;
	size_t n = 0;
	char buf[4096];
	int rc = 0, r, started = 0;

	*status = -1;
	if (outlen > 0)
		out[0] = '\0';
	/* Beside the session's channel at most (doctor): two at once. */
	ch = ssh_channel_new(ssh->sess);
	if (ch == NULL || ssh_channel_open_session(ch) != SSH_OK) {
		rc = ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: cannot open a channel: %s", ssh->host,
		            ssh_is_connected(ssh->sess) ? ssh_get_error(ssh->sess) :
		            "the connection was lost");
		goto out;
	}
	if (ssh_channel_request_exec(ch, cmd) != SSH_OK) {
		rc = ssh_channel_is_open(ch) && ssh_is_connected(ssh->sess) ?
		     ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED, "%s: the server runs no commands: %s",
		            ssh->host, ssh_get_error(ssh->sess)) :
		     ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
		            "running `%s`", ssh->host, cmd);
		goto out;
	}
	started = 1;
	/* Bounded by the session's timeout per read; output past outlen is
	 * read and dropped so the command can finish. */
	while ((r = ssh_channel_read_timeout(ch, buf, sizeof(buf), 0, 30000)) > 0) {
		size_t k = (size_t)r;

		if (outlen > 0 && n + 1 < outlen) {
			size_t room = outlen - 1 - n;

			memcpy(out + n, buf, k < room ? k : room);
			n += k < room ? k : room;
			out[n] = '\0';
		}
	}
	if (r < 0 && r != SSH_EOF) {
		rc = ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		            ssh_get_error(ssh->sess));
		goto out;
	}
out:
	if (ch != NULL) {
		int st = end_channel(ssh, ch, started);

		if (rc == 0)
			*status = st;
	}
	return rc;
}
