/* SPDX-License-Identifier: ISC */
/* The OS around the files (docs/WINDOWS.md, families 5 and 6): sockets and
 * waiting on one, the places a user's files live (home, ~/.ssh, the state
 * folder), the stop signals, and the terminal a secret is typed on. One
 * interface, two sides: platform/psys.c (POSIX) and platform/win32/psys.c
 * (Windows). Paths are UTF-8 with '/' on POSIX, '\\' on Windows. */
#ifndef PH_PSYS_H
#define PH_PSYS_H

#include <stddef.h>
#include <stdint.h>

/* Sockets. A socket is an int on both sides (on Windows a SOCKET, which
 * Windows keeps below 2^31 in practice, as libssh's socket_t does). */

/* Makes the sockets API ready (Windows: WSAStartup 2.2, once per process;
 * POSIX: nothing). Safe to call from every entry point, any number of
 * times. Returns 0 or -errno. */
int ph_net_init(void);

#define PH_POLL_IN 1u  /* bytes (or the end) to read */
#define PH_POLL_OUT 2u /* room to write; a non-blocking connect ended */
#define PH_POLL_ERR 4u /* an error or a hang-up on the socket */

/* Waits until sock is ready for one of events (PH_POLL_IN, PH_POLL_OUT) or
 * timeout_ms passes (-1: no limit): poll, WSAPoll on Windows. Returns the
 * PH_POLL_* bits that hold (PH_POLL_ERR among them whatever was asked), 0
 * when the time passed or a signal came (EINTR), or -errno. */
int ph_poll_sock(int sock, unsigned events, int timeout_ms);

/* Keeps at most bytes unsent in the kernel for a TCP socket, so what waits
 * is paced by the sender (TCP_NOTSENT_LOWAT). A hint: 0, -ENOSYS where
 * there is no such option, or -errno (not a TCP socket). */
int ph_sock_pace(int sock, unsigned bytes);

struct sockaddr;

/* connect(2) on sock to addr (len bytes). Returns 0, -EINPROGRESS when a
 * non-blocking socket's connect goes on (Windows: WSAEWOULDBLOCK; wait
 * with ph_poll_sock for PH_POLL_OUT), or -errno. */
int ph_sock_connect(int sock, const struct sockaddr *addr, size_t len);

/* The error a non-blocking connect on sock ended with, once ph_poll_sock
 * said PH_POLL_OUT or PH_POLL_ERR (SO_ERROR): 0 (connected) or -errno. */
int ph_sock_connect_error(int sock);

/* Closes a socket made by ph_socket (closesocket on Windows). */
void ph_sock_close(int sock);

/* Where a user's files live. Each writes a terminated path into out (len
 * bytes) and returns 0, -ENOENT when the OS names no such place, or
 * -ENAMETOOLONG. */

/* The user's home folder: $HOME when set and absolute, else the password
 * database's (getpwuid). Windows: %USERPROFILE% as
 * SHGetKnownFolderPath(FOLDERID_Profile) says; $HOME is not read there
 * (MSYS and Cygwin shells set one of their own). */
int ph_home_dir(char *out, size_t len);

/* The user's ssh folder, where OpenSSH keeps config, known_hosts and keys:
 * home/.ssh on both (OpenSSH for Windows: %USERPROFILE%\.ssh). */
int ph_ssh_dir(char *out, size_t len);

/* The system-wide ssh_config: /etc/ssh/ssh_config; on Windows
 * %ProgramData%\ssh\ssh_config, where OpenSSH for Windows reads it. */
int ph_ssh_system_config(char *out, size_t len);

/* The folder phsync keeps its state in (not created here):
 * $XDG_STATE_HOME/phsync when that is absolute, else
 * home/.local/state/phsync; on Windows %LOCALAPPDATA%\phsync
 * (FOLDERID_LocalAppData). */
int ph_state_home(char *out, size_t len);

/* The path of name in phsync's config folder (the folder is not created
 * here): $XDG_CONFIG_HOME/phsync/name when that is absolute, else
 * home/.config/phsync/name; on Windows %APPDATA%\phsync\name
 * (FOLDERID_RoamingAppData, where a Windows user looks for a program's
 * settings; the state stays local, ph_state_home). platform/confhome.c,
 * platform/win32/confhome.c. */
int ph_config_path(const char *name, char *out, size_t len);

/* 1 when path is absolute (POSIX: from '/'; Windows: with a drive and a
 * separator, a share, or from the current drive's root), else 0. */
int ph_path_absolute(const char *path);

/* The local login name (getpwuid, else $USER; Windows: GetUserNameW).
 * Returns 0 or -ENOENT. */
int ph_user_name(char *out, size_t len);

/* Calls fn(path, arg) for each existing file pattern names, sorted by
 * name (glob's order, bytes in the C locale; bytes on Windows), stopping at the first nonzero return, which it returns.
 * POSIX: glob(3), wildcards in any component. Windows: FindFirstFileW,
 * whose wildcards (* and ?) work in the last component only; a pattern
 * with wildcards before its last separator matches nothing there. No file:
 * 0, fn never called. */
int ph_path_glob(const char *pattern, int (*fn)(const char *path, void *arg), void *arg);

/* The ssh agent's connection: a Unix socket at $SSH_AUTH_SOCK on POSIX;
 * on Windows a named pipe, $SSH_AUTH_SOCK when set, else
 * \\.\pipe\openssh-ssh-agent (OpenSSH for Windows' agent). */
struct ph_agent_conn;

/* Connects to the agent. Returns 0, -ENOENT when there is none (no
 * $SSH_AUTH_SOCK on POSIX, no such pipe), or -errno. */
int ph_agent_open(struct ph_agent_conn **out);

