/* SPDX-License-Identifier: ISC */
/* The command's own process: its arguments as UTF-8 and its standard
 * streams as bytes. POSIX side platform/cmdio.c (nothing to do: argv is
 * the bytes given, streams are bytes); Windows side platform/win32/cmdio.c
 * (the wide command line, msvcrt's text mode). */
#ifndef PH_CMDIO_H
#define PH_CMDIO_H

/* Replaces *argv with the command line in UTF-8 where the C library gives
 * another encoding (Windows: the ANSI code page, which loses what it cannot
 * spell; the new strings are kept for the life of the process). Returns 0,
 * or -errno with *argc and *argv as they were. */
int ph_args_utf8(int *argc, char ***argv);

/* Makes fd (stdin, stdout or another C-library descriptor) carry bytes
 * unchanged (Windows: msvcrt's text mode turns "\n" into "\r\n" and stops
 * at ^Z). Returns 0 or -errno. */
int ph_fd_binary(int fd);

#endif
