/* SPDX-License-Identifier: ISC */
/* phsync_pair(): a phone set up for key login in one command; see
 * include/phsync/pair.h and docs/ARCHITECTURE.md ("Pairing"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "phsync/pair.h"
#include "agent.h"
#include "buf.h"
#include "home.h"
#include "pairing.h"
#include "pfs.h"
#include "platform.h"
#include "psys.h"
#include "ctx.h"
#include "sftp.h"
#include "ssh.h"
#include "sshconf.h"

#define PROBE_MS 3000

const unsigned phsync_pair_ports[] = { 8022, 2222, 22, 0 };

/* The home as ph_sshconf_get reads it (ph_home_dir: $HOME, else the
 * password database's; %USERPROFILE% on Windows), else "/". */
static void
home_dir(char *out, size_t len)
{
	if (ph_home_dir(out, len) != 0)
		snprintf(out, len, "/");
}

void
ph_pair_default_config(char *out, size_t len)
{
	char home[1024];

	home_dir(home, sizeof(home));
	snprintf(out, len, "%s/.ssh/config", home);
	if (ph_path_access(out, 0) != 0)
		snprintf(out, len, "%s", ph_null_path());
}

static int
name_ok(const char *s)
{
	const char *p;

	if (s == NULL || s[0] == '\0' || s[0] == '-' || strlen(s) > 200)
		return 0;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._-", *p)))
			return 0;
	return 1;
}

static int
address_ok(const char *s)
{
	const char *p;

	if (s == NULL || s[0] == '\0' || s[0] == '-' || strlen(s) > 253)
		return 0;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr(".-_:%", *p)))
			return 0;
	return 1;
}

/* Reads a whole small local file into a NUL-terminated buffer. Returns 0,
 * PHSYNC_ENOENT, or another PHSYNC_E*. */
