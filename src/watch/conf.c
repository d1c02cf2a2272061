/* SPDX-License-Identifier: ISC */
/* The daemon's config file: INI sections, one per sync pair, parsed by
 * libinih, or where a build has none (Windows) by inird.c, which keeps its
 * rules (docs/phsync.conf.5 is the format's reference). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_INIH
#include <ini.h>
#define conf_ini_parse ini_parse
#else
#include "inird.h"
#define conf_ini_parse ph_ini_parse
#endif

#include "phsync/sys.h"
#include "conf.h"

#define MAX_LINES 4096
#define MAX_RULES 256

/* Every key a section may hold; anything else is an error (a typo must
 * not silently drop a setting). */
static const char *const keys[] = {
	"direction", "remote", "local", "interval", "full-every", "settle-ms",
	"idle-close", "keepalive", "ssh-config", "state-dir", "exclude", "include",
	"no-default-excludes", "delete", "max-delete", "trash", "overwrite",
	"no-fsync", "timeout", "min-age", "modify-window", "helper", "helper-path", NULL
};

struct line {
	char *section, *key, *value;
};

struct parse {
	struct line *v;
	size_t n, cap;
	char err[512];
};

static int
known_key(const char *k)
{
	size_t i;

	for (i = 0; keys[i] != NULL; i++)
		if (strcmp(keys[i], k) == 0)
			return 1;
	return 0;
}

static int
on_line(void *arg, const char *section, const char *name, const char *value)
{
	struct parse *ps = arg;
	struct line *l;

	if (ps->err[0])
		return 0;
	if (!known_key(name)) {
		snprintf(ps->err, sizeof(ps->err), "unknown setting '%s'", name);
		return 0;
	}
	if (ps->n >= MAX_LINES) {
		snprintf(ps->err, sizeof(ps->err), "more than %d settings", MAX_LINES);
		return 0;
	}
	if (ps->n == ps->cap) {
		size_t nc = ps->cap ? ps->cap * 2 : 32;
		struct line *v = realloc(ps->v, nc * sizeof(*v));

		if (v == NULL)
			return 0;
		ps->v = v;
		ps->cap = nc;
	}
	l = &ps->v[ps->n];
	l->section = strdup(section);
	l->key = strdup(name);
	l->value = strdup(value);
	if (l->section == NULL || l->key == NULL || l->value == NULL) {
		free(l->section);
		free(l->key);
		free(l->value);
		snprintf(ps->err, sizeof(ps->err), "out of memory");
		return 0;
	}
	ps->n++;
	return 1;
}

/* "~/x" with the home folder; other paths as they are. */
static char *
expand(const char *v)
{
	char home[PATH_MAX], *p;

	if (v[0] != '~' || (v[1] != '/' && v[1] != '\0') || phsync_home_dir(home, sizeof(home)) != 0)
		return strdup(v);
	if ((p = malloc(strlen(home) + strlen(v))) == NULL)
		return NULL;
	sprintf(p, "%s%s", home, v + 1);
	return p;
}

static int
parse_uint(const char *v, unsigned long lo, unsigned long hi, unsigned *out)
{
	char *end;
	unsigned long x;

	if (v[0] < '0' || v[0] > '9')
		return -1;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi)
		return -1;
	*out = (unsigned)x;
	return 0;
}

static int
parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = 0;
	else
		return -1;
	return 0;
}

