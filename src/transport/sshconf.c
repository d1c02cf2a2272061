/* SPDX-License-Identifier: ISC */
/* Minimal ssh_config lookups; see sshconf.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pattern.h"
#include "phsync/error.h"
#include "psys.h"
#include "sshconf.h"

#define MAX_DEPTH 8

/* What a lookup matches Host and Match lines against. */
struct target {
	const char *host;      /* as the user typed it (Host, Match originalhost) */
	const char *hostname;  /* after HostName (Match host) */
	const char *user;      /* remote user (Match user), NULL: unknown */
	const char *luser;     /* local user (Match localuser) */
	int final;             /* the final pass (Match final) */
};

static void
lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* Matches s against a list of patterns separated by any of seps, with '!'
 * negation (a negated match wins; negations alone match nothing). */
static int
match_list(const char *patterns, const char *s, const char *seps, int fold)
{
	char buf[1024], h[1024], *tok, *save = NULL;
	int matched = 0;

	if (s == NULL || strlen(patterns) >= sizeof(buf) || strlen(s) >= sizeof(h))
		return 0;
	strcpy(buf, patterns);
	strcpy(h, s);
	if (fold) {
		lower(buf);
		lower(h);
	}
	for (tok = strtok_r(buf, seps, &save); tok; tok = strtok_r(NULL, seps, &save)) {
		int neg = tok[0] == '!';

		if (ph_pattern_match(tok + neg, h, 0)) {
			if (neg)
				return 0;
			matched = 1;
		}
	}
	return matched;
}

static char *next_arg(char **p);

int
ph_sshconf_host_match(const char *patterns, const char *host)
{
	char buf[1024], *p = buf, *tok;
	int matched = 0;

	/* A Host line's patterns are separated by white space only ("a,b" is
	 * one pattern) and may be quoted, as ssh splits its arguments. */
	if (strlen(patterns) >= sizeof(buf))
		return 0;
	strcpy(buf, patterns);
	while ((tok = next_arg(&p)) != NULL) {
		/* Case-sensitive against the host as typed, as ssh does (Match
		 * lists, below, are not). */
		if (tok[0] == '!' && match_list(tok + 1, host, "", 0))
			return 0; /* a negated match wins */
		if (tok[0] != '!' && match_list(tok, host, "", 0))
			matched = 1;
	}
	return matched;
}

/* Takes the next argument of a line (quotes allowed); NULL at the end. */
static char *
next_arg(char **p)
{
	char *s = *p, *start;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '\0')
		return NULL;
	if (*s == '"') {
		start = ++s;
		while (*s && *s != '"')
			s++;
	} else {
		start = s;
		while (*s && !isspace((unsigned char)*s))
			s++;
	}
	if (*s)
		*s++ = '\0';
	*p = s;
	return start;
}

/* Evaluates a Match line's criteria (all must hold). exec, canonical,
 * localnetwork and tagged are taken as not matching: phsync runs no
 * commands from the config and does no canonicalization. */
static int
match_line(char *v, const struct target *t)
{
	char *crit;
	int ok = 1;

	while (ok && (crit = next_arg(&v)) != NULL) {
		int neg = crit[0] == '!', r;
		char *arg = NULL;

		crit += neg;
		if (strcasecmp(crit, "all") == 0) {
			r = 1;
		} else if (strcasecmp(crit, "final") == 0) {
			r = t->final;
		} else if (strcasecmp(crit, "canonical") == 0) {
			r = 0;
		} else if ((arg = next_arg(&v)) == NULL) {
			return 0; /* a criterion without its argument: malformed */
		} else if (strcasecmp(crit, "host") == 0) {
			r = match_list(arg, t->hostname, ",", 1);
		} else if (strcasecmp(crit, "originalhost") == 0) {
			r = match_list(arg, t->host, ",", 1);
		} else if (strcasecmp(crit, "user") == 0) {
			r = match_list(arg, t->user, ",", 0);
		} else if (strcasecmp(crit, "localuser") == 0) {
			r = match_list(arg, t->luser, ",", 0);
		} else {
			r = 0; /* exec, localnetwork, tagged, unknown */
		}
		ok = neg ? !r : r;
	}
	return ok;
}

static int lookup_file(const char *path, const struct target *t, const char *keyword,
                       char *val, size_t vlen, int depth, int must_exist);

/* One Include'd file's lookup (ph_path_glob's callback). */
struct incl {
	const struct target *t;
	const char *keyword;
	char *val;
	size_t vlen;
	int depth;
};

static int
include_one(const char *path, void *arg)
{
	const struct incl *in = arg;

	return lookup_file(path, in->t, in->keyword, in->val, in->vlen, in->depth + 1, 0);
}

