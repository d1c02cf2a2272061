/* SPDX-License-Identifier: ISC */
/* The paths a restore put in place (pset.h): open addressing, linear
 * probing, grown at half full; records are never removed, only marked. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "phsync/error.h"
#include "pset.h"

static size_t
slot(const struct ph_pset *s, const char *path)
{
	size_t i = (size_t)XXH3_64bits(path, strlen(path)) & (s->cap - 1);

	while (s->v[i].path != NULL && strcmp(s->v[i].path, path) != 0)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int
grow(struct ph_pset *s)
{
	struct ph_pset old = *s;
	size_t i;

	s->cap = old.cap ? old.cap * 2 : 1024;
	if ((s->v = calloc(s->cap, sizeof(*s->v))) == NULL) {
		*s = old;
		return PHSYNC_ENOMEM;
	}
	for (i = 0; i < old.cap; i++)
		if (old.v[i].path != NULL)
			s->v[slot(s, old.v[i].path)] = old.v[i];
	free(old.v);
	return 0;
}

int
ph_pset_put(struct ph_pset *s, const char *path, uint64_t dev, uint64_t ino, int dir,
            unsigned gen)
{
	struct ph_pset_e *e;
	int rc;

	if ((s->n + 1) * 2 > s->cap && (rc = grow(s)) != 0)
		return rc;
	e = &s->v[slot(s, path)];
	if (e->path == NULL) {
		if ((e->path = strdup(path)) == NULL)
			return PHSYNC_ENOMEM;
		s->n++;
	}
	e->dev = dev;
	e->ino = ino;
	e->dir = dir;
	e->live = 1;
	e->gen = gen;
	return 0;
}

struct ph_pset_e *
ph_pset_get(const struct ph_pset *s, const char *path)
{
	struct ph_pset_e *e;

	if (s->cap == 0)
		return NULL;
	e = &s->v[slot(s, path)];
	return e->path != NULL && e->live ? e : NULL;
}

void
ph_pset_free(struct ph_pset *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		free(s->v[i].path);
	free(s->v);
	memset(s, 0, sizeof(*s));
}
