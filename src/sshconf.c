/* Minimal ssh_config lookups; see sshconf.h. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "phsync/error.h"
#include "sshconf.h"

#define MAX_DEPTH 8

static void
lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

int
ph_sshconf_host_match(const char *patterns, const char *host)
{
	char buf[1024], h[256], *tok, *save = NULL;
	int matched = 0;

	if (strlen(patterns) >= sizeof(buf) || strlen(host) >= sizeof(h))
		return 0;
	strcpy(buf, patterns);
	strcpy(h, host);
	lower(buf);
	lower(h);
	for (tok = strtok_r(buf, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
		int neg = tok[0] == '!';

		if (fnmatch(tok + neg, h, 0) == 0) {
			if (neg)
				return 0;
			matched = 1;
		}
	}
	return matched;
}

static int lookup_file(const char *path, const char *host, const char *keyword,
                       char *val, size_t vlen, int depth, int must_exist);

static int
include(const char *arg, const char *host, const char *keyword, char *val,
        size_t vlen, int depth)
{
	char pat[4096];
	const char *home = getenv("HOME");
	glob_t g;
	size_t i;
	int rc = 0;

	if (arg[0] == '~' && home != NULL)
		snprintf(pat, sizeof(pat), "%s%s", home, arg + 1);
	else if (arg[0] != '/' && home != NULL)
		snprintf(pat, sizeof(pat), "%s/.ssh/%s", home, arg);
	else
		snprintf(pat, sizeof(pat), "%s", arg);
	if (glob(pat, 0, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc && rc == 0; i++)
		rc = lookup_file(g.gl_pathv[i], host, keyword, val, vlen, depth + 1, 0);
	globfree(&g);
	return rc;
}

static int
lookup_file(const char *path, const char *host, const char *keyword, char *val,
            size_t vlen, int depth, int must_exist)
{
	FILE *f;
	char line[4096];
	int active = 1, rc = 0;

	if (depth > MAX_DEPTH)
		return 0;
	if ((f = fopen(path, "r")) == NULL)
		return must_exist ? (errno == ENOENT ? PHSYNC_ENOENT : PHSYNC_EPERM) : 0;
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *k = line, *v, *e;

		while (isspace((unsigned char)*k))
			k++;
		if (*k == '#' || *k == '\0')
			continue;
		v = k + strcspn(k, " \t=");
		if (*v != '\0')
			*v++ = '\0';
		while (isspace((unsigned char)*v) || *v == '=')
			v++;
		e = v + strlen(v);
		while (e > v && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (e - v >= 2 && v[0] == '"' && e[-1] == '"') {
			e[-1] = '\0';
			v++;
		}
		if (strcasecmp(k, "Host") == 0)
			active = ph_sshconf_host_match(v, host);
		else if (strcasecmp(k, "Match") == 0)
			active = strcasecmp(v, "all") == 0;
		else if (!active)
			continue;
		else if (strcasecmp(k, "Include") == 0)
			rc = include(v, host, keyword, val, vlen, depth);
		else if (strcasecmp(k, keyword) == 0) {
			snprintf(val, vlen, "%s", v);
			rc = 1;
		}
	}
	fclose(f);
	return rc;
}

int
ph_sshconf_get(const char *file, const char *host, const char *keyword, char *val,
               size_t vlen)
{
	char path[4096];
	const char *home = getenv("HOME");
	int rc;

	if (file != NULL)
		return lookup_file(file, host, keyword, val, vlen, 0, 1);
	if (home != NULL) {
		snprintf(path, sizeof(path), "%s/.ssh/config", home);
		if ((rc = lookup_file(path, host, keyword, val, vlen, 0, 0)) != 0)
			return rc;
	}
	return lookup_file("/etc/ssh/ssh_config", host, keyword, val, vlen, 0, 0);
}