static int
slurp(const char *path, char **out, size_t *len, size_t max)
{
	int fd = ph_openat(PH_AT_CWD, path, PH_O_RDONLY, 0);
	char *buf = NULL;
	size_t n = 0, cap = 0;
	ssize_t r;

	if (fd < 0)
		return ph_err_from_errno(-fd);
	for (;;) {
		if (n + 4096 + 1 > cap) {
			char *nb;

			if (cap > max) {
				free(buf);
				close(fd);
				return PHSYNC_ENOMEM;
			}
			cap = cap ? cap * 2 : 8192;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				close(fd);
				return PHSYNC_ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return ph_err_from_errno(e);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Does a Host line of the config name name exactly (not through a
 * pattern)? Include files are not followed. */
static int
config_has_host(const char *config, const char *name)
{
	char *text = NULL, *line, *save = NULL;
	size_t len;
	int found = 0;

	if (slurp(config, &text, &len, 4u << 20) != 0)
		return 0;
	for (line = strtok_r(text, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *tok, *s2 = NULL;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "host", 4) != 0 || (p[4] != ' ' && p[4] != '\t' && p[4] != '='))
			continue;
		for (tok = strtok_r(p + 5, " \t=\r", &s2); tok; tok = strtok_r(NULL, " \t\r", &s2)) {
			if (tok[0] == '#')
				break;
			if (strcmp(tok, name) == 0)
				found = 1;
		}
	}
	free(text);
	return found;
}

/* Host NAME already there: pointing where we pair (then nothing to add),
 * or elsewhere (refused: it is the user's). */
static int
check_existing(struct pairing *pg)
{
	const struct phsync_pair_options *o = pg->o;
	char hn[256] = "", port[16] = "", user[256] = "";

	pg->config_has_host = config_has_host(pg->config, o->name);
	if (!pg->config_has_host)
		return 0;
	ph_sshconf_get(pg->config, o->name, "HostName", hn, sizeof(hn));
	ph_sshconf_get(pg->config, o->name, "Port", port, sizeof(port));
	ph_sshconf_get(pg->config, o->name, "User", user, sizeof(user));
	if (strcasecmp(hn[0] ? hn : o->name, o->address) != 0 ||
	    (o->port != 0 && (unsigned)atoi(port[0] ? port : "22") != o->port) ||
	    (o->user != NULL && strcmp(user, o->user) != 0))
		return ph_err(pg->ctx, PHSYNC_EREFUSED,
		              "%s already has a 'Host %s' for %s%s%s port %s: choose another name, "
		              "or remove that block and run again", pg->config, o->name,
		              user, user[0] ? "@" : "", hn[0] ? hn : o->name, port[0] ? port : "22");
	pg->config_port = (unsigned)atoi(port[0] ? port : "22");
	return 0;
}

struct probe {
	char *banner;
	size_t blen;
};

/* On one address's socket (its connect begun): the server speaks first,
 * and its version line answers both "is the port open" and "is it SSH".
 * 1 with the banner filled when it is, else 0 (the next address). */
static int
probe_one(int fd, void *arg)
{
	struct probe *p = arg;
	char buf[256];
	size_t n = 0;

	while (n + 1 < sizeof(buf) && ph_poll_sock(fd, PH_POLL_IN, PROBE_MS) > 0) {
		int64_t r = ph_sock_recv(fd, buf + n, sizeof(buf) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		if (strchr(buf, '\n') != NULL)
			break;
	}
	buf[n] = '\0';
	if (strncmp(buf, "SSH-", 4) != 0)
		return 0;
	buf[strcspn(buf, "\r\n")] = '\0';
	phsync_escape(p->banner, p->blen, buf);
	return 1;
}

/* Connects to address:port and reads the server's version line. Returns 1
 * when an SSH server answered (banner filled), 0 otherwise. */
static int
probe_port(const char *address, unsigned port, char *banner, size_t blen)
{
	struct probe p = { banner, blen };

	return ph_tcp_each(address, port, probe_one, &p) == 1;
}

/* The key pair: o->key_file, else the user's usual key, else a key the
 * ssh agent holds (pg->agent, pg->pub; the user keeps keys there only),
 * else the name of the one to make (~/.ssh/id_ed25519). */
static void
choose_key(struct pairing *pg)
{
	static const char *const usual[] = { "id_ed25519", "id_ecdsa", "id_rsa" };
	char pub[1300];
	size_t i;

	if (pg->o->key_file != NULL) {
		snprintf(pg->key, sizeof(pg->key), "%s", pg->o->key_file);
		return;
	}
	for (i = 0; i < sizeof(usual) / sizeof(usual[0]); i++) {
		snprintf(pg->key, sizeof(pg->key), "%s/.ssh/%s", pg->home, usual[i]);
		snprintf(pub, sizeof(pub), "%s.pub", pg->key);
		if (ph_path_access(pg->key, 1) == 0 && ph_path_access(pub, 1) == 0)
			return;
	}
	snprintf(pg->key, sizeof(pg->key), "%s/.ssh/id_ed25519", pg->home);
	/* A private key file without its .pub is still the user's key. */
	if (ph_path_access(pg->key, 0) == 0)
		return;
	if (ph_agent_pick(pg->pub, sizeof(pg->pub)) == 0) {
		pg->agent = 1;
		pg->key[0] = '\0';
	}
}

/* Writes len bytes to a new file (O_EXCL) with mode, fsync'ed. A mode
 * without group or other bits (the key, a new config) is PH_O_PRIVATE: on
 * Windows only this user may open it, as OpenSSH for Windows requires. */
static int
write_new(phsync_ctx *ctx, const char *path, const char *data, size_t len, unsigned mode)
{
	int fd = ph_openat(PH_AT_CWD, path, PH_O_WRONLY | PH_O_CREAT | PH_O_EXCL | PH_O_NOFOLLOW |
	                   ((mode & 077) ? 0 : PH_O_PRIVATE), mode);
	size_t off = 0;
	int e;

	if (fd < 0)
		return ph_err(ctx, ph_err_from_errno(-fd), "cannot create %s: %s", path,
		              strerror(-fd));
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			goto fail;
		}
		off += (size_t)w;
	}
	if ((e = -ph_durable_sync(&fd, 1)) != 0)
		goto fail;
	e = -ph_close(fd);
	fd = -1;
	if (e != 0)
		goto fail;
	return 0;
fail:
	if (fd >= 0)
		ph_close(fd);
	ph_unlinkat(PH_AT_CWD, path, 0);
	return ph_err(ctx, ph_err_from_errno(e), "cannot write %s: %s", path, strerror(e));
}

/* Makes the folder holding path (one level, 0700) when it is missing. */
static int
make_parent(phsync_ctx *ctx, const char *path)
{
	char dir[1200], *slash;
	int rc;

	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = dir + strlen(dir); slash > dir && !ph_path_sep(*slash); slash--)
		;
	if (slash == dir)
		return 0;
	*slash = '\0';
	if ((rc = ph_mkdirat(PH_AT_CWD, dir, 0700)) != 0 && rc != -EEXIST)
		return ph_err(ctx, ph_err_from_errno(-rc), "cannot make %s: %s", dir, strerror(-rc));
	return 0;
}

