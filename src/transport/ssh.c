/* SPDX-License-Identifier: ISC */
/* SSH session over libssh; see ssh.h. */
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
#include "platform.h"
#include "psys.h"
#include "ssh.h"
#include "sshconf.h"

/* Preferred when the CPU has AES instructions and the config names no
 * cipher: measured 2.3x faster end to end than chacha20-poly1305 on the
 * project's machines (docs/PERFORMANCE.md). */
#define AES_FIRST_CIPHERS \
	"aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com," \
	"aes128-ctr,aes192-ctr,aes256-ctr"

/* How long a channel's end may take: our EOF sent, the server's close
 * awaited (its command ended; the helper and sftp-server end on EOF at
 * once) before ours is sent and the next channel opened. */
#define CLOSE_WAIT_MS 5000

/* Pacing of what is sent: the channel takes at most PACE_CHUNK at a time,
 * and only when libssh has written out all it held; the kernel keeps at
 * most PACE_UNSENT bytes not yet sent (TCP_NOTSENT_LOWAT). What waits
 * beyond that stays in the SFTP queue, where a stop can take it back: a
 * window of 2 MiB (OpenSSH) handed over at once, and as much again taken
 * by the kernel, held the temps' removal back longer than the 2 s a stop
 * waits on an 8 Mbit/s link (issue 22). The bytes in flight on the
 * network are TCP's, as before. */
#define PACE_CHUNK (256u * 1024)
#define PACE_UNSENT (128 * 1024)

/* The receive window. libssh 0.10 grants the server 1.28 MB and tops it
 * up only once it is under half that: through a 10 ms round trip a pull
 * ran at 72 MB/s with the phone idle (the weak row: 0.36 GB in 5.0 s, the
 * server never throttled by its quota). A blocking read that asks for
 * more than libssh holds plus the window grows the window to that much
 * (ssh_channel_read_timeout), so once every RECV_WINDOW / 2 bytes taken a
 * read asks for RECV_WINDOW: one WINDOW_ADJUST a 2 MiB (asking that much
 * every read sent one a read, 5 times as many). Other reads ask for at
 * most READ_ASK. */
#define RECV_WINDOW PH_CHAN_READ_ROOM
#define READ_ASK (1u << 20)

/* One channel's end of its byte pipe (a struct ph_chan's arg): the
 * session's channel, or one of the SFTP channels beside it. */
struct ph_sshx {
	struct ph_ssh *ssh;
	ssh_channel chan;
	uint64_t taken;          /* bytes read since a read last asked for
	                            RECV_WINDOW */
};

/* SFTP channels a session may hold beside its own (ph_ssh_open_sftp_more). */
#define MAX_MORE 4

struct ph_ssh {
	phsync_ctx *ctx;
	ssh_session sess;
	struct ph_sshx main;     /* the session's channel (main.chan NULL: none) */
	struct ph_sshx *more[MAX_MORE];
	size_t nmore;
	struct ssh_callbacks_struct cb;
	phsync_prompt_fn prompt;
	void *prompt_arg;
	const struct ph_ssh_params *p; /* during ph_ssh_connect only */
	struct ph_ssh_info info;
	char host[256];
	char errtext[256];       /* the start of what an exec'd command wrote on
	                            its standard error (terminated) */
	size_t errlen;
	int started;             /* main.chan runs a command or subsystem */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

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
	st = ssh_session_is_known_server(ssh->sess);
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
		            "the old entry (ssh-keygen -R HOST -f %s) and run again.",
		            ssh->host, ktype, fp, kh ? kh : "known_hosts", kh ? kh : "FILE");
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
	if (!ssh->p->defer_host_key && ssh_session_update_known_hosts(ssh->sess) != SSH_OK) {
		rc = ph_err(ssh->ctx, PHSYNC_EHOSTUNKNOWN, "%s: cannot record the host key in %s: %s",
		            ssh->host, kh ? kh : "known_hosts", ssh_get_error(ssh->sess));
		goto out;
	}
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

