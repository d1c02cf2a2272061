/* SPDX-License-Identifier: ISC */
/* SSH session over libssh: connect, host key, login; see ssh.h (the
 * channels: sshchan.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "ctx.h"
#include "knownhost.h"
#include "platform.h"
#include "psys.h"
#include "ssh.h"
#include "ssh_int.h"
#include "sshconf.h"

/* Preferred when the CPU has AES instructions and the config names no
 * cipher: measured 2.3x faster end to end than chacha20-poly1305 on the
 * project's machines (docs/PERFORMANCE.md). */
#define AES_FIRST_CIPHERS \
	"aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com," \
	"aes128-ctr,aes192-ctr,aes256-ctr"

/* Called through a volatile pointer, so a secret's wipe is never optimised
 * away (explicit_bzero is not everywhere). */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

static void
wipe(void *p, size_t n)
{
	wipe_memset(p, 0, n);
}

/* libssh asks for key passphrases through this. */
static int
auth_cb(const char *prompt, char *buf, size_t len, int echo, int verify, void *userdata)
{
	struct ph_ssh *ssh = userdata;

	(void)verify;
	if (ssh->prompt == NULL)
		return -1;
	return ssh->prompt(prompt, echo, buf, len, ssh->prompt_arg) == 0 ? 0 : -1;
}

static int
fingerprint(ssh_session sess, char *out, size_t outlen, const char **ktype)
{
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *fp;

	if (ssh_get_server_publickey(sess, &key) != SSH_OK)
		return -1;
	*ktype = ssh_key_type_to_char(ssh_key_type(key));
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) != 0) {
		ssh_key_free(key);
		return -1;
	}
	fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
	snprintf(out, outlen, "%s", fp ? fp : "?");
	ssh_string_free_char(fp);
	ssh_clean_pubkey_hash(&hash);
	ssh_key_free(key);
	return 0;
}

/* The server's key into the user's known_hosts: under the HostKeyAlias
 * when there is one, else as libssh names it (by the address). */
static int
record_key(struct ph_ssh *ssh, int code)
{
	char why[256], *kh = NULL;
	int rc;

	if (ssh->info.key_alias[0] != '\0') {
		if (ph_knownhost_add(ssh->sess, ssh->info.key_alias, why, sizeof(why)) == 0)
			return 0;
	} else {
		if (ssh_session_update_known_hosts(ssh->sess) == SSH_OK)
			return 0;
		snprintf(why, sizeof(why), "%s", ssh_get_error(ssh->sess));
	}
	ssh_options_get(ssh->sess, SSH_OPTIONS_KNOWNHOSTS, &kh);
	rc = ph_err(ssh->ctx, code, "%s: cannot record the host key in %s: %s", ssh->host,
	            kh ? kh : "known_hosts", why);
	ssh_string_free_char(kh);
	return rc;
}

/* Does known_hosts mark the server's key @revoked for the name it goes by
 * (the HostKeyAlias, else as libssh names it: "[host]:port", or host on
 * port 22)? 0, or PHSYNC_EHOSTKEY with the message in ctx. */
static int
revoked(struct ph_ssh *ssh, const char *fp, const char *ktype, const char *kh)
{
	char name[300], user[128], host[256];
	unsigned port;
	int r;

	if (ssh->info.key_alias[0] != '\0') {
		snprintf(name, sizeof(name), "%s", ssh->info.key_alias);
	} else {
		ph_ssh_identity(ssh, user, sizeof(user), host, sizeof(host), &port);
		if (port == 22)
			snprintf(name, sizeof(name), "%s", host);
		else
			snprintf(name, sizeof(name), "[%s]:%u", host, port);
	}
	if ((r = ph_knownhost_revoked(ssh->sess, name)) == 0)
		return 0;
	if (r < 0)
		return ph_err(ssh->ctx, PHSYNC_EHOSTKEY, "%s: cannot check the host key: %s cannot "
		              "be read", ssh->host, kh ? kh : "known_hosts");
	return ph_err(ssh->ctx, PHSYNC_EHOSTKEY,
	              "HOST KEY REVOKED for %s: the server shows %s key %s, which %s marks "
	              "@revoked. Nothing was transferred.", ssh->host, ktype, fp,
	              kh ? kh : "known_hosts");
}

