/* SPDX-License-Identifier: ISC */
/* Temp and aside names: format, check value, truncation, owner liveness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <sys/wait.h>
#endif
#include <cmocka.h>

#include "tempname.h"

static void
test_roundtrip(void **state)
{
	struct ph_temp_owner me, other = { 0x12345678u, 4242 };
	struct ph_temp_info ti;
	char a[256], b[256];

	(void)state;
	ph_temp_owner_self(&me);
	assert_int_equal(ph_temp_name(a, sizeof(a), "IMG_0001.jpg", PH_TEMP_NEW, &me), 0);
	assert_int_equal(strncmp(a, ".IMG_0001.jpg.phsync-t.", 23), 0);
	assert_int_equal(strlen(a), strlen("IMG_0001.jpg") + 45);
	assert_int_equal(ph_temp_parse(a, strlen(a), &ti), 1);
	assert_int_equal(ti.kind, PH_TEMP_NEW);
	assert_int_equal(ti.truncated, 0);
	assert_int_equal(ti.owner.host, me.host);
	assert_int_equal(ti.owner.pid, (uint32_t)getpid());
	assert_int_equal(ti.final_len, strlen("IMG_0001.jpg"));
	assert_memory_equal(a + ti.final_off, "IMG_0001.jpg", ti.final_len);
	/* Two names for one file differ (random part). */
	assert_int_equal(ph_temp_name(b, sizeof(b), "IMG_0001.jpg", PH_TEMP_NEW, &me), 0);
	assert_string_not_equal(a, b);

	assert_int_equal(ph_temp_name(a, sizeof(a), "x", PH_TEMP_OLD, &other), 0);
	assert_int_equal(ph_temp_parse(a, strlen(a), &ti), 1);
	assert_int_equal(ti.kind, PH_TEMP_OLD);
	assert_int_equal(ti.owner.host, 0x12345678u);
	assert_int_equal(ti.owner.pid, 4242);
	assert_int_equal(ph_temp_name(a, sizeof(a), "", PH_TEMP_NEW, &me), -1);
}

