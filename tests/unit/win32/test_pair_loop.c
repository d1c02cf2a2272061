/* SPDX-License-Identifier: ISC */
/* phsync_pair (src/pair/pair.c) against a real OpenSSH sshd on 127.0.0.1
 * that takes a password, as a fresh phone does: ssh_loop.py --password
 * starts it around this program (as built for Windows under Wine,
 * win.unit.test_pair_loop, and natively, unit.test_pair_loop). Pairing
 * answers the host key question and the password from here, makes the
 * key, installs it over SFTP, logs in with it alone and writes known_hosts
 * and the Host block; then a login through the new Host name with
 * --helper never works by that key alone, and a second pairing changes
 * nothing. ssh_loop.py then checks the phone's authorized_keys.
 * Environment: PH_TEST_SSH_PORT, PH_TEST_SSH_USER, PH_TEST_SSH_PASSWORD,
 * PH_TEST_PAIR_DIR
 * (the laptop's folder: config naming its known_hosts there). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctx.h"
#include "login.h"
#include "phsync/error.h"
#include "phsync/pair.h"
#include "sftp.h"
#include "ssh.h"

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0')
		fail_msg("%s is not set: run this test through ssh_loop.py --password", name);
	return v;
}

/* The person pairing: yes to the host key, the password when asked. */
static int
answer(const char *question, int echo, char *buf, size_t len, void *arg)
{
	int *asked = arg;

	(void)echo;
	asked[0]++;
	if (strstr(question, "(yes/no)") != NULL) {
		snprintf(buf, len, "yes");
		return 0;
	}
	if (strstr(question, "password") != NULL) {
		asked[1]++;
		snprintf(buf, len, "%s", env("PH_TEST_SSH_PASSWORD"));
		return 0;
	}
	return -1;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
pair_options(struct phsync_pair_options *o, const char *config, const char *key, int *asked)
{
	memset(o, 0, sizeof(*o));
	o->name = "phone2";
	o->address = "127.0.0.1";
	o->user = env("PH_TEST_SSH_USER");
	o->port = (unsigned)atoi(env("PH_TEST_SSH_PORT"));
	o->ssh_config = config;
	o->key_file = key;
	o->prompt = answer;
	o->prompt_arg = asked;
	o->timeout_s = 30;
}

static void
test_pair(void **state)
{
	phsync_ctx *ctx = NULL;
	struct phsync_pair_options o;
	struct phsync_pair_result res;
	struct phsync_options so;
	struct ph_ssh *ssh = NULL;
	struct ph_sftp *sftp = NULL;
	char config[2048], key[2048], kh[2048], pubpath[2100], line[2200];
	char *text, *pub;
	int asked[2] = { 0, 0 };

	(void)state;
	snprintf(config, sizeof(config), "%s/config", env("PH_TEST_PAIR_DIR"));
	snprintf(key, sizeof(key), "%s/keys/phsync_ed25519", env("PH_TEST_PAIR_DIR"));
	snprintf(kh, sizeof(kh), "%s/known_hosts", env("PH_TEST_PAIR_DIR"));
	snprintf(pubpath, sizeof(pubpath), "%s.pub", key);
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	pair_options(&o, config, key, asked);
	if (phsync_pair(ctx, &o, &res) != 0)
		fail_msg("pair: %s", phsync_ctx_error(ctx));
	assert_int_equal(asked[1], 1);
	assert_int_equal(res.port, o.port);
	assert_memory_equal(res.server, "SSH-2.0-", 8);
	assert_true(res.host_key_added && res.key_created && res.key_installed && res.config_added);
	/* The key pair, known_hosts and the block after the user's lines. */
	pub = slurp(pubpath);
	assert_memory_equal(pub, "ssh-ed25519 ", 12);
	text = slurp(kh);
	snprintf(line, sizeof(line), "[127.0.0.1]:%u ", o.port);
	assert_non_null(strstr(text, line));
	/* ... and under the block's HostKeyAlias, the Host name. */
	assert_non_null(strstr(text, "\nphone2 ssh-ed25519 "));
	free(text);
	text = slurp(config);
	assert_memory_equal(text, "UserKnownHostsFile ", 19);
	assert_non_null(strstr(text, "\nHost phone2\n  HostName 127.0.0.1\n"));
	snprintf(line, sizeof(line), "  Port %u\n  User %s\n  HostKeyAlias phone2\n", o.port, o.user);
	assert_non_null(strstr(text, line));
	assert_non_null(strstr(text, "  IdentityFile "));
	assert_non_null(strstr(text, "phsync_ed25519\n"));
	free(text);
	/* A sync's login by the new name: the key alone, nothing asked. */
	memset(&so, 0, sizeof(so));
	so.ssh_config = config;
	so.timeout_s = 30;
	so.helper = PHSYNC_HELPER_NEVER;
	if (ph_login_open(ctx, &so, NULL, "phone2", "/", &ssh, &sftp, NULL, 0) != 0)
		fail_msg("login: %s", phsync_ctx_error(ctx));
	ph_sftp_free(sftp);
	ph_ssh_free(ssh);
	/* Again: everything is there, nothing is written, no password. */
	asked[0] = asked[1] = 0;
	if (phsync_pair(ctx, &o, &res) != 0)
		fail_msg("pair again: %s", phsync_ctx_error(ctx));
	assert_int_equal(asked[1], 0);
	assert_false(res.host_key_added || res.key_created || res.key_installed ||
	             res.config_added);
	text = slurp(pubpath);
	assert_string_equal(text, pub);
	free(text);
	free(pub);
	phsync_ctx_free(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