static int
chan_write(void *arg, const void *p, size_t n)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	const uint8_t *c = p;

	while (n > 0) {
		uint32_t k = n > (1u << 30) ? (1u << 30) : (uint32_t)n;
		int w = ssh_channel_write(x->chan, c, k);

		if (w <= 0)
			return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s",
			              ssh->host, ssh_get_error(ssh->sess));
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* As much of p as the server's window takes now, without waiting for it to
 * open (ssh_channel_write would, while the server waits for us to read),
 * paced (PACE_CHUNK). */
static int
chan_write_some(void *arg, const void *p, size_t n, size_t *put)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	uint32_t win, k;
	int w;

	*put = 0;
	/* libssh still holds output the socket did not take: nothing more. */
	if ((w = ssh_blocking_flush(ssh->sess, 0)) == SSH_AGAIN)
		return 0;
	if (w == SSH_ERROR)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if ((win = ssh_channel_window_size(x->chan)) == 0)
		return 0;
	k = n < win ? (uint32_t)n : win;
	if (k > PACE_CHUNK)
		k = PACE_CHUNK;
	if ((w = ssh_channel_write(x->chan, p, k)) <= 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	*put = (size_t)w;
	return 0;
}

/* Waits until the channel can take more (the server's window open, and
 * libssh's output written: chan_write_some), or bytes for the channel are
 * buffered (or its end came), or timeout_ms passed. What libssh already
 * read from the socket is processed first: a WINDOW_ADJUST taken in by an
 * earlier read leaves the socket quiet, and polling it then slept the whole
 * timeout each time the window shut (Dropbear's 24 KiB window: 0.27 MB/s,
 * issue 22). */
static int
chan_wait(void *arg, int timeout_ms)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	int fd, r, held;

	if (ssh_channel_poll(x->chan, 0) != 0)
		return 0; /* data, end or error: the next read tells */
	if ((held = ssh_blocking_flush(ssh->sess, 0)) == SSH_ERROR)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if (held == SSH_OK && ssh_channel_window_size(x->chan) > 0)
		return 0;
	if ((fd = (int)ssh_get_fd(ssh->sess)) < 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost", ssh->host);
	r = ph_poll_sock(fd, PH_POLL_IN | (held == SSH_AGAIN ? PH_POLL_OUT : 0), timeout_ms);
	if (r < 0)
		return ph_err_from_errno(-r);
	/* Take in what came (a window adjustment among it). */
	if (r > 0)
		(void)ssh_channel_poll(x->chan, 0);
	return 0;
}

/* Takes what x's standard error holds: the session's channel keeps the
 * start of it (errtext), an SFTP channel beside it drops it. */
static void
drain_stderr(struct ph_sshx *x)
{
	struct ph_ssh *ssh = x->ssh;
	char buf[512];
	int r;

	while ((r = ssh_channel_read_nonblocking(x->chan, buf, sizeof(buf), 1)) > 0) {
		size_t k = (size_t)r, room = sizeof(ssh->errtext) - 1 - ssh->errlen;

		if (x != &ssh->main)
			continue;
		if (k > room)
			k = room;
		memcpy(ssh->errtext + ssh->errlen, buf, k);
		ssh->errlen += k;
		ssh->errtext[ssh->errlen] = '\0';
	}
}

static int
chan_read(void *arg, void *p, size_t n, int timeout_ms, size_t *got)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	uint32_t k = n > (1u << 30) ? (1u << 30) : (uint32_t)n, ask = k;
	int r;

	*got = 0;
	if (timeout_ms == 0) {
		r = ssh_channel_read_nonblocking(x->chan, p, k, 0);
	} else {
		if (ask > READ_ASK)
			ask = READ_ASK;
		if (k >= RECV_WINDOW && x->taken >= RECV_WINDOW / 2) {
			ask = RECV_WINDOW;
			x->taken = 0;
		}
		r = ssh_channel_read_timeout(x->chan, p, ask, 0, timeout_ms);
	}
	if (r > 0)
		x->taken += (uint64_t)r;
	/* Every negative return is the end of the link: SSH_ERROR, and SSH_EOF
	 * (-127) when the server closed its side mid-reply. Passing one on as a
	 * byte count once wrapped the receive buffer's length (issue 6). Only
	 * SSH_AGAIN, from the non-blocking read, means "nothing yet". */
	if (r == SSH_AGAIN)
		return 0;
	/* libssh reports no end of the channel while its standard error holds
	 * unread bytes: take them (an exec'd command's complaint). */
	if (r == 0)
		drain_stderr(x);
	if (r == SSH_EOF || (r == 0 && (ssh_channel_is_eof(x->chan) ||
	                                ssh_channel_is_closed(x->chan))))
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel",
		              ssh->host);
	if (r < 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if ((uint32_t)r > k)
		return ph_err(ssh->ctx, PHSYNC_EPROTO, "%s: the SSH library returned %d bytes for "
		              "a read of %u", ssh->host, r, k);
	*got = (size_t)r;
	return 0;
}

