/* SPDX-License-Identifier: ISC */
/* The reaper: closes, in a thread of its own, the last reference to files
 * a rename or remove unlinked, so freeing their blocks does not hold up the
 * thread that unlinked them (the helper's request loop, a pull's network
 * thread).
 *
 * Replacing a 3 MB photo by rename frees the old one's blocks inside the
 * rename (ext4 mounted with discard: 1.7 ms each), and the helper answers
 * requests one at a time: the 60 renames at the end of a 60-photo push held
 * everything for 0.1 s (strace -T of the helper). Held open across the
 * rename (ph_open_ref: O_PATH, else read-only), the old inode is freed at
 * its last close instead, here. The
 * name is gone when the request is answered either way; only the space
 * comes back a little later. A pull keeps each old copy open (the delta's
 * basis) across its rename: closing those cost its network thread the same
 * 0.08 s at the end. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfs.h"
#include "platform.h"
#include "reap.h"

#define REAP_QUEUE 64
#define REAP_MIN_SIZE (256 * 1024) /* smaller files free fast enough */

struct ph_reap {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fds[REAP_QUEUE];
	unsigned head, n;
	int stop;
};

int
ph_reap_hold(int dirfd, const char *name)
{
	struct ph_stat st;

	if (ph_fstatat(dirfd, name, &st) != 0 || st.type != PH_FT_REG ||
	    st.size < REAP_MIN_SIZE || st.nlink != 1)
		return -1;
	return ph_open_ref(dirfd, name);
}

static void *
reaper(void *arg)
{
	struct ph_reap *r = arg;
	int fd;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (r->n == 0 && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->n == 0)
			break;       /* stopped, and everything closed */
		fd = r->fds[r->head];
		r->head = (r->head + 1) % REAP_QUEUE;
		r->n--;
		pthread_mutex_unlock(&r->mu);
		close(fd);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void
ph_reap_release(struct ph_reap **rp, int fd)
{
	struct ph_reap *r;

	if (fd < 0)
		return;
	if (*rp == NULL && (r = calloc(1, sizeof(*r))) != NULL) {
		pthread_mutex_init(&r->mu, NULL);
		pthread_cond_init(&r->cv, NULL);
		if (pthread_create(&r->thread, NULL, reaper, r) == 0) {
			*rp = r;
		} else {
			pthread_cond_destroy(&r->cv);
			pthread_mutex_destroy(&r->mu);
			free(r);
		}
	}
	if ((r = *rp) == NULL) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&r->mu);
	if (r->n < REAP_QUEUE) {
		r->fds[(r->head + r->n) % REAP_QUEUE] = fd;
		r->n++;
		fd = -1;
		pthread_cond_signal(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	if (fd >= 0)
		close(fd); /* queue full: the loop pays, as without a reaper */
}

void
ph_reap_end(struct ph_reap **rp)
{
	struct ph_reap *r = *rp;

	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
	*rp = NULL;
}
