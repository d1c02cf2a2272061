/* SPDX-License-Identifier: ISC */
/* What names a run: the remote spec [user@]host:path (as scp's and
 * rsync's), its root, the --helper word, and the options' defaults. */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "spec.h"
#include "str.h"

void
phsync_options_init(struct phsync_options *o)
{
	memset(o, 0, sizeof(*o));
	o->fsync = 1;
	o->max_delete = -1;
}

int
phsync_parse_helper(const char *s, int *mode)
{
	if (strcmp(s, "auto") == 0)
		*mode = PHSYNC_HELPER_AUTO;
	else if (strcmp(s, "never") == 0)
		*mode = PHSYNC_HELPER_NEVER;
	else if (strcmp(s, "always") == 0)
		*mode = PHSYNC_HELPER_ALWAYS;
	else
		return PHSYNC_EINVAL;
	return 0;
}

int
phsync_parse_remote(const char *spec, char **user, char **host, char **path)
{
	const char *at, *colon, *h = spec, *hend;

	*user = *host = *path = NULL;
	/* A local path with a '/' before any ':' is no remote spec (as rsync). */
	colon = strchr(spec, ':');
	if (colon == NULL || colon == spec)
		return PHSYNC_EINVAL;
	at = memchr(spec, '@', (size_t)(colon - spec));
	if (spec[0] != '[' && memchr(spec, '/', (size_t)(colon - spec)) != NULL)
		return PHSYNC_EINVAL;
	if (at != NULL) {
		if (at == spec)
			return PHSYNC_EINVAL;
		*user = ph_strndup(spec, (size_t)(at - spec));
		h = at + 1;
	}
	if (*h == '[') {
		hend = strchr(h, ']');
		if (hend == NULL || hend[1] != ':')
			goto bad;
		*host = ph_strndup(h + 1, (size_t)(hend - h - 1));
		colon = hend + 1;
	} else {
		colon = strchr(h, ':');
		*host = ph_strndup(h, (size_t)(colon - h));
	}
	if (*host == NULL || (*host)[0] == '\0')
		goto bad;
	/* phone:~/x is x in the login's home folder, as for scp and sftp: a
	 * relative path already is (the server starts there), so ~ goes. */
	if (colon[1] == '~' && (colon[2] == '/' || colon[2] == '\0'))
		colon += colon[2] == '/' ? 2 : 1;
	*path = strdup(colon + 1);
	if (*path == NULL)
		goto bad;
	return 0;
bad:
	free(*user);
	free(*host);
	free(*path);
	*user = *host = *path = NULL;
	return PHSYNC_EINVAL;
}

char *
ph_remote_root(const char *path)
{
	size_t n = strlen(path);

	if (n == 0)
		return strdup(".");
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 1 && path[0] == '/')
		return strdup("");
	return ph_strndup(path, n);
}

int
ph_spec_remote(phsync_ctx *ctx, const char *spec, char **user, char **host, char **path,
               char **rroot)
{
	*rroot = NULL;
	if (phsync_parse_remote(spec, user, host, path) != 0)
		return ph_err(ctx, PHSYNC_EINVAL, "'%s' is not HOST:PATH", spec);
	if ((*rroot = ph_remote_root(*path)) == NULL) {
		free(*user);
		free(*host);
		free(*path);
		*user = *host = *path = NULL;
		return PHSYNC_ENOMEM;
	}
	return 0;
}
