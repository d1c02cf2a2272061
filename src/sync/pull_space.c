/* SPDX-License-Identifier: ISC */
/* Room on the local disk for a pull (pull_int.h; the reasons in
 * docs/phsync-pull.1, "Room on the disk"). A phone lists each file's size
 * before a byte of it is read, and a broken or hostile one may list 10 TB:
 * read as it comes, such a file would stream until the disk is full. So
 * the run looks at the free space first and keeps a reserve, the smaller
 * of 1 GiB and a sixteenth of what was free when it began:
 * - a file that alone cannot fit (its listed size, less a kept prefix,
 *   over the free space less the reserve) is refused before it is opened,
 *   with both numbers; the others go on (exit 5);
 * - when the files that each fit cannot fit together (new files, the
 *   growth of replaced ones), the run is refused before anything is done,
 *   naming both numbers (exit 1); --dry-run says the same;
 * - each file as it starts is checked again against the free space less
 *   what the files in flight still have to write (the disk may have
 *   filled meanwhile, and a replaced file's old copy stays until its new
 *   one is in place): refused alone when it does not fit.
 * Where the free space cannot be read nothing is checked (a full disk
 * still stops the run cleanly). Files listed without a size have their
 * own floor (pull_whole.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pfs.h"
#include "platform.h"
#include "pull_int.h"

#define SPACE_RESERVE_MAX (1ull << 30)
#define SPACE_RESERVE_SHARE 16
#define SPACE_LOOK_EVERY (64u << 20) /* bytes started between two looks */

/* n bytes for a person: "10.0 TB", "58.2 MB", "512 bytes" (SI, as the
 * summary line). */
static const char *
human(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "kB", "MB", "GB", "TB", "PB", "EB" };
	double v = (double)n;
	int u = -1;

	if (n < 1000) {
		snprintf(buf, len, "%llu bytes", (unsigned long long)n);
		return buf;
	}
	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* The bytes the file of entry e writes to the disk: its listed size, less
 * the prefix a cut download kept (pull_resume.c takes it up); 0 when no
 * size was listed. */
uint64_t
ph_pull_space_need(struct ph_job *j, const struct ph_entry *e)
{
	struct ph_partial *pa;

	if (e->nosize)
		return 0;
	pa = ph_job_partial(j, e->path);
	if (pa != NULL && pa->size == e->size && pa->mtime == e->mtime && pa->have < e->size)
		return e->size - pa->have;
	return e->size;
}

/* The file at plan index ai is refused for want of room: reported failed
 * (exit 5), never opened. */
static void
refuse(struct pull *p, size_t ai, uint64_t need, uint64_t avail, uint64_t owed)
{
	struct ph_job *j = p->j;
	const struct ph_entry *e = &j->src.v[j->plan.v[ai].src];
	char msg[400], a[24], b[24], c[24], d[24];
	int n;

	n = snprintf(msg, sizeof(msg), "not enough space on the local disk: the file needs %s "
	             "(%llu bytes) and the disk has %s free, of which phsync keeps %s free",
	             human(need, a, sizeof(a)),
	             (unsigned long long)need, human(avail, b, sizeof(b)),
	             human(p->reserve, c, sizeof(c)));
	if (owed > 0 && n > 0 && (size_t)n < sizeof(msg))
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, " and %s more are still to come "
		              "for the files being copied", human(owed, d, sizeof(d)));
	if (n > 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, "; not copied (nothing of it was read)");
	if (j->nofit != NULL)
		j->nofit[ai] = 1;
	j->st.files_failed++;
	ph_job_event(j, PHSYNC_EV_FILE_FAILED, e->path, NULL, e->size, PHSYNC_EREFUSED, msg);
}

/* What one action adds to the disk by the end of the run: a new file or a
 * conflict copy its size, a replaced file what it grows by, a move
 * nothing; less a kept prefix. */
static uint64_t
growth(struct ph_job *j, const struct ph_action *a, uint64_t need)
{
	uint64_t old;

	if (a->kind == PH_A_NEW)
		return a->how == PH_N_MOVE ? 0 : need;
	if (a->how == PH_U_CONFLICT || a->dst < 0)
		return need;
	old = j->dst.v[a->dst].nosize ? 0 : j->dst.v[a->dst].size;
	return need > old ? need - old : 0;
}

