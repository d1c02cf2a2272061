/* SPDX-License-Identifier: ISC */
/* Does the destination's file system ignore case in names (Android's
 * shared storage, FAT and exFAT cards, macOS by default), and can it hold
 * the names Windows cannot? Asked of the destination itself, cheaply, and
 * only when the answer matters. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "local.h"
#include "names.h"
#include "pfs.h"
#include "probe.h"
#include "tempname.h"

/* Swaps the case of s's ASCII letters; returns whether it had any. */
static int
swap_case(char *s)
{
	int any = 0;

	for (; *s != '\0'; s++) {
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 'a' + 'A'), any = 1;
		else if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a'), any = 1;
	}
	return any;
}

/* Is other (path with its last name's case swapped) the same entry as path
 * at the destination? 1 yes, 0 no (other does not exist), -1 cannot tell. */
static int
same_entry(const struct ph_probe *p, const char *path, const char *other, const struct ph_entry *e)
{
	if (p->local) {
		struct ph_stat a, b;
		const char *base, *obase = strrchr(other, '/');
		char *dir;
		int dfd, r, err;

		if (ph_local_split(path, &dir, &base) != 0)
			return -1;
		r = ph_local_opendir(p->lroot, dir, &dfd);
		free(dir);
		if (r != 0)
			return -1;
		obase = obase ? obase + 1 : other;
		if ((err = ph_fstatat(dfd, obase, &b)) != 0)
			r = err == -ENOENT ? 0 : -1;
		else if (ph_fstatat(dfd, base, &a) != 0)
			r = -1;
		else
			r = a.dev == b.dev && a.ino == b.ino;
		ph_close(dfd);
		return r;
	} else {
		struct ph_sftp_attrs a;
		char *rp = ph_rpath_join(p->rroot, other);
		int rc = rp ? ph_sftp_stat_sync(p->sftp, PH_LSTAT, rp, &a) : PHSYNC_ENOMEM;

		free(rp);
		if (rc == PHSYNC_ENOENT)
			return 0;
		if (rc != 0)
			return -1;
		/* No inode numbers over SFTP: the same kind, size and time as the
		 * entry listed under the other name (the listing does not hold
		 * other itself). */
		return (!(a.flags & PH_ATTR_ACMODTIME) || (int64_t)a.mtime == e->mtime) &&
		       (e->type != PH_T_FILE || !(a.flags & PH_ATTR_SIZE) || a.size == e->size);
	}
}

/* Makes an empty folder with a mixed-case temp name at the destination's
 * top and looks for it under its case-swapped name. A killed run's probe
 * is removed like any temp (its name says whose it is). */
static int
write_probe(const struct ph_probe *p)
{
	struct ph_temp_owner o;
	char name[256], other[256];
	int r;

	ph_temp_owner_self(&o);
	if (ph_temp_name(name, sizeof(name), "Case-Probe", PH_TEMP_NEW, &o) != 0)
		return -1;
	memcpy(other, name, sizeof(name));
	swap_case(other);
	if (p->local) {
		struct ph_stat st;
		int e;

		if (ph_mkdirat(p->lroot, name, 0700) != 0)
			return -1;
		e = ph_fstatat(p->lroot, other, &st);
		r = e == 0 ? 1 : e == -ENOENT ? 0 : -1;
		ph_unlinkat(p->lroot, name, PH_AT_REMOVEDIR);
	} else {
		struct ph_sftp_attrs a;
		char *rp = ph_rpath_join(p->rroot, name), *ro = ph_rpath_join(p->rroot, other);
		int rc;

		if (rp == NULL || ro == NULL || ph_sftp_mkdir_sync(p->sftp, rp, 0700) != 0) {
			free(rp);
			free(ro);
			return -1;
		}
		rc = ph_sftp_stat_sync(p->sftp, PH_LSTAT, ro, &a);
		r = rc == 0 ? 1 : rc == PHSYNC_ENOENT ? 0 : -1;
		ph_sftp_rmdir_sync(p->sftp, rp);
		free(rp);
		free(ro);
	}
	return r;
}

int
ph_probe_case_at(int lroot, const char *path)
{
	struct ph_probe p;
	const char *slash = strrchr(path, '/');
	char other[1024];
	size_t len = strlen(path);
	int r;

	if (len >= sizeof(other))
		return -2;
	memcpy(other, path, len + 1);
	if (!swap_case(other + (slash ? slash - path + 1 : 0)))
		return -1;
	memset(&p, 0, sizeof(p));
	p.local = 1;
	p.lroot = lroot;
	r = same_entry(&p, path, other, NULL);
	return r < 0 ? -2 : r;
}

int
ph_probe_fold(const struct ph_probe *p, int *fold)
{
	const struct ph_tree *d = p->dst;
	size_t i, tried = 0;
	int r = -1, c;

	*fold = 0;
	/* A name at the destination whose case-swapped form it does not
	 * list: one stat tells. */
	for (i = 0; i < d->n && tried < 8 && r < 0; i++) {
		const struct ph_entry *e = &d->v[i];
		const char *raw = ph_entry_raw(e), *slash = strrchr(raw, '/');
		char other[1024];
		size_t len = strlen(raw);

		if (len >= sizeof(other) || (e->flags & PH_E_RAW))
			continue;
		memcpy(other, raw, len + 1);
		if (!swap_case(other + (slash ? slash - raw + 1 : 0)) ||
		    ph_tree_find(d, other) != NULL)
			continue;
		tried++;
		if (p->local && p->lroot < 0)
			break;
		r = same_entry(p, raw, other, e);
	}
	if (r < 0) {
		/* Nothing there to ask: it matters only for source names that
		 * differ by case alone. */
		if ((c = ph_names_fold_collide(p->src)) < 0)
			return c;
		if (c == 0)
			return 0;
		if (!p->dry_run && (!p->local || p->lroot >= 0))
			r = write_probe(p);
	}
	/* Unknown: take the safe side (names kept apart). */
	*fold = r != 0;
	return 0;
}

/* Makes and removes an empty folder named as a temp from final at the
 * destination's top: 1 made, 0 refused. */
static int
try_folder(const struct ph_probe *p, const char *final)
{
	struct ph_temp_owner o;
	char name[256];

	ph_temp_owner_self(&o);
	if (ph_temp_name(name, sizeof(name), final, PH_TEMP_NEW, &o) != 0 ||
	    ph_mkdirat(p->lroot, name, 0700) != 0)
		return 0;
	ph_unlinkat(p->lroot, name, PH_AT_REMOVEDIR);
	return 1;
}

int
ph_probe_winnames(const struct ph_probe *p, int *refuse)
{
	*refuse = 0;
	if (!p->local || p->dry_run || p->lroot < 0 || !ph_names_any_unholdable(p->src))
		return 0;
	*refuse = try_folder(p, "Name-Probe") && !try_folder(p, "Name:Probe");
	return 0;
}