/* Makes an ed25519 key pair at pg->key (private 0600, no passphrase: a
 * sync from cron or the watcher cannot ask for one; .pub 0644). */
static int
make_key(struct pairing *pg)
{
	ssh_key key = NULL;
	char *priv = NULL, *b64 = NULL, pubpath[1300], host[128] = "", *line = NULL;
	int rc;

	if ((rc = make_parent(pg->ctx, pg->key)) != 0)
		return rc;
	if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key) != SSH_OK ||
	    ssh_pki_export_privkey_base64(key, NULL, NULL, NULL, &priv) != SSH_OK ||
	    ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK) {
		rc = ph_err(pg->ctx, PHSYNC_EIO, "cannot make an ed25519 key");
		goto out;
	}
	ph_hostname(host, sizeof(host));
	if (asprintf(&line, "ssh-ed25519 %s phsync@%s\n", b64, host[0] ? host : "localhost") < 0) {
		line = NULL;
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	snprintf(pubpath, sizeof(pubpath), "%s.pub", pg->key);
	if ((rc = write_new(pg->ctx, pg->key, priv, strlen(priv), 0600)) != 0)
		goto out;
	if ((rc = write_new(pg->ctx, pubpath, line, strlen(line), 0644)) != 0) {
		ph_unlinkat(PH_AT_CWD, pg->key, 0);
		goto out;
	}
	pg->res->key_created = 1;
	note(pg, "made the key %s (ed25519, no passphrase: add one with ssh-keygen -p -f %s "
	     "and an ssh-agent if you like)", pg->key, pg->key);
out:
	if (priv != NULL) {
		memset(priv, 0, strlen(priv));
		ssh_string_free_char(priv);
	}
	ssh_string_free_char(b64);
	free(line);
	ssh_key_free(key);
	return rc;
}

/* pg->pub from KEY.pub, else derived from the private key. */
static int
load_pub(struct pairing *pg)
{
	char pubpath[1300], apath[4096], *text = NULL, *b64 = NULL;
	size_t len;
	ssh_key priv = NULL, pub = NULL;
	int rc;

	snprintf(pubpath, sizeof(pubpath), "%s.pub", pg->key);
	if (slurp(pubpath, &text, &len, 64 * 1024) == 0) {
		text[strcspn(text, "\r\n")] = '\0';
		snprintf(pg->pub, sizeof(pg->pub), "%s", text);
		free(text);
		if (strchr(pg->pub, ' ') != NULL)
			return 0;
		return ph_err(pg->ctx, PHSYNC_EINVAL, "%s is no public key", pubpath);
	}
	/* libssh's fopen takes the name in the ANSI code page on Windows. */
	if (ph_ansi_path(pg->key, apath, sizeof(apath)) != 0 ||
	    ssh_pki_import_privkey_file(apath, NULL, NULL, NULL, &priv) != SSH_OK ||
	    ssh_pki_export_privkey_to_pubkey(priv, &pub) != SSH_OK ||
	    ssh_pki_export_pubkey_base64(pub, &b64) != SSH_OK) {
		rc = ph_err(pg->ctx, PHSYNC_EINVAL, "cannot read the key %s (and no %s)", pg->key,
		            pubpath);
	} else {
		snprintf(pg->pub, sizeof(pg->pub), "%s %s phsync", ssh_key_type_to_char(ssh_key_type(pub)),
		         b64);
		rc = 0;
	}
	ssh_string_free_char(b64);
	ssh_key_free(priv);
	ssh_key_free(pub);
	return rc;
}

/* The IdentityFile value: "~/..." when under the home ssh itself uses
 * (ph_account_home: the password database's), its separators written
 * '/' (which ssh takes on Windows too), else the absolute path. */
static void
identity_value(struct pairing *pg, char *out, size_t len)
{
	char abs[1200], home[1024], *p;
	size_t hl = 0;

	if (ph_path_absolute(pg->key) || ph_realpath(pg->key, abs, sizeof(abs)) != 0)
		snprintf(abs, sizeof(abs), "%s", pg->key);
	if (ph_account_home(home, sizeof(home)) == 0)
		hl = strlen(home);
	if (hl > 1 && strncmp(abs, home, hl) == 0 && ph_path_sep(abs[hl])) {
		snprintf(out, len, "~%s", abs + hl);
		for (p = out; *p; p++)
			if (ph_path_sep(*p))
				*p = '/';
	} else {
		snprintf(out, len, "%s", abs);
	}
}