static int
check_host_key(struct ph_ssh *ssh, const char *config)
{
	char fp[128], strict[64] = "ask", answer[16];
	char *kh = NULL;
	const char *ktype = "?";
	enum ssh_known_hosts_e st;
	int rc;

	if (fingerprint(ssh->sess, fp, sizeof(fp), &ktype) != 0)
		return ph_err(ssh->ctx, PHSYNC_EHOSTKEY, "%s: cannot read the server's host key",
		              ssh->host);
	snprintf(ssh->info.fp, sizeof(ssh->info.fp), "%s", fp);
	snprintf(ssh->info.key_type, sizeof(ssh->info.key_type), "%s", ktype ? ktype : "?");
	ssh_options_get(ssh->sess, SSH_OPTIONS_KNOWNHOSTS, &kh);
	if (ph_sshconf_get(config, ssh->host, "HostKeyAlias", ssh->info.key_alias,
	                   sizeof(ssh->info.key_alias)) != 1)
		ssh->info.key_alias[0] = '\0';
	if (ssh->info.key_alias[0] != '\0' && !ph_knownhost_name_ok(ssh->info.key_alias)) {
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTKEY,
		            "%s: cannot check the host key: HostKeyAlias '%s' in the ssh config "
		            "cannot name a known_hosts entry; nothing was transferred",
		            ssh->host, ssh->info.key_alias);
		goto out;
	}
	/* @revoked first: such a key is never accepted, whatever else. */
	if ((rc = revoked(ssh, fp, ktype, kh)) != 0)
		goto out;
	st = ssh->info.key_alias[0] != '\0' ? ph_knownhost_check(ssh->sess, ssh->info.key_alias) :
	     ssh_session_is_known_server(ssh->sess);
	switch (st) {
	case SSH_KNOWN_HOSTS_OK:
		rc = 0;
		goto out;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTKEY,
		            "HOST KEY MISMATCH for %s: the server now shows %s key %s, "
		            "which differs from the key recorded in %s. Someone may be "
		            "intercepting the connection, or the server was reinstalled. "
		            "Nothing was transferred. If the change is expected, remove "
		            "the old entry (ssh-keygen -R %s -f %s) and run again.",
		            ssh->host, ktype, fp, kh ? kh : "known_hosts",
		            ssh->info.key_alias[0] != '\0' ? ssh->info.key_alias : "HOST", kh ? kh : "FILE");
		goto out;
	case SSH_KNOWN_HOSTS_ERROR:
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTKEY, "%s: cannot check the host key: %s",
		            ssh->host, ssh_get_error(ssh->sess));
		goto out;
	case SSH_KNOWN_HOSTS_NOT_FOUND:
	case SSH_KNOWN_HOSTS_UNKNOWN:
	default:
		break;
	}
	ssh->info.host_key_new = 1;
	if (ssh->p->accept_fp != NULL && strcmp(ssh->p->accept_fp, fp) == 0)
		goto accepted; /* the user said yes to this key earlier in this run */
	ph_sshconf_get(config, ssh->host, "StrictHostKeyChecking", strict, sizeof(strict));
	if (ssh->p->ask_host_key)
		snprintf(strict, sizeof(strict), "ask"); /* pairing is the user's explicit yes */
	/* ssh_config(5): yes|true never adds a key; no|off|false and
	 * accept-new add an unknown one; ask (the default) asks. */
	if (strcasecmp(strict, "accept-new") == 0 || strcasecmp(strict, "no") == 0 ||
	    strcasecmp(strict, "off") == 0 || strcasecmp(strict, "false") == 0) {
		/* accepted below */
	} else if (strcasecmp(strict, "yes") != 0 && strcasecmp(strict, "true") != 0 &&
	           ssh->prompt != NULL) {
		char q[768];

		snprintf(q, sizeof(q),
		         "The authenticity of host '%s' can't be established.\n"
		         "%s key fingerprint is %s.\n"
		         "Add it to %s and continue connecting (yes/no)? ",
		         ssh->host, ktype, fp, kh ? kh : "known_hosts");
		if (ssh->prompt(q, 1, answer, sizeof(answer), ssh->prompt_arg) != 0 ||
		    strcasecmp(answer, "yes") != 0) {
			rc = ph_err(ssh->ctx, PHSYNC_EHOSTUNKNOWN,
			            "%s: host key not accepted; nothing was transferred", ssh->host);
			goto out;
		}
	} else {
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTUNKNOWN,
		            "%s: unknown host key (%s %s) and no terminal to confirm it. "
		            "Verify the fingerprint, then connect once with ssh, or set "
		            "'StrictHostKeyChecking accept-new' for this host.",
		            ssh->host, ktype, fp);
		goto out;
	}
