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
#define S_HELLO \
	"u=$(id -u) || exit 1; printf \"" PH_BOOT_HELLO "%s\\n\" \"$u\"; "
#define S_CHECK \
	"QUOTING_STYLE=literal ls -lnd . .cache .cache/phsync \"$1\" 2>/dev/null; " \
	"printf \"" PH_BOOT_END "\\n\"; " \
	"[ -f \"$1\" ] || exit 0; exec 3<\"$1\"; f=/proc/$$/fd/3; " \
	"l=$(ls -lnLd \"$f\" 2>/dev/null) || l=-; printf \"%s\\n\" \"${l:--}\"; " \
	"i=$(stat -L -c \"%d %i %s %f %u %z %y\" \"$f\" 2>/dev/null) || i=-; " \
	"printf \"%s\\n\" \"${i:--}\"; if [ \"$i\" = \"$3\" ]; then :; else " \
	"cat <&3 || exit 1; l=$(ls -lnLd \"$f\" 2>/dev/null) || l=-; " \
	"printf \"%s\\n\" \"${l:--}\"; fi; read -r v || exit 0; [ \"$v\" = run ] || exit 0; " \
	"printf \"go\\n\"; exec \"$f\" serve \"$2\""
static const char script[] = S_HELLO S_CHECK;

/* First contact (ph_boot_command_first): between the hello and the check,
 *   - own: the phone's own phsync, found on the login PATH, is started as
 *     `phsync serve ROOT` right after an "own" line (phsync then speaks the
 *     helper protocol with it and judges its version, as for any helper:
 *     nothing is read from the input before, so its INIT reaches phsync);
 *   - else `uname -m` mapped to a helper name by case arms built from
 *     ph_boot_arches (only those this phsync has helpers for): "arch NAME",
 *     the path becomes $1NAME, and $3 (the remembered identity) holds only
 *     when NAME is $4 (the architecture it was remembered for); or
 *     "machine M" and the end for any other machine. */
#define S_OWN \
	"if command -v phsync >/dev/null 2>&1; then printf \"" PH_BOOT_OWN_LINE "\\n\"; " \
	"exec phsync serve \"$2\"; fi; "
#define S_ARCH_HEAD "m=$(uname -m 2>/dev/null) || m=-; case $m in "
#define S_ARCH_TAIL \
	"*) printf \"" PH_BOOT_MACHINE "%s\\n\" \"$m\"; exit 0;; esac; " \
	"printf \"" PH_BOOT_ARCH "%s\\n\" \"$a\"; [ \"$a\" = \"$4\" ] || set -- \"$1\" \"$2\" x; " \
	"set -- \"$1$a\" \"$2\" \"$3\"; "

const struct ph_boot_arch ph_boot_arches[PH_BOOT_NARCH] = {
	{ "aarch64", "aarch64|arm64|armv8b" },
	/* A 32-bit userland on a 64-bit kernel says armv8l. */
	{ "armv7", "armv7*|armv8l" },
	{ "x86_64", "x86_64|amd64" },
};

int
ph_boot_arch_of(const char *m)
{
	size_t i, ml = strlen(m);

	for (i = 0; i < PH_BOOT_NARCH; i++) {
		const char *p = ph_boot_arches[i].patterns;

		while (*p != '\0') {
			size_t n = strcspn(p, "|");

			if (n > 0 && p[n - 1] == '*' ? ml >= n - 1 && memcmp(m, p, n - 1) == 0 :
			    ml == n && memcmp(m, p, n) == 0)
				return (int)i;
			p += n + (p[n] == '|');
		}
	}
	return -1;
}

int
ph_boot_arch_index(const char *name)
{
	size_t i;

	for (i = 0; i < PH_BOOT_NARCH; i++)
		if (strcmp(name, ph_boot_arches[i].name) == 0)
			return (int)i;
	return -1;
}

int
ph_boot_ident_ok(const char *id)
{
	size_t n = strlen(id);

	/* What stat prints (digits, hex, dates): never "-" or "x", which the
	 * script says for none. */
	return n >= 8 && n < PH_BOOT_IDENT_MAX && id[0] >= '0' && id[0] <= '9' &&
	       strspn(id, "0123456789abcdefABCDEF :.+-") == n;
}

