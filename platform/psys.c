/* SPDX-License-Identifier: ISC */
/* psys.h, the POSIX side: poll, getpwuid, $HOME and XDG, glob, sigaction
 * and termios. The Windows side is platform/win32/psys.c. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "platform.h"
#include "psys.h"

int
ph_net_init(void)
{
	return 0;
}

int
ph_poll_sock(int sock, unsigned events, int timeout_ms)
{
	struct pollfd pfd = { sock, 0, 0 };
	unsigned got = 0;
	int r;

	if (events & PH_POLL_IN)
		pfd.events |= POLLIN;
	if (events & PH_POLL_OUT)
		pfd.events |= POLLOUT;
	if ((r = poll(&pfd, 1, timeout_ms)) < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return 0;
	if (pfd.revents & POLLIN)
		got |= PH_POLL_IN;
	if (pfd.revents & POLLOUT)
		got |= PH_POLL_OUT;
	if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
		got |= PH_POLL_ERR;
	return (int)got;
}

int
ph_sock_pace(int sock, unsigned bytes)
{
#ifdef TCP_NOTSENT_LOWAT
	int v = (int)bytes;

	return setsockopt(sock, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v)) == 0 ? 0 : -errno;
#else
	(void)sock;
	(void)bytes;
	return -ENOSYS;
#endif
}

int
ph_sock_connect(int sock, const struct sockaddr *addr, size_t len)
{
	return connect(sock, addr, (socklen_t)len) == 0 ? 0 : -errno;
}

int
ph_sock_connect_error(int sock)
{
	int err = 0;
	socklen_t n = sizeof(err);

	if (getsockopt(sock, SOL_SOCKET, SO_ERROR, &err, &n) != 0)
		return -errno;
	return -err;
}

void
ph_sock_close(int sock)
{
	if (sock >= 0)
		close(sock);
}

/* snprintf into out: 0, or -ENAMETOOLONG when it does not fit. */
static int
put(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
ph_home_dir(char *out, size_t len)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if ((h == NULL || h[0] != '/') && (pw = getpwuid(getuid())) != NULL)
		h = pw->pw_dir;
	if (h == NULL || h[0] != '/')
		return -ENOENT;
	return put(out, len, h, "");
}

int
ph_ssh_dir(char *out, size_t len)
{
	char home[4096];
	int rc;

	if ((rc = ph_home_dir(home, sizeof(home))) != 0)
		return rc;
	return put(out, len, home, "/.ssh");
}

int
ph_ssh_system_config(char *out, size_t len)
{
	return put(out, len, "/etc/ssh/ssh_config", "");
}

int
ph_state_home(char *out, size_t len)
{
	const char *x = getenv("XDG_STATE_HOME");
	char home[4096];
	int rc;

	if (x != NULL && x[0] == '/')
		return put(out, len, x, "/phsync");
	if ((rc = ph_home_dir(home, sizeof(home))) != 0)
		return rc;
	return put(out, len, home, "/.local/state/phsync");
}

int
ph_path_absolute(const char *path)
{
	return path[0] == '/';
}

int
ph_user_name(char *out, size_t len)
{
	struct passwd *pw = getpwuid(getuid());
	const char *u = pw != NULL ? pw->pw_name : getenv("USER");

	if (u == NULL || u[0] == '\0')
		return -ENOENT;
	return put(out, len, u, "");
}

int
ph_path_glob(const char *pattern, int (*fn)(const char *path, void *arg), void *arg)
{
	glob_t g;
	size_t i;
	int rc = 0;

	/* glob sorts the paths (no GLOB_NOSORT). */
	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc && rc == 0; i++)
		rc = fn(g.gl_pathv[i], arg);
	globfree(&g);
	return rc;
}

struct ph_agent_conn {
	int fd;
};

int
ph_agent_open(struct ph_agent_conn **out)
{
	const char *path = getenv("SSH_AUTH_SOCK");
	struct sockaddr_un sa;
	struct ph_agent_conn *c;
	int fd, rc;

	if (path == NULL || path[0] == '\0')
		return -ENOENT;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	if ((fd = ph_socket(AF_UNIX, SOCK_STREAM, 0, 0)) < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = errno == ECONNREFUSED ? -ENOENT : -errno;
		close(fd);
		return rc;
	}
	if ((c = malloc(sizeof(*c))) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	*out = c;
	return 0;
}

int
ph_agent_io(struct ph_agent_conn *c, void *buf, size_t len, int writing, int timeout_ms)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n;
		int r = ph_poll_sock(c->fd, writing ? PH_POLL_OUT : PH_POLL_IN, timeout_ms);

		if (r < 0)
			return r;
		if (r == 0)
			return -ETIMEDOUT; /* (or a signal: the agent answers at once) */
		n = writing ? ph_send_nosigpipe(c->fd, p, len) : recv(c->fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void
ph_agent_close(struct ph_agent_conn *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c);
}

/* The stop handler's state, the only mutable globals here: what to call,
 * how many stops came, and the terminal whose echo a prompt turned off. */
static void (*volatile stop_fn)(int);
static volatile sig_atomic_t stops;
static volatile sig_atomic_t tty_changed;
static int tty_fd = -1;
static struct termios tty_saved;

static void
on_signal(int sig)
{
	void (*fn)(int) = stop_fn;

	(void)sig;
	stops++;
	if (fn != NULL)
		fn((int)stops);
}

int
ph_on_interrupt(void (*fn)(int n))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	stop_fn = fn;
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
	    sigaction(SIGHUP, &sa, NULL) != 0)
		return -errno;
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return -errno;
	return 0;
}

struct ph_tty {
	int fd;
	int quiet; /* echo turned off: tty_saved holds the mode to put back */
};

int
ph_tty_open(int echo, struct ph_tty **out)
{
	struct ph_tty *t;
	struct termios raw;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -ENXIO;
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	t->fd = fd;
	/* Echo off before the question shows, as OpenSSH's readpassphrase:
	 * flushing what was typed ahead after it showed threw away an answer
	 * typed at once (and echoed it). */
	if (!echo && tcgetattr(fd, &tty_saved) == 0) {
		raw = tty_saved;
		raw.c_lflag &= ~(tcflag_t)ECHO;
		tty_fd = fd;
		tty_changed = 1;
		t->quiet = 1;
		tcsetattr(fd, TCSAFLUSH, &raw);
	}
	*out = t;
	return 0;
}

int
ph_tty_write(struct ph_tty *t, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(t->fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int
ph_tty_read_line(struct ph_tty *t, char *buf, size_t len, int (*stop)(void *arg), void *arg)
{
	size_t n = 0;

	for (;;) {
		struct pollfd pfd = { t->fd, POLLIN, 0 };
		ssize_t r;
		char c;

		if (stop != NULL && stop(arg)) {
			buf[0] = '\0';
			return -EINTR;
		}
		/* Wait in slices: a signal that lands just before read() would
		 * otherwise leave the prompt waiting for a key. */
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		r = read(t->fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || c == '\n')
			break;
		if (n + 1 < len)
			buf[n++] = c;
	}
	buf[n] = '\0';
	return 0;
}

void
ph_tty_close(struct ph_tty *t)
{
	if (t == NULL)
		return;
	if (t->quiet) {
		tcsetattr(t->fd, TCSAFLUSH, &tty_saved);
		tty_changed = 0;
		tty_fd = -1;
		(void)!write(t->fd, "\n", 1);
	}
	close(t->fd);
	free(t);
}

void
ph_tty_restore_now(void)
{
	if (tty_changed)
		tcsetattr(tty_fd, TCSANOW, &tty_saved);
}
