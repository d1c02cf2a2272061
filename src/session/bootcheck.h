/* SPDX-License-Identifier: ISC */
/* The checked start of a bootstrapped helper (docs/PROTOCOL.md,
 * "Bootstrap"): the POSIX sh script that opens the cached helper once,
 * reports its folders and that open file, sends its bytes and runs that
 * same open file; and the judging of its report. No I/O here. */
#ifndef PH_BOOTCHECK_H
#define PH_BOOTCHECK_H

#include <stddef.h>

#include "phsync/phsync.h"

/* The report's first line: "phsync-boot UID" (the login user's uid). */
#define PH_BOOT_HELLO "phsync-boot "
/* The line after the `ls` lines of the folders and the file. */
#define PH_BOOT_END "end"
/* The folders reported, in order, before the file; as shown to the user. */
#define PH_BOOT_NDIRS 3
extern const char *const ph_boot_dir_names[PH_BOOT_NDIRS];

/* One line of the report: `ls -lnd` of a path (or, for the open file,
 * `ls -lnLd /proc/PID/fd/3`), or "-" when there is none. */
struct ph_boot_ent {
	int present;
	char type;               /* mode string's first letter: 'd', '-', 'l' ... */
	char mode[12];           /* the mode string, e.g. "drwx------" */
	unsigned long long uid;
	unsigned long long size;
};

/* The open file's identity line (`stat -L -c "%d %i %s %f %u %z %y"`:
 * device, inode, size, mode, owner, ctime, mtime), at most this long. */
#define PH_BOOT_IDENT_MAX 160

/* Is id an identity line stat printed (and one phsync may remember and
 * pass back as a shell word): digits first, then only hex digits, blanks,
 * ':', '.', '+', '-'? 1 or 0 ("-", the script's "no stat", is not). */
int ph_boot_ident_ok(const char *id);

/* The remote command for the cached helper at path (relative to the login
 * folder; letters, digits, '.', '-', '_', '/' only) serving root: `sh -c
 * SCRIPT phsync-boot PATH ROOT KNOWN`, quoted for any login shell (sh,
 * bash, mksh, zsh, fish, csh). known: the identity remembered from the
 * last full check of this copy (NULL or not ph_boot_ident_ok: none); the
 * script sends the bytes only when the open file's differs. NULL when out
 * of memory or path is not plain. */
char *ph_boot_command(const char *path, const char *root, const char *known);

/* Writes root as one single-quoted shell word into out (room for
 * 4 * strlen(root) + 4 bytes), "" as the server's "/" (ph_remote_root), and
 * returns its length. The helper's command lines (this and login.c's). */
size_t ph_boot_quote_root(char *out, const char *root);

/* The helpers phsync brings: name (as the helper files and the memo name
 * them) and the `uname -m` answers it runs on, as sh case patterns. */
#define PH_BOOT_NARCH 3
struct ph_boot_arch {
	const char *name;
	const char *patterns;  /* "aarch64|arm64|armv8b"; a trailing '*': any rest */
};
extern const struct ph_boot_arch ph_boot_arches[PH_BOOT_NARCH];

/* The index in ph_boot_arches of the helper for what `uname -m` says
 * (its patterns), or of the helper named name; -1 for none. */
int ph_boot_arch_of(const char *machine);
int ph_boot_arch_index(const char *name);

/* First contact's lines after the hello (ph_boot_command_first). */
#define PH_BOOT_OWN_LINE "own"   /* the phone's phsync runs from here on */
#define PH_BOOT_ARCH "arch "     /* + the helper's name: the check follows */
#define PH_BOOT_MACHINE "machine " /* + uname -m: none offered for it; the end */

/* The remote command for a first contact, in one exec channel: the script
 * of ph_boot_command, after the hello first (own nonzero) the phone's own
 * `phsync serve ROOT` where `command -v phsync` finds one, else `uname -m`
 * mapped to one of the helpers of offer (bit i: ph_boot_arches[i]), whose
 * cached copy PREFIX + name is then checked as ph_boot_command's. known:
 * the identity remembered for the copy of known_arch (both NULL: none);
 * it holds only when the phone names that architecture. NULL when out of
 * memory, offer is empty or prefix not plain. */
char *ph_boot_command_first(const char *prefix, const char *root, unsigned offer, int own,
                            const char *known_arch, const char *known);

/* Parses the line after the hello of a first contact: PH_BOOT_O_OWN (only
 * when own was asked), PH_BOOT_O_ARCH with *arch one of offer's,
 * PH_BOOT_O_MACHINE (*arch: ph_boot_arch_of the machine, -1 or one not
 * offered), or -1 for anything else. */
enum { PH_BOOT_O_OWN, PH_BOOT_O_ARCH, PH_BOOT_O_MACHINE };
int ph_boot_parse_origin(const char *line, unsigned offer, int own, int *arch);

/* Parses the first line: 0 with *uid set, or -1. */
int ph_boot_parse_hello(const char *line, unsigned long long *uid);

/* Parses one `ls -lnd` line (or "-") into e: 0, or -1 when it is neither. */
int ph_boot_parse_ls(const char *line, struct ph_boot_ent *e);

/* Is line the `ls -lnd` line of name: ending with " NAME", or, a symlink,
 * with " NAME -> " in it? 1 or 0. */
int ph_boot_ls_is(const char *line, const char *name);

/* May a helper be run from the folder e, shown as name, for the user uid?
 * 0 when it is a real folder (no symlink) owned by uid and not writable by
 * its group or others, or when it is missing (phsync makes it); else
 * PHSYNC_EUNSAFE with the reason and the fix in ctx. */
int ph_boot_check_dir(phsync_ctx *ctx, const char *name, const struct ph_boot_ent *e,
                      unsigned long long uid);

/* Is e a copy phsync may check and run: a regular file owned by uid,
 * executable by it, writable by nobody else (and, size_want nonzero, of
 * that size)? 1 or 0 (0: it is replaced). */
int ph_boot_file_ok(const struct ph_boot_ent *e, unsigned long long uid, size_t size_want);

#endif