accepted:
	if (!ssh->p->defer_host_key && (rc = record_key(ssh, PHSYNC_EHOSTUNKNOWN)) != 0)
		goto out;
	rc = 0;
out:
	ssh_string_free_char(kh);
	return rc;
}

static int
auth_password(struct ph_ssh *ssh, int methods)
{
	char buf[512], q[640];
	char *user = NULL;
	int rc = SSH_AUTH_DENIED;

	if (ssh->prompt == NULL)
		return SSH_AUTH_DENIED;
	if (methods & SSH_AUTH_METHOD_INTERACTIVE) {
		while ((rc = ssh_userauth_kbdint(ssh->sess, NULL, NULL)) == SSH_AUTH_INFO) {
			int i, n = ssh_userauth_kbdint_getnprompts(ssh->sess);
			const char *name = ssh_userauth_kbdint_getname(ssh->sess);
			const char *instr = ssh_userauth_kbdint_getinstruction(ssh->sess);

			for (i = 0; i < n && i < 16; i++) {
				char echo = 0;
				const char *p = ssh_userauth_kbdint_getprompt(ssh->sess, (unsigned)i, &echo);
				char shown[1024], kq[3200];

				/* The server's texts reach the terminal: keep them inert. */
				kq[0] = '\0';
				if (i == 0 && name != NULL && name[0]) {
					phsync_escape(shown, sizeof(shown), name);
					snprintf(kq + strlen(kq), sizeof(kq) - strlen(kq), "%s\n", shown);
				}
				if (i == 0 && instr != NULL && instr[0]) {
					phsync_escape(shown, sizeof(shown), instr);
					snprintf(kq + strlen(kq), sizeof(kq) - strlen(kq), "%s\n", shown);
				}
				phsync_escape(shown, sizeof(shown), p ? p : "Response: ");
				snprintf(kq + strlen(kq), sizeof(kq) - strlen(kq), "%s", shown);
				if (ssh->prompt(kq, echo, buf, sizeof(buf), ssh->prompt_arg) != 0) {
					wipe(buf, sizeof(buf));
					return SSH_AUTH_DENIED;
				}
				ssh_userauth_kbdint_setanswer(ssh->sess, (unsigned)i, buf);
				wipe(buf, sizeof(buf));
			}
		}
		if (rc == SSH_AUTH_SUCCESS) {
			ssh->info.auth_method = SSH_AUTH_METHOD_INTERACTIVE;
			return rc;
		}
	}
	if (methods & SSH_AUTH_METHOD_PASSWORD) {
		int tries = ssh->p->password_tries > 0 ? ssh->p->password_tries : 1;

		ssh_options_get(ssh->sess, SSH_OPTIONS_USER, &user);
		snprintf(q, sizeof(q), "%s@%s's password: ", user ? user : "", ssh->host);
		ssh_string_free_char(user);
		while (tries-- > 0) {
			if (ssh->prompt(q, 0, buf, sizeof(buf), ssh->prompt_arg) != 0) {
				wipe(buf, sizeof(buf));
				return SSH_AUTH_DENIED;
			}
			rc = ssh_userauth_password(ssh->sess, NULL, buf);
			wipe(buf, sizeof(buf));
			if (rc != SSH_AUTH_DENIED && rc != SSH_AUTH_PARTIAL)
				break;
			if (tries > 0) {
				/* Says why the same question comes back. */
				ssh_options_get(ssh->sess, SSH_OPTIONS_USER, &user);
				snprintf(q, sizeof(q), "Permission denied, please try again.\n%s@%s's password: ",
				         user ? user : "", ssh->host);
				ssh_string_free_char(user);
			}
		}
		if (rc == SSH_AUTH_SUCCESS)
			ssh->info.auth_method = SSH_AUTH_METHOD_PASSWORD;
	}
	return rc;
}