/* A user's file that merely looks like ours is not ours. */
static void
test_lookalikes_refused(void **state)
{
	struct ph_temp_owner me;
	struct ph_temp_info ti;
	char a[256];
	size_t n;
	static const char *const names[] = {
		".photo.jpg.phsync-AbC123",   /* the format of phsync 0.1 */
		".photo.jpg.phsync-t.0000000000000000.00000000.00000000",
		"photo.jpg",
		".phsync-t.0000000000000000.00000000.00000000",
		"",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(ph_temp_parse(names[i], strlen(names[i]), &ti), 0);
	ph_temp_owner_self(&me);
	assert_int_equal(ph_temp_name(a, sizeof(a), "photo.jpg", PH_TEMP_NEW, &me), 0);
	n = strlen(a);
	/* Any byte changed breaks the check: the name, the owner, the kind. */
	for (i = 0; i < n; i++) {
		char c = a[i];

		a[i] = c == 'a' ? 'b' : 'a';
		assert_int_equal(ph_temp_parse(a, n, &ti), 0);
		a[i] = c;
	}
	assert_int_equal(ph_temp_parse(a, n, &ti), 1);
	assert_int_equal(ph_temp_parse(a, n - 1, &ti), 0);
}

static void
test_long_names_truncated(void **state)
{
	struct ph_temp_owner me;
	struct ph_temp_info ti;
	char longname[256], a[256];
	size_t i;

	(void)state;
	ph_temp_owner_self(&me);
	memset(longname, 'n', 255);
	longname[255] = '\0';
	assert_int_equal(ph_temp_name(a, sizeof(a), longname, PH_TEMP_OLD, &me), 0);
	assert_true(strlen(a) <= 255);
	assert_int_equal(ph_temp_parse(a, strlen(a), &ti), 1);
	assert_int_equal(ti.truncated, 1);
	assert_int_equal(ti.kind, PH_TEMP_OLD);
	assert_int_equal(ti.final_len, PH_TEMP_NAME_ROOM);
	/* Cut at a UTF-8 boundary: 105 two-byte characters, one more byte. */
	longname[0] = 'x';
	for (i = 0; i < 105; i++) {
		longname[1 + 2 * i] = (char)0xc3;
		longname[2 + 2 * i] = (char)0xa9;
	}
	longname[211] = '\0';
	assert_int_equal(ph_temp_name(a, sizeof(a), longname, PH_TEMP_NEW, &me), 0);
	assert_int_equal(ph_temp_parse(a, strlen(a), &ti), 1);
	assert_int_equal(ti.truncated, 1);
	assert_int_equal(ti.final_len, 209); /* not 210: that would split a character */
	/* Not UTF-8 at all (a phone's name is bytes): no boundary to cut at
	 * before the room runs out, so it is cut at the room; never to
	 * nothing, which would make a temp its own parser refuses. */
	memset(longname, 0x80, 255);
	longname[255] = '\0';
	assert_int_equal(ph_temp_name(a, sizeof(a), longname, PH_TEMP_PARTIAL, &me), 0);
	assert_int_equal(ph_temp_parse(a, strlen(a), &ti), 1);
	assert_int_equal(ti.kind, PH_TEMP_PARTIAL);
	assert_int_equal(ti.final_len, PH_TEMP_NAME_ROOM);
}

static struct ph_temp_info
info(uint32_t host, uint32_t pid, int64_t made)
{
	struct ph_temp_info ti;

	memset(&ti, 0, sizeof(ti));
	ti.owner.host = host;
	ti.owner.pid = pid;
	ti.minute = (uint32_t)((uint64_t)made / 60) & 0xffffffu;
	return ti;
}

#ifdef _WIN32
/* Windows has no fork: this test runs itself again, as "sleep" (until it
 * is ended) or "exit" (at once). */
static char self_path[MAX_PATH];

static HANDLE
spawn_self(const char *arg)
{
	char cmd[MAX_PATH + 16];
	STARTUPINFOA si;
	PROCESS_INFORMATION pi;

	memset(&si, 0, sizeof(si));
	si.cb = sizeof(si);
	snprintf(cmd, sizeof(cmd), "\"%s\" %s", self_path, arg);
	if (!CreateProcessA(self_path, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi))
		return NULL;
	CloseHandle(pi.hThread);
	return pi.hProcess;
}

/* Another live process of this host: live; one that has exited: stale at
 * once, while a handle still holds its process object and after. */
static void
other_processes(const struct ph_temp_owner *me, int64_t now)
{
	HANDLE live = spawn_self("sleep"), dead = spawn_self("exit");
	struct ph_temp_info ti;

	assert_non_null(live);
	assert_non_null(dead);
	assert_int_equal(WaitForSingleObject(dead, 60000), WAIT_OBJECT_0);
	ti = info(me->host, (uint32_t)GetProcessId(live), now - 10 * 86400);
	assert_int_equal(ph_temp_stale(&ti, me, now), 0);
	ti = info(me->host, (uint32_t)GetProcessId(dead), now);
	assert_int_equal(ph_temp_stale(&ti, me, now), 1);
	CloseHandle(dead);
	assert_int_equal(ph_temp_stale(&ti, me, now), 1);
	TerminateProcess(live, 0);
	WaitForSingleObject(live, 60000);
	CloseHandle(live);
}
#else
/* Another live process of this host (our parent): live; a process that
 * has exited: stale at once. */
static void
other_processes(const struct ph_temp_owner *me, int64_t now)
{
	struct ph_temp_info ti;
	pid_t child;
	int st;

	ti = info(me->host, (uint32_t)getppid(), now - 10 * 86400);
	assert_int_equal(ph_temp_stale(&ti, me, now), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &st, 0), child);
	ti = info(me->host, (uint32_t)child, now);
	assert_int_equal(ph_temp_stale(&ti, me, now), 1);
}
#endif

static void
test_stale(void **state)
{
	struct ph_temp_owner me;
	struct ph_temp_info ti;
	int64_t now = (int64_t)time(NULL);
	char name[256];

	(void)state;
	ph_temp_owner_self(&me);
	/* This process: live, however old. */
	ti = info(me.host, me.pid, now - 10 * 86400);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 0);
	other_processes(&me, now);
	/* Another host's: only once its name says it is older than a day. */
	ti = info(me.host ^ 1, 1, now - 3600);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 0);
	ti = info(me.host ^ 1, 1, now - 2 * 86400);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 1);
	/* Made "in the future" by a clock ahead of ours: not stale. */
	ti = info(me.host ^ 1, 1, now + 3 * 86400);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 0);
	/* A pid that cannot be one: judged by age, never signalled. */
	ti = info(me.host, 0, now);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 0);
	ti = info(me.host, 0x80000001u, now);
	assert_int_equal(ph_temp_stale(&ti, &me, now), 0);
	/* The minute a name carries is the minute it was made. */
	assert_int_equal(ph_temp_name(name, sizeof(name), "a.jpg", PH_TEMP_NEW, &me), 0);
	assert_int_equal(ph_temp_parse(name, strlen(name), &ti), 1);
	assert_true((((uint32_t)(now / 60) - ti.minute) & 0xffffffu) <= 1);
}

int
main(int argc, char **argv)
{
#ifdef _WIN32
	if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
		Sleep(120000);
		return 0;
	}
	if (argc > 1)
		return 0;
	if (GetModuleFileNameA(NULL, self_path, sizeof(self_path)) >= sizeof(self_path))
		return 1;
#else
	(void)argc;
	(void)argv;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_lookalikes_refused),
		cmocka_unit_test(test_long_names_truncated),
		cmocka_unit_test(test_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