/* Where the block goes: the end, unless an earlier block would win for
 * HostName, Port or User (ssh takes the first value it finds); then
 * before the first Host or Match line. Returns the offset, or len. */
static size_t
insert_at(struct pairing *pg, const char *text, size_t len)
{
	char v[256];
	const char *p;

	if (ph_sshconf_get(pg->config, pg->o->name, "HostName", v, sizeof(v)) != 1 &&
	    ph_sshconf_get(pg->config, pg->o->name, "Port", v, sizeof(v)) != 1 &&
	    ph_sshconf_get(pg->config, pg->o->name, "User", v, sizeof(v)) != 1)
		return len;
	for (p = text; p < text + len; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : text + len) {
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if ((strncasecmp(q, "host", 4) == 0 && (q[4] == ' ' || q[4] == '\t' || q[4] == '=')) ||
		    (strncasecmp(q, "match", 5) == 0 && (q[5] == ' ' || q[5] == '\t' || q[5] == '=')))
			return (size_t)(p - text);
	}
	return len;
}

/* Appends sep and block to the config, at its end as it is now, and
 * fsyncs it. The file is opened following a symlink, so a symlinked
 * config stays one. Returns 0 or a PHSYNC_E* with the message in ctx. */
static int
append_block(struct pairing *pg, const char *sep, const char *block)
{
	size_t ls = strlen(sep), n = ls + strlen(block), off = 0;
	char *all = malloc(n + 1);
	struct ph_stat st;
	int fd, rc, c;

	if (all == NULL)
		return PHSYNC_ENOMEM;
	snprintf(all, n + 1, "%s%s", sep, block);
	fd = ph_openat(PH_AT_CWD, pg->config, PH_O_WRONLY, 0);
	rc = fd < 0 ? fd : ph_fstat(fd, &st);
	while (rc == 0 && off < n) {
		int64_t w = ph_pwrite(fd, all + off, n - off, st.size + off);

		if (w <= 0)
			rc = w < 0 ? (int)w : -EIO;
		else
			off += (size_t)w;
	}
	if (rc == 0)
		rc = ph_durable_sync(&fd, 1);
	if (fd >= 0 && (c = ph_close(fd)) != 0 && rc == 0)
		rc = c;
	free(all);
	if (rc != 0)
		return ph_err(pg->ctx, ph_err_from_errno(-rc), "cannot append to %s: %s", pg->config,
		              strerror(-rc));
	return 0;
}

/* Adds the Host block to the config: appended (append_block), or written
 * whole through a temp file beside the real file when it must go before an
 * earlier block. */
