/* SPDX-License-Identifier: ISC */
/* rsync's habits on pull, push and status: the flags that mean what phsync
 * always does are taken out of the command line before getopt sees it, and
 * the rsync flags phsync has no use for are refused with a line naming what
 * phsync does instead. Options phsync has itself (-n, -v, -q, -h, -F,
 * --delete, --exclude, --progress...) are left for getopt. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"

/* rsync flags phsync always honours: a file's contents, times and rw bits,
 * whole trees, keeping a cut transfer's prefix. -z is taken as a wish for
 * speed: photos and videos do not shrink, so phsync never compresses. */
static const char keep_short[] = "artzP";   /* and -h, unless it is all there is */

static const char *const keep_long[] = {
	"archive", "recursive", "times", "compress", "partial", "human-readable",
	"whole-file", "no-whole-file", "delay-updates", "mkpath", "protect-args", "secluded-args",
	NULL,
};

/* rsync flags refused, with what phsync does instead. Long names match the
 * whole name, or name= with an argument. */
static const struct {
	char s;
	const char *l, *why;
} refused[] = {
	{ 'e', "rsh", "phsync speaks ssh itself: put Port, User and IdentityFile in "
	  "~/.ssh/config (or a file given with -F FILE)" },
	{ 'u', "update", "a file changed here since the last sync is never overwritten "
	  "(the incoming one lands beside it); --overwrite lets the source win" },
	{ 'c', "checksum", "phsync compares size and time, and content on first contact "
	  "(--reset-state forgets the pair and compares again)" },
	{ 'l', "links", "symlinks are never followed nor created; they are reported and skipped" },
	{ 'L', "copy-links", "symlinks are never followed nor created" },
	{ 'p', "perms", "new files get the source's read/write bits under your umask, "
	  "replaced files keep theirs" },
	{ 'o', "owner", "files belong to the user running phsync" },
	{ 'g', "group", "files belong to the user running phsync" },
	{ 'D', NULL, "only regular files and folders are synced" },
	{ 'H', "hard-links", "only regular files and folders are synced" },
	{ 'A', "acls", "ACLs are not synced" },
	{ 'X', "xattrs", "extended attributes are not synced" },
	{ 'S', "sparse", "files are written whole" },
	{ 'W', NULL, "phsync chooses deltas itself (--helper never: whole files)" },
	{ 'x', "one-file-system", "phsync does not cross into other file systems' folders below the "
	  "destination as rsync -x would; drop the flag" },
	{ 'R', "relative", "the destination receives the contents of the source folder" },
	{ 'b', "backup", "use --trash DIR to keep what --delete removes" },
	{ 0, "backup-dir", "use --trash DIR" },
	{ 0, "del", "use --delete" },
	{ 0, "delete-before", "use --delete" },
	{ 0, "delete-during", "use --delete" },
	{ 0, "delete-delay", "use --delete" },
	{ 0, "delete-after", "use --delete" },
	{ 0, "delete-excluded", "excluded files are never deleted" },
	{ 0, "inplace", "phsync always writes a temp file and renames it into place" },
	{ 0, "append", "a cut transfer resumes from its verified prefix by itself" },
	{ 0, "append-verify", "a cut transfer resumes from its verified prefix by itself" },
	{ 0, "partial-dir", "a cut transfer resumes from its verified prefix by itself" },
	{ 0, "exclude-from", "give --exclude PATTERN once per pattern" },
	{ 0, "include-from", "give --include PATTERN once per pattern" },
	{ 0, "files-from", "give --include PATTERN once per pattern" },
	{ 0, "filter", "use --include and --exclude" },
	{ 0, "bwlimit", "phsync has no bandwidth limit" },
	{ 0, "stats", "-v prints the counts" },
	{ 0, "itemize-changes", "-v names each file, --json gives one event per file" },
	{ 0, "size-only", "phsync compares size and time" },
	{ 0, "ignore-times", "use --reset-state to compare contents again" },
	{ 0, "ignore-existing", "a file changed here is never overwritten" },
	{ 0, "existing", "phsync copies new files too; use --exclude" },
	{ 0, "rsync-path", "use --helper-path PATH" },
	{ 0, "chmod", "new files get the source's read/write bits under your umask" },
};

