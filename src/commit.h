/* Local commits: a finished temp file becomes durable, then takes its
 * final name. With fsync on, a background thread batches the syncs (one
 * syncfs for many small files) while the network keeps the pipe full. */
#ifndef PH_COMMIT_H
#define PH_COMMIT_H

#include <stddef.h>
#include <stdint.h>

struct ph_commit;

struct ph_commit_item {
	int fd;          /* the written temp file; closed by the committer */
	int dirfd;       /* its folder; closed by the committer */
	char *tmp;       /* temp name in dirfd (owned) */
	char *final;     /* final name in dirfd (owned) */
	size_t action;   /* caller's cookie */
	uint64_t size;
	int err;         /* result: 0 or -errno */
};

/* Starts a committer; durable selects fsync before rename. Returns 0 or
 * PHSYNC_E*. */
int ph_commit_new(int durable, struct ph_commit **out);
/* Queues an item (taking ownership). Blocks while too much is queued. */
int ph_commit_push(struct ph_commit *c, struct ph_commit_item *it);
/* Takes up to max finished items into out; returns how many. With wait,
 * blocks until at least one is ready or nothing is pending. */
size_t ph_commit_pop(struct ph_commit *c, struct ph_commit_item *out, size_t max, int wait);
/* Items queued and not yet popped. */
size_t ph_commit_pending(struct ph_commit *c);
/* Stops the thread after the queue is done; NULL is a no-op. Items still
 * un-popped are cleaned (temp removed if not renamed) and freed. */
void ph_commit_free(struct ph_commit *c);

#endif
