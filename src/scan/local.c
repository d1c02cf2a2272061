/* SPDX-License-Identifier: ISC */
/* Local file system access beneath a root; see local.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "local.h"
#include "platform.h"
#include "tempname.h"

int
ph_local_open_root(phsync_ctx *ctx, const char *path, int create, int *fd)
{
	char *copy, *p;
	int rc = 0;

	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd >= 0)
		return 0;
	if (errno != ENOENT || !create)
		return ph_err(ctx, ph_err_from_errno(errno), "%s: %s", path, strerror(errno));
	if ((copy = strdup(path)) == NULL)
		return PHSYNC_ENOMEM;
	for (p = copy + 1; rc == 0; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		{
			char c = *p;

			*p = '\0';
			if (mkdir(copy, 0777) != 0 && errno != EEXIST)
				rc = ph_err(ctx, ph_err_from_errno(errno), "cannot create %s: %s", copy,
				            strerror(errno));
			*p = c;
			if (c == '\0')
				break;
		}
	}
	free(copy);
	if (rc != 0)
		return rc;
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return ph_err(ctx, ph_err_from_errno(errno), "%s: %s", path, strerror(errno));
	return 0;
}

static int
opendir_walk(int root, const char *rel, int *fd)
{
	const char *p = rel, *e;
	char name[256];
	int cur = dup(root), next;

	if (cur < 0)
		return ph_err_from_errno(errno);
	while (*p != '\0') {
		size_t n;

		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || n >= sizeof(name) || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			close(cur);
			return PHSYNC_EUNSAFE;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int e2 = errno;

			close(cur);
			/* O_NOFOLLOW on a symlink gives ELOOP (Linux) or ENOTDIR. */
			return e2 == ELOOP ? PHSYNC_EUNSAFE : ph_err_from_errno(e2);
		}
		close(cur);
		cur = next;
		p += n;
		if (*p == '/')
			p++;
	}
	*fd = cur;
	return 0;
}

int
ph_local_opendir(int root, const char *rel, int *fd)
{
	int r;

	if (rel[0] == '\0')
		return opendir_walk(root, rel, fd);
	if ((r = ph_open_beneath_dir(root, rel)) >= 0) {
		*fd = r;
		return 0;
	}
	if (r == -ELOOP || r == -EXDEV)
		return PHSYNC_EUNSAFE;
	if (r != -ENOSYS)
		return ph_err_from_errno(-r);
	/* No openat2 here (or not allowed): walk it by hand. */
	return opendir_walk(root, rel, fd);
}

int
ph_local_split(const char *rel, char **dir, const char **base)
{
	const char *s = strrchr(rel, '/');

	*dir = s ? strndup(rel, (size_t)(s - rel)) : strdup("");
	*base = s ? s + 1 : rel;
	return *dir ? 0 : PHSYNC_ENOMEM;
}

struct scan {
	phsync_ctx *ctx;
	const struct ph_filter *filter;
	int remove_temps, check_names;
	struct ph_temp_owner self;
	int64_t now;
	char shown[4096 * 4 + 1]; /* an escaped path (here: not on the
	                             recursion's stack frames) */
	struct ph_tree *t;
	struct ph_tree *partials;
	phsync_event_fn on_event;
	void *event_arg;
	uint64_t *failed;
	char path[4096];
};

static void
scan_fail(struct scan *s, const char *path, int err, const char *msg)
{
	struct phsync_event ev = { 0 };

	(*s->failed)++;
	if (s->on_event == NULL)
		return;
	ev.type = PHSYNC_EV_FILE_FAILED;
	ev.path = path;
	ev.err = err;
	ev.message = msg;
	s->on_event(&ev, s->event_arg);
}

