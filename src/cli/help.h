/* SPDX-License-Identifier: ISC */
/* The --help texts shared by more than one command (help.c), each a
 * NULL-ended list of parts for cli_print_help. */
#ifndef PH_CLI_HELP_H
#define PH_CLI_HELP_H

extern const char *const cli_help_main[];    /* phsync --help */
extern const char *const cli_help_pull[];    /* phsync pull --help */
extern const char *const cli_help_push[];    /* phsync push --help */
extern const char *const cli_help_sync[];    /* phsync sync --help */
extern const char *const cli_help_status[];  /* phsync status --help */

#endif
