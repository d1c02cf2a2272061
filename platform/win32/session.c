/* SPDX-License-Identifier: ISC */
/* ph_on_session_end and ph_hangup_is_close (psys.h), the Windows side: a
 * hidden top-level window on a thread of its own hears WM_QUERYENDSESSION
 * and WM_ENDSESSION (log-off, shutdown, restart), which a console program
 * that loads user32 gets instead of CTRL_LOGOFF_EVENT/CTRL_SHUTDOWN_EVENT.
 * The POSIX side is platform/session.c. */
#include <errno.h>
#include <string.h>
#include <windows.h>

#include "psys.h"
#include "win32.h"

static void (*end_fn)(void);
static HANDLE ready;     /* set once the window exists (or could not) */
static volatile LONG made;

static LRESULT CALLBACK
session_proc(HWND hwnd, UINT msg, WPARAM wparam, LPARAM lparam)
{
	static LONG called;

	switch (msg) {
	case WM_QUERYENDSESSION:
		return TRUE; /* never hold the session's end up: stop instead */
	case WM_ENDSESSION:
		if (wparam && InterlockedExchange(&called, 1) == 0) {
			end_fn();
			/* Windows ends the process when this returns: hold it
			 * while the stop runs; the process's exit ends the wait. */
			Sleep(PH_SESSION_END_HOLD_MS);
		}
		return 0;
	default:
		return DefWindowProcW(hwnd, msg, wparam, lparam);
	}
}

static DWORD WINAPI
session_thread(void *arg)
{
	WNDCLASSW wc;
	HWND hwnd;
	MSG m;

	(void)arg;
	memset(&wc, 0, sizeof(wc));
	wc.lpfnWndProc = session_proc;
	wc.hInstance = GetModuleHandleW(NULL);
	wc.lpszClassName = L"phsyncSessionEnd";
	/* Top-level and never shown: a message-only window (HWND_MESSAGE)
	 * gets no session messages. */
	hwnd = RegisterClassW(&wc) ? CreateWindowExW(0, wc.lpszClassName, L"phsync", WS_OVERLAPPED,
	                                             0, 0, 0, 0, NULL, NULL, wc.hInstance, NULL)
	                           : NULL;
	InterlockedExchange(&made, hwnd != NULL);
	SetEvent(ready);
	if (hwnd == NULL)
		return 1;
	while (GetMessageW(&m, NULL, 0, 0) > 0) {
		TranslateMessage(&m);
		DispatchMessageW(&m);
	}
	return 0;
}

int
ph_on_session_end(void (*fn)(void))
{
	HANDLE t;

	if (end_fn != NULL)
		return -EBUSY;
	end_fn = fn;
	if ((ready = CreateEventW(NULL, TRUE, FALSE, NULL)) == NULL)
		return ph_win_errno(GetLastError());
	if ((t = CreateThread(NULL, 0, session_thread, NULL, 0, NULL)) == NULL)
		return ph_win_errno(GetLastError());
	CloseHandle(t);
	/* A desktop with no window station (a service) or no graphics
	 * driver (Wine without a display) has no windows: say so. */
	WaitForSingleObject(ready, INFINITE);
	return InterlockedCompareExchange(&made, 0, 0) ? 0 : -ENOTSUP;
}

int
ph_hangup_is_close(void)
{
	return 1;
}