/* The free space where the run writes, into *avail: the local root's, or
 * in a dry run whose folder does not exist yet, its nearest existing
 * parent's (where the real run would make it). Returns 0, or -1 when it
 * cannot be read. */
static int
free_space(const struct ph_job *j, uint64_t *avail)
{
	char *path;
	size_t n;
	int fd = -1, rc = -1;

	if (j->lroot >= 0)
		return ph_free_space(j->lroot, avail) == 0 ? 0 : -1;
	if (j->local_dir == NULL || (path = strdup(j->local_dir)) == NULL)
		return -1;
	for (n = strlen(path); fd < 0 && n > 0;) {
		/* The last component off: "a/b/c" -> "a/b", "c" -> "." */
		while (n > 1 && ph_path_sep(path[n - 1]))
			n--;
		while (n > 0 && !ph_path_sep(path[n - 1]))
			n--;
		while (n > 1 && ph_path_sep(path[n - 1]))
			n--;
		path[n] = '\0';
		fd = ph_dir_open_path(n > 0 ? path : ".");
	}
	if (fd >= 0) {
		rc = ph_free_space(fd, avail) == 0 ? 0 : -1;
		ph_close(fd);
	}
	free(path);
	return rc;
}

int
ph_pull_space_plan(struct pull *p)
{
	struct ph_job *j = p->j;
	uint64_t avail, room, sum = 0;
	char a[24], b[24], c[24];
	size_t i;

	if (free_space(j, &avail) != 0)
		return 0;
	p->space_known = 1;
	p->space_free = avail;
	p->reserve = avail / SPACE_RESERVE_SHARE < SPACE_RESERVE_MAX ?
	             avail / SPACE_RESERVE_SHARE : SPACE_RESERVE_MAX;
	room = avail - p->reserve;
	if ((j->nofit = calloc(j->plan.n ? j->plan.n : 1, 1)) == NULL)
		return PHSYNC_ENOMEM;
	for (i = 0; i < j->plan.n; i++) {
		const struct ph_action *act = &j->plan.v[i];
		uint64_t need;

		if (act->kind != PH_A_NEW && act->kind != PH_A_UPDATE)
			continue;
		need = ph_pull_space_need(j, &j->src.v[act->src]);
		if (act->kind == PH_A_NEW && act->how == PH_N_MOVE)
			continue;
		if (need > room) {
			refuse(p, i, need, avail, 0);
			continue;
		}
		sum += growth(j, act, need);
	}
	if (sum <= room)
		return 0;
	return ph_err(j->ctx, PHSYNC_ENOSPC, "not enough space on the local disk for this run: "
	              "the files to copy need %s (%llu bytes) and the "
	              "local disk has %s free, of which phsync keeps %s free; nothing was "
	              "copied (make room, or pull a sub-folder or with --exclude)",
	              human(sum, a, sizeof(a)), (unsigned long long)sum,
	              human(avail, b, sizeof(b)), human(p->reserve, c, sizeof(c)));
}

/* Bytes the files in flight have still to hand to the I/O thread. */
static uint64_t
owed(const struct pull *p)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nactive; i++) {
		const struct xfer *x = p->active[i];

		if (x->need > x->put)
			sum += x->need - x->put;
	}
	return sum;
}

/* Bytes the disk can still take: free at the last look, less the
 * reserve, what the files in flight then still had to write, and what
 * the files started since need. */
static uint64_t
room_left(const struct pull *p)
{
	uint64_t used = p->reserve + p->space_owed + p->space_since;

	return p->space_free > used ? p->space_free - used : 0;
}

int
ph_pull_space_take(struct pull *p, size_t ai, uint64_t need)
{
	uint64_t avail;

	if (!p->space_known || need == 0)
		return 1;
	if (p->space_since >= SPACE_LOOK_EVERY || need > room_left(p)) {
		/* A fresh look: the disk may have more (replaced files' old
		 * copies gone, files written) or less (another program). */
		if (ph_free_space(p->j->lroot, &avail) != 0)
			return 1;
		p->space_free = avail;
		p->space_owed = owed(p);
		p->space_since = 0;
	}
	if (need <= room_left(p)) {
		p->space_since += need;
		return 1;
	}
	refuse(p, ai, need, p->space_free, p->space_owed);
	return 0;
}
