/* SPDX-License-Identifier: ISC */
/* The pairing key put into the phone's authorized_keys over SFTP (see
 * pairing.h): read back bounded, the key looked for, the new file written
 * beside and renamed over the old. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "pairing.h"
#include "platform.h"

#define MAX_AUTH_KEYS (1u << 20) /* a bigger authorized_keys is refused */

/* Is the key blob (second field of pub) on a line of text? Lines may
 * carry options before the key type, as sshd allows. */
static int
has_key(const char *text, const char *pub)
{
	const char *blob = strchr(pub, ' '), *p = text;
	size_t bl;

	if (blob == NULL)
		return 0;
	blob++;
	bl = strcspn(blob, " ");
	while ((p = strstr(p, blob)) != NULL) {
		int before = p == text || p[-1] == ' ' || p[-1] == '\t';
		char after = p[bl];

		if (before && (after == '\0' || after == ' ' || after == '\t' || after == '\n' ||
		               after == '\r'))
			return 1;
		p += bl;
	}
	return 0;
}

/* Reads a remote file of at most MAX_AUTH_KEYS bytes into *out (NUL
 * terminated). */
static int
read_remote(struct ph_sftp *s, const char *path, uint64_t size, char **out)
{
	uint32_t step = ph_sftp_max_read(s);
	uint64_t off = 0;
	char *buf = malloc((size_t)size + 1);
	int rc = 0;

	if (buf == NULL)
		return PHSYNC_ENOMEM;
	while (off < size) {
		uint32_t want = size - off < step ? (uint32_t)(size - off) : step, got = 0;
		uint8_t *b = (uint8_t *)buf + off;

		if ((rc = ph_sftp_read_ranges_sync(s, path, &off, &want, &b, &got, 1)) != 0)
			break;
		if (got == 0) {
			size = off; /* shrank meanwhile */
			break;
		}
		off += got;
	}
	if (rc != 0) {
		free(buf);
		return rc;
	}
	buf[size] = '\0';
	*out = buf;
	return 0;
}

void
ph_pair_random_hex(char *out, size_t n)
{
	unsigned char b[16];
	size_t i;

	if (ph_random(b, sizeof(b)) != 0) {
		unsigned v = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);

		for (i = 0; i < sizeof(b); i++, v = v * 1103515245u + 12345u)
			b[i] = (unsigned char)(v >> 16);
	}
	for (i = 0; i + 1 < n && i / 2 < sizeof(b); i++)
		out[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[i] = '\0';
}

/* Puts the new contents in place: posix-rename over the old file where
 * offered, else the old one aside, the new one in, the old one removed
 * (put back if the new one cannot go in). */
static int
replace_remote(struct ph_sftp *s, const char *tmp, const char *path, int existed)
{
	char aside[1300], rnd[17];
	int rc;

	if (!existed)
		return ph_sftp_rename_sync(s, tmp, path);
	if ((rc = ph_sftp_posix_rename_sync(s, tmp, path)) != PHSYNC_EUNSUPPORTED)
		return rc;
	ph_pair_random_hex(rnd, sizeof(rnd));
	snprintf(aside, sizeof(aside), "%s.phsync-old-%s", path, rnd);
	if ((rc = ph_sftp_rename_sync(s, path, aside)) != 0)
		return rc;
	if ((rc = ph_sftp_rename_sync(s, tmp, path)) != 0) {
		ph_sftp_rename_sync(s, aside, path);
		return rc;
	}
	ph_sftp_remove_sync(s, aside);
	return 0;
}

/* The ssh-copy-id step over SFTP: the folder 0700 (made, or made private
 * when others could write it), the key appended to the existing lines
 * through a temp file 0600 and a rename; nothing written when it is there. */
