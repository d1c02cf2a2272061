/* SPDX-License-Identifier: ISC */
/* One pairing's state, shared by pair.c (the steps) and authkeys.c (the
 * key put into the phone's authorized_keys). Internal. */
#ifndef PH_PAIRING_H
#define PH_PAIRING_H

#include <stdarg.h>
#include <stdio.h>

#include "phsync/pair.h"
#include "ctx.h"
#include "sftp.h"

struct pairing {
	phsync_ctx *ctx;
	const struct phsync_pair_options *o;
	struct phsync_pair_result *res;
	char home[1024];
	char config[1200];
	char key[1200];
	char pub[2048];           /* "TYPE BASE64 COMMENT" */
	int agent;                /* the key is the agent's (pub), no file */
	int config_has_host;      /* a Host line names o->name exactly */
	unsigned config_port;     /* and the port it gives (a re-run probes none) */
};

static inline void
note(struct pairing *pg, const char *fmt, ...) PH_PRINTF(2, 3);

/* Tells the caller a step (o->on_note), when it listens. */
static inline void
note(struct pairing *pg, const char *fmt, ...)
{
	char msg[1400];
	va_list ap;

	if (pg->o->on_note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pg->o->on_note(msg, pg->o->note_arg);
}

/* Adds pg->pub to the phone's authorized_keys over s (made private, the
 * old file replaced through a temp file, a key already there left
 * alone). Returns 0 or a PHSYNC_E* with the message in ctx. */
int ph_pair_install_key(struct pairing *pg, struct ph_sftp *s);
/* n-1 random hex digits and a NUL into out. */
void ph_pair_random_hex(char *out, size_t n);

#endif