/* Sends (writing 1) or receives all len bytes, each wait at most
 * timeout_ms. Returns 0, -ETIMEDOUT, -EPIPE when the agent went away
 * first, or -errno. */
int ph_agent_io(struct ph_agent_conn *c, void *buf, size_t len, int writing, int timeout_ms);

/* Closes the connection; NULL is a no-op. */
void ph_agent_close(struct ph_agent_conn *c);

/* Stop signals. fn(n) is called for each stop request, n counting from 1:
 * SIGINT, SIGTERM and SIGHUP (sigaction) on POSIX, where SIGPIPE is
 * ignored as well (a peer gone is an error return, never a death); on
 * Windows the console's Ctrl-C, Ctrl-Break, close, log-off and shutdown
 * (SetConsoleCtrlHandler), which come on a thread of their own. fn must
 * be async-signal-safe: it may set a flag, write(2) and _exit. Returns 0
 * or -errno. */
int ph_on_interrupt(void (*fn)(int n));

/* The end of the user's session (log-off, shutdown, restart) as a stop
 * request, for a long-running process (the daemon). On Windows a console
 * program that loads user32 (phsync.exe does) gets no CTRL_LOGOFF_EVENT or
 * CTRL_SHUTDOWN_EVENT: the session's end comes as WM_QUERYENDSESSION and
 * WM_ENDSESSION to its top-level windows. This makes a hidden one on a
 * thread of its own: WM_ENDSESSION calls fn once, on that thread, then is
 * held (Windows ends the process when it returns) until the process exits
 * or PH_SESSION_END_HOLD_MS pass. fn must be safe from another thread
 * (uv_async_send). -ENOSYS on POSIX, where the session's end is SIGHUP or
 * SIGTERM. platform/session.c, platform/win32/session.c. */
#define PH_SESSION_END_HOLD_MS 30000
int ph_on_session_end(void (*fn)(void));

/* 1 where SIGHUP means only that the console window was closed and the
 * process is to stop (Windows, as libuv maps CTRL_CLOSE_EVENT; Windows ends
 * the process 5 s later), 0 where it is a request to reload (POSIX). */
int ph_hangup_is_close(void);

/* The terminal: /dev/tty on POSIX, CONIN$ and CONOUT$ on Windows, never
 * standard input (which may be data). */
struct ph_tty;

/* Opens the terminal; with echo 0 typed characters are not shown (termios
 * ECHO off with TCSAFLUSH; SetConsoleMode without ENABLE_ECHO_INPUT and
 * FlushConsoleInputBuffer), before anything is asked. Returns 0 or -errno
 * (-ENXIO: no terminal). */
int ph_tty_open(int echo, struct ph_tty **out);

/* Writes s to the terminal. Returns 0 or -errno. */
int ph_tty_write(struct ph_tty *t, const char *s);

/* Reads one line (without its end) into buf, at most len-1 bytes
 * (terminated; the rest of a longer line is dropped), waiting in slices of
 * at most 200 ms and asking stop(arg) between them. Returns 0, -EINTR when
 * stop said 1. The end of input ends the line (an empty one at once). */
int ph_tty_read_line(struct ph_tty *t, char *buf, size_t len, int (*stop)(void *arg),
                     void *arg);

/* Puts the terminal's mode back and closes it; NULL is a no-op. */
void ph_tty_close(struct ph_tty *t);

/* Puts back the mode of a terminal ph_tty_open changed and has not closed
 * yet, from a stop signal's handler (async-signal-safe), before _exit. */
void ph_tty_restore_now(void);

/* Pairing and the doctor (platform/pairsys.c; Windows: win32/pairsys.c). */

/* The home ssh itself expands "~" to in ssh_config: the password
 * database's (getpwuid; $HOME is not read, as ssh does not); on Windows
 * the profile folder, as OpenSSH for Windows. Returns 0, -ENOENT or
 * -ENAMETOOLONG. */
int ph_account_home(char *out, size_t len);

/* The null device's name, a file that reads as empty: "/dev/null"
 * ("NUL" on Windows). */
const char *ph_null_path(void);

/* Is there a file at path (a symlink followed), and with readable set,
 * may this process read it? access(F_OK or R_OK) on POSIX; on Windows a
 * CreateFileW on the UTF-16 long path (for attributes, or GENERIC_READ),
 * so any name works, not only the ANSI code page's. Returns 0 or -errno. */
int ph_path_access(const char *path, int readable);

/* path (UTF-8) as the C library's narrow calls take it (fopen, access, and
 * libraries that use them: libssh's ssh folder, config, known_hosts and
 * keys), into out. POSIX: the same bytes. Windows: the ANSI code page's
 * bytes when it holds every character, else the 8.3 short name (the
 * folder's, for a file not made yet); -EILSEQ when neither reaches it.
 * platform/ansipath.c, platform/win32/ansipath.c. Returns 0 or -errno. */
int ph_ansi_path(const char *path, char *out, size_t n);

/* For each address host:port resolves to (getaddrinfo; GetAddrInfoW on
 * Windows, host UTF-8), a non-blocking TCP socket whose connect has begun
 * (wait with ph_poll_sock), handed to fn(sock, arg) and closed after.
 * Stops at fn's first nonzero answer, which it returns; 0 when fn never
 * gave one (no address connected), -ENOENT when the name does not
 * resolve, or -errno. */
int ph_tcp_each(const char *host, unsigned port, int (*fn)(int sock, void *arg), void *arg);

/* recv(2) of at most len bytes from sock: the bytes read, 0 at the end,
 * or -errno (-EWOULDBLOCK: nothing yet on a non-blocking socket). */
int64_t ph_sock_recv(int sock, void *buf, size_t len);

#endif
