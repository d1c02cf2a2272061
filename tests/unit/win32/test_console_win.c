/* SPDX-License-Identifier: ISC */
/* psys.h's console on Windows: the stop requests (SetConsoleCtrlHandler)
 * and the prompt's terminal (CONIN$ without echo), with the keys written
 * into the console's input. Wine gives a program a console only on a
 * terminal: CMake runs this .exe under script(1), in a pty of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <windows.h>

#include "psys.h"

static HANDLE stop_event;
static volatile LONG last_n;

static void
on_stop(int n)
{
	InterlockedExchange(&last_n, n);
	SetEvent(stop_event);
}

static void
wait_stop(int want)
{
	/* The handler runs on a thread Windows starts: wait for its event (the
	 * limit only turns a handler never called into a failure). */
	assert_int_equal(WaitForSingleObject(stop_event, 60000), WAIT_OBJECT_0);
	assert_int_equal(last_n, want);
}

static void
test_ctrl_events(void **state)
{
	(void)state;
	stop_event = CreateEventW(NULL, FALSE, FALSE, NULL);
	assert_non_null(stop_event);
	assert_int_equal(ph_on_interrupt(on_stop), 0);
	/* Ctrl-C twice: counted from 1. (Wine 8 refuses to generate
	 * Ctrl-Break, ERROR_INVALID_HANDLE; the handler takes both alike.) */
	assert_true(GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0));
	wait_stop(1);
	assert_true(GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0));
	wait_stop(2);
	CloseHandle(stop_event);
}

/* Puts keys into the console's input, as typed. */
static void
type(const wchar_t *keys)
{
	HANDLE in = CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE,
	                        FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
	INPUT_RECORD r[2];
	DWORD n;

	assert_true(in != INVALID_HANDLE_VALUE);
	for (; *keys; keys++) {
		memset(r, 0, sizeof(r));
		r[0].EventType = r[1].EventType = KEY_EVENT;
		r[0].Event.KeyEvent.bKeyDown = TRUE;
		r[0].Event.KeyEvent.wRepeatCount = r[1].Event.KeyEvent.wRepeatCount = 1;
		r[0].Event.KeyEvent.uChar.UnicodeChar = r[1].Event.KeyEvent.uChar.UnicodeChar = *keys;
		if (*keys == L'\r')
			r[0].Event.KeyEvent.wVirtualKeyCode = r[1].Event.KeyEvent.wVirtualKeyCode =
				VK_RETURN;
		assert_true(WriteConsoleInputW(in, r, 2, &n));
		assert_int_equal(n, 2);
	}
	CloseHandle(in);
}

static DWORD
in_mode(void)
{
	HANDLE in = CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE,
	                        FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
	DWORD m = 0;

	assert_true(in != INVALID_HANDLE_VALUE);
	assert_true(GetConsoleMode(in, &m));
	CloseHandle(in);
	return m;
}

static void
test_secret_prompt(void **state)
{
	struct ph_tty *t;
	char buf[64];

	(void)state;
	assert_true(in_mode() & ENABLE_ECHO_INPUT);
	assert_int_equal(ph_tty_open(0, &t), 0);
	/* Echo off before anything is asked. */
	assert_int_equal(in_mode() & ENABLE_ECHO_INPUT, 0);
	assert_int_equal(ph_tty_write(t, "Password: "), 0);
	type(L"s3cr\x00e9t \x65e5\r");
	assert_int_equal(ph_tty_read_line(t, buf, sizeof(buf), NULL, NULL), 0);
	assert_string_equal(buf, "s3cr\xc3\xa9t \xe6\x97\xa5");
	ph_tty_close(t);
	/* The mode is back. */
	assert_true(in_mode() & ENABLE_ECHO_INPUT);
	/* A long line: the buffer's worth kept, the rest dropped. */
	assert_int_equal(ph_tty_open(1, &t), 0);
	type(L"abcdefghij\r");
	assert_int_equal(ph_tty_read_line(t, buf, 5, NULL, NULL), 0);
	assert_string_equal(buf, "abcd");
	ph_tty_close(t);
}

static int
stop_now(void *arg)
{
	(void)arg;
	return 1;
}

static void
test_prompt_stopped(void **state)
{
	struct ph_tty *t;
	char buf[16] = "x";

	(void)state;
	assert_int_equal(ph_tty_open(0, &t), 0);
	assert_int_equal(ph_tty_read_line(t, buf, sizeof(buf), stop_now, NULL), -EINTR);
	assert_string_equal(buf, "");
	ph_tty_close(t);
	assert_true(in_mode() & ENABLE_ECHO_INPUT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctrl_events),
		cmocka_unit_test(test_secret_prompt),
		cmocka_unit_test(test_prompt_stopped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
