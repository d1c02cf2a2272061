/* SPDX-License-Identifier: ISC */
/* The local scan's thread; see lscan.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "local.h"
#include "lscan.h"

static void
lscan_event(const struct phsync_event *ev, void *arg)
{
	struct ph_lscan *ls = arg;
	struct ph_lscan_fail *f;

	if (ls->nfails == ls->capfails) {
		size_t cap = ls->capfails ? ls->capfails * 2 : 16;

		if ((f = realloc(ls->fails, cap * sizeof(*f))) == NULL)
			return;
		ls->fails = f;
		ls->capfails = cap;
	}
	f = &ls->fails[ls->nfails];
	f->path = strdup(ev->path ? ev->path : "");
	f->msg = strdup(ev->message ? ev->message : "");
	f->err = ev->err;
	f->type = ev->type;
	f->action = ev->action;
	if (f->path != NULL && f->msg != NULL)
		ls->nfails++;
	else {
		free(f->path);
		free(f->msg);
	}
}

static void *
lscan_run(void *arg)
{
	struct ph_lscan *ls = arg;

	ls->rc = ph_local_scan(&ls->ctx, ls->root, ls->filter, ls->remove_temps,
	                       ls->check_names, ls->t, ls->partials, ls->stale,
	                       lscan_event, ls, &ls->failed, &ls->found);
	/* (A tree taken from as it is walked is sorted once the taker is done
	 * with it: sync.c.) */
	if (ls->rc == 0 && ls->t->feed == NULL)
		ph_tree_sort(ls->t);
	if (ph_feed_end(ls->t) != 0 && ls->rc == 0)
		ls->rc = PHSYNC_ENOMEM;
	if (ls->sync_on)
		pthread_mutex_lock(&ls->mu);
	atomic_store(&ls->walking, 0);
	if (ls->sync_on) {
		pthread_cond_broadcast(&ls->done);
		pthread_mutex_unlock(&ls->mu);
	}
	return NULL;
}

void
ph_lscan_start(struct ph_lscan *ls)
{
	/* The walk recurses up to 256 levels: ask for a stack that holds that
	 * everywhere (musl's default is 128 KiB). */
	pthread_attr_t attr;

	atomic_store(&ls->walking, 1);
	atomic_store(&ls->found, 0);
	if (!ls->sync_on && pthread_mutex_init(&ls->mu, NULL) == 0) {
		if (pthread_cond_init(&ls->done, NULL) == 0)
			ls->sync_on = 1;
		else
			pthread_mutex_destroy(&ls->mu);
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 2u << 20);
	ls->started = pthread_create(&ls->th, &attr, lscan_run, ls) == 0;
	pthread_attr_destroy(&attr);
	if (!ls->started)
		lscan_run(ls);
}

void
ph_lscan_stop(struct ph_lscan *ls)
{
	ls->ctx.interrupted = 1;
	/* (A walk held back for a taker: let go.) */
	ph_feed_close(ls->t);
}

void
ph_lscan_join(struct ph_lscan *ls)
{
	if (ls->started)
		pthread_join(ls->th, NULL);
	ls->started = 0;
}

int
ph_lscan_wait(struct ph_lscan *ls, int timeout_ms)
{
	struct timespec until;
	int r = 0;

	if (!atomic_load(&ls->walking))
		return 1;
	if (!ls->sync_on || clock_gettime(CLOCK_REALTIME, &until) != 0)
		return 0;
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ls->mu);
	while (atomic_load(&ls->walking) && r == 0)
		r = pthread_cond_timedwait(&ls->done, &ls->mu, &until);
	pthread_mutex_unlock(&ls->mu);
	return !atomic_load(&ls->walking);
}

void
ph_lscan_report(struct ph_job *j, struct ph_lscan *ls)
{
	size_t i;

	j->st.files_failed += ls->failed;
	for (i = 0; i < ls->nfails; i++) {
		if (ls->fails[i].type == PHSYNC_EV_FILE_FAILED)
			ph_job_scan_failed(j, ls->t, ls->fails[i].path);
		ph_job_event(j, ls->fails[i].type, ls->fails[i].path, ls->fails[i].action, 0,
		             ls->fails[i].err, ls->fails[i].msg);
	}
}

void
ph_lscan_free(struct ph_lscan *ls)
{
	size_t i;

	for (i = 0; i < ls->nfails; i++) {
		free(ls->fails[i].path);
		free(ls->fails[i].msg);
	}
	free(ls->fails);
	if (ls->sync_on) {
		pthread_cond_destroy(&ls->done);
		pthread_mutex_destroy(&ls->mu);
		ls->sync_on = 0;
	}
}
