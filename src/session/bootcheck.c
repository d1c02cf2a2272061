/* SPDX-License-Identifier: ISC */
/* The checked start of a bootstrapped helper: the script and the judging of
 * what it reports (docs/PROTOCOL.md, "Bootstrap"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootcheck.h"
#include "ctx.h"

const char *const ph_boot_dir_names[PH_BOOT_NDIRS] = { "~", "~/.cache", "~/.cache/phsync" };

/* Run by `sh -c` with $1 the cached helper (relative to the login folder,
 * the command's working folder) and $2 the root to serve. One line: the
 * login shell may be csh or fish; no single quote, no '!', no backslash
 * but the "\n" of printf (literal in every shell's single quotes).
 *   - the uid of the login user, then one `ls -lnd` of ., .cache,
 *     .cache/phsync and the file itself (a symlink shows as one), then
 *     "end": a missing one has no line (its error goes to /dev/null), and
 *     the lines come in that order (ls sorts its operands, and each name
 *     here begins with the one before it), each ending with its name (GNU
 *     ls would quote names as $QUOTING_STYLE says: literal, for that ls);
 *   - the file is opened once, as fd 3; `ls -lnLd /proc/$$/fd/3` reports
 *     the file that is open (owner, mode, size), whatever its name now
 *     points to; then its identity, `stat -L -c "%d %i %s %f %u %z %y"` of
 *     the same link (device, inode, size, mode, owner, ctime and mtime to
 *     the nanosecond in toybox, busybox and GNU stat; "-" without stat);
 *   - unless that identity is $3 (the one phsync remembers from its last
 *     full check of this file, "x" for none), its bytes follow, from that
 *     descriptor, and the same `ls` line again (a file that changed size
 *     meanwhile shows);
 *   - phsync answers "run" when they are exactly its helper's (or the
 *     identity is the remembered one), and the shell then executes that
 *     same open file through /proc/$$/fd/3 (the kernel reaches the open
 *     file, not the name), after saying "go" so that phsync sends the
 *     first SFTP byte only when the shell no longer reads its input.
 *     Anything else read ends the script. */
static const char script[] =
	"u=$(id -u) || exit 1; printf \"" PH_BOOT_HELLO "%s\\n\" \"$u\"; "
	"QUOTING_STYLE=literal ls -lnd . .cache .cache/phsync \"$1\" 2>/dev/null; "
	"printf \"" PH_BOOT_END "\\n\"; "
	"[ -f \"$1\" ] || exit 0; exec 3<\"$1\"; f=/proc/$$/fd/3; "
	"l=$(ls -lnLd \"$f\" 2>/dev/null) || l=-; printf \"%s\\n\" \"${l:--}\"; "
	"i=$(stat -L -c \"%d %i %s %f %u %z %y\" \"$f\" 2>/dev/null) || i=-; "
	"printf \"%s\\n\" \"${i:--}\"; if [ \"$i\" = \"$3\" ]; then :; else "
	"cat <&3 || exit 1; l=$(ls -lnLd \"$f\" 2>/dev/null) || l=-; "
	"printf \"%s\\n\" \"${l:--}\"; fi; read -r v || exit 0; [ \"$v\" = run ] || exit 0; "
	"printf \"go\\n\"; exec \"$f\" serve \"$2\"";

int
ph_boot_ident_ok(const char *id)
{
	size_t n = strlen(id);

	/* What stat prints (digits, hex, dates): never "-" or "x", which the
	 * script says for none. */
	return n >= 8 && n < PH_BOOT_IDENT_MAX && id[0] >= '0' && id[0] <= '9' &&
	       strspn(id, "0123456789abcdefABCDEF :.+-") == n;
}

char *
ph_boot_command(const char *path, const char *root, const char *known)
{
	size_t n = sizeof(script) + strlen(path) + 4 * strlen(root) + PH_BOOT_IDENT_MAX + 64, k;
	const char *p;
	char *c;

	for (p = path; *p != '\0'; p++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_/", *p) ==
		    NULL)
			return NULL;
	if (path[0] == '\0' || path[0] == '/' || path[0] == '-' || (c = malloc(n)) == NULL)
		return NULL;
	k = (size_t)snprintf(c, n, "sh -c '%s' phsync-boot '%s' ", script, path);
	k += ph_boot_quote_root(c + k, root);
	/* Plain characters only (ph_boot_ident_ok): one quoted word. */
	snprintf(c + k, n - k, " '%s'", known != NULL && ph_boot_ident_ok(known) ? known : "x");
	return c;
}