static const char *
refused_long(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refused[i].l != NULL && strlen(refused[i].l) == n &&
		    memcmp(refused[i].l, name, n) == 0)
			return refused[i].why;
	return NULL;
}

static const char *
refused_short(char c)
{
	size_t i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refused[i].s == c)
			return refused[i].why;
	return NULL;
}

static int
refuse(const char *flag, const char *why)
{
	fprintf(stderr, "phsync: rsync's %s is not a phsync option: %s\n"
	        "Try 'phsync --help'.\n", flag, why);
	return CLI_EXIT_USAGE;
}

/* One argument of the form -abc (not --) rewritten into out (never longer):
 * the letters phsync keeps. takes_arg names phsync's short options that take
 * an argument: the rest of the bundle is that argument, kept as it is, and
 * *next is set when it is the next word instead. */
static int
bundle(const char *arg, const char *takes_arg, int help, char *out, int *progress, int *next)
{
	const char *p;
	size_t o = 0;

	*next = 0;
	out[o++] = '-';
	for (p = arg + 1; *p != '\0'; p++) {
		char flag[3] = { '-', *p, '\0' };
		const char *why;

		if (strchr(takes_arg, *p) != NULL) {
			strcpy(out + o, p);
			*next = p[1] == '\0';
			return 0;
		}
		if (*p == 'P')
			*progress = 1;
		if (strchr(keep_short, *p) != NULL || (*p == 'h' && !help))
			continue;
		if ((why = refused_short(*p)) != NULL)
			return refuse(flag, why);
		out[o++] = *p;
	}
	out[o] = '\0';
	return 0;
}

/* Whether --name (n bytes) is one of phsync's options taking an argument
 * in the next word. */
static int
takes_next(const struct option *longopts, const char *name, size_t n)
{
	const struct option *lo;

	for (lo = longopts; lo != NULL && lo->name != NULL; lo++)
		if (lo->has_arg == required_argument && strlen(lo->name) == n &&
		    memcmp(lo->name, name, n) == 0)
			return 1;
	return 0;
}

int
cli_rsync_flags(int *argcp, char **argv, const char *takes_arg,
                const struct option *longopts, int *progress)
{
	int argc = *argcp, i, o = 1, rc, next;

	for (i = 1; i < argc; i++) {
		char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			while (i < argc)
				argv[o++] = argv[i++];
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			argv[o++] = a;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t n = eq != NULL ? (size_t)(eq - name) : strlen(name), k;
			const char *why;
			int kept = 0;

			for (k = 0; keep_long[k] != NULL; k++)
				if (eq == NULL && strcmp(name, keep_long[k]) == 0)
					kept = 1;
			if (kept)
				continue;
			if ((why = refused_long(name, n)) != NULL) {
				char flag[48];

				snprintf(flag, sizeof(flag), "--%.*s", (int)(n < 40 ? n : 40), name);
				return refuse(flag, why);
			}
			argv[o++] = a;
			/* Its argument, whatever it looks like (--exclude -avi). */
			if (eq == NULL && takes_next(longopts, name, n) && i + 1 < argc)
				argv[o++] = argv[++i];
			continue;
		}
		{
			char *nb = malloc(strlen(a) + 1);

			if (nb == NULL)
				return CLI_EXIT_ERROR;
			/* As rsync: -h is --help only when it is the only option. */
			rc = bundle(a, takes_arg, argc == 2 && strcmp(a, "-h") == 0, nb, progress,
			            &next);
			if (rc == 0 && nb[1] != '\0') {
				strcpy(a, nb);
				argv[o++] = a;
			}
			free(nb);
			if (rc != 0)
				return rc;
			if (next && i + 1 < argc)
				argv[o++] = argv[++i];
		}
	}
	argv[o] = NULL;
	*argcp = o;
	return 0;
}