/* Ends ch the way every server copes with, one channel after another:
 * our EOF (the helper and sftp-server end on it), then the server's close
 * awaited (up to CLOSE_WAIT_MS; what ch still holds is read and dropped,
 * standard error kept for the session's channel), then our close, always
 * sent: one never sent leaves the channel open in the server. Dropbear
 * (2022.83) ends a channel opened while it still reaps the previous one's
 * command, and asserts with several half-closed ones in one session
 * (issue 22): the next channel opens only once this one is gone there.
 * A channel on which nothing was started (the request refused: ProFTPD
 * runs no commands) has nothing to end there: closed at once.
 * Returns the exit status of ch's command, or -1 when none came. */
static int
end_channel(struct ph_ssh *ssh, ssh_channel ch, int started)
{
	uint64_t t0 = now_ms();
	ssh_event ev = NULL;
	char buf[4096];
	int evok = 0, status = -1;

	if (ch == NULL)
		return -1;
	if (started && ssh_channel_is_open(ch) && ssh_channel_send_eof(ch) == SSH_OK) {
		while (now_ms() - t0 < CLOSE_WAIT_MS) {
			while (ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 0) > 0)
				;
			if (ch == ssh->main.chan)
				drain_stderr(&ssh->main);
			else
				while (ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 1) > 0)
					;
			if (!ssh_channel_is_open(ch))
				break; /* the server's close came (or the session died) */
			if (ssh->ctx != NULL && ssh->ctx->interrupted)
				break; /* a stop waits for no server */
			/* libssh reads nothing for a channel at its end of file:
			 * an event loop on the session takes in the close. */
			if (ev == NULL) {
				if ((ev = ssh_event_new()) == NULL)
					break;
				if (ssh_event_add_session(ev, ssh->sess) != SSH_OK)
					break;
				evok = 1;
			}
			if (ssh_event_dopoll(ev, 100) == SSH_ERROR)
				break;
		}
	}
	if (ev != NULL) {
		if (evok)
			ssh_event_remove_session(ev, ssh->sess);
		ssh_event_free(ev);
	}
	/* The server's close came (it marks the end of file too; a channel
	 * never opened has neither): its exit status is in, if one was sent
	 * (libssh would wait for it otherwise). */
	if (ssh_is_connected(ssh->sess) && !ssh_channel_is_open(ch) && ssh_channel_is_eof(ch)) {
		status = ssh_channel_get_exit_status(ch);
		ssh_channel_close(ch);
	} else if (ssh_is_connected(ssh->sess) && ssh_channel_is_open(ch)) {
		ssh_channel_close(ch);
	}
	ssh_channel_free(ch);
	return status;
}

/* Waits until bytes are buffered for any channel of x's session (or its
 * end came), the socket has more, libssh's held output can go out, or
 * timeout_ms passed: what a pump over several channels of one session
 * blocks in (reading one channel takes in the packets of all, so a reply
 * for another may already wait in libssh). */
static int
chan_wait_any(void *arg, int timeout_ms)
{
	struct ph_sshx *x = arg;
	struct ph_ssh *ssh = x->ssh;
	size_t i;
	int fd, r, held;

	if (ssh->main.chan != NULL && ssh_channel_poll(ssh->main.chan, 0) != 0)
		return 0;
	for (i = 0; i < ssh->nmore; i++)
		if (ssh_channel_poll(ssh->more[i]->chan, 0) != 0)
			return 0;
	if ((held = ssh_blocking_flush(ssh->sess, 0)) == SSH_ERROR)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	if ((fd = (int)ssh_get_fd(ssh->sess)) < 0)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost", ssh->host);
	r = ph_poll_sock(fd, PH_POLL_IN | (held == SSH_AGAIN ? PH_POLL_OUT : 0), timeout_ms);
	if (r < 0)
		return ph_err_from_errno(-r);
	if (r > 0)
		(void)ssh_channel_poll(x->chan, 0);
	return 0;
}

