/* SPDX-License-Identifier: ISC */
/* Local change watching, one of three ways by feature (CMakeLists.txt):
 * inotify under uv_poll_t (one watch per folder, added as folders appear,
 * each new folder scanned at once); libuv's recursive uv_fs_event where
 * libuv has one (FSEvents, ReadDirectoryChangesW); else one uv_fs_event per
 * folder, walked and added as the inotify watches are (kqueue on the BSDs;
 * PHSYNC_PORTABLE on Linux). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phsync/sys.h"
#include "phsync/phsync.h"
#include "fswatch.h"

#if defined(HAVE_SYS_INOTIFY_H)
#define USE_INOTIFY 1
#include <sys/inotify.h>
#elif !defined(PH_UV_FS_EVENT_RECURSIVE)
#define USE_FOLDERS 1
#endif

#define MAX_DEPTH 256

struct ph_fsw {
	uv_loop_t *loop;
	char *root;
	ph_fsw_fn fn;
	void *arg;
	int closing;
	int pending_close;      /* handles still to be closed by libuv (per
	                           folder: handles not closed yet) */
#ifdef USE_INOTIFY
	int fd;
	uv_poll_t poll;
	char **wd_rel;          /* folder of each watch descriptor, by wd */
	size_t nwd;             /* size of wd_rel */
	size_t count;           /* watches held */
	int limit_hit;          /* a folder could not be watched (ENOSPC) */
#elif defined(USE_FOLDERS)
	struct folder **dirs;   /* a watch per folder */
	size_t count, cap;
	int limit_hit;          /* a folder could not be watched (EMFILE) */
#else
	uv_fs_event_t ev;
#endif
};

static void
report(struct ph_fsw *w, enum ph_fsw_kind k, const char *rel, const char *msg)
{
	if (!w->closing)
		w->fn(w->arg, k, rel, msg);
}

/* The base name of rel is one of phsync's temp names (the sync's own). */
static int
own_temp(const char *rel)
{
	const char *b = strrchr(rel, '/');

	return phsync_is_temp_name(b ? b + 1 : rel);
}

static void
free_w(struct ph_fsw *w)
{
#ifdef USE_INOTIFY
	size_t i;

	for (i = 0; i < w->nwd; i++)
		free(w->wd_rel[i]);
	free(w->wd_rel);
#elif defined(USE_FOLDERS)
	free(w->dirs);
#endif
	free(w->root);
	free(w);
}

/* The watcher every backend starts from (*out NULL until it is whole);
 * NULL, with the message, when out of memory. */
static struct ph_fsw *
fsw_alloc(uv_loop_t *loop, const char *root, ph_fsw_fn fn, void *arg, struct ph_fsw **out,
          char *err, size_t errlen)
{
	struct ph_fsw *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (w == NULL || (w->root = strdup(root)) == NULL) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->loop = loop;
	w->fn = fn;
	w->arg = arg;
	return w;
}

size_t
ph_fsw_count(const struct ph_fsw *w)
{
#if defined(USE_INOTIFY) || defined(USE_FOLDERS)
	return w->count;
#else
	(void)w;
	return 1;   /* one recursive watch */
#endif
}

#ifndef USE_FOLDERS
static void
on_closed(uv_handle_t *h)
{
	struct ph_fsw *w = h->data;

	if (--w->pending_close == 0)
		free_w(w);
}
#endif

#if defined(USE_INOTIFY) || defined(USE_FOLDERS)

#define INOTIFY_LIMIT "the inotify watch limit is reached (sysctl " \
	"fs.inotify.max_user_watches, per user namespace user.max_inotify_watches); the " \
	"whole tree is rescanned every poll interval instead. Raise it, e.g. sysctl -w " \
	"fs.inotify.max_user_watches=524288"

static int watch_dir(struct ph_fsw *w, const char *path, const char *rel);

