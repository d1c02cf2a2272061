/* SPDX-License-Identifier: ISC */
/* phsync's own SSH and SFTP client (src/transport) against a real OpenSSH
 * sshd on 127.0.0.1 that ssh_loop.py starts (and stops) around this
 * program: as built for Windows under Wine (win.unit.test_ssh_loop) and
 * natively (unit.test_ssh_loop), the same checks. It connects with a key,
 * checks the host key against known_hosts, lists the folder ssh_loop.py
 * filled and reads every file's bytes, which both sides derive from the
 * same rule (content() here and in ssh_loop.py). A wrong key and a wrong
 * host key must fail with the right error. Environment (set by
 * ssh_loop.py): PH_TEST_SSH_CONFIG, PH_TEST_SSH_CONFIG_BADKEY,
 * PH_TEST_SSH_CONFIG_BADHOST (ssh_config files for Host phone),
 * PH_TEST_SSH_DIR (the folder). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctx.h"
#include "phsync/error.h"
#include "sftp.h"
#include "ssh.h"
#include "sftpwire.h"

/* The folder's files: name, size; the bytes are content(name, i). */
static const struct {
	const char *name;
	uint32_t size;
} files[] = {
	{ "crlf.txt", 16 },
	{ "big.bin", 300001 },
	{ "\xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac.txt", 1000 },
	{ "empty", 0 },
};
#define NFILES (sizeof(files) / sizeof(files[0]))

/* Byte i of a file: crlf.txt is text with both line ends (a text-mode
 * stream would change it), the others a pattern seeded by the name. */
static uint8_t
content(const char *name, uint32_t i)
{
	static const char crlf[] = "one\r\ntwo\nthree\r\n";
	uint32_t seed = 0;

	if (strcmp(name, "crlf.txt") == 0)
		return (uint8_t)crlf[i];
	for (; *name; name++)
		seed = seed * 31u + (uint8_t)*name;
	return (uint8_t)((i * 131u + seed) >> 3);
}

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0')
		fail_msg("%s is not set: run this test through ssh_loop.py", name);
	return v;
}

static int
connect_with(phsync_ctx *ctx, const char *config, struct ph_ssh **out)
{
	struct ph_ssh_params p;

	memset(&p, 0, sizeof(p));
	p.host = "phone";
	p.config = config;
	p.timeout_s = 30;
	return ph_ssh_connect(ctx, &p, out);
}

/* One request's answer, copied out of the callback. */
struct answer {
	int done, err;
	uint8_t type;
	uint32_t status, count, len;
	uint8_t *data;
};

static void
on_reply(struct ph_sftp *s, const struct ph_sftp_reply *r, void *arg)
{
	struct answer *a = arg;

	(void)s;
	a->done = 1;
	a->err = r->err;
	a->type = r->type;
	a->status = r->status;
	a->count = r->count;
	a->len = r->len;
	free(a->data);
	a->data = NULL;
	if (r->len > 0) {
		a->data = malloc(r->len);
		assert_non_null(a->data);
		memcpy(a->data, r->data, r->len);
	}
}

static void
await(struct ph_sftp *s, struct answer *a)
{
	assert_int_equal(ph_sftp_wait(s, &a->done), 0);
	a->done = 0;
}

/* Lists dir: each entry's name must be one of files (or "sub", a folder,
 * or . and ..), with its size; every file seen once. */
static void
list_folder(struct ph_sftp *s, const char *dir)
{
	struct answer a = { 0 };
	struct ph_sftp_handle h;
	int seen[NFILES] = { 0 }, sub = 0;
	size_t i;

	assert_int_equal(ph_sftp_opendir(s, dir, on_reply, &a), 0);
	await(s, &a);
	assert_int_equal(a.type, PH_FXP_HANDLE);
	{
		struct ph_sftp_reply r = { .type = a.type, .data = a.data, .len = a.len };

		assert_int_equal(ph_sftp_handle_set(&h, &r), 0);
	}
	for (;;) {
		struct ph_sftp_reply r;
		struct ph_sftp_names it;
		const uint8_t *name;
		uint32_t nlen;
		struct ph_sftp_attrs at;

		assert_int_equal(ph_sftp_readdir(s, &h, on_reply, &a), 0);
		await(s, &a);
		if (a.type == PH_FXP_STATUS) {
			assert_int_equal(a.status, PH_FX_EOF);
			break;
		}
		assert_int_equal(a.type, PH_FXP_NAME);
		memset(&r, 0, sizeof(r));
		r.type = a.type;
		r.data = a.data;
		r.len = a.len;
		r.count = a.count;
		ph_sftp_names_init(&it, &r);
		while (ph_sftp_names_next(&it, &name, &nlen, &at) == 1) {
			if ((nlen == 1 && name[0] == '.') || (nlen == 2 && memcmp(name, "..", 2) == 0))
				continue;
			if (nlen == 3 && memcmp(name, "sub", 3) == 0) {
				assert_int_equal(at.perm & 0170000, 0040000);
				sub++;
				continue;
			}
			for (i = 0; i < NFILES; i++)
				if (strlen(files[i].name) == nlen && memcmp(files[i].name, name, nlen) == 0)
					break;
			if (i == NFILES)
				fail_msg("unexpected entry '%.*s'", (int)nlen, (const char *)name);
			assert_int_equal(at.flags & PH_ATTR_SIZE, PH_ATTR_SIZE);
			assert_int_equal(at.size, files[i].size);
			assert_int_equal(at.perm & 0170000, 0100000);
			seen[i]++;
		}
	}
	assert_int_equal(ph_sftp_close(s, &h, on_reply, &a), 0);
	await(s, &a);
	assert_int_equal(a.err, 0);
	assert_int_equal(sub, 1);
	for (i = 0; i < NFILES; i++)
		assert_int_equal(seen[i], 1);
	free(a.data);
}

