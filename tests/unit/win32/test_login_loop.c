/* SPDX-License-Identifier: ISC */
/* The part session's login (src/session/login.c) and pairing's OS pieces
 * (psys.h: ph_tcp_each, ph_sock_recv, ph_null_path, ph_account_home,
 * ph_path_access)
 * against a real OpenSSH sshd on 127.0.0.1 that ssh_loop.py starts around
 * this program: as built for Windows under Wine (win.unit.test_login_loop)
 * and natively (unit.test_login_loop), the same checks. A login with
 * --helper never gives SFTP on the folder ssh_loop.py filled; a helper
 * program the phone lacks fails --helper always with the shell's exit
 * status, and --helper auto goes on with plain SFTP and says why; the
 * pair's port probe reads the server's version line; a kept connection
 * (kept.c, spec.c) opens, answers a keepalive and polls. Environment (set by
 * ssh_loop.py): PH_TEST_SSH_CONFIG (Host phone), PH_TEST_SSH_DIR. */
#include <errno.h>
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
#include "psys.h"
#include "sftp.h"
#include "sftpwire.h"
#include "sshconf.h"
#include "ssh.h"

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0')
		fail_msg("%s is not set: run this test through ssh_loop.py", name);
	return v;
}

static void
options(struct phsync_options *o, int helper, const char *helper_path)
{
	memset(o, 0, sizeof(*o));
	o->ssh_config = env("PH_TEST_SSH_CONFIG");
	o->timeout_s = 30;
	o->helper = helper;
	o->helper_path = helper_path;
}

/* The file big.bin (300001 bytes, ssh_loop.py) as the session's SFTP
 * sees it. */
static void
check_sftp(struct ph_sftp *sftp)
{
	struct ph_sftp_attrs a;
	char path[4096];

	snprintf(path, sizeof(path), "%s/big.bin", env("PH_TEST_SSH_DIR"));
	memset(&a, 0, sizeof(a));
	assert_int_equal(ph_sftp_stat_sync(sftp, 0, path, &a), 0);
	assert_true(a.flags & PH_ATTR_SIZE);
	assert_int_equal(a.size, 300001);
}

static void
test_login_never(void **state)
{
	phsync_ctx *ctx = NULL;
	struct phsync_options o;
	struct ph_ssh *ssh = NULL;
	struct ph_sftp *sftp = NULL;
	char why[600] = "x";

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	options(&o, PHSYNC_HELPER_NEVER, NULL);
	assert_int_equal(ph_login_open(ctx, &o, NULL, "phone", env("PH_TEST_SSH_DIR"), &ssh,
	                               &sftp, why, sizeof(why)), 0);
	assert_non_null(ssh);
	assert_non_null(sftp);
	assert_int_equal(ph_sftp_helper(sftp), 0);
	check_sftp(sftp);
	/* Another root on the same session (a single file's run). */
	assert_int_equal(ph_login_reroot(ctx, &o, ssh, env("PH_TEST_SSH_DIR"), &sftp), 0);
	check_sftp(sftp);
	ph_sftp_free(sftp);
	ph_ssh_free(ssh);
	phsync_ctx_free(ctx);
}

static void
test_helper_missing(void **state)
{
	phsync_ctx *ctx = NULL;
	struct phsync_options o;
	struct ph_ssh *ssh = NULL;
	struct ph_sftp *sftp = NULL;
	char why[600] = "";

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	/* always: the phone has no such program, the shell says 127. */
	options(&o, PHSYNC_HELPER_ALWAYS, "phsync-no-such-program");
	assert_int_equal(ph_login_open(ctx, &o, NULL, "phone", env("PH_TEST_SSH_DIR"), &ssh,
	                               &sftp, why, sizeof(why)), PHSYNC_ECONNECT);
	assert_null(ssh);
	assert_null(sftp);
	assert_non_null(strstr(phsync_ctx_error(ctx), "cannot start the helper"));
	assert_non_null(strstr(phsync_ctx_error(ctx), "(exit 127)"));
	/* auto: plain SFTP after all, and the reason. */
	options(&o, PHSYNC_HELPER_AUTO, "phsync-no-such-program");
	assert_int_equal(ph_login_open(ctx, &o, NULL, "phone", env("PH_TEST_SSH_DIR"), &ssh,
	                               &sftp, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "(exit 127)"));
	check_sftp(sftp);
	ph_sftp_free(sftp);
	ph_ssh_free(ssh);
	phsync_ctx_free(ctx);
}

