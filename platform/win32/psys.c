/* SPDX-License-Identifier: ISC */
/* psys.h, the Windows side (the sockets: win32/sock.c): the known folders
 * (SHGetKnownFolderPath), FindFirstFileW for a pattern, the console's
 * control handler, and CONIN$/CONOUT$ for a prompt. The POSIX side is
 * platform/psys.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <knownfolders.h>
#include <shlobj.h>

#include "psys.h"
#include "win32.h"

/* UTF-8 a + b into out: 0 or -ENAMETOOLONG. */
static int
put(char *out, size_t len, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	if (na + nb + 1 > len)
		return -ENAMETOOLONG;
	memcpy(out, a, na);
	memcpy(out + na, b, nb + 1);
	return 0;
}

int
ph_win_known_folder(const struct _GUID *id, const char *tail, char *out, size_t len)
{
	PWSTR w = NULL;
	char *u = NULL;
	int rc;

	if (SHGetKnownFolderPath(id, KF_FLAG_DONT_VERIFY, NULL, &w) != S_OK || w == NULL) {
		CoTaskMemFree(w);
		return -ENOENT;
	}
	rc = ph_win_narrow(w, &u);
	CoTaskMemFree(w);
	if (rc != 0)
		return rc;
	rc = u[0] == '\0' ? -ENOENT : put(out, len, u, tail);
	free(u);
	return rc;
}

int
ph_home_dir(char *out, size_t len)
{
	return ph_win_known_folder(&FOLDERID_Profile, "", out, len);
}

int
ph_ssh_dir(char *out, size_t len)
{
	return ph_win_known_folder(&FOLDERID_Profile, "\\.ssh", out, len);
}

int
ph_ssh_system_config(char *out, size_t len)
{
	return ph_win_known_folder(&FOLDERID_ProgramData, "\\ssh\\ssh_config", out, len);
}

int
ph_state_home(char *out, size_t len)
{
	return ph_win_known_folder(&FOLDERID_LocalAppData, "\\phsync", out, len);
}