/* Reads all of dir/name in max_read pieces and checks every byte. */
static void
read_file(struct ph_sftp *s, const char *dir, unsigned k)
{
	struct answer a = { 0 };
	struct ph_sftp_handle h;
	char path[512];
	uint64_t off = 0;
	uint32_t chunk = ph_sftp_max_read(s), i;

	snprintf(path, sizeof(path), "%s/%s", dir, files[k].name);
	assert_int_equal(ph_sftp_open_sync(s, path, PH_FXF_READ, NULL, &h), 0);
	for (;;) {
		assert_int_equal(ph_sftp_read(s, &h, off, chunk, on_reply, &a), 0);
		await(s, &a);
		if (a.type == PH_FXP_STATUS) {
			assert_int_equal(a.status, PH_FX_EOF);
			break;
		}
		assert_int_equal(a.type, PH_FXP_DATA);
		assert_true(a.len > 0 && off + a.len <= files[k].size);
		for (i = 0; i < a.len; i++)
			if (a.data[i] != content(files[k].name, (uint32_t)off + i))
				fail_msg("%s: byte %u differs", files[k].name, (unsigned)(off + i));
		off += a.len;
	}
	assert_int_equal(off, files[k].size);
	assert_int_equal(ph_sftp_close_sync(s, &h), 0);
	free(a.data);
}

static void
test_list_and_read(void **state)
{
	phsync_ctx *ctx;
	struct ph_ssh *ssh = NULL;
	struct ph_chan chan;
	struct ph_sftp *s = NULL;
	const char *dir = env("PH_TEST_SSH_DIR");
	char user[64], host[256];
	unsigned port = 0, k;
	int rc;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	rc = connect_with(ctx, env("PH_TEST_SSH_CONFIG"), &ssh);
	if (rc != 0)
		fail_msg("connect: %s", phsync_ctx_error(ctx));
	ph_ssh_identity(ssh, user, sizeof(user), host, sizeof(host), &port);
	assert_string_equal(host, "127.0.0.1");
	assert_true(port > 0);
	memset(&chan, 0, sizeof(chan));
	assert_int_equal(ph_ssh_open_sftp(ssh, &chan), 0);
	chan.silence_ms = 30000; /* as login.c sets it (the fields ssh.c leaves) */
	rc = ph_sftp_new(ctx, &chan, &s);
	if (rc != 0)
		fail_msg("sftp: %s", phsync_ctx_error(ctx));
	list_folder(s, dir);
	for (k = 0; k < NFILES; k++)
		read_file(s, dir, k);
	ph_sftp_free(s);
	ph_ssh_free(ssh);
	phsync_ctx_free(ctx);
}

static void
test_wrong_key(void **state)
{
	phsync_ctx *ctx;
	struct ph_ssh *ssh = NULL;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(connect_with(ctx, env("PH_TEST_SSH_CONFIG_BADKEY"), &ssh), PHSYNC_EAUTH);
	assert_null(ssh);
	phsync_ctx_free(ctx);
}

static void
test_wrong_host_key(void **state)
{
	phsync_ctx *ctx;
	struct ph_ssh *ssh = NULL;

	(void)state;
	assert_int_equal(phsync_ctx_new(&ctx), 0);
	assert_int_equal(connect_with(ctx, env("PH_TEST_SSH_CONFIG_BADHOST"), &ssh),
	                 PHSYNC_EHOSTKEY);
	assert_null(ssh);
	assert_non_null(strstr(phsync_ctx_error(ctx), "differs from the key recorded"));
	phsync_ctx_free(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_and_read),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_wrong_host_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