/* Logs in with the one key file p->identity (pair's check that the key
 * it installed works, as a later sync will use it). */
static int
auth_key_only(struct ph_ssh *ssh)
{
	ssh_key key = NULL;
	char path[4096];
	int rc;

	/* libssh opens it with the C library's narrow fopen (Windows: ANSI). */
	if (ph_ansi_path(ssh->p->identity, path, sizeof(path)) != 0 ||
	    ssh_pki_import_privkey_file(path, NULL, auth_cb, ssh, &key) != SSH_OK)
		return ph_err(ssh->ctx, PHSYNC_EAUTH, "%s: cannot read the key %s", ssh->host,
		              ssh->p->identity);
	rc = ssh_userauth_publickey(ssh->sess, NULL, key);
	ssh_key_free(key);
	if (rc == SSH_AUTH_SUCCESS) {
		ssh->info.auth_method = SSH_AUTH_METHOD_PUBLICKEY;
		return 0;
	}
	return ph_err(ssh->ctx, PHSYNC_EAUTH, "%s: the server does not accept the key %s%s%s",
	              ssh->host, ssh->p->identity, rc == SSH_AUTH_ERROR ? ": " : "",
	              rc == SSH_AUTH_ERROR ? ssh_get_error(ssh->sess) : "");
}

static int
authenticate(struct ph_ssh *ssh)
{
	int rc, methods;

	rc = ssh_userauth_none(ssh->sess, NULL);
	if (rc == SSH_AUTH_SUCCESS)
		return 0;
	if (rc == SSH_AUTH_ERROR)
		goto fail;
	methods = ssh_userauth_list(ssh->sess, NULL);
	ssh->info.methods = methods;
	if (ssh->p->key_only)
		return auth_key_only(ssh);
	if (methods & SSH_AUTH_METHOD_PUBLICKEY) {
		/* The agent first, then the IdentityFiles (passphrase via auth_cb). */
		rc = ssh_userauth_publickey_auto(ssh->sess, NULL, NULL);
		if (rc == SSH_AUTH_SUCCESS) {
			ssh->info.auth_method = SSH_AUTH_METHOD_PUBLICKEY;
			return 0;
		}
		if (rc == SSH_AUTH_ERROR)
			goto fail;
	}
	rc = auth_password(ssh, methods);
	if (rc == SSH_AUTH_SUCCESS)
		return 0;
fail:
	return ph_err(ssh->ctx, PHSYNC_EAUTH,
	              "%s: authentication failed (tried: agent and key files%s)%s%s",
	              ssh->host,
	              !(ssh->info.methods & (SSH_AUTH_METHOD_PASSWORD | SSH_AUTH_METHOD_INTERACTIVE)) ?
	              "; the server accepts no password" :
	              ssh->prompt ? ", password" : "; no terminal for a password",
	              rc == SSH_AUTH_ERROR ? ": " : "",
	              rc == SSH_AUTH_ERROR ? ssh_get_error(ssh->sess) : "");
}

/* Appends s to buf single-quoted for /bin/sh. Returns 0 or -1 when full. */
static int
shell_quote(char *buf, size_t len, const char *s)
{
	size_t o = strlen(buf);

	if (o + 1 >= len)
		return -1;
	buf[o++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			if (o + 4 >= len)
				return -1;
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			if (o + 1 >= len)
				return -1;
			buf[o++] = *s;
		}
	}
	if (o + 2 > len)
		return -1;
	buf[o++] = '\'';
	buf[o] = '\0';
	return 0;
}

/* A ProxyJump value becomes part of a command line (ours, or libssh's
 * "ssh -W ... JUMP"): each hop must be [user@]host[:port] of plain
 * characters, and none may start with '-' (it would be an ssh option). */
static int
proxy_jump_check(struct ph_ssh *ssh, const char *jump)
{
	const char *p = jump;
	int start = 1;

	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (start && c == '-')
			return ph_err(ssh->ctx, PHSYNC_EINVAL, "ProxyJump %s: a hop may not start "
			              "with '-'", jump);
		start = c == ',';
		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
		    !strchr(".-_@:[],%", c))
			return ph_err(ssh->ctx, PHSYNC_EINVAL, "ProxyJump of %s holds a character "
			              "phsync will not pass to a command line (0x%02x); use "
			              "[user@]host[:port] hops separated by ','", ssh->host, c);
	}
	return 0;
}