static void
set_chan(struct ph_chan *chan, struct ph_sshx *x)
{
	chan->write = chan_write;
	chan->read = chan_read;
	chan->write_some = chan_write_some;
	chan->wait = chan_wait;
	chan->wait_any = chan_wait_any;
	chan->arg = x;
}

/* A new session channel in place of the one open, its end of the pipe in
 * chan (the subsystem or command is requested by the caller). */
static int
new_channel(struct ph_ssh *ssh, struct ph_chan *chan)
{
	if (ssh->main.chan != NULL)
		ph_ssh_close_channel(ssh);
	ssh->errlen = 0;
	ssh->errtext[0] = '\0';
	ssh->started = 0;
	ssh->main.taken = RECV_WINDOW; /* its first blocking read opens the window */
	if ((ssh->main.chan = ssh_channel_new(ssh->sess)) == NULL ||
	    ssh_channel_open_session(ssh->main.chan) != SSH_OK)
		return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: cannot open a channel: %s",
		              ssh->host, ssh_is_connected(ssh->sess) ?
		              ssh_get_error(ssh->sess) : "the connection was lost");
	set_chan(chan, &ssh->main);
	return 0;
}

int
ph_ssh_open_sftp(struct ph_ssh *ssh, struct ph_chan *chan)
{
	int rc = new_channel(ssh, chan);

	if (rc != 0)
		return rc;
	if (ssh_channel_request_subsystem(ssh->main.chan, "sftp") == SSH_OK) {
		ssh->started = 1;
		return 0;
	}
	if (ssh_channel_is_open(ssh->main.chan) && ssh_is_connected(ssh->sess))
		return ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED,
		              "%s: the server offers no SFTP subsystem: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
	              "starting SFTP%s", ssh->host,
	              ssh_is_connected(ssh->sess) ? "" : " (the connection was lost)");
}

int
ph_ssh_server_openssh(const struct ph_ssh *ssh)
{
	return strncmp(ssh->info.banner, "SSH-2.0-OpenSSH_", 16) == 0;
}

int
ph_ssh_open_sftp_more(struct ph_ssh *ssh, struct ph_chan *chan)
{
	struct ph_sshx *x;

	if (ssh->main.chan == NULL || ssh->nmore == MAX_MORE ||
	    (x = calloc(1, sizeof(*x))) == NULL)
		return PHSYNC_ENOMEM;
	x->ssh = ssh;
	x->taken = RECV_WINDOW;
	/* Refused (MaxSessions, a server that takes one channel at a time),
	 * the session stays as it was: only the caller hears of it. */
	if ((x->chan = ssh_channel_new(ssh->sess)) == NULL ||
	    ssh_channel_open_session(x->chan) != SSH_OK ||
	    ssh_channel_request_subsystem(x->chan, "sftp") != SSH_OK) {
		if (x->chan != NULL)
			(void)end_channel(ssh, x->chan, 0);
		free(x);
		return ssh_is_connected(ssh->sess) ? PHSYNC_EUNSUPPORTED : PHSYNC_ECONNECT;
	}
	ssh->more[ssh->nmore++] = x;
	set_chan(chan, x);
	return 0;
}

void
ph_ssh_close_more(struct ph_ssh *ssh)
{
	while (ssh->nmore > 0) {
		struct ph_sshx *x = ssh->more[--ssh->nmore];

		(void)end_channel(ssh, x->chan, 1);
		free(x);
	}
}

int
ph_ssh_open_exec(struct ph_ssh *ssh, const char *cmd, struct ph_chan *chan)
{
	int rc = new_channel(ssh, chan);

	if (rc != 0)
		return rc;
	if (ssh_channel_request_exec(ssh->main.chan, cmd) == SSH_OK) {
		ssh->started = 1;
		return 0;
	}
	/* A refusal (CHANNEL_FAILURE) is the server's answer; a channel the
	 * server ended, or a session gone, is not (issue 22). */
	if (ssh_channel_is_open(ssh->main.chan) && ssh_is_connected(ssh->sess))
		return ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED, "%s: the server runs no commands: %s",
		              ssh->host, ssh_get_error(ssh->sess));
	return ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
	              "running the command%s", ssh->host,
	              ssh_is_connected(ssh->sess) ? "" : " (the connection was lost)");
}

