/* SPDX-License-Identifier: ISC */
/* The SFTP client's insides, shared by its three files: sftp.c (the
 * request table, the pump, the greeting), sftp_ops.c (the request
 * builders) and sftp_sync.c (the synchronous wrappers). Nothing outside
 * src/transport/sftp*.c includes this. */
#ifndef PH_SFTP_INT_H
#define PH_SFTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "sftp.h"

#define PH_SFTP_SLOTS 4096 /* requests in flight at most; a power of two */

struct ph_sftp_slot {
	uint32_t id;
	uint8_t used;
	ph_sftp_cb cb;
	void *arg;
	struct ph_sftp_group *group; /* counted in its inflight while used */
};

struct ph_sftp {
	phsync_ctx *ctx;
	struct ph_chan chan;
	struct ph_buf out;
	uint8_t *in;       /* receive buffer, inlen bytes valid from inoff */
	size_t incap, inlen, inoff;
	int flushing;      /* a flush is under way (its drain ran callbacks) */
	struct ph_sftp_slot *slots;
	uint32_t next_id;
	size_t inflight;
	size_t unsent;     /* of those, queued in out and not sent yet */
	struct ph_sftp_group *next_group; /* ph_sftp_in_group: for the next request */
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

/* Starts a request packet in s->out: length placeholder, type, id; the
 * packet's offset goes to *start. Takes the group ph_sftp_in_group gave
 * (the request belongs to it once ph_sftp_req_end queues it). */
int ph_sftp_req_begin(struct ph_sftp *s, uint8_t type, ph_sftp_cb cb, void *arg,
                      size_t *start);
/* Finishes the packet begun at start when rc (from the field writes) is 0:
 * the request is queued and counted (in its group too). Else takes the
 * packet back and returns rc. */
int ph_sftp_req_end(struct ph_sftp *s, size_t start, int rc);
/* A request refused before ph_sftp_req_begin (not offered, bad argument):
 * the group given for it is let go of; returns rc. */
int ph_sftp_req_refuse(struct ph_sftp *s, int rc);

#endif