static int
add_host_block(struct pairing *pg)
{
	const struct phsync_pair_options *o = pg->o;
	char block[2600], idv[1400], when[32], real[1200], tmp[1300], rnd[17];
	char *text = NULL;
	size_t len = 0, at;
	time_t now = time(NULL);
	struct tm tm;
	struct ph_stat st;
	int rc;

	if (pg->agent) {
		/* No IdentityFile: ssh and phsync offer the agent's keys anyway, and
		 * an IdentityFile naming no file would only confuse. */
		const char *sp = strchr(pg->pub, ' ');
		const char *cm = sp ? strchr(sp + 1, ' ') : NULL;

		snprintf(idv, sizeof(idv), "  # the key: in the ssh agent (%.*s%s%.200s)\n",
		         (int)strcspn(pg->pub, " "), pg->pub, cm ? " " : "", cm ? cm + 1 : "");
	} else {
		char file[1200];

		identity_value(pg, file, sizeof(file));
		snprintf(idv, sizeof(idv), "  IdentityFile %s\n", file);
	}
	if (ph_localtime(now, &tm) != 0)
		memset(&tm, 0, sizeof(tm));
	strftime(when, sizeof(when), "%Y-%m-%d", &tm);
	snprintf(block, sizeof(block),
	         "# Added by phsync pair on %s\n"
	         "Host %s\n"
	         "  HostName %s\n"
	         "  Port %u\n"
	         "%s%s%s"
	         "  HostKeyAlias %s\n"
	         "%s",
	         when, o->name, o->address, pg->res->port, o->user ? "  User " : "",
	         o->user ? o->user : "", o->user ? "\n" : "", o->name, idv);
	rc = slurp(pg->config, &text, &len, 4u << 20);
	if (rc == PHSYNC_ENOENT) {
		if ((rc = make_parent(pg->ctx, pg->config)) != 0)
			return rc;
		rc = write_new(pg->ctx, pg->config, block, strlen(block), 0600);
		goto done;
	}
	if (rc != 0)
		return ph_err(pg->ctx, rc, "cannot read %s: %s", pg->config, phsync_strerror(rc));
	at = insert_at(pg, text, len);
	if (at == len) {
		rc = append_block(pg, len == 0 ? "" : text[len - 1] == '\n' ? "\n" : "\n\n", block);
		if (rc != 0)
			goto out;
		goto done;
	}
	/* Before the first block: the whole file anew, beside the real one. */
	if ((rc = ph_realpath(pg->config, real, sizeof(real))) != 0 ||
	    (rc = ph_fstatat(PH_AT_CWD, real, &st)) != 0) {
		rc = ph_err(pg->ctx, PHSYNC_EIO, "%s: %s", pg->config, strerror(-rc));
		goto out;
	}
	ph_pair_random_hex(rnd, sizeof(rnd));
	snprintf(tmp, sizeof(tmp), "%s.phsync-%s", real, rnd);
	{
		size_t bl = strlen(block);
		char *all = malloc(len + bl + 2);

		if (all == NULL) {
			rc = PHSYNC_ENOMEM;
			goto out;
		}
		memcpy(all, text, at);
		memcpy(all + at, block, bl);
		all[at + bl] = '\n';
		memcpy(all + at + bl + 1, text + at, len - at);
		rc = write_new(pg->ctx, tmp, all, len + bl + 1, st.mode & 0777);
		free(all);
	}
	if (rc == 0 && (rc = ph_renameat(PH_AT_CWD, tmp, PH_AT_CWD, real)) != 0) {
		rc = ph_err(pg->ctx, PHSYNC_EIO, "cannot replace %s: %s", real, strerror(-rc));
		ph_unlinkat(PH_AT_CWD, tmp, 0);
	}
	if (rc == 0)
		note(pg, "put 'Host %s' before the first Host block of %s (an earlier block "
		     "would have overridden it)", o->name, pg->config);
done:
	if (rc == 0) {
		pg->res->config_added = 1;
		note(pg, "added 'Host %s' to %s", o->name, pg->config);
	}
out:
	free(text);
	return rc;
}

static int
connect_once(struct pairing *pg, int verify, const char *accept_fp, struct ph_ssh **ssh,
             struct ph_ssh_info *info)
{
	const struct phsync_pair_options *o = pg->o;
	struct ph_ssh_params sp;

	memset(&sp, 0, sizeof(sp));
	sp.user = o->user;
	sp.host = o->address;
	/* The config the Host block goes to, named to libssh (which would
	 * read the account's home, not $HOME's); one pairing is about to
	 * create is read as empty for now. */
	sp.config = ph_path_access(pg->config, 0) != 0 ? ph_null_path() : pg->config;
	/* The check with the agent's key logs in as a sync will: the agent
	 * (and the usual key files, which this user has none of), never a
	 * password, so nothing is asked. */
	sp.prompt = verify && pg->agent ? NULL : o->prompt;
	sp.prompt_arg = o->prompt_arg;
	sp.verbosity = o->ssh_verbosity;
	sp.timeout_s = o->timeout_s ? o->timeout_s : 60;
	sp.port = pg->res->port;
	sp.identity = pg->agent ? NULL : pg->key;
	sp.key_only = verify && !pg->agent;
	sp.ask_host_key = 1;
	sp.defer_host_key = 1;
	sp.accept_fp = accept_fp;
	sp.password_tries = 3;
	sp.info = info;
	return ph_ssh_connect(pg->ctx, &sp, ssh);
}

