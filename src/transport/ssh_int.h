/* SPDX-License-Identifier: ISC */
/* The SSH session's insides, shared by ssh.c (connect, host key, login)
 * and sshchan.c (the channels). Nothing outside src/transport/ssh*.c
 * includes this. */
#ifndef PH_SSH_INT_H
#define PH_SSH_INT_H

#include <stdint.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "ssh.h"

/* Pacing of what is sent: the channel takes at most PACE_CHUNK at a time,
 * and only when libssh has written out all it held; the kernel keeps at
 * most PACE_UNSENT bytes not yet sent (TCP_NOTSENT_LOWAT). What waits
 * beyond that stays in the SFTP queue, where a stop can take it back: a
 * window of 2 MiB (OpenSSH) handed over at once, and as much again taken
 * by the kernel, held the temps' removal back longer than the 2 s a stop
 * waits on an 8 Mbit/s link (issue 22). The bytes in flight on the
 * network are TCP's, as before. */
#define PACE_CHUNK (256u * 1024)
#define PACE_UNSENT (128 * 1024)

/* One channel's end of its byte pipe (a struct ph_chan's arg): the
 * session's channel, or one of the SFTP channels beside it. */
struct ph_sshx {
	struct ph_ssh *ssh;
	ssh_channel chan;
	uint64_t taken;          /* bytes read since a read last asked for
	                            RECV_WINDOW */
};

/* SFTP channels a session may hold beside its own (ph_ssh_open_sftp_more). */
#define MAX_MORE 4

struct ph_ssh {
	phsync_ctx *ctx;
	ssh_session sess;
	struct ph_sshx main;     /* the session's channel (main.chan NULL: none) */
	struct ph_sshx *more[MAX_MORE];
	size_t nmore;
	struct ssh_callbacks_struct cb;
	phsync_prompt_fn prompt;
	void *prompt_arg;
	const struct ph_ssh_params *p; /* during ph_ssh_connect only */
	struct ph_ssh_info info;
	char host[256];
	char errtext[256];       /* the start of what an exec'd command wrote on
	                            its standard error (terminated) */
	size_t errlen;
	int started;             /* main.chan runs a command or subsystem */
	void *note;              /* the caller's (ph_ssh_set_note) */
	void (*note_free)(void *);
};

/* Frees every channel of ssh without waiting for the server (the session
 * ends anyway). */
void ph_ssh_chans_free(struct ph_ssh *ssh);

#endif
