/* SPDX-License-Identifier: ISC */
/* Files a cut run never got to; see unreached.h. */
#include <stdlib.h>

#include "job.h"
#include "unreached.h"

int
ph_unreached_init(struct ph_job *j)
{
	if ((j->reached = calloc(j->src.n ? j->src.n : 1, 1)) == NULL)
		return PHSYNC_ENOMEM;
	return 0;
}

void
ph_unreached_mark(struct ph_job *j, const char *path)
{
	const struct ph_entry *e;

	if (j->reached == NULL || path == NULL || (e = ph_tree_find(&j->src, path)) == NULL)
		return;
	j->reached[e - j->src.v] = 1;
}

void
ph_unreached_report(struct ph_job *j)
{
	size_t i;

	if (j->reached == NULL)
		return;
	for (i = 0; i < j->plan.n; i++) {
		const struct ph_action *a = &j->plan.v[i];
		const struct ph_entry *e = &j->src.v[a->src];

		if ((a->kind != PH_A_NEW && a->kind != PH_A_UPDATE && a->kind != PH_A_MOVED) ||
		    j->reached[a->src])
			continue;
		j->reached[a->src] = 1;
		j->st.files_unreached++;
		ph_emit(&j->ev, PHSYNC_EV_NOT_REACHED, e->path,
		             a->kind == PH_A_UPDATE ? "update" : "new", e->size, 0,
		             "not reached: the run ended first; run again to finish");
	}
}

void
ph_unreached_free(struct ph_job *j)
{
	free(j->reached);
	j->reached = NULL;
}
