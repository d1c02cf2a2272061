/* SPDX-License-Identifier: ISC */
/* The smallest program on libphsync's public API: pull a phone folder and
 * print one line per file. Build: part of the CMake build (examples/), or
 * against an installed libphsync:
 *   cc minipull.c $(pkg-config --cflags --libs phsync) -o minipull
 * run: ./minipull [-F SSH_CONFIG] phone:/sdcard/DCIM ~/Pictures/phone
 *
 * Everything a watcher or a backup tool needs is here: one call, options,
 * an event callback, stats and a message on failure. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "phsync/phsync.h"

static void
on_event(const struct phsync_event *ev, void *arg)
{
	(void)arg;
	switch (ev->type) {
	case PHSYNC_EV_FILE_DONE:
		printf("%s %s (%" PRIu64 " bytes)\n", ev->action, ev->path, ev->size);
		break;
	case PHSYNC_EV_FILE_FAILED:
		fprintf(stderr, "failed: %s: %s\n", ev->path, ev->message);
		break;
	default:
		break;
	}
}

int
main(int argc, char **argv)
{
	struct phsync_options opts;
	struct phsync_stats st;
	phsync_ctx *ctx;
	const char *config = NULL;
	int rc;

	if (argc == 5 && strcmp(argv[1], "-F") == 0) {
		config = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: minipull [-F SSH_CONFIG] HOST:DIR LOCALDIR\n");
		return 2;
	}
	if (phsync_ctx_new(&ctx) != 0)
		return 1;
	phsync_options_init(&opts);
	opts.ssh_config = config;
	opts.on_event = on_event;
	rc = phsync_sync(ctx, PHSYNC_PULL, argv[1], argv[2], &opts, &st);
	if (rc != 0)
		fprintf(stderr, "minipull: %s (%s)\n", phsync_ctx_error(ctx), phsync_strerror(rc));
	printf("%" PRIu64 " of %" PRIu64 " files copied, %" PRIu64 " bytes\n", st.files_done,
	       st.files_total, st.bytes_done);
	phsync_ctx_free(ctx);
	return rc == 0 ? 0 : 1;
}