static int
scan_dir(struct scan *s, int dfd, size_t plen, int depth)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 256)
		return ph_err(s->ctx, PHSYNC_EUNSAFE, "folders nested deeper than 256 levels");
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return ph_err_from_errno(errno);
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		size_t nl = strlen(name);
		struct ph_entry e = { 0 };
		struct ph_temp_info ti;
		struct stat st;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (!ph_filter_only_name(s->filter, name, nl))
			continue;
		if (plen + 1 + nl >= sizeof(s->path)) {
			s->path[plen] = '\0';
			scan_fail(s, plen ? s->path : ".", PHSYNC_EUNSAFE,
			          "a name in this folder makes a path longer than 4095 bytes; "
			          "left out");
			continue;
		}
		if (plen > 0)
			s->path[plen] = '/';
		memcpy(s->path + plen + (plen > 0), name, nl + 1);
		if (ph_temp_parse(name, nl, &ti)) {
			struct ph_entry pe;

			/* A single-file run: another file's temp is not its own. */
			if (!ph_filter_temp(s->filter, name, &ti))
				continue;

			/* Ours: never listed; a dead run's leftover is removed; a
			 * partial download is told to the caller (resumed, or removed
			 * when its state does not know it). */
			if (ti.kind == PH_TEMP_PARTIAL && s->partials != NULL) {
				memset(&pe, 0, sizeof(pe));
				pe.type = PH_T_FILE;
				if (ph_tree_add(s->partials, s->path, plen + (plen > 0) + nl, &pe) != 0)
					return PHSYNC_ENOMEM;
				continue;
			}
			/* A folder: a killed run's case probe (probe.c), empty. */
			if (s->remove_temps && fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) &&
			    ph_temp_stale(&ti, &s->self, s->now))
				unlinkat(dirfd(d), name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
			continue;
		}
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT)
				scan_fail(s, s->path, ph_err_from_errno(errno), strerror(errno));
			continue;
		}
		if (s->check_names && !ph_name_safe((const uint8_t *)name, nl)) {
			char *shown = s->shown;

			/* The same rule both ways: a name the remote could take for a
			 * path ('\\' on a Windows server) or a terminal command. */
			ph_escape(shown, sizeof(s->shown), s->path);
			(*s->failed)++;
			if (s->on_event != NULL) {
				struct phsync_event ev = { 0 };

				ev.type = PHSYNC_EV_SKIPPED;
				ev.path = shown;
				ev.action = "unsafe name";
				ev.err = PHSYNC_EUNSAFE;
				ev.message = "an unsafe name (with '\\' or control characters); "
				             "not sent";
				s->on_event(&ev, s->event_arg);
			}
			continue;
		}
		e.type = S_ISREG(st.st_mode) ? PH_T_FILE : S_ISDIR(st.st_mode) ? PH_T_DIR :
		         S_ISLNK(st.st_mode) ? PH_T_LINK : PH_T_OTHER;
		if (!ph_filter_match(s->filter, s->path, e.type == PH_T_DIR))
			continue;
		e.size = e.type == PH_T_FILE ? (uint64_t)st.st_size : 0;
		e.mtime = ph_mtime_fit((int64_t)st.st_mtime);
		e.mode = st.st_mode & 07777;
		if ((rc = ph_tree_add(s->t, s->path, plen + (plen > 0) + nl, &e)) != 0)
			break;
		/* A single-file run walks no folder (a folder with its name is
		 * the destination's, left alone). */
		if (e.type == PH_T_DIR && (s->filter == NULL || s->filter->only == NULL)) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0) {
				scan_fail(s, s->path, ph_err_from_errno(errno), strerror(errno));
				continue;
			}
			rc = scan_dir(s, sub, plen + (plen > 0) + nl, depth + 1);
			if (rc != 0 && rc != PHSYNC_ENOMEM && rc != PHSYNC_EUNSAFE) {
				scan_fail(s, s->path, rc, "cannot read folder");
				rc = 0;
			}
		}
		s->path[plen] = '\0';
	}
	if (rc == 0 && de == NULL && errno != 0)
		rc = ph_err_from_errno(errno);
	closedir(d);
	return rc;
}

int
ph_local_scan(phsync_ctx *ctx, int root, const struct ph_filter *filter, int remove_temps,
              int check_names, struct ph_tree *t, struct ph_tree *partials,
              phsync_event_fn on_event, void *event_arg, uint64_t *failed)
{
	struct scan s;
	int fd = dup(root);

	if (fd < 0)
		return ph_err(ctx, ph_err_from_errno(errno), "cannot scan: %s", strerror(errno));
	memset(&s, 0, sizeof(s));
	s.ctx = ctx;
	s.filter = filter;
	s.remove_temps = remove_temps;
	s.check_names = check_names;
	ph_temp_owner_self(&s.self);
	s.now = (int64_t)time(NULL);
	s.t = t;
	s.partials = partials;
	s.on_event = on_event;
	s.event_arg = event_arg;
	s.failed = failed;
	/* rewind: a dup shares the offset with root, which may have been read. */
	lseek(fd, 0, SEEK_SET);
	return scan_dir(&s, fd, 0, 0);
}