/* The names pairing writes into the config, and a terminal to ask on. */
static int
check_options(phsync_ctx *ctx, const struct phsync_pair_options *o)
{
	if (!name_ok(o->name))
		return ph_err(ctx, PHSYNC_EINVAL, "'%s' cannot be a Host name: use letters, digits, "
		              "'.', '_' and '-'", o->name ? o->name : "");
	if (!address_ok(o->address))
		return ph_err(ctx, PHSYNC_EINVAL, "'%s' is not a host name or address",
		              o->address ? o->address : "");
	if (o->user != NULL && (!name_ok(o->user) || strlen(o->user) > 64))
		return ph_err(ctx, PHSYNC_EINVAL, "'%s' is not a user name", o->user);
	if (o->prompt == NULL)
		return ph_err(ctx, PHSYNC_EINVAL, "pairing asks questions: it needs a terminal");
	return 0;
}

/* The home, the config the Host block goes to, and the key: a file, or
 * the agent's when there is none. */
static void
find_key(struct pairing *pg)
{
	const struct phsync_pair_options *o = pg->o;

	home_dir(pg->home, sizeof(pg->home));
	if (o->ssh_config != NULL)
		snprintf(pg->config, sizeof(pg->config), "%s", o->ssh_config);
	else
		snprintf(pg->config, sizeof(pg->config), "%s/.ssh/config", pg->home);
	choose_key(pg);
	snprintf(pg->res->key_file, sizeof(pg->res->key_file), "%s", pg->key);
	if (pg->agent) {
		snprintf(pg->res->agent_key, sizeof(pg->res->agent_key), "%s", pg->pub);
		note(pg, "no key file in %s/.ssh: using the ssh agent's key (%.*s)", pg->home,
		     (int)strcspn(pg->pub, " "), pg->pub);
	}
}

/* The port: the one given, the config's, else the first of the usual
 * ones where an SSH server answers. */
static int
find_port(struct pairing *pg)
{
	struct phsync_pair_result *res = pg->res;
	const struct phsync_pair_options *o = pg->o;
	int i;

	res->port = o->port ? o->port : pg->config_port;
	if (res->port != 0)
		return 0;
	for (i = 0; phsync_pair_ports[i] != 0 && res->port == 0; i++)
		if (probe_port(o->address, phsync_pair_ports[i], res->server, sizeof(res->server)))
			res->port = phsync_pair_ports[i];
	if (res->port == 0)
		return ph_err(pg->ctx, PHSYNC_ECONNECT, "no SSH server answers on %s (tried ports "
		              "8022, 2222 and 22)", o->address);
	note(pg, "found %s on port %u", res->server, res->port);
	return 0;
}

/* Step 1: the host key (asked, not yet recorded; its fingerprint into fp)
 * and a login, by a key that already works or by the password. What the
 * server offers goes into the result even when the login fails. */
static int
first_login(struct pairing *pg, struct ph_ssh **ssh, struct ph_ssh_info *info, char *fp,
            size_t fplen)
{
	struct phsync_pair_result *res = pg->res;
	int rc;

	rc = connect_once(pg, 0, NULL, ssh, info);
	res->auth = ((info->methods & (SSH_AUTH_METHOD_PASSWORD | SSH_AUTH_METHOD_INTERACTIVE)) ?
	             PHSYNC_AUTH_PASSWORD : 0) |
	            ((info->methods & SSH_AUTH_METHOD_PUBLICKEY) ? PHSYNC_AUTH_KEY : 0);
	if (info->banner[0])
		phsync_escape(res->server, sizeof(res->server), info->banner);
	snprintf(res->host_key, sizeof(res->host_key), "%s %s", info->key_type, info->fp);
	snprintf(fp, fplen, "%s", info->fp);
	if (rc != 0)
		return rc;
	/* The block to come names the key by the Host name: before anything
	 * is put on the phone, known_hosts must not hold another key under it. */
	if (!pg->config_has_host && (rc = ph_ssh_record_host_key_as(*ssh, pg->o->name, 0)) != 0)
		return rc;
	if (info->auth_method != SSH_AUTH_METHOD_PUBLICKEY)
		note(pg, "logged in with the password");
	return 0;
}

/* Step 2: the key, made only now that the login worked (the agent's is
 * there already). */
static int
ready_key(struct pairing *pg)
{
	int rc;

	if (pg->agent)
		return 0;
	if (ph_path_access(pg->key, 0) != 0 && (rc = make_key(pg)) != 0)
		return rc;
	return load_pub(pg);
}

