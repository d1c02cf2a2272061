/* SPDX-License-Identifier: ISC */
/* The daemon's config file (docs/phsync.conf.5): sync pairs, read with
 * libinih. */
#ifndef PH_CONF_H
#define PH_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "phsync/phsync.h"

/* One pair as the file describes it (defaults applied). */
struct ph_conf_pair {
	char *name;                  /* the section name */
	enum phsync_direction dir;
	char *remote, *local;        /* local with ~ expanded */
	char *ssh_config, *state_dir, *trash, *helper_path;
	int helper;                  /* PHSYNC_HELPER_* */
	char **excludes, **includes;
	size_t n_excludes, n_includes;
	unsigned interval_s, full_every, settle_ms, idle_close_s, keepalive_s;
	unsigned timeout_s, min_age_s, modify_window_s;
	int no_default_excludes, delete_missing, overwrite, no_fsync;
	int64_t max_delete;          /* -1: the default */
};

struct ph_conf {
	struct ph_conf_pair *v;
	size_t n;
};

/* Defaults of a pair's watch settings. */
#define PH_CONF_INTERVAL_S 30      /* remote poll period */
#define PH_CONF_FULL_EVERY 10      /* a full listing every Nth poll */
#define PH_CONF_SETTLE_MS 300      /* a file unchanged this long is written */
#define PH_CONF_IDLE_CLOSE_S 600   /* an unused connection is closed after */
#define PH_CONF_KEEPALIVE_S 60     /* a kept, unused connection is proved alive
                                      every (only while one is held) */

/* Reads path into c. Returns 0, or -1 with a message (naming the file and
 * the line or the pair) in err. */
int ph_conf_load(const char *path, struct ph_conf *c, char *err, size_t errlen);

/* Frees what ph_conf_load made; c is then empty. */
void ph_conf_free(struct ph_conf *c);

/* Frees one pair's strings (a pair moved out of a ph_conf). */
void ph_conf_pair_free(struct ph_conf_pair *p);

/* 1 when a and b describe the same pair with the same settings. */
int ph_conf_pair_same(const struct ph_conf_pair *a, const struct ph_conf_pair *b);

/* The sync options p asks for (pointers into p). */
void ph_conf_pair_options(const struct ph_conf_pair *p, struct phsync_options *o);

/* The default config file: $XDG_CONFIG_HOME/phsync/phsync.conf, else
 * ~/.config/phsync/phsync.conf. Returns 0, or -1 when no home is known. */
int ph_conf_default_path(char *buf, size_t len);

#endif