int
ph_pair_install_key(struct pairing *pg, struct ph_sftp *s)
{
	const char *path = pg->o->authorized_keys ? pg->o->authorized_keys : ".ssh/authorized_keys";
	char dir[1100], tmp[1300], rnd[17], *old = NULL, *slash;
	struct ph_sftp_attrs a, da;
	struct ph_sftp_handle h = { 0 };
	struct ph_buf nb = { NULL, 0, 0, MAX_AUTH_KEYS + 4096 };
	int rc, existed;

	if (strlen(path) >= sizeof(dir) - 40)
		return ph_err(pg->ctx, PHSYNC_EINVAL, "authorized_keys path too long");
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		rc = ph_sftp_stat_sync(s, PH_LSTAT, dir, &da);
		if (rc == PHSYNC_ENOENT) {
			if ((rc = ph_sftp_mkdir_sync(s, dir, 0700)) != 0)
				return ph_err(pg->ctx, rc, "cannot make %s on the phone: %s", dir,
				              phsync_strerror(rc));
			note(pg, "made %s on the phone (mode 700)", dir);
		} else if (rc != 0) {
			return ph_err(pg->ctx, rc, "%s on the phone: %s", dir, phsync_strerror(rc));
		} else if ((da.flags & PH_ATTR_PERMISSIONS) && (da.perm & 0170000) != 0040000) {
			return ph_err(pg->ctx, PHSYNC_ENOTDIR, "%s on the phone is not a folder", dir);
		} else if ((da.flags & PH_ATTR_PERMISSIONS) && (da.perm & 022)) {
			/* sshd's StrictModes ignores keys in a folder others can write. */
			struct ph_sftp_attrs m = { .flags = PH_ATTR_PERMISSIONS, .perm = da.perm & 0755 };

			if (ph_sftp_setstat_sync(s, dir, &m) == 0)
				note(pg, "made %s on the phone writable only by its owner", dir);
		}
	} else {
		snprintf(dir, sizeof(dir), ".");
	}
	rc = ph_sftp_stat_sync(s, PH_LSTAT, path, &a);
	existed = rc == 0;
	if (rc != 0 && rc != PHSYNC_ENOENT)
		return ph_err(pg->ctx, rc, "%s on the phone: %s", path, phsync_strerror(rc));
	if (existed) {
		if ((a.flags & PH_ATTR_PERMISSIONS) && (a.perm & 0170000) != 0100000)
			return ph_err(pg->ctx, PHSYNC_EREFUSED, "%s on the phone is not a regular file "
			              "(a link?); add the key by hand: %s", path, pg->pub);
		if (!(a.flags & PH_ATTR_SIZE) || a.size > MAX_AUTH_KEYS)
			return ph_err(pg->ctx, PHSYNC_EREFUSED, "%s on the phone is too big to edit",
			              path);
		if ((rc = read_remote(s, path, a.size, &old)) != 0)
			return ph_err(pg->ctx, rc, "cannot read %s on the phone: %s", path,
			              phsync_strerror(rc));
		if (has_key(old, pg->pub)) {
			free(old);
			note(pg, "the key is already in %s on the phone", path);
			return 0;
		}
	}
	rc = 0;
	if (old != NULL && old[0] != '\0') {
		rc = ph_buf_put(&nb, old, strlen(old));
		if (rc == 0 && old[strlen(old) - 1] != '\n')
			rc = ph_buf_put_u8(&nb, '\n');
	}
	if (rc == 0)
		rc = ph_buf_put(&nb, pg->pub, strlen(pg->pub));
	if (rc == 0)
		rc = ph_buf_put_u8(&nb, '\n');
	free(old);
	if (rc != 0)
		goto out;
	ph_pair_random_hex(rnd, sizeof(rnd));
	snprintf(tmp, sizeof(tmp), "%s/.authorized_keys.phsync-%s", dir, rnd);
	{
		struct ph_sftp_attrs m = { .flags = PH_ATTR_PERMISSIONS, .perm = 0600 };

		rc = ph_sftp_open_sync(s, tmp, PH_FXF_WRITE | PH_FXF_CREAT | PH_FXF_EXCL, &m, &h);
	}
	if (rc != 0) {
		rc = ph_err(pg->ctx, rc, "cannot create %s on the phone: %s", tmp, phsync_strerror(rc));
		goto out;
	}
	rc = ph_sftp_write_sync(s, &h, 0, nb.data, nb.len);
	if (rc == 0 && (ph_sftp_exts(s) & PH_EXT_FSYNC))
		rc = ph_sftp_fsync_sync(s, &h);
	{
		int crc = ph_sftp_close_sync(s, &h);

		if (rc == 0)
			rc = crc;
	}
	if (rc == 0)
		rc = replace_remote(s, tmp, path, existed);
	if (rc != 0) {
		ph_sftp_remove_sync(s, tmp);
		rc = ph_err(pg->ctx, rc, "cannot write %s on the phone: %s", path, phsync_strerror(rc));
		goto out;
	}
	pg->res->key_installed = 1;
	note(pg, "installed the key in %s on the phone", path);
out:
	ph_buf_free(&nb);
	return rc;
}
