/* SPDX-License-Identifier: ISC */
/* phsync.conf's INI reader for builds without libinih (the Windows build:
 * Debian's mirror does not serve libinih's source package, see
 * docs/WINDOWS.md "libinih"). It keeps the rules of libinih 55 with its
 * default options, so that a file means the same to both readers:
 * tests/unit/test_inird.c runs the two on the same inputs. */
#ifndef PH_INIRD_H
#define PH_INIRD_H

/* Called for each setting; returns nonzero to go on (0: that line is an
 * error, and the reading goes on). */
typedef int (*ph_ini_fn)(void *user, const char *section, const char *name,
                         const char *value);

/* Reads the file path and calls fn(user, section, name, value) for each
 * setting, in order; section is "" before the first [section].
 *  - A line is read 199 bytes at a time: the rest of a longer line is
 *    read as the next line (libinih's fixed line buffer of 200 bytes).
 *  - Leading and trailing white space is dropped; a UTF-8 byte order mark
 *    on the first line is skipped.
 *  - An empty line, or one starting with ';' or '#', is a comment.
 *  - "[name]" starts a section (name cut to 49 bytes); " ;" starts a
 *    comment after it.
 *  - "name = value" or "name: value" is a setting: the name and the value
 *    without white space around them, the value cut at the first ';' that
 *    follows white space (an inline comment). The name is kept (cut to 49
 *    bytes) for the lines after it:
 *  - a line with leading white space after a setting, in the same section,
 *    is another value of that name (Python configparser's continuation),
 *    the whole trimmed line (a ';' in it included).
 *  - Anything else is an error.
 * Returns 0; -1 when the file cannot be opened (errno says why); else the
 * number of the first line in error (every line is still read). */
int ph_ini_parse(const char *path, ph_ini_fn fn, void *user);

#endif