static char *
join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (p == NULL)
		return NULL;
	if (la == 0) {
		memcpy(p, b, lb + 1);
	} else {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

static void
limit_reached(struct ph_fsw *w, const char *rel, const char *why)
{
	char msg[PATH_MAX + 512];

	if (w->limit_hit)
		return;
	w->limit_hit = 1;
	snprintf(msg, sizeof(msg), "cannot watch more folders (%zu watched; the next was "
	         "'%s'): %s", w->count, rel[0] ? rel : ".", why);
	report(w, PH_FSW_UNWATCHED, "", msg);
}

static int add_tree(struct ph_fsw *w, const char *rel, int report_files, int depth);

/* A folder being scanned by add_tree. */
struct scan {
	struct ph_fsw *w;
	const char *rel, *path;
	int report_files, depth;
	int rc;             /* what stopped the scan (0: the listing ended) */
};

static int
scan_one(void *arg, const char *name, enum phsync_ftype type)
{
	struct scan *sc = arg;
	char *sub;
	int rc = 0;

	if (type == PHSYNC_FT_OTHER) {
		/* The listing could not tell: look at the name itself. */
		struct phsync_fstat st;
		char *path = join(sc->path, name);

		if (path == NULL)
			return sc->rc = -ENOMEM;
		if (phsync_file_lstat(path, &st) == 0)
			type = st.type;
		free(path);
	}
	if (type != PHSYNC_FT_DIR && !(type == PHSYNC_FT_REG && sc->report_files))
		return 0;
	if ((sub = join(sc->rel, name)) == NULL)
		return sc->rc = -ENOMEM;
	if (type == PHSYNC_FT_DIR)
		rc = add_tree(sc->w, sub, sc->report_files, sc->depth + 1);
	else if (!own_temp(sub))
		report(sc->w, PH_FSW_FILE, sub, NULL);
	free(sub);
	return sc->rc = rc;
}

/* Watches the folder rel and everything below it; with report_files, each
 * file met is reported (it may have been made before the watch was in
 * place: a new folder's files). */
static int
add_tree(struct ph_fsw *w, const char *rel, int report_files, int depth)
{
	char *path = join(w->root, rel);
	struct scan sc = { w, rel, path, report_files, depth, 0 };
	int rc = 0;

	if (path == NULL)
		return -ENOMEM;
	if (rel[0] == '\0')
		memcpy(path, w->root, strlen(w->root) + 1);
	if (depth > MAX_DEPTH)
		goto out;
	if ((rc = watch_dir(w, path, rel)) != 0) {
		if (rc > 0)
			rc = 0; /* not watched, not an error: nothing to scan */
		goto out;
	}
	/* Scan after the watch is in place: a file made in between is seen
	 * by both, never by neither. A folder that cannot be listed (gone
	 * meanwhile) has nothing to scan. */
	(void)phsync_dir_each(path, scan_one, &sc);
	rc = sc.rc;
out:
	free(path);
	return rc;
}

#endif /* USE_INOTIFY || USE_FOLDERS */

#ifdef USE_INOTIFY

/* IN_ATTRIB: cp -p, rsync and tar set a file's time after closing it. */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | \
                    IN_MODIFY | IN_ATTRIB | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

static int
set_wd(struct ph_fsw *w, int wd, const char *rel)
{
	char *copy;

	if (wd < 0)
		return -EINVAL;
	if ((size_t)wd >= w->nwd) {
		size_t n = w->nwd ? w->nwd : 64;
		char **v;

		while (n <= (size_t)wd)
			n *= 2;
		if ((v = realloc(w->wd_rel, n * sizeof(*v))) == NULL)
			return -ENOMEM;
		memset(v + w->nwd, 0, (n - w->nwd) * sizeof(*v));
		w->wd_rel = v;
		w->nwd = n;
	}
	if ((copy = strdup(rel)) == NULL)
		return -ENOMEM;
	if (w->wd_rel[wd] == NULL)
		w->count++;
	free(w->wd_rel[wd]);
	w->wd_rel[wd] = copy;
	return 0;
}

/* Watches the folder path (rel below the root): 0, 1 when it cannot be
 * and that is no error (gone, no folder, no access, the limit), or -errno. */
static int
watch_dir(struct ph_fsw *w, const char *path, const char *rel)
{
	int wd = inotify_add_watch(w->fd, path, WATCH_MASK);

	if (wd >= 0)
		return set_wd(w, wd, rel);
	if (errno == ENOSPC)
		limit_reached(w, rel, INOTIFY_LIMIT);
	else if (errno != ENOENT && errno != ENOTDIR && errno != EACCES && errno != ELOOP)
		return -errno;
	return 1;
}

static void
handle_event(struct ph_fsw *w, const struct inotify_event *ev)
{
	const char *dir;
	char *rel;

	if (ev->mask & IN_Q_OVERFLOW) {
		/* Events were dropped: folders made meanwhile may be unwatched
		 * too. Walk the tree again (existing watches come back with
		 * their descriptor) and have everything looked at. */
		report(w, PH_FSW_RESCAN, "", "the inotify event queue overflowed (sysctl "
		       "fs.inotify.max_queued_events); rescanning the whole tree");
		add_tree(w, "", 0, 0);
		return;
	}
	if (ev->wd < 0 || (size_t)ev->wd >= w->nwd || (dir = w->wd_rel[ev->wd]) == NULL)
		return;
	if (ev->mask & IN_IGNORED) {
		free(w->wd_rel[ev->wd]);
		w->wd_rel[ev->wd] = NULL;
		w->count--;
		return;
	}
	if (ev->len == 0 || ev->name[0] == '\0')
		return;
	if ((rel = join(dir, ev->name)) == NULL)
		return;
	if (own_temp(rel))
		goto out;
	if (ev->mask & IN_ISDIR) {
		if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
			/* A new folder: watch it and what it holds, reporting the
			 * files already in it (made before its watch existed). */
			if (add_tree(w, rel, 1, 0) != 0)
				report(w, PH_FSW_RESCAN, "", "cannot watch a new folder; rescanning");
		} else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
			report(w, PH_FSW_GONE, rel, NULL);
		}
		goto out;
	}
	if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))
		report(w, PH_FSW_CLOSED, rel, NULL);
	else if (ev->mask & IN_ATTRIB)
		report(w, PH_FSW_FILE, rel, NULL);
	else if (ev->mask & IN_MODIFY)
		report(w, PH_FSW_WRITING, rel, NULL);
	else if (ev->mask & (IN_DELETE | IN_MOVED_FROM))
		report(w, PH_FSW_GONE, rel, NULL);
