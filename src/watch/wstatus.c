/* SPDX-License-Identifier: ISC */
/* The watcher's status records (wstatus.h): one "key=value" file per
 * watched pair, replaced whole, with a lock file held while its watcher
 * lives. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/sys.h"
#include "wstatus.h"

#define REC_MAX (64 * 1024)      /* a record is a few hundred bytes */
#define MAX_RECS 10000           /* records listed at most */
#define SUFFIX ".status"

struct ph_wst {
	char *path;       /* STATE/watch/HASH.status */
	char *tmp;        /* STATE/watch/.HASH.status.PID.tmp */
	int lock_fd;      /* STATE/watch/HASH.lock, locked */
};

int
ph_wst_dir(const char *state_dir, char *buf, size_t len)
{
	char home[PATH_MAX];
	int n;

	/* The same folder state.c keeps the sync state in. */
	if (state_dir != NULL)
		n = snprintf(buf, len, "%s/watch", state_dir);
	else if (phsync_state_home(home, sizeof(home)) == 0)
		n = snprintf(buf, len, "%s/watch", home);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
ph_wst_open(const char *state_dir, const char *direction, const char *remote,
            const char *local, struct ph_wst **out)
{
	const char *parts[3] = { direction, remote, local };
	char dir[PATH_MAX], path[PATH_MAX + 64];
	uint64_t h = 0xcbf29ce484222325ull;
	struct ph_wst *w;
	int i, rc;

	*out = NULL;
	if (ph_wst_dir(state_dir, dir, sizeof(dir)) != 0)
		return -ENAMETOOLONG;
	if ((rc = phsync_dir_make(dir)) != 0)
		return rc;
	/* FNV-1a of the pair: one record per pair, whichever process keeps it. */
	for (i = 0; i < 3; i++) {
		const char *c;

		for (c = parts[i]; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
		h = (h ^ 0) * 0x100000001b3ull;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%016" PRIx64 ".lock", dir, h);
	if ((w->lock_fd = phsync_file_open(path, PHSYNC_O_RDWR | PHSYNC_O_CREAT, 0600)) < 0) {
		rc = w->lock_fd;
		free(w);
		return rc;
	}
	/* A `phsync status` holds the lock shared for an instant while it
	 * looks: only a lock still held after a few tries is another
	 * watcher's. */
	for (i = 0; (rc = phsync_file_lock(w->lock_fd, PHSYNC_LOCK_EX | PHSYNC_LOCK_NB)) ==
	            -EWOULDBLOCK && i < 20; i++)
		usleep(5000);
	if (rc != 0) {
		rc = rc == -EWOULDBLOCK ? -EBUSY : rc;
		close(w->lock_fd);
		free(w);
		return rc;
	}
	snprintf(path, sizeof(path), "%s/%016" PRIx64 SUFFIX, dir, h);
	w->path = strdup(path);
	snprintf(path, sizeof(path), "%s/.%016" PRIx64 SUFFIX ".%ld.tmp", dir, h, (long)getpid());
	w->tmp = strdup(path);
	if (w->path == NULL || w->tmp == NULL) {
		ph_wst_close(w);
		return -ENOMEM;
	}
	*out = w;
	return 0;
}

/* key=value, the value with '\\' and control characters escaped (\n, \xHH):
 * one line per key whatever a path holds. */
static void
put(FILE *f, const char *key, const char *v)
{
	const unsigned char *c;

	fprintf(f, "%s=", key);
	for (c = (const unsigned char *)(v ? v : ""); *c; c++) {
		if (*c == '\\')
			fputs("\\\\", f);
		else if (*c == '\n')
			fputs("\\n", f);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\x%02x", *c);
		else
			fputc(*c, f);
	}
	fputc('\n', f);
}

static void
put_i(FILE *f, const char *key, int64_t v)
{
	fprintf(f, "%s=%" PRId64 "\n", key, v);
}

static void
put_u(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, "%s=%" PRIu64 "\n", key, v);
}

int
ph_wst_write(struct ph_wst *w, const struct ph_wst_rec *r)
{
	FILE *f;
	int fd, rc = 0;

	if (w == NULL)
		return 0;
	if ((fd = phsync_file_open(w->tmp, PHSYNC_O_WRONLY | PHSYNC_O_CREAT | PHSYNC_O_TRUNC |
	                           PHSYNC_O_NOFOLLOW, 0600)) < 0)
		return fd;
	if ((f = fdopen(fd, "w")) == NULL) {
		rc = -errno;
		close(fd);
		phsync_file_unlink(w->tmp);
		return rc;
	}
	fputs("phsync-watch-status=1\n", f);
	put_i(f, "pid", r->pid);
	put(f, "name", r->name);
	put(f, "direction", r->direction);
	put(f, "remote", r->remote);
	put(f, "local", r->local);
	put(f, "config", r->config);
	put(f, "state", r->state);
	put_i(f, "since", r->since);
	put_i(f, "connected", r->connected);
	put_u(f, "keepalives", r->keepalives);
	put_i(f, "retry_at", r->retry_at);
	put_i(f, "last_start", r->last_start);
	put_i(f, "last_end", r->last_end);
	put_i(f, "last_result", r->last_result);
	put_u(f, "last_files", r->last_files);
	put_u(f, "last_failed", r->last_failed);
	put_u(f, "last_bytes", r->last_bytes);
	put(f, "error", r->error);
	put(f, "note", r->note);
	put_i(f, "updated", r->updated);
	/* No fsync: the record describes a live process; after a power cut
	 * no watcher holds its lock and it reads as stale anyway. */
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0)
		rc = phsync_file_rename(w->tmp, w->path);
	if (rc != 0)
		phsync_file_unlink(w->tmp);
	return rc;
}

void
ph_wst_close(struct ph_wst *w)
{
	if (w == NULL)
		return;
	/* The record goes first, then the lock: a reader never sees this
	 * pair's record unlocked while this process lives. The lock file
	 * stays (unlinking a lock file another process may be opening would
	 * let two processes each hold "the" lock). */
	if (w->path != NULL)
		phsync_file_unlink(w->path);
	if (w->tmp != NULL)
		phsync_file_unlink(w->tmp);
	if (w->lock_fd >= 0)
		close(w->lock_fd);
	free(w->path);
	free(w->tmp);
	free(w);
}

/* -- reading --------------------------------------------------------------- */

struct parsed {
	struct ph_wst_rec r;
	int live;
	char *buf;        /* the unescaped values, NUL-separated */
};

static void
unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == '\\') {
			*o++ = '\\';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'n') {
			*o++ = '\n';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'x' && s[2] && s[3]) {
			char hx[3] = { s[2], s[3], '\0' };

			*o++ = (char)strtoul(hx, NULL, 16);
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

static int64_t
num(const char *v)
{
	return (int64_t)strtoll(v, NULL, 10);
}

/* Parses a record read into buf (NUL-terminated, modified in place).
 * Returns 0, or -1 when it is not a record. */
static int
parse(char *buf, struct ph_wst_rec *r)
{
	char *line, *next;
	int seen = 0;

	memset(r, 0, sizeof(*r));
	r->name = r->direction = r->remote = r->local = r->config = r->state = "";
	r->error = r->note = "";
	for (line = buf; line != NULL && *line; line = next) {
		char *eq, *v;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(line, '=')) == NULL)
			continue;
		*eq = '\0';
		v = eq + 1;
		unescape(v);
		if (!strcmp(line, "phsync-watch-status"))
			seen = 1;
		else if (!strcmp(line, "pid"))
			r->pid = (long)num(v);
		else if (!strcmp(line, "name"))
			r->name = v;
		else if (!strcmp(line, "direction"))
			r->direction = v;
		else if (!strcmp(line, "remote"))
			r->remote = v;
		else if (!strcmp(line, "local"))
			r->local = v;
		else if (!strcmp(line, "config"))
			r->config = v;
		else if (!strcmp(line, "state"))
			r->state = v;
		else if (!strcmp(line, "since"))
			r->since = num(v);
		else if (!strcmp(line, "connected"))
			r->connected = num(v) != 0;
		else if (!strcmp(line, "keepalives"))
			r->keepalives = (uint64_t)strtoull(v, NULL, 10);
		else if (!strcmp(line, "retry_at"))
			r->retry_at = num(v);
		else if (!strcmp(line, "last_start"))
			r->last_start = num(v);
		else if (!strcmp(line, "last_end"))
			r->last_end = num(v);
		else if (!strcmp(line, "last_result"))
			r->last_result = (int)num(v);
		else if (!strcmp(line, "last_files"))
			r->last_files = (uint64_t)strtoull(v, NULL, 10);
		else if (!strcmp(line, "last_failed"))
			r->last_failed = (uint64_t)strtoull(v, NULL, 10);
		else if (!strcmp(line, "last_bytes"))
			r->last_bytes = (uint64_t)strtoull(v, NULL, 10);
		else if (!strcmp(line, "error"))
			r->error = v;
		else if (!strcmp(line, "note"))
			r->note = v;
		else if (!strcmp(line, "updated"))
			r->updated = num(v);
	}
	return seen ? 0 : -1;
}