/* Letters, digits, '.', '-', '_', '/' only, relative, not an option. */
static int
plain_path(const char *path)
{
	const char *p;

	for (p = path; *p != '\0'; p++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_/", *p) ==
		    NULL)
			return 0;
	return path[0] != '\0' && path[0] != '/' && path[0] != '-';
}

/* `sh -c 'TEXT' phsync-boot 'PATH' ROOT 'KNOWN'` into a new string of n
 * bytes (n counts TEXT and room for the rest). */
static char *
command_of(const char *text, size_t n, const char *path, const char *root, const char *known)
{
	char *c;
	size_t k;

	n += strlen(path) + 4 * strlen(root) + PH_BOOT_IDENT_MAX + 64;
	if (!plain_path(path) || (c = malloc(n)) == NULL)
		return NULL;
	k = (size_t)snprintf(c, n, "sh -c '%s' phsync-boot '%s' ", text, path);
	k += ph_boot_quote_root(c + k, root);
	/* Plain characters only (ph_boot_ident_ok): one quoted word. */
	snprintf(c + k, n - k, " '%s'", known != NULL && ph_boot_ident_ok(known) ? known : "x");
	return c;
}

char *
ph_boot_command(const char *path, const char *root, const char *known)
{
	return command_of(script, sizeof(script), path, root, known);
}

char *
ph_boot_command_first(const char *prefix, const char *root, unsigned offer, int own,
                      const char *known_arch, const char *known)
{
	char text[sizeof(S_HELLO S_OWN S_ARCH_HEAD S_ARCH_TAIL S_CHECK) + PH_BOOT_NARCH * 64];
	size_t k, i;
	char *c, *end;
	int ka = known_arch != NULL ? ph_boot_arch_index(known_arch) : -1;

	if ((offer & ((1u << PH_BOOT_NARCH) - 1)) == 0)
		return NULL;
	k = (size_t)snprintf(text, sizeof(text), "%s%s%s", S_HELLO, own ? S_OWN : "", S_ARCH_HEAD);
	for (i = 0; i < PH_BOOT_NARCH; i++)
		if (offer & (1u << i))
			k += (size_t)snprintf(text + k, sizeof(text) - k, "%s) a=%s;; ",
			                      ph_boot_arches[i].patterns, ph_boot_arches[i].name);
	snprintf(text + k, sizeof(text) - k, "%s%s", S_ARCH_TAIL, S_CHECK);
	/* $4: the architecture the identity was remembered for ("x": none). */
	if (ka < 0 || (offer & (1u << ka)) == 0 || known == NULL || !ph_boot_ident_ok(known))
		known = NULL;
	if ((c = command_of(text, sizeof(text) + 32, prefix, root, known)) == NULL)
		return NULL;
	end = c + strlen(c);
	/* The 32 bytes more asked of command_of. */
	sprintf(end, " '%s'", known != NULL ? ph_boot_arches[ka].name : "x");
	return c;
}

int
ph_boot_parse_origin(const char *line, unsigned offer, int own, int *arch)
{
	size_t k;
	int i;

	*arch = -1;
	if (own && strcmp(line, PH_BOOT_OWN_LINE) == 0)
		return PH_BOOT_O_OWN;
	k = strlen(PH_BOOT_ARCH);
	if (strncmp(line, PH_BOOT_ARCH, k) == 0) {
		/* Only a name phsync offered in the script's case arms. */
		if ((i = ph_boot_arch_index(line + k)) < 0 || (offer & (1u << i)) == 0)
			return -1;
		*arch = i;
		return PH_BOOT_O_ARCH;
	}
	k = strlen(PH_BOOT_MACHINE);
	if (strncmp(line, PH_BOOT_MACHINE, k) == 0) {
		*arch = ph_boot_arch_of(line + k);
		/* One of ours would have matched its case arm. */
		if (*arch >= 0 && (offer & (1u << *arch)) != 0)
			return -1;
		return PH_BOOT_O_MACHINE;
	}
	return -1;
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