static int
include(const char *arg, const struct target *t, const char *keyword, char *val,
        size_t vlen, int depth)
{
	struct incl in = { t, keyword, val, vlen, depth };
	char pat[4096], home[4096], ssh[4096], *args, *one, *p;
	int rc = 0, has_home = ph_home_dir(home, sizeof(home)) == 0 &&
	                       ph_ssh_dir(ssh, sizeof(ssh)) == 0;

	if ((args = strdup(arg)) == NULL)
		return PHSYNC_ENOMEM;
	p = args;
	while (rc == 0 && (one = next_arg(&p)) != NULL) {
		int n;

		if (one[0] == '~' && has_home)
			n = snprintf(pat, sizeof(pat), "%s%s", home, one + 1);
		else if (!ph_path_absolute(one) && has_home)
			n = snprintf(pat, sizeof(pat), "%s/%s", ssh, one);
		else
			n = snprintf(pat, sizeof(pat), "%s", one);
		if (n > 0 && (size_t)n < sizeof(pat)) /* longer: names no file */
			rc = ph_path_glob(pat, include_one, &in);
	}
	free(args);
	return rc;
}

static int
lookup_file(const char *path, const struct target *t, const char *keyword, char *val,
            size_t vlen, int depth, int must_exist)
{
	FILE *f;
	char line[4096];
	int active = 1, rc = 0;

	if (depth > MAX_DEPTH)
		return 0;
	/* fopen takes the name in the ANSI code page on Windows. */
	if (ph_ansi_path(path, line, sizeof(line)) != 0)
		return must_exist ? PHSYNC_ENOENT : 0;
	if ((f = fopen(line, "r")) == NULL)
		return must_exist ? (errno == ENOENT ? PHSYNC_ENOENT : PHSYNC_EPERM) : 0;
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *k = line, *v, *e;

		while (isspace((unsigned char)*k))
			k++;
		if (*k == '#' || *k == '\0')
			continue;
		v = k + strcspn(k, " \t=");
		if (*v != '\0') {
			int eq = *v == '=';

			*v++ = '\0';
			/* "Key value", "Key=value", "Key = value": one '=' at most. */
			while (isspace((unsigned char)*v))
				v++;
			if (!eq && *v == '=')
				v++;
			while (isspace((unsigned char)*v))
				v++;
		}
		e = v + strlen(v);
		while (e > v && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (strcasecmp(k, "Host") == 0) {
			active = ph_sshconf_host_match(v, t->host);
		} else if (strcasecmp(k, "Match") == 0) {
			active = match_line(v, t);
		} else if (!active) {
			continue;
		} else if (strcasecmp(k, "Include") == 0) {
			rc = include(v, t, keyword, val, vlen, depth);
		} else if (strcasecmp(k, keyword) == 0) {
			if (e - v >= 2 && v[0] == '"' && e[-1] == '"') {
				e[-1] = '\0';
				v++;
			}
			snprintf(val, vlen, "%s", v);
			rc = 1;
		}
	}
	fclose(f);
	return rc;
}

static int
lookup(const char *file, const struct target *t, const char *keyword, char *val, size_t vlen)
{
	char path[4096];
	int rc;

	if (file != NULL)
		return lookup_file(file, t, keyword, val, vlen, 0, 1);
	if (ph_ssh_dir(path, sizeof(path)) == 0 &&
	    strlen(path) + sizeof("/config") <= sizeof(path)) {
		strcat(path, "/config");
		if ((rc = lookup_file(path, t, keyword, val, vlen, 0, 0)) != 0)
			return rc;
	}
	if (ph_ssh_system_config(path, sizeof(path)) != 0)
		return 0;
	return lookup_file(path, t, keyword, val, vlen, 0, 0);
}

/* Both passes of ssh: a value first obtained wins; "Match final" blocks
 * count only in the second pass, for what the first left unset. */
static int
lookup_passes(const char *file, struct target *t, const char *keyword, char *val,
              size_t vlen)
{
	int rc;

	t->final = 0;
	if ((rc = lookup(file, t, keyword, val, vlen)) != 0)
		return rc;
	t->final = 1;
	return lookup(file, t, keyword, val, vlen);
}

int
ph_sshconf_get(const char *file, const char *host, const char *keyword, char *val,
               size_t vlen)
{
	struct target t = { 0 };
	char hostname[1024], user[256], luser[256];
	int rc;

	t.host = t.hostname = host;
	t.luser = ph_user_name(luser, sizeof(luser)) == 0 ? luser : NULL;
	t.user = t.luser;
	/* Match host compares the HostName in force (with %h expanded). */
	if ((rc = lookup_passes(file, &t, "HostName", hostname, sizeof(hostname))) < 0)
		return rc;
	if (rc == 1) {
		char *pct = strstr(hostname, "%h");

		if (pct != NULL && strlen(hostname) + strlen(host) < sizeof(hostname)) {
			memmove(pct + strlen(host), pct + 2, strlen(pct + 2) + 1);
			memcpy(pct, host, strlen(host));
		}
		t.hostname = hostname;
	}
	if (lookup_passes(file, &t, "User", user, sizeof(user)) == 1)
		t.user = user;
	return lookup_passes(file, &t, keyword, val, vlen);
}