out:
	free(rel);
}

static void
on_readable(uv_poll_t *h, int status, int events)
{
	struct ph_fsw *w = h->data;
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));
		char *p;

		if (n <= 0)
			return; /* EAGAIN: drained */
		for (p = buf; p < buf + n && !w->closing;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			handle_event(w, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

int
ph_fsw_new(uv_loop_t *loop, const char *root, ph_fsw_fn fn, void *arg, struct ph_fsw **out,
           char *err, size_t errlen)
{
	struct ph_fsw *w;
	int rc;

	if ((w = fsw_alloc(loop, root, fn, arg, out, err, errlen)) == NULL)
		return -ENOMEM;
	if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "inotify: %s%s", strerror(errno), errno == EMFILE ?
		         " (sysctl fs.inotify.max_user_instances)" : "");
		free_w(w);
		return rc;
	}
	if ((rc = add_tree(w, "", 0, 0)) != 0 || w->count == 0) {
		if (rc == 0)
			rc = -ENOENT;
		snprintf(err, errlen, "%s: cannot watch: %s", root, strerror(-rc));
		close(w->fd);
		free_w(w);
		return rc;
	}
	if ((rc = uv_poll_init(loop, &w->poll, w->fd)) != 0) {
		snprintf(err, errlen, "%s: cannot watch: %s", root, uv_strerror(rc));
		close(w->fd);
		free_w(w);
		return rc;
	}
	w->poll.data = w;
	if ((rc = uv_poll_start(&w->poll, UV_READABLE, on_readable)) != 0) {
		snprintf(err, errlen, "%s: cannot watch: %s", root, uv_strerror(rc));
		ph_fsw_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

void
ph_fsw_close(struct ph_fsw *w)
{
	if (w == NULL)
		return;
	w->closing = 1;
	w->pending_close = 1;
	uv_poll_stop(&w->poll);
	uv_close((uv_handle_t *)&w->poll, on_closed);
	close(w->fd); /* after uv_close: libuv must not poll a closed fd */
}

#elif defined(USE_FOLDERS)

/* One folder's watch. rel and the inode tell whether the folder is still
 * where it was watched: one moved or removed has its watch dropped at its
 * next event (the folder's parent reports the move). */
struct folder {
	uv_fs_event_t ev;
	struct ph_fsw *w;
	char *rel;
	uint64_t dev;
	uint64_t ino;
};

static void
on_folder_closed(uv_handle_t *h)
{
	struct folder *f = h->data;
	struct ph_fsw *w = f->w;

	free(f->rel);
	free(f);
	if (--w->pending_close == 0 && w->closing)
		free_w(w);
}

/* The index of the watch of rel on (dev, ino), or of rel alone when dev
 * and ino are 0; w->count when none. */
static size_t
find_folder(const struct ph_fsw *w, const char *rel, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < w->count; i++)
		if (strcmp(w->dirs[i]->rel, rel) == 0 &&
		    ((dev == 0 && ino == 0) || (w->dirs[i]->dev == dev && w->dirs[i]->ino == ino)))
			return i;
	return w->count;
}

static void
drop_folder(struct ph_fsw *w, size_t i)
{
	struct folder *f = w->dirs[i];

	w->dirs[i] = w->dirs[--w->count];
	uv_fs_event_stop(&f->ev);
	uv_close((uv_handle_t *)&f->ev, on_folder_closed);
}

static void on_folder_event(uv_fs_event_t *h, const char *filename, int events, int status);

/* Watches the folder path (rel below the root), unless it is watched
 * already: 0, 1 when it cannot be and that is no error (gone, no folder,
 * no access, out of descriptors), or -errno. */
static int
watch_dir(struct ph_fsw *w, const char *path, const char *rel)
{
	struct folder *f;
	struct phsync_fstat st;
	size_t i;
	int rc;

	if (phsync_file_lstat(path, &st) != 0 || st.type != PHSYNC_FT_DIR)
		return 1;
	if (find_folder(w, rel, st.dev, st.ino) < w->count)
		return 0; /* watched: its folders are looked at again all the same */
	if ((i = find_folder(w, rel, 0, 0)) < w->count)
		drop_folder(w, i); /* another folder by that name before */
	if (w->count == w->cap) {
		size_t n = w->cap ? w->cap * 2 : 64;
		struct folder **v = realloc(w->dirs, n * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		w->dirs = v;
		w->cap = n;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL || (f->rel = strdup(rel)) == NULL) {
		free(f);
		return -ENOMEM;
	}
	f->w = w;
	f->dev = st.dev;
	f->ino = st.ino;
	if ((rc = uv_fs_event_init(w->loop, &f->ev)) != 0) {
		free(f->rel);
		free(f);
		return rc;
	}
	f->ev.data = f;
	w->pending_close++; /* here: handles open, closed or not */
	if ((rc = uv_fs_event_start(&f->ev, on_folder_event, path, 0)) != 0) {
		uv_close((uv_handle_t *)&f->ev, on_folder_closed);
		if (rc == UV_ENOSPC) /* only inotify says so (libuv's Linux backend) */
			limit_reached(w, rel, INOTIFY_LIMIT);
		else if (rc == UV_EMFILE || rc == UV_ENFILE) /* kqueue: a descriptor each */
			limit_reached(w, rel, "out of file descriptors (ulimit -n); the whole "
			              "tree is rescanned every poll interval instead");
		else if (rc != UV_ENOENT && rc != UV_ENOTDIR && rc != UV_EACCES && rc != UV_ELOOP)
			return rc;
		return 1;
	}
	w->dirs[w->count++] = f;
	return 0;
}

/* Something changed in f's folder: the name is looked at, as libuv's
 * events do not say what happened (nor when a file was closed: the settle
 * period tells when it rests). */
static void
on_folder_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
	struct folder *f = h->data;
	struct ph_fsw *w = f->w;
	char *dir = NULL, *rel = NULL, *path = NULL;
	struct phsync_fstat st;

	(void)events;
	if (w->closing)
		return;
	if (status < 0) {
		report(w, PH_FSW_RESCAN, "", "the file system watcher reported an error; "
		       "rescanning the whole tree");
		return;
	}
	if ((dir = join(w->root, f->rel)) == NULL)
		goto out;
	if (phsync_file_lstat(f->rel[0] ? dir : w->root, &st) != 0 || st.dev != f->dev ||
	    st.ino != f->ino) {
		size_t i = find_folder(w, f->rel, f->dev, f->ino);

		if (i < w->count)
			drop_folder(w, i); /* moved or removed: its parent said so */
		goto out;
	}
	if (filename == NULL) {
		report(w, PH_FSW_RESCAN, "", "the file system watcher lost track; rescanning");
		goto out;
	}
	if ((rel = join(f->rel, filename)) == NULL || own_temp(rel) ||
	    (path = join(w->root, rel)) == NULL)
		goto out;
	if (phsync_file_lstat(path, &st) != 0)
		report(w, PH_FSW_GONE, rel, NULL);
	else if (st.type == PHSYNC_FT_REG)
		report(w, PH_FSW_FILE, rel, NULL);
	else if (st.type == PHSYNC_FT_DIR && find_folder(w, rel, st.dev, st.ino) == w->count &&
	         add_tree(w, rel, 1, 0) != 0)
		report(w, PH_FSW_RESCAN, "", "cannot watch a new folder; rescanning");
out:
	free(path);
	free(rel);
	free(dir);
}

int
ph_fsw_new(uv_loop_t *loop, const char *root, ph_fsw_fn fn, void *arg, struct ph_fsw **out,
           char *err, size_t errlen)
{
	struct ph_fsw *w;
	int rc;

	if ((w = fsw_alloc(loop, root, fn, arg, out, err, errlen)) == NULL)
		return -ENOMEM;
	if ((rc = add_tree(w, "", 0, 0)) != 0 || w->count == 0) {
		if (rc == 0)
			rc = -ENOENT;
		snprintf(err, errlen, "%s: cannot watch: %s", root, strerror(-rc));
		ph_fsw_close(w);
		return rc;
	}
#ifdef HAVE_KQUEUE
	/* libuv's folder events come from kqueue here, which tells of names
	 * made, removed and renamed, not of a file rewritten in place: the
	 * pair also runs every interval. (inotify, libuv's Linux backend,
	 * tells of both.) */
	report(w, PH_FSW_UNWATCHED, "", "kqueue's folder watches do not see a file rewritten "
	       "in place: the whole tree is also rescanned every poll interval");
#endif
	*out = w;
	return 0;
}

void
ph_fsw_close(struct ph_fsw *w)
{
	size_t i;

	if (w == NULL)
		return;
	w->closing = 1;
	for (i = 0; i < w->count; i++) {
		uv_fs_event_stop(&w->dirs[i]->ev);
		uv_close((uv_handle_t *)&w->dirs[i]->ev, on_folder_closed);
	}
	w->count = 0;
	if (w->pending_close == 0)
		free_w(w); /* else the last handle's close frees it */
}

#else /* uv_fs_event, recursive (FSEvents on macOS, ReadDirectoryChangesW) */

static void
on_fs_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
	struct ph_fsw *w = h->data;
	struct phsync_fstat st;
	char *path, *rel;
	size_t n, i;

	(void)events;
	if (status < 0) {
		report(w, PH_FSW_RESCAN, "", "the file system watcher reported an error; "
		       "rescanning the whole tree");
		return;
	}
	if (filename == NULL) {
		report(w, PH_FSW_RESCAN, "", "the file system watcher lost track; rescanning");
		return;
	}
	/* No close event here: report files, and let the settle period tell
	 * when they stopped changing. */
	n = strlen(filename);
	if ((path = malloc(strlen(w->root) + 2 * n + 3)) == NULL)
		return;
	/* The name below the root with '/' between its folders, as the sync
	 * names files (ReadDirectoryChangesW gives '\\'). */
	rel = path + strlen(w->root) + n + 2;
	for (i = 0; i <= n; i++)
		rel[i] = phsync_path_sep((unsigned char)filename[i]) ? '/' : filename[i];
	if (own_temp(rel)) {
		free(path);
		return;
	}
	sprintf(path, "%s/%s", w->root, rel);
	if (phsync_file_lstat(path, &st) != 0)
		report(w, PH_FSW_GONE, rel, NULL);
	else if (st.type == PHSYNC_FT_REG)
		report(w, PH_FSW_FILE, rel, NULL);
	else if (st.type == PHSYNC_FT_DIR)
		report(w, PH_FSW_RESCAN, "", NULL); /* a folder's files: look at it all */
	free(path);
}