size_t
ph_boot_quote_root(char *out, const char *root)
{
	char *q = out;

	*q++ = '\'';
	for (; *root != '\0'; root++) {
		if (*root == '\'') {
			memcpy(q, "'\\''", 4);
			q += 4;
		} else {
			*q++ = *root;
		}
	}
	/* "" is the server's "/" (ph_remote_root). */
	if (q == out + 1)
		*q++ = '/';
	*q++ = '\'';
	*q = '\0';
	return (size_t)(q - out);
}

/* A decimal number of at most 19 digits ending at a space or the end. */
static int
num(const char *s, size_t len, unsigned long long *v)
{
	size_t i;

	if (len == 0 || len > 19)
		return -1;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned long long)(s[i] - '0');
	}
	return 0;
}

int
ph_boot_parse_hello(const char *line, unsigned long long *uid)
{
	size_t k = strlen(PH_BOOT_HELLO);

	if (strncmp(line, PH_BOOT_HELLO, k) != 0)
		return -1;
	return num(line + k, strlen(line + k), uid);
}

int
ph_boot_parse_ls(const char *line, struct ph_boot_ent *e)
{
	const char *tok[5];
	size_t len[5], i;
	const char *p = line;

	memset(e, 0, sizeof(*e));
	if (strcmp(line, "-") == 0)
		return 0;
	/* mode links owner group size ...: the fields are split by blanks. */
	for (i = 0; i < 5; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		tok[i] = p;
		while (*p != '\0' && *p != ' ' && *p != '\t')
			p++;
		len[i] = (size_t)(p - tok[i]);
		if (len[i] == 0)
			return -1;
	}
	/* "drwx------", maybe one more letter (+ for an ACL, . for SELinux). */
	if (len[0] < 10 || len[0] > 11 || num(tok[2], len[2], &e->uid) != 0 ||
	    num(tok[4], len[4], &e->size) != 0)
		return -1;
	for (i = 1; i < 10; i++)
		if (strchr("rwxsStT-", tok[0][i]) == NULL)
			return -1;
	memcpy(e->mode, tok[0], 10);
	e->mode[10] = '\0';
	e->type = tok[0][0];
	e->present = 1;
	return 0;
}

int
ph_boot_ls_is(const char *line, const char *name)
{
	size_t n = strlen(name), l = strlen(line);
	char arrow[160];

	if (l > n && line[l - n - 1] == ' ' && memcmp(line + l - n, name, n) == 0)
		return 1;
	/* A symlink: "NAME -> TARGET". */
	if ((size_t)snprintf(arrow, sizeof(arrow), " %s -> ", name) >= sizeof(arrow))
		return 0;
	return line[0] == 'l' && strstr(line, arrow) != NULL;
}

/* Writable by its group or by others (ls shows an ACL's mask as the
 * group's bits, so a user an ACL lets write shows here too). */
static int
others_write(const struct ph_boot_ent *e)
{
	return e->mode[5] == 'w' || e->mode[8] == 'w';
}

int
ph_boot_check_dir(phsync_ctx *ctx, const char *name, const struct ph_boot_ent *e,
                  unsigned long long uid)
{
	if (!e->present)
		return 0;
	if (e->type == 'l')
		return ph_err(ctx, PHSYNC_EUNSAFE, "%s on the phone is a symlink: phsync runs no "
		              "helper through it (remove the link; phsync makes the folder itself)",
		              name);
	if (e->type != 'd')
		return ph_err(ctx, PHSYNC_EUNSAFE, "%s on the phone is not a folder", name);
	if (e->uid != uid)
		return ph_err(ctx, PHSYNC_EUNSAFE, "%s on the phone belongs to uid %llu, not to the "
		              "login user (uid %llu): phsync runs no helper from there", name, e->uid,
		              uid);
	if (others_write(e))
		return ph_err(ctx, PHSYNC_EUNSAFE, "%s on the phone is writable by other users (%s): "
		              "phsync runs no helper from there (chmod go-w %s)", name, e->mode, name);
	return 0;
}

int
ph_boot_file_ok(const struct ph_boot_ent *e, unsigned long long uid, size_t size_want)
{
	return e->present && e->type == '-' && e->uid == uid && !others_write(e) &&
	       e->mode[3] == 'x' && (size_want == 0 || e->size == size_want);
}