/* A kept connection (kept.c, through spec.c's "[user@]host:path"): open,
 * alive, a keepalive answered, the first poll lists the tree. */
static void
test_kept(void **state)
{
	phsync_ctx *ctx = NULL;
	struct phsync_options o;
	phsync_conn *c = NULL;
	char *user = NULL, *host = NULL, *path = NULL, remote[4200];

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(phsync_parse_remote("me@[::1]:~/x", &user, &host, &path), 0);
	assert_string_equal(user, "me");
	assert_string_equal(host, "::1");
	assert_string_equal(path, "x");
	free(user);
	free(host);
	free(path);
	options(&o, PHSYNC_HELPER_NEVER, NULL);
	assert_int_equal(phsync_conn_open(ctx, "phone", &o, &c), PHSYNC_EINVAL);
	assert_null(c);
	snprintf(remote, sizeof(remote), "phone:%s", env("PH_TEST_SSH_DIR"));
	if (phsync_conn_open(ctx, remote, &o, &c) != 0)
		fail_msg("conn_open: %s", phsync_ctx_error(ctx));
	assert_int_equal(phsync_conn_alive(c), 1);
	assert_int_equal(phsync_conn_keepalive(c), 0);
	assert_int_equal(phsync_conn_poll(c, 1), 1);
	phsync_conn_free(c);
	phsync_ctx_free(ctx);
}

/* pair.c's probe, on one socket: the server's first line, and then nothing
 * to read on the non-blocking socket. */
static int
read_banner(int sock, void *arg)
{
	char *buf = arg;
	size_t n = 0;

	while (n + 1 < 256 && ph_poll_sock(sock, PH_POLL_IN, 10000) > 0) {
		int64_t r = ph_sock_recv(sock, buf + n, 255 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		if (strchr(buf, '\n') != NULL) {
			int64_t more = ph_sock_recv(sock, buf + n, 255 - n);

			/* Nothing more until our own version line comes. */
			assert_true(more == -EWOULDBLOCK || more == -EAGAIN);
			return 1;
		}
	}
	return 0;
}

static void
test_probe_and_paths(void **state)
{
	const char *config = env("PH_TEST_SSH_CONFIG");
	char host[256], port[16], buf[256] = "", home[1024], path[4200];
	FILE *f;

	(void)state;
	assert_int_equal(ph_sshconf_get(config, "phone", "HostName", host, sizeof(host)), 1);
	assert_int_equal(ph_sshconf_get(config, "phone", "Port", port, sizeof(port)), 1);
	assert_int_equal(ph_tcp_each(host, (unsigned)atoi(port), read_banner, buf), 1);
	assert_memory_equal(buf, "SSH-2.0-", 8);
	/* The null device reads as an empty file, also as an ssh_config. */
	assert_non_null(f = fopen(ph_null_path(), "rb"));
	assert_int_equal(fgetc(f), EOF);
	fclose(f);
	assert_int_equal(ph_sshconf_get(ph_null_path(), "phone", "Port", port, sizeof(port)), 0);
	/* Files by any name (ssh_loop.py made them; not only the ANSI code
	 * page's names on Windows), folders too, and one not there. */
	snprintf(path, sizeof(path), "%s/\xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac.txt",
	         env("PH_TEST_SSH_DIR"));
	assert_int_equal(ph_path_access(path, 0), 0);
	assert_int_equal(ph_path_access(path, 1), 0);
	assert_int_equal(ph_path_access(env("PH_TEST_SSH_DIR"), 1), 0);
	snprintf(path, sizeof(path), "%s/no such file", env("PH_TEST_SSH_DIR"));
	assert_int_equal(ph_path_access(path, 0), -ENOENT);
	/* Where ssh expands "~". */
	assert_int_equal(ph_account_home(home, sizeof(home)), 0);
	assert_true(ph_path_absolute(home));
	assert_int_equal(ph_account_home(home, 2), -ENAMETOOLONG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login_never),
		cmocka_unit_test(test_helper_missing),
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_probe_and_paths),
	};

	ph_net_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
