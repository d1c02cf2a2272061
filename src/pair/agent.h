/* SPDX-License-Identifier: ISC */
/* The keys an ssh-agent holds, for pairing a user who keeps keys only in
 * the agent (docs/ARCHITECTURE.md, "Pairing"). */
#ifndef PH_AGENT_H
#define PH_AGENT_H

#include <stddef.h>

/* Asks the agent at $SSH_AUTH_SOCK for its keys and picks one: ed25519
 * first, then ECDSA, then RSA (security-key and certificate entries are
 * skipped: a sync from cron cannot touch a token). Writes its public line
 * "TYPE BASE64 COMMENT" to pub. Returns 0, or -1 when there is no agent,
 * it holds no such key, or it answers out of protocol (every length it
 * sends is checked against caps before anything is read into memory). */
int ph_agent_pick(char *pub, size_t publen);

#endif