/* libssh 0.10 turns ProxyJump into "ssh -W [%h]:%p JUMP" without the -F
 * file, so a jump host defined in that file is unknown to the inner ssh.
 * With -F, phsync builds the command itself and passes the file on. */
static int
proxy_jump(struct ph_ssh *ssh, const char *config)
{
	char jump[512], cmd[2048] = "ssh -F ";
	const char *last;
	int rc;

	if (ph_sshconf_get(config, ssh->host, "ProxyJump", jump, sizeof(jump)) != 1 ||
	    strcasecmp(jump, "none") == 0)
		return 0;
	if ((rc = proxy_jump_check(ssh, jump)) != 0)
		return rc;
	if (config == NULL || ssh->sess == NULL)
		return 0; /* checked only; libssh builds the command */
	if (shell_quote(cmd, sizeof(cmd), config) != 0)
		return ph_err(ssh->ctx, PHSYNC_EINVAL, "ssh config path too long");
	last = strrchr(jump, ',');
	if (last != NULL) {
		/* jump1,jump2,...,jumpN: the inner ssh reaches jumpN through the rest */
		strncat(cmd, " -J ", sizeof(cmd) - strlen(cmd) - 1);
		jump[last - jump] = '\0';
		if (shell_quote(cmd, sizeof(cmd), jump) != 0)
			return ph_err(ssh->ctx, PHSYNC_EINVAL, "ProxyJump too long");
		last++;
	} else {
		last = jump;
	}
	/* The last hop is [user@]host[:port], which ssh takes as -l/-p. */
	{
		char hop[512], *host = hop, *at, *colon;

		snprintf(hop, sizeof(hop), "%s", last);
		if ((at = strchr(hop, '@')) != NULL) {
			*at = '\0';
			host = at + 1;
			strncat(cmd, " -l ", sizeof(cmd) - strlen(cmd) - 1);
			if (shell_quote(cmd, sizeof(cmd), hop) != 0)
				return ph_err(ssh->ctx, PHSYNC_EINVAL, "ProxyJump too long");
		}
		colon = strrchr(host, ':');
		if (colon != NULL && (strchr(host, ']') == NULL || strchr(host, ']') < colon)) {
			*colon = '\0';
			strncat(cmd, " -p ", sizeof(cmd) - strlen(cmd) - 1);
			if (shell_quote(cmd, sizeof(cmd), colon + 1) != 0)
				return ph_err(ssh->ctx, PHSYNC_EINVAL, "ProxyJump too long");
		}
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			host[strlen(host) - 1] = '\0';
			host++;
		}
		strncat(cmd, " -W '[%h]:%p' ", sizeof(cmd) - strlen(cmd) - 1);
		if (shell_quote(cmd, sizeof(cmd), host) != 0 ||
		    ssh_options_set(ssh->sess, SSH_OPTIONS_PROXYCOMMAND, cmd) != 0)
			return ph_err(ssh->ctx, PHSYNC_EINVAL, "cannot use ProxyJump %s", last);
	}
	return 0;
}