static int
set_str(char **dst, const char *v, int tilde)
{
	char *s = tilde ? expand(v) : strdup(v);

	if (s == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

static int
add_rule(char ***v, size_t *n, const char *val)
{
	char **nv;

	if (*n >= MAX_RULES || (nv = realloc(*v, (*n + 1) * sizeof(*nv))) == NULL)
		return -1;
	*v = nv;
	if ((nv[*n] = strdup(val)) == NULL)
		return -1;
	(*n)++;
	return 0;
}

/* Applies one setting to p; -1 with a message in err. */
static int
apply(struct ph_conf_pair *p, const struct line *l, char *err, size_t errlen)
{
	const char *k = l->key, *v = l->value;
	int rc = 0, b;

	if (!strcmp(k, "direction")) {
		if (!strcmp(v, "pull"))
			p->dir = PHSYNC_PULL;
		else if (!strcmp(v, "push"))
			p->dir = PHSYNC_PUSH;
		else if (!strcmp(v, "both"))
			p->dir = PHSYNC_BOTH;
		else
			rc = -1;
	} else if (!strcmp(k, "remote")) {
		char *u, *h, *path;

		if (phsync_parse_remote(v, &u, &h, &path) != 0)
			rc = -1;
		else {
			free(u);
			free(h);
			free(path);
			rc = set_str(&p->remote, v, 0);
		}
	} else if (!strcmp(k, "local")) {
		rc = v[0] ? set_str(&p->local, v, 1) : -1;
	} else if (!strcmp(k, "ssh-config")) {
		rc = set_str(&p->ssh_config, v, 1);
	} else if (!strcmp(k, "state-dir")) {
		rc = set_str(&p->state_dir, v, 1);
	} else if (!strcmp(k, "helper")) {
		rc = phsync_parse_helper(v, &p->helper) == 0 ? 0 : -1;
	} else if (!strcmp(k, "helper-path")) {
		rc = v[0] ? set_str(&p->helper_path, v, 0) : -1;
	} else if (!strcmp(k, "trash")) {
		rc = v[0] ? set_str(&p->trash, v, 0) : -1;
	} else if (!strcmp(k, "exclude")) {
		rc = add_rule(&p->excludes, &p->n_excludes, v);
	} else if (!strcmp(k, "include")) {
		rc = add_rule(&p->includes, &p->n_includes, v);
	} else if (!strcmp(k, "interval")) {
		rc = parse_uint(v, 1, 86400, &p->interval_s);
	} else if (!strcmp(k, "full-every")) {
		rc = parse_uint(v, 1, 100000, &p->full_every);
	} else if (!strcmp(k, "settle-ms")) {
		rc = parse_uint(v, 0, 60000, &p->settle_ms);
	} else if (!strcmp(k, "idle-close")) {
		rc = parse_uint(v, 1, 86400, &p->idle_close_s);
	} else if (!strcmp(k, "keepalive")) {
		rc = parse_uint(v, 1, 86400, &p->keepalive_s);
	} else if (!strcmp(k, "timeout")) {
		rc = parse_uint(v, 1, 86400, &p->timeout_s);
	} else if (!strcmp(k, "min-age")) {
		rc = parse_uint(v, 0, 2592000, &p->min_age_s);
	} else if (!strcmp(k, "modify-window")) {
		rc = parse_uint(v, 0, 86400, &p->modify_window_s);
	} else if (!strcmp(k, "max-delete")) {
		unsigned m;

		rc = parse_uint(v, 0, UINT_MAX, &m);
		p->max_delete = m;
	} else {
		int *dst = !strcmp(k, "delete") ? &p->delete_missing :
		           !strcmp(k, "overwrite") ? &p->overwrite :
		           !strcmp(k, "no-fsync") ? &p->no_fsync : &p->no_default_excludes;

		if ((rc = parse_bool(v, &b)) == 0)
			*dst = b;
	}
	if (rc != 0)
		snprintf(err, errlen, "[%s] %s = %s: not a valid value", p->name, k, v);
	return rc;
}

static int
is_defaults(const char *section)
{
	return section[0] == '\0' || strcmp(section, "defaults") == 0;
}

int
ph_conf_default_path(char *buf, size_t len)
{
	return phsync_config_path("phsync.conf", buf, len) == 0 ? 0 : -1;
}

int
ph_conf_load(const char *path, struct ph_conf *c, char *err, size_t errlen)
{
	struct parse ps;
	size_t i, k;
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&ps, 0, sizeof(ps));
	rc = conf_ini_parse(path, on_line, &ps);
	if (rc == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOENT));
		goto fail;
	}
	if (rc != 0) {
		snprintf(err, errlen, "%s:%d: %s", path, rc, ps.err[0] ? ps.err : "syntax error");
		goto fail;
	}
	/* Each non-default section, in order of first appearance, is a pair:
	 * the defaults' settings first, then its own. */
	for (i = 0; i < ps.n; i++) {
		struct ph_conf_pair *p, *nv;

		if (is_defaults(ps.v[i].section))
			continue;
		for (k = 0; k < c->n && strcmp(c->v[k].name, ps.v[i].section) != 0; k++)
			;
		if (k < c->n)
			continue;
		if ((nv = realloc(c->v, (c->n + 1) * sizeof(*nv))) == NULL)
			goto nomem;
		c->v = nv;
		p = &c->v[c->n++];
		memset(p, 0, sizeof(*p));
		p->max_delete = -1;
		p->interval_s = PH_CONF_INTERVAL_S;
		p->full_every = PH_CONF_FULL_EVERY;
		p->settle_ms = PH_CONF_SETTLE_MS;
		p->idle_close_s = PH_CONF_IDLE_CLOSE_S;
		p->keepalive_s = PH_CONF_KEEPALIVE_S;
		if ((p->name = strdup(ps.v[i].section)) == NULL)
			goto nomem;
		for (k = 0; k < ps.n; k++)
			if (is_defaults(ps.v[k].section) && apply(p, &ps.v[k], ps.err, sizeof(ps.err)) != 0)
				goto bad_value;
		for (k = 0; k < ps.n; k++)
			if (strcmp(ps.v[k].section, p->name) == 0 &&
			    apply(p, &ps.v[k], ps.err, sizeof(ps.err)) != 0)
				goto bad_value;
		if (p->dir == 0 || p->remote == NULL || p->local == NULL) {
			snprintf(err, errlen, "%s: [%s] needs direction (pull, push or both), remote "
			         "(HOST:DIR) and local (a folder)", path, p->name);
			goto fail;
		}
	}
	if (c->n == 0) {
		snprintf(err, errlen, "%s: no sync pair (a [NAME] section with direction, "
		         "remote and local)", path);
		goto fail;
	}
	rc = 0;
	goto out;