/* Is the record's lock held by a live process? A lock file that is gone
 * or free means its watcher ended without removing the record. */
static int
held(const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	size_t n = strlen(name) - strlen(SUFFIX);
	int fd, live;

	snprintf(path, sizeof(path), "%s/%.*s.lock", dir, (int)n, name);
	if ((fd = phsync_file_open(path, PHSYNC_O_RDONLY | PHSYNC_O_NOFOLLOW, 0)) < 0)
		return 0;
	live = phsync_file_lock(fd, PHSYNC_LOCK_SH | PHSYNC_LOCK_NB) == -EWOULDBLOCK;
	close(fd); /* lets go of the shared lock if it was taken */
	return live;
}

static char *
slurp(const char *dir, const char *name)
{
	char path[PATH_MAX + 300], *buf;
	int64_t n;
	size_t got = 0;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (fd = phsync_file_open(path, PHSYNC_O_RDONLY | PHSYNC_O_NOFOLLOW, 0)) < 0)
		return NULL;
	if ((buf = malloc(REC_MAX + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (got < REC_MAX && (n = phsync_file_pread(fd, buf + got, REC_MAX - got, got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return buf;
}

static int
rec_cmp(const void *a, const void *b)
{
	const struct parsed *x = a, *y = b;
	int c = strcmp(x->r.name, y->r.name);

	return c ? c : strcmp(x->r.remote, y->r.remote);
}

/* The records found so far, while the folder is listed. */
struct found {
	const char *dir;
	struct parsed *v;
	size_t n, cap;
};

static int
found_one(void *arg, const char *name, enum phsync_ftype type)
{
	struct found *fo = arg;
	size_t len = strlen(name);
	char *buf;

	(void)type;
	if (fo->n >= MAX_RECS)
		return 1;
	if (name[0] == '.' || len <= strlen(SUFFIX) || strcmp(name + len - strlen(SUFFIX), SUFFIX) != 0)
		return 0;
	if ((buf = slurp(fo->dir, name)) == NULL)
		return 0; /* removed meanwhile: its watcher stopped */
	if (fo->n == fo->cap) {
		size_t nc = fo->cap ? fo->cap * 2 : 8;
		struct parsed *nv = realloc(fo->v, nc * sizeof(*nv));

		if (nv == NULL) {
			free(buf);
			return -ENOMEM;
		}
		fo->v = nv;
		fo->cap = nc;
	}
	if (parse(buf, &fo->v[fo->n].r) != 0) {
		free(buf);
		return 0;
	}
	fo->v[fo->n].buf = buf;
	fo->v[fo->n].live = held(fo->dir, name);
	fo->n++;
	return 0;
}

int
ph_wst_list(const char *state_dir, ph_wst_fn fn, void *arg)
{
	char dir[PATH_MAX];
	struct found fo = { dir, NULL, 0, 0 };
	size_t i;
	int rc;

	if (ph_wst_dir(state_dir, dir, sizeof(dir)) != 0)
		return 0;
	rc = phsync_dir_each(dir, found_one, &fo);
	if (rc == -ENOENT || rc == -ENOTDIR || rc == 1)
		rc = 0;
	if (fo.n > 1)
		qsort(fo.v, fo.n, sizeof(*fo.v), rec_cmp);
	for (i = 0; i < fo.n; i++) {
		if (rc == 0)
			fn(&fo.v[i].r, fo.v[i].live, arg);
		free(fo.v[i].buf);
	}
	free(fo.v);
	return rc;
}