int
ph_ssh_connect(phsync_ctx *ctx, const struct ph_ssh_params *p, struct ph_ssh **out)
{
	struct ph_ssh *ssh;
	char val[256], aconf[4096];
	int rc, yes = 1, no = 0, verbosity = p->verbosity;
	long timeout = p->timeout_s ? (long)p->timeout_s : 60;

	if ((ssh = calloc(1, sizeof(*ssh))) == NULL)
		return PHSYNC_ENOMEM;
	ssh->ctx = ctx;
	ssh->main.ssh = ssh;
	ssh->p = p;
	ssh->prompt = p->prompt;
	ssh->prompt_arg = p->prompt_arg;
	snprintf(ssh->host, sizeof(ssh->host), "%s", p->host);
	if ((ssh->sess = ssh_new()) == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	ssh_options_set(ssh->sess, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	if (ssh_options_set(ssh->sess, SSH_OPTIONS_HOST, p->host) != 0) {
		rc = ph_err(ctx, PHSYNC_EINVAL, "invalid host name '%s'", p->host);
		goto out;
	}
	{
		/* libssh finds ~/.ssh (the config, known_hosts, keys) in the
		 * password database's home; phsync pair writes under $HOME, and a
		 * user who sets HOME means it: the same folder for both. On
		 * Windows: %USERPROFILE%\.ssh, as OpenSSH for Windows. */
		char dir[4096], adir[4096];

		/* libssh opens the files in it (and the config, known_hosts,
		 * keys below) with the C library's narrow fopen: on Windows
		 * their names in the ANSI code page (ph_ansi_path), so that a
		 * profile folder such as C:\Users\José works. */
		if (ph_ssh_dir(dir, sizeof(dir)) == 0 && ph_ansi_path(dir, adir, sizeof(adir)) == 0)
			ssh_options_set(ssh->sess, SSH_OPTIONS_SSH_DIR, adir);
	}
	if (p->config != NULL && ((rc = ph_path_access(p->config, 1)) != 0 ||
	                          (rc = ph_ansi_path(p->config, aconf, sizeof(aconf))) != 0)) {
		/* libssh ignores a missing file, and the run then fails later as
		 * "cannot resolve host": say what is wrong. */
		rc = ph_err(ctx, PHSYNC_EINVAL, "ssh config %s: %s", p->config, strerror(-rc));
		goto out;
	}
	/* ProxyJump is checked before libssh reads it (libssh turns it into a
	 * command line too, and versions differ in what they refuse). */
	{
		ssh_session sess = ssh->sess;

		ssh->sess = NULL;
		rc = proxy_jump(ssh, p->config);
		ssh->sess = sess;
		if (rc != 0)
			goto out;
	}
	if (ssh_options_parse_config(ssh->sess, p->config != NULL ? aconf : NULL) != 0) {
		rc = ph_err(ctx, PHSYNC_EINVAL, "cannot use ssh config %s: %s",
		            p->config ? p->config : "~/.ssh/config", ssh_get_error(ssh->sess));
		goto out;
	}
	ssh_options_set(ssh->sess, SSH_OPTIONS_PROCESS_CONFIG, &no);
	if ((rc = proxy_jump(ssh, p->config)) != 0)
		goto out;
	if (p->user != NULL)
		ssh_options_set(ssh->sess, SSH_OPTIONS_USER, p->user);
	if (p->port != 0)
		ssh_options_set(ssh->sess, SSH_OPTIONS_PORT, &p->port);
	if (p->identity != NULL && !p->key_only && ph_path_access(p->identity, 1) == 0 &&
	    ph_ansi_path(p->identity, aconf, sizeof(aconf)) == 0)
		ssh_options_set(ssh->sess, SSH_OPTIONS_ADD_IDENTITY, aconf);
	ssh_options_set(ssh->sess, SSH_OPTIONS_NODELAY, &yes);
	ssh_options_set(ssh->sess, SSH_OPTIONS_TIMEOUT, &timeout);
	if (ph_sshconf_get(p->config, p->host, "Ciphers", val, sizeof(val)) == 0 &&
	    ph_cpu_has_aes()) {
		ssh_options_set(ssh->sess, SSH_OPTIONS_CIPHERS_C_S, AES_FIRST_CIPHERS);
		ssh_options_set(ssh->sess, SSH_OPTIONS_CIPHERS_S_C, AES_FIRST_CIPHERS);
	}
	ssh->cb.userdata = ssh;
	ssh->cb.auth_function = auth_cb;
	ssh_callbacks_init(&ssh->cb);
	ssh_set_callbacks(ssh->sess, &ssh->cb);
	if (ssh_connect(ssh->sess) != SSH_OK) {
		rc = ph_err(ctx, PHSYNC_ECONNECT, "cannot connect to %s: %s", p->host,
		            ssh_get_error(ssh->sess));
		goto out;
	}
	/* A hint: not a TCP socket (a ProxyCommand's pipe) or no such option
	 * (Windows): no pacing by the kernel. */
	(void)ph_sock_pace((int)ssh_get_fd(ssh->sess), PACE_UNSENT);
	snprintf(ssh->info.banner, sizeof(ssh->info.banner), "%s",
	         ssh_get_serverbanner(ssh->sess) ? ssh_get_serverbanner(ssh->sess) : "");
	if ((rc = check_host_key(ssh, p->config)) != 0)
		goto out;
	if ((rc = authenticate(ssh)) != 0)
		goto out;
	if (p->info != NULL)
		*p->info = ssh->info;
	ssh->p = NULL;
	*out = ssh;
	return 0;
out:
	if (p->info != NULL)
		*p->info = ssh->info;
	ph_ssh_free(ssh);
	return rc;
}


int
ph_ssh_host_key(const struct ph_ssh *ssh, char *out, size_t len)
{
	/* Filled by check_host_key, which every connection passes before
	 * ph_ssh_connect returns. */
	if (ssh->info.fp[0] == '\0' || strcmp(ssh->info.fp, "?") == 0 ||
	    strcmp(ssh->info.key_type, "?") == 0)
		return -1;
	if ((size_t)snprintf(out, len, "%s %s", ssh->info.key_type, ssh->info.fp) >= len)
		return -1;
	return 0;
}

void
ph_ssh_identity(const struct ph_ssh *ssh, char *user, size_t ulen, char *host, size_t hlen,
                unsigned *port)
{
	char *u = NULL, *h = NULL;
	unsigned int p = 22;

	ssh_options_get(ssh->sess, SSH_OPTIONS_USER, &u);
	ssh_options_get(ssh->sess, SSH_OPTIONS_HOST, &h);
	ssh_options_get_port(ssh->sess, &p);
	snprintf(user, ulen, "%s", u ? u : "");
	snprintf(host, hlen, "%s", h ? h : ssh->host);
	*port = p;
	ssh_string_free_char(u);
	ssh_string_free_char(h);
}

const char *
ph_ssh_host(const struct ph_ssh *ssh)
{
	return ssh->host;
}

void
ph_ssh_free(struct ph_ssh *ssh)
{
	if (ssh == NULL)
		return;
	ph_ssh_chans_free(ssh);
	if (ssh->sess != NULL) {
		ssh_disconnect(ssh->sess);
		ssh_free(ssh->sess);
	}
	ph_ssh_set_note(ssh, NULL, NULL);
	free(ssh);
}

void
ph_ssh_set_note(struct ph_ssh *ssh, void *note, void (*free_fn)(void *))
{
	if (ssh->note_free != NULL)
		ssh->note_free(ssh->note);
	ssh->note = note;
	ssh->note_free = free_fn;
}

void *
ph_ssh_note(const struct ph_ssh *ssh)
{
	return ssh->note;
}

int
ph_ssh_record_host_key(struct ph_ssh *ssh)
{
	return record_key(ssh, PHSYNC_EIO);
}

int
ph_ssh_record_host_key_as(struct ph_ssh *ssh, const char *name, int add)
{
	char why[256], *kh = NULL;
	int rc = 0;

	ssh_options_get(ssh->sess, SSH_OPTIONS_KNOWNHOSTS, &kh);
	if (ph_knownhost_revoked(ssh->sess, name) != 0) {
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTKEY, "%s marks this host key @revoked for the "
		            "name '%s' (or cannot be read): not recorded", kh ? kh : "known_hosts",
		            name);
		ssh_string_free_char(kh);
		return rc;
	}
	switch (ph_knownhost_check(ssh->sess, name)) {
	case SSH_KNOWN_HOSTS_OK:
		break;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTKEY,
		            "%s already has another host key under the name '%s' (another machine, "
		            "or this one before it was reinstalled): remove it (ssh-keygen -R %s -f "
		            "%s) or choose another name", kh ? kh : "known_hosts", name, name,
		            kh ? kh : "FILE");
		break;
	case SSH_KNOWN_HOSTS_NOT_FOUND:
	case SSH_KNOWN_HOSTS_UNKNOWN:
		if (add && ph_knownhost_add(ssh->sess, name, why, sizeof(why)) != 0)
			rc = ph_err(ssh->ctx, PHSYNC_EIO, "cannot record the host key in %s: %s",
			            kh ? kh : "known_hosts", why);
		break;
	default:
		rc = ph_err(ssh->ctx, PHSYNC_EIO, "cannot read %s", kh ? kh : "known_hosts");
		break;
	}
	ssh_string_free_char(kh);
	return rc;
}