bad_value:
	snprintf(err, errlen, "%s: %s", path, ps.err);
	goto fail;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	ph_conf_free(c);
	rc = -1;
out:
	for (i = 0; i < ps.n; i++) {
		free(ps.v[i].section);
		free(ps.v[i].key);
		free(ps.v[i].value);
	}
	free(ps.v);
	return rc;
}

void
ph_conf_pair_free(struct ph_conf_pair *p)
{
	size_t i;

	for (i = 0; i < p->n_excludes; i++)
		free(p->excludes[i]);
	for (i = 0; i < p->n_includes; i++)
		free(p->includes[i]);
	free(p->excludes);
	free(p->includes);
	free(p->name);
	free(p->remote);
	free(p->local);
	free(p->ssh_config);
	free(p->state_dir);
	free(p->trash);
	free(p->helper_path);
	memset(p, 0, sizeof(*p));
}

void
ph_conf_free(struct ph_conf *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		ph_conf_pair_free(&c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static int
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
rules_eq(char **a, size_t na, char **b, size_t nb)
{
	size_t i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

int
ph_conf_pair_same(const struct ph_conf_pair *a, const struct ph_conf_pair *b)
{
	return str_eq(a->name, b->name) && a->dir == b->dir && str_eq(a->remote, b->remote) &&
	       str_eq(a->local, b->local) && str_eq(a->ssh_config, b->ssh_config) &&
	       str_eq(a->state_dir, b->state_dir) && str_eq(a->trash, b->trash) &&
	       rules_eq(a->excludes, a->n_excludes, b->excludes, b->n_excludes) &&
	       rules_eq(a->includes, a->n_includes, b->includes, b->n_includes) &&
	       a->interval_s == b->interval_s && a->full_every == b->full_every &&
	       a->settle_ms == b->settle_ms && a->idle_close_s == b->idle_close_s &&
	       a->keepalive_s == b->keepalive_s &&
	       a->timeout_s == b->timeout_s && a->min_age_s == b->min_age_s &&
	       a->modify_window_s == b->modify_window_s &&
	       a->no_default_excludes == b->no_default_excludes &&
	       a->delete_missing == b->delete_missing && a->overwrite == b->overwrite &&
	       a->no_fsync == b->no_fsync && a->max_delete == b->max_delete &&
	       a->helper == b->helper && str_eq(a->helper_path, b->helper_path);
}

void
ph_conf_pair_options(const struct ph_conf_pair *p, struct phsync_options *o)
{
	phsync_options_init(o);
	o->ssh_config = p->ssh_config;
	o->state_dir = p->state_dir;
	o->trash_dir = p->trash;
	o->excludes = (const char *const *)p->excludes;
	o->n_excludes = p->n_excludes;
	o->includes = (const char *const *)p->includes;
	o->n_includes = p->n_includes;
	o->timeout_s = p->timeout_s;
	o->min_age_s = p->min_age_s;
	o->modify_window_s = p->modify_window_s;
	o->no_default_excludes = p->no_default_excludes;
	o->delete_missing = p->delete_missing;
	o->overwrite = p->overwrite;
	o->fsync = !p->no_fsync;
	o->helper = p->helper;
	o->helper_path = p->helper_path;
	if (p->max_delete >= 0)
		o->max_delete = p->max_delete;
}
