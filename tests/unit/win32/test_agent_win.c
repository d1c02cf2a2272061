/* SPDX-License-Identifier: ISC */
/* pair's agent client (src/pair/agent.c, compiled in) on Windows: the
 * ssh-agent protocol over a named pipe, as OpenSSH for Windows' agent
 * serves it (\\.\pipe\openssh-ssh-agent; SSH_AUTH_SOCK names another).
 * A thread here plays the agent on a pipe of its own: it checks the
 * request's bytes and sends the answer the test chose, in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <windows.h>

#include "agent.h"

struct fake {
	HANDLE pipe;
	unsigned char answer[512];
	size_t len;
	int request_ok;
};

static void
put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static size_t
put_str(unsigned char *p, const void *s, size_t n)
{
	put_u32(p, (uint32_t)n);
	memcpy(p + 4, s, n);
	return 4 + n;
}

/* A key blob: its type, then bytes standing for the key. */
static size_t
put_key(unsigned char *p, const char *type, const char *comment)
{
	unsigned char blob[64];
	size_t b = put_str(blob, type, strlen(type));

	b += put_str(blob + b, "\x01\x02\x03", 3);
	b = put_str(p, blob, b);
	return b + put_str(p + b, comment, strlen(comment));
}

static DWORD WINAPI
agent_thread(LPVOID arg)
{
	struct fake *f = arg;
	unsigned char req[5];
	DWORD n, got = 0, i;

	if (!ConnectNamedPipe(f->pipe, NULL) && GetLastError() != ERROR_PIPE_CONNECTED)
		return 1;
	while (got < sizeof(req) && ReadFile(f->pipe, req + got, sizeof(req) - got, &n, NULL) &&
	       n > 0)
		got += n;
	f->request_ok = got == 5 && memcmp(req, "\0\0\0\1\13", 5) == 0;
	/* In pieces of 7: the client must gather the whole answer. */
	for (i = 0; i < f->len; i += n)
		if (!WriteFile(f->pipe, f->answer + i, f->len - i > 7 ? 7 : (DWORD)(f->len - i), &n,
		               NULL))
			break;
	FlushFileBuffers(f->pipe);
	DisconnectNamedPipe(f->pipe);
	return 0;
}

/* Serves f's answer on a new pipe, which SSH_AUTH_SOCK then names; runs
 * ph_agent_pick; returns its result. */
static int
pick_from(struct fake *f, char *pub, size_t len)
{
	char name[96], env[128];
	HANDLE t;
	int rc;

	snprintf(name, sizeof(name), "\\\\.\\pipe\\phsync-test-agent-%lu",
	         (unsigned long)GetCurrentProcessId());
	f->pipe = CreateNamedPipeA(name, PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE | PIPE_WAIT, 1, 4096,
	                           4096, 0, NULL);
	assert_true(f->pipe != INVALID_HANDLE_VALUE);
	snprintf(env, sizeof(env), "SSH_AUTH_SOCK=%s", name);
	assert_int_equal(_putenv(env), 0);
	t = CreateThread(NULL, 0, agent_thread, f, 0, NULL);
	assert_non_null(t);
	rc = ph_agent_pick(pub, len);
	WaitForSingleObject(t, INFINITE);
	CloseHandle(t);
	CloseHandle(f->pipe);
	return rc;
}

static void
test_picks_ed25519(void **state)
{
	struct fake f;
	char pub[256];
	size_t o = 9;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.answer[4] = 12;
	put_u32(f.answer + 5, 2);
	o += put_key(f.answer + o, "ssh-rsa", "rsa key");
	o += put_key(f.answer + o, "ssh-ed25519", "me@laptop");
	put_u32(f.answer, (uint32_t)(o - 4));
	f.len = o;
	assert_int_equal(pick_from(&f, pub, sizeof(pub)), 0);
	assert_true(f.request_ok);
	/* base64 of the blob: string "ssh-ed25519", string 01 02 03. */
	assert_string_equal(pub, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAwECAw== me@laptop");
}

static void
test_refuses_oversized_answer(void **state)
{
	struct fake f;
	char pub[256];

	(void)state;
	memset(&f, 0, sizeof(f));
	put_u32(f.answer, 0x7fffffff); /* far past the cap: nothing allocated */
	f.answer[4] = 12;
	f.len = 9;
	assert_int_equal(pick_from(&f, pub, sizeof(pub)), -1);
	assert_true(f.request_ok);
}

static void
test_no_agent(void **state)
{
	char pub[256];

	(void)state;
	assert_int_equal(_putenv("SSH_AUTH_SOCK=\\\\.\\pipe\\phsync-no-such-agent"), 0);
	assert_int_equal(ph_agent_pick(pub, sizeof(pub)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_picks_ed25519),
		cmocka_unit_test(test_refuses_oversized_answer),
		cmocka_unit_test(test_no_agent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
