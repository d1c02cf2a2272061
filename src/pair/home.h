/* SPDX-License-Identifier: ISC */
/* Which ssh config pair and doctor read when no -F is given. */
#ifndef PH_PAIR_HOME_H
#define PH_PAIR_HOME_H

#include <stddef.h>

/* $HOME/.ssh/config when it exists, else /dev/null: the file phsync's own
 * config reading (sshconf.c) and pair's Host block use. Handed to libssh
 * explicitly, which would otherwise read the password database's home
 * (a different file when $HOME is not the account's home). */
void ph_pair_default_config(char *out, size_t len);

#endif