/* Step 3: the key into authorized_keys over SFTP. */
static int
put_key(struct pairing *pg, struct ph_ssh *ssh)
{
	const struct phsync_pair_options *o = pg->o;
	struct ph_sftp *sftp = NULL;
	struct ph_chan chan;
	int rc;

	if ((rc = ph_ssh_open_sftp(ssh, &chan)) != 0)
		return rc;
	chan.silence_ms = (int)(o->timeout_s ? o->timeout_s : 60) * 1000;
	if ((rc = ph_sftp_new(pg->ctx, &chan, &sftp)) == 0)
		rc = ph_pair_install_key(pg, sftp);
	ph_sftp_free(sftp);
	return rc;
}

/* Step 4: the key alone must log in, as the syncs will, to the host key
 * fp step 1 saw. */
static int
key_login(struct pairing *pg, const char *fp, struct ph_ssh **ssh)
{
	phsync_ctx *ctx = pg->ctx;
	struct ph_ssh_info info2;
	int rc;

	memset(&info2, 0, sizeof(info2));
	rc = connect_once(pg, 1, fp, ssh, &info2);
	if (rc == PHSYNC_EAUTH && pg->agent)
		return ph_err(ctx, PHSYNC_EAUTH, "the agent's key is in the phone's authorized_keys, "
		              "but the server does not accept it (%s). Check that the phone's home "
		              "and .ssh folders are writable only by you, or where the server app "
		              "reads its keys from (--authorized-keys PATH)", phsync_ctx_error(ctx));
	if (rc == PHSYNC_EAUTH)
		return ph_err(ctx, PHSYNC_EAUTH, "the key is in the phone's authorized_keys, but the "
		              "server does not accept it (%s). Check that the phone's home and .ssh "
		              "folders are writable only by you, or where the server app reads its "
		              "keys from (--authorized-keys PATH)", phsync_ctx_error(ctx));
	if (rc != 0)
		return rc;
	if (pg->agent)
		note(pg, "logged in with the agent's key alone");
	else
		note(pg, "logged in with the key %s", pg->key);
	return 0;
}

/* Step 5: what is local, once everything worked: the host key a new one
 * (info, from step 1) into known_hosts, as the connection named the
 * server (its address, which pairing again goes by), the Host block into
 * the config. A new block gets `HostKeyAlias NAME` and the key is recorded
 * under NAME too (when no entry there holds it yet), so the phone is
 * known at any address by ssh and phsync alike: DHCP moves a phone on
 * Wi-Fi, and editing HostName is then all it takes. */
static int
record_local(struct pairing *pg, struct ph_ssh *ssh, const struct ph_ssh_info *info)
{
	int rc;

	if (info->host_key_new) {
		if ((rc = ph_ssh_record_host_key(ssh)) != 0)
			return rc;
		pg->res->host_key_added = 1;
		note(pg, "recorded the host key %s %s in known_hosts", info->key_type, info->fp);
	}
	if (!pg->config_has_host) {
		if ((rc = ph_ssh_record_host_key_as(ssh, pg->o->name, 1)) != 0)
			return rc;
		note(pg, "the host key is in known_hosts as '%s' too (the block's HostKeyAlias)",
		     pg->o->name);
		return add_host_block(pg);
	}
	note(pg, "'Host %s' is already in %s", pg->o->name, pg->config);
	return 0;
}

int
phsync_pair(phsync_ctx *ctx, const struct phsync_pair_options *o, struct phsync_pair_result *res)
{
	struct phsync_pair_result dummy;
	struct pairing pg;
	struct ph_ssh *ssh = NULL;
	struct ph_ssh_info info;
	char fp[128];
	int rc;

	ctx->err[0] = '\0';
	memset(&pg, 0, sizeof(pg));
	memset(&info, 0, sizeof(info));
	if (res == NULL)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	pg.ctx = ctx;
	pg.o = o;
	pg.res = res;
	if ((rc = check_options(ctx, o)) != 0)
		return rc;
	find_key(&pg);
	if ((rc = check_existing(&pg)) != 0 || (rc = find_port(&pg)) != 0)
		return rc;
	if ((rc = first_login(&pg, &ssh, &info, fp, sizeof(fp))) != 0 ||
	    (rc = ready_key(&pg)) != 0 || (rc = put_key(&pg, ssh)) != 0)
		goto out;
	ph_ssh_free(ssh);
	ssh = NULL;
	if ((rc = key_login(&pg, fp, &ssh)) != 0)
		goto out;
	rc = record_local(&pg, ssh, &info);
out:
	ph_ssh_free(ssh);
	return rc;
}