uint32_t
ph_ssh_window(const struct ph_ssh *ssh)
{
	return ssh->main.chan != NULL ? ssh_channel_window_size(ssh->main.chan) : 0;
}

size_t
ph_ssh_channel_stderr(struct ph_ssh *ssh, char *out, size_t outlen)
{
	if (outlen == 0)
		return 0;
	if (ssh->main.chan != NULL)
		drain_stderr(&ssh->main);
	snprintf(out, outlen, "%s", ssh->errtext);
	return strlen(out);
}

int
ph_ssh_close_channel(struct ph_ssh *ssh)
{
	int st = end_channel(ssh, ssh->main.chan, ssh->started);

	ssh->main.chan = NULL;
	return st;
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
	while (ssh->nmore > 0) {
		struct ph_sshx *x = ssh->more[--ssh->nmore];

		ssh_channel_free(x->chan);
		free(x);
	}
	if (ssh->main.chan != NULL) {
		/* No wait for the server here: the session ends anyway. */
		if (ssh_channel_is_open(ssh->main.chan)) {
			ssh_channel_send_eof(ssh->main.chan);
			ssh_channel_close(ssh->main.chan);
		}
		ssh_channel_free(ssh->main.chan);
	}
	if (ssh->sess != NULL) {
		ssh_disconnect(ssh->sess);
		ssh_free(ssh->sess);
	}
	free(ssh);
}

int
ph_ssh_record_host_key(struct ph_ssh *ssh)
{
	if (ssh_session_update_known_hosts(ssh->sess) != SSH_OK)
		return ph_err(ssh->ctx, PHSYNC_EIO, "%s: cannot record the host key: %s", ssh->host,
		              ssh_get_error(ssh->sess));
	return 0;
}

int
ph_ssh_exec(struct ph_ssh *ssh, const char *cmd, char *out, size_t outlen, int *status)
{
	ssh_channel ch;
	size_t n = 0;
	char buf[4096];
	int rc = 0, r, started = 0;

	*status = -1;
	if (outlen > 0)
		out[0] = '\0';
	/* Beside the session's channel at most (doctor): two at once. */
	ch = ssh_channel_new(ssh->sess);
	if (ch == NULL || ssh_channel_open_session(ch) != SSH_OK) {
		rc = ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: cannot open a channel: %s", ssh->host,
		            ssh_is_connected(ssh->sess) ? ssh_get_error(ssh->sess) :
		            "the connection was lost");
		goto out;
	}
	if (ssh_channel_request_exec(ch, cmd) != SSH_OK) {
		rc = ssh_channel_is_open(ch) && ssh_is_connected(ssh->sess) ?
		     ph_err(ssh->ctx, PHSYNC_EUNSUPPORTED, "%s: the server runs no commands: %s",
		            ssh->host, ssh_get_error(ssh->sess)) :
		     ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: the server closed the channel before "
		            "running `%s`", ssh->host, cmd);
		goto out;
	}
	started = 1;
	/* Bounded by the session's timeout per read; output past outlen is
	 * read and dropped so the command can finish. */
	while ((r = ssh_channel_read_timeout(ch, buf, sizeof(buf), 0, 30000)) > 0) {
		size_t k = (size_t)r;

		if (outlen > 0 && n + 1 < outlen) {
			size_t room = outlen - 1 - n;

			memcpy(out + n, buf, k < room ? k : room);
			n += k < room ? k : room;
			out[n] = '\0';
		}
	}
	if (r < 0 && r != SSH_EOF) {
		rc = ph_err(ssh->ctx, PHSYNC_ECONNECT, "%s: connection lost: %s", ssh->host,
		            ssh_get_error(ssh->sess));
		goto out;
	}
out:
	if (ch != NULL) {
		int st = end_channel(ssh, ch, started);

		if (rc == 0)
			*status = st;
	}
	return rc;
}