int
ph_path_absolute(const char *path)
{
	/* C:\x and C:/x, \\server\share and \\?\ paths, and \x (the current
	 * drive's root, which ph_win_long_path completes). */
	if (((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
	    path[1] == ':' && (path[2] == '\\' || path[2] == '/'))
		return 1;
	return path[0] == '\\' || path[0] == '/';
}

int
ph_user_name(char *out, size_t len)
{
	wchar_t w[257];
	DWORD n = 257;
	char *u = NULL;
	int rc;

	if (!GetUserNameW(w, &n))
		return -ENOENT;
	if ((rc = ph_win_narrow(w, &u)) != 0)
		return rc;
	rc = put(out, len, u, "");
	free(u);
	return rc;
}

static int
by_bytes(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the folder that the last component of wpat matches (in
 * *names, *n of them, malloc'd), "." and ".." left out. */
static int
find_names(const wchar_t *wpat, char ***names, size_t *n)
{
	WIN32_FIND_DATAW fd;
	HANDLE h;
	size_t cap = 0;
	int rc = 0;

	*names = NULL;
	*n = 0;
	h = FindFirstFileExW(wpat, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
	if (h == INVALID_HANDLE_VALUE)
		return 0; /* no match, or no such folder: as glob's GLOB_NOMATCH */
	do {
		char *u = NULL, **grown;

		if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
			continue;
		if (ph_win_narrow(fd.cFileName, &u) != 0)
			continue; /* a name UTF-8 cannot hold: never a config file */
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((grown = realloc(*names, cap * sizeof(**names))) == NULL) {
				free(u);
				rc = -ENOMEM;
				break;
			}
			*names = grown;
		}
		(*names)[(*n)++] = u;
	} while (FindNextFileW(h, &fd));
	FindClose(h);
	return rc;
}

int
ph_path_glob(const char *pattern, int (*fn)(const char *path, void *arg), void *arg)
{
	const char *last = pattern, *c;
	char **names = NULL, path[4096];
	wchar_t *wpat = NULL;
	size_t n = 0, i, dirlen;
	int rc;

	for (c = pattern; *c; c++)
		if (*c == '/' || *c == '\\')
			last = c + 1;
	dirlen = (size_t)(last - pattern);
	/* FindFirstFileW's wildcards work in the last component only. */
	for (c = pattern; c < last; c++)
		if (*c == '*' || *c == '?')
			return 0;
	if ((rc = ph_win_widen(pattern, &wpat)) != 0)
		return rc == -EILSEQ ? 0 : rc;
	rc = find_names(wpat, &names, &n);
	free(wpat);
	if (rc == 0)
		qsort(names, n, sizeof(*names), by_bytes);
	for (i = 0; i < n; i++) {
		if (rc == 0 && dirlen + strlen(names[i]) < sizeof(path)) {
			memcpy(path, pattern, dirlen);
			memcpy(path + dirlen, names[i], strlen(names[i]) + 1);
			rc = fn(path, arg);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

struct ph_agent_conn {
	HANDLE pipe;
	HANDLE ev; /* the overlapped I/O's event */
};

int
ph_agent_open(struct ph_agent_conn **out)
{
	const char *env = getenv("SSH_AUTH_SOCK");
	struct ph_agent_conn *c;
	wchar_t *name = NULL;
	HANDLE h;
	int rc, tries;

	/* OpenSSH for Windows' agent, or the pipe SSH_AUTH_SOCK names (as its
	 * ssh-add does). An AF_UNIX path there (an agent of MSYS or WSL) is
	 * not a pipe: CreateFileW says there is no such file. */
	if ((rc = ph_win_widen(env != NULL && env[0] != '\0' ? env :
	                       "\\\\.\\pipe\\openssh-ssh-agent", &name)) != 0)
		return rc;
	for (tries = 0;; tries++) {
		h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
		                FILE_FLAG_OVERLAPPED, NULL);
		/* Every instance busy: wait for one once (the agent makes more). */
		if (h != INVALID_HANDLE_VALUE || GetLastError() != ERROR_PIPE_BUSY || tries > 0 ||
		    !WaitNamedPipeW(name, 5000))
			break;
	}
	rc = h == INVALID_HANDLE_VALUE ? ph_win_errno(GetLastError()) : 0;
	free(name);
	if (rc != 0)
		return rc;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->ev = CreateEventW(NULL, TRUE, FALSE, NULL)) == NULL) {
		free(c);
		CloseHandle(h);
		return -ENOMEM;
	}
	c->pipe = h;
	*out = c;
	return 0;
}

int
ph_agent_io(struct ph_agent_conn *c, void *buf, size_t len, int writing, int timeout_ms)
{
	unsigned char *p = buf;

	while (len > 0) {
		OVERLAPPED ov;
		DWORD n = 0, want = len > (1u << 20) ? (1u << 20) : (DWORD)len;
		BOOL ok;

		memset(&ov, 0, sizeof(ov));
		ov.hEvent = c->ev;
		ResetEvent(c->ev);
		ok = writing ? WriteFile(c->pipe, p, want, NULL, &ov) :
		               ReadFile(c->pipe, p, want, NULL, &ov);
		if (!ok && GetLastError() != ERROR_IO_PENDING)
			return GetLastError() == ERROR_BROKEN_PIPE ? -EPIPE :
			       ph_win_errno(GetLastError());
		if (!ok && WaitForSingleObject(c->ev, timeout_ms < 0 ? INFINITE :
		                               (DWORD)timeout_ms) != WAIT_OBJECT_0) {
			/* Taken back before the buffer goes: wait for the cancel. */
			CancelIo(c->pipe);
			GetOverlappedResult(c->pipe, &ov, &n, TRUE);
			return -ETIMEDOUT;
		}
		if (!GetOverlappedResult(c->pipe, &ov, &n, TRUE))
			return GetLastError() == ERROR_BROKEN_PIPE ? -EPIPE :
			       ph_win_errno(GetLastError());
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

void
ph_agent_close(struct ph_agent_conn *c)
{
	if (c == NULL)
		return;
	CloseHandle(c->pipe);
	CloseHandle(c->ev);
	free(c);
}

/* The control handler's state, the only mutable globals here: what to
 * call, how many stops came, and the console mode a prompt changed. */
static void (*volatile stop_fn)(int);
static volatile LONG stops;
static volatile LONG tty_changed;
static HANDLE tty_in = INVALID_HANDLE_VALUE;
static DWORD tty_saved;

/* Runs on a thread Windows starts for the event. For close, log-off and
 * shutdown Windows ends the process when this returns (or after its own
 * time limit): fn decides whether to wait. */
static BOOL WINAPI
on_ctrl(DWORD ev)
{
	void (*fn)(int) = stop_fn;

	switch (ev) {
	case CTRL_C_EVENT:
	case CTRL_BREAK_EVENT:
	case CTRL_CLOSE_EVENT:
	case CTRL_LOGOFF_EVENT:
	case CTRL_SHUTDOWN_EVENT:
		if (fn != NULL)
			fn((int)InterlockedIncrement(&stops));
		return TRUE;
	default:
		return FALSE;
	}
}

int
ph_on_interrupt(void (*fn)(int n))
{
	stop_fn = fn;
	/* Windows has no SIGPIPE: a peer gone is an error return already. */
	return SetConsoleCtrlHandler(on_ctrl, TRUE) ? 0 : ph_win_errno(GetLastError());
}

struct ph_tty {
	HANDLE in, out;
	DWORD mode;  /* the input mode to put back */
	int quiet;   /* echo turned off */
};

static HANDLE
open_console(const wchar_t *name)
{
	return CreateFileW(name, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
	                   NULL, OPEN_EXISTING, 0, NULL);
}

int
ph_tty_open(int echo, struct ph_tty **out)
{
	struct ph_tty *t;
	DWORD m;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->in = open_console(L"CONIN$");
	t->out = open_console(L"CONOUT$");
	if (t->in == INVALID_HANDLE_VALUE || t->out == INVALID_HANDLE_VALUE ||
	    !GetConsoleMode(t->in, &t->mode)) {
		ph_tty_close(t);
		return -ENXIO;
	}
	/* Line input (the console edits the line), Ctrl-C as a control event;
	 * echo off before the question shows, typed-ahead keys dropped. */
	m = t->mode | ENABLE_LINE_INPUT | ENABLE_PROCESSED_INPUT;
	if (!echo) {
		m &= ~(DWORD)ENABLE_ECHO_INPUT;
		tty_saved = t->mode;
		tty_in = t->in;
		InterlockedExchange(&tty_changed, 1);
		t->quiet = 1;
		FlushConsoleInputBuffer(t->in);
	}
	SetConsoleMode(t->in, m);
	*out = t;
	return 0;
}

int
ph_tty_write(struct ph_tty *t, const char *s)
{
	wchar_t *w = NULL;
	DWORD put_n;
	int rc;

	if ((rc = ph_win_widen(s, &w)) != 0)
		return rc;
	if (!WriteConsoleW(t->out, w, (DWORD)wcslen(w), &put_n, NULL))
		rc = ph_win_errno(GetLastError());
	free(w);
	return rc;
}

/* Whether a key with a character waits in the console's input; other
 * events (key releases, the mouse, focus) are taken off. */
static int
key_waiting(HANDLE in)
{
	INPUT_RECORD r;
	DWORD got;

	while (PeekConsoleInputW(in, &r, 1, &got) && got == 1) {
		if (r.EventType == KEY_EVENT && r.Event.KeyEvent.bKeyDown &&
		    r.Event.KeyEvent.uChar.UnicodeChar != 0)
			return 1;
		ReadConsoleInputW(in, &r, 1, &got);
	}
	return 0;
}

int
ph_tty_read_line(struct ph_tty *t, char *buf, size_t len, int (*stop)(void *arg), void *arg)
{
	wchar_t line[1024], part[256];
	size_t n = 0;
	char *u = NULL;
	int rc;

	for (;;) {
		DWORD got = 0, i;

		if (stop != NULL && stop(arg)) {
			buf[0] = '\0';
			return -EINTR;
		}
		/* Wait in slices; once a key is there, the console gives the
		 * line when Enter comes (Ctrl-C ends the read with nothing). */
		if (WaitForSingleObject(t->in, 200) != WAIT_OBJECT_0 || !key_waiting(t->in))
			continue;
		if (!ReadConsoleW(t->in, part, 256, &got, NULL))
			continue;
		if (got == 0 && stop != NULL && stop(arg))
			continue; /* Ctrl-C ended the read: said above */
		for (i = 0; i < got && part[i] != L'\n'; i++)
			if (part[i] != L'\r' && n + 1 < sizeof(line) / sizeof(line[0]))
				line[n++] = part[i];
		if (i < got || got == 0)
			break; /* the line's end, or the input's */
	}
	line[n] = L'\0';
	SecureZeroMemory(part, sizeof(part));
	rc = ph_win_narrow(line, &u);
	SecureZeroMemory(line, sizeof(line));
	if (rc != 0)
		return rc;
	n = strlen(u);
	if (n >= len)
		n = len - 1; /* may cut a character: the rest of a long line is dropped */
	memcpy(buf, u, n);
	buf[n] = '\0';
	SecureZeroMemory(u, strlen(u));
	free(u);
	return 0;
}

void
ph_tty_close(struct ph_tty *t)
{
	DWORD put_n;

	if (t == NULL)
		return;
	if (t->quiet) {
		SetConsoleMode(t->in, t->mode);
		InterlockedExchange(&tty_changed, 0);
		tty_in = INVALID_HANDLE_VALUE;
		WriteConsoleW(t->out, L"\r\n", 2, &put_n, NULL);
	}
	if (t->in != INVALID_HANDLE_VALUE)
		CloseHandle(t->in);
	if (t->out != INVALID_HANDLE_VALUE)
		CloseHandle(t->out);
	free(t);
}

void
ph_tty_restore_now(void)
{
	if (tty_changed)
		SetConsoleMode(tty_in, tty_saved);
}