int
ph_fsw_new(uv_loop_t *loop, const char *root, ph_fsw_fn fn, void *arg, struct ph_fsw **out,
           char *err, size_t errlen)
{
	struct ph_fsw *w;
	int rc;

	if ((w = fsw_alloc(loop, root, fn, arg, out, err, errlen)) == NULL)
		return -ENOMEM;
	if ((rc = uv_fs_event_init(loop, &w->ev)) != 0) {
		snprintf(err, errlen, "%s: cannot watch: %s", root, uv_strerror(rc));
		free_w(w);
		return rc;
	}
	w->ev.data = w;
	if ((rc = uv_fs_event_start(&w->ev, on_fs_event, root, UV_FS_EVENT_RECURSIVE)) != 0) {
		snprintf(err, errlen, "%s: cannot watch: %s", root, uv_strerror(rc));
		w->pending_close = 1;
		uv_close((uv_handle_t *)&w->ev, on_closed);
		return rc;
	}
	*out = w;
	return 0;
}

void
ph_fsw_close(struct ph_fsw *w)
{
	if (w == NULL)
		return;
	w->closing = 1;
	w->pending_close = 1;
	uv_fs_event_stop(&w->ev);
	uv_close((uv_handle_t *)&w->ev, on_closed);
}

#endif
