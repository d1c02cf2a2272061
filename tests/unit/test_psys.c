/* SPDX-License-Identifier: ISC */
/* platform/psys.h through whichever side was built: POSIX here
 * (unit.test_psys), Windows as build-win/tests/unit/win32/test_psys.exe
 * under Wine (win.unit.test_psys). The same checks on both: the places a
 * user's files live, a pattern's files in order, and sockets: a
 * non-blocking connect ended by ph_poll_sock, bytes seen by it, a refused
 * connect's error. Only the Windows and POSIX socket headers differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#define SEP "\\"
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#define SEP "/"
#endif

#include "pfs.h"
#include "platform.h"
#include "psys.h"

static void
test_places(void **state)
{
	char home[1024], ssh[1024], want[1100], st[1024], sys[1024], user[256];
	size_t n;

	(void)state;
	assert_int_equal(ph_home_dir(home, sizeof(home)), 0);
	assert_int_equal(ph_path_absolute(home), 1);
	assert_int_equal(ph_ssh_dir(ssh, sizeof(ssh)), 0);
	snprintf(want, sizeof(want), "%s" SEP ".ssh", home);
	assert_string_equal(ssh, want);
	assert_int_equal(ph_state_home(st, sizeof(st)), 0);
	assert_int_equal(ph_path_absolute(st), 1);
	n = strlen(st);
	assert_true(n > 7 && strcmp(st + n - 7, SEP "phsync") == 0);
	assert_int_equal(ph_ssh_system_config(sys, sizeof(sys)), 0);
	assert_int_equal(ph_path_absolute(sys), 1);
	n = strlen(sys);
	assert_true(n > 14 && strcmp(sys + n - 14, "ssh" SEP "ssh_config") == 0);
	assert_int_equal(ph_user_name(user, sizeof(user)), 0);
	assert_true(user[0] != '\0');
	/* Too small a buffer is said, never cut. */
	assert_int_equal(ph_ssh_dir(ssh, 4), -ENAMETOOLONG);
	assert_int_equal(ph_path_absolute("rel/x"), 0);
	assert_int_equal(ph_path_absolute("x"), 0);
#ifdef _WIN32
	assert_int_equal(ph_path_absolute("C:\\Users"), 1);
	assert_int_equal(ph_path_absolute("c:/x"), 1);
	assert_int_equal(ph_path_absolute("\\\\server\\share"), 1);
	assert_int_equal(ph_path_absolute("C:x"), 0);
#else
	/* The POSIX side: $HOME and $XDG_STATE_HOME when absolute. */
	setenv("HOME", "/nowhere/h", 1);
	setenv("XDG_STATE_HOME", "/nowhere/st", 1);
	assert_int_equal(ph_ssh_dir(ssh, sizeof(ssh)), 0);
	assert_string_equal(ssh, "/nowhere/h/.ssh");
	assert_int_equal(ph_state_home(st, sizeof(st)), 0);
	assert_string_equal(st, "/nowhere/st/phsync");
	setenv("XDG_STATE_HOME", "relative", 1);
	assert_int_equal(ph_state_home(st, sizeof(st)), 0);
	assert_string_equal(st, "/nowhere/h/.local/state/phsync");
#endif
}

struct seen {
	char names[8][64];
	int n;
	int stop_at; /* the call that returns 7 (0: none) */
};

static int
collect(const char *path, void *arg)
{
	struct seen *s = arg;
	const char *base = strrchr(path, '/');

	assert_true(s->n < 8);
	snprintf(s->names[s->n++], sizeof(s->names[0]), "%s", base ? base + 1 : path);
	return s->n == s->stop_at ? 7 : 0;
}

static void
put_file(int dir, const char *name)
{
	int fd = ph_openat(dir, name, PH_O_WRONLY | PH_O_CREAT | PH_O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, "x", 1, 0), 1);
	ph_close(fd);
}

static void
test_glob(void **state)
{
	struct seen s;
	int dir;

	(void)state;
	(void)ph_mkdirat(PH_AT_CWD, "psys-glob", 0700);
	dir = ph_openat(PH_AT_CWD, "psys-glob", PH_O_RDONLY | PH_O_DIR, 0);
	assert_true(dir >= 0);
	put_file(dir, "b.conf");
	put_file(dir, "a.conf");
	put_file(dir, "c.txt");
	put_file(dir, "\xc3\xa9.conf");
	memset(&s, 0, sizeof(s));
	assert_int_equal(ph_path_glob("psys-glob/*.conf", collect, &s), 0);
	/* In byte order, whatever order the folder lists them in. */
	assert_int_equal(s.n, 3);
	assert_string_equal(s.names[0], "a.conf");
	assert_string_equal(s.names[1], "b.conf");
	assert_string_equal(s.names[2], "\xc3\xa9.conf");
	memset(&s, 0, sizeof(s));
	assert_int_equal(ph_path_glob("psys-glob/c.txt", collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "c.txt");
	/* Nothing matches: fn never called. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(ph_path_glob("psys-glob/*.none", collect, &s), 0);
	assert_int_equal(ph_path_glob("no-such-folder/*", collect, &s), 0);
	assert_int_equal(s.n, 0);
	/* fn's nonzero return stops the walk and is returned. */
	s.stop_at = 2;
	assert_int_equal(ph_path_glob("psys-glob/*.conf", collect, &s), 7);
	assert_int_equal(s.n, 2);
	assert_int_equal(ph_unlinkat(dir, "a.conf", 0), 0);
	assert_int_equal(ph_unlinkat(dir, "b.conf", 0), 0);
	assert_int_equal(ph_unlinkat(dir, "c.txt", 0), 0);
	assert_int_equal(ph_unlinkat(dir, "\xc3\xa9.conf", 0), 0);
	ph_close(dir);
	assert_int_equal(ph_unlinkat(PH_AT_CWD, "psys-glob", PH_AT_REMOVEDIR), 0);
}

/* A listening loopback socket; its port in *port. */
static int
listener(unsigned short *port)
{
	struct sockaddr_in a;
	socklen_t n = sizeof(a);
	int s = ph_socket(AF_INET, SOCK_STREAM, 0, 0);

	assert_true(s >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 4), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &n), 0);
	*port = ntohs(a.sin_port);
	return s;
}

/* Starts a non-blocking connect to port on 127.0.0.1 and waits for its
 * end; returns the socket, the connect's error in *err. */
static int
connect_nb(unsigned short port, int *err)
{
	struct sockaddr_in a;
	int s = ph_socket(AF_INET, SOCK_STREAM, 0, PH_SOCK_NONBLOCK), r;

	assert_true(s >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	r = ph_sock_connect(s, (struct sockaddr *)&a, sizeof(a));
	if (r != -EINPROGRESS) {
		*err = r; /* over at once (the loopback may answer so) */
		return s;
	}
	/* No limit: the loopback's answer ends the wait. */
	r = ph_poll_sock(s, PH_POLL_OUT, -1);
	assert_true(r > 0);
	*err = ph_sock_connect_error(s);
	return s;
}

static void
test_sockets(void **state)
{
	unsigned short port, closed;
	int l, c, a, err;
	char buf[8];

	(void)state;
	assert_int_equal(ph_net_init(), 0);
	assert_int_equal(ph_net_init(), 0); /* twice: still fine */
	l = listener(&port);
	c = connect_nb(port, &err);
	assert_int_equal(err, 0);
	a = (int)accept(l, NULL, NULL);
	assert_true(a >= 0);
	/* Nothing to read yet: the wait times out. */
	assert_int_equal(ph_poll_sock(a, PH_POLL_IN, 0), 0);
	assert_int_equal(ph_send_nosigpipe(c, "ping", 4), 4);
	assert_true(ph_poll_sock(a, PH_POLL_IN, -1) & PH_POLL_IN);
	assert_int_equal(recv(a, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "ping", 4);
	/* The peer gone: readable, and the read says the end. */
	ph_sock_close(a);
	assert_true(ph_poll_sock(c, PH_POLL_IN, -1) & (PH_POLL_IN | PH_POLL_ERR));
	assert_int_equal(recv(c, buf, sizeof(buf), 0), 0);
	ph_sock_close(c);
	/* A port nobody listens on: refused. */
	closed = port;
	ph_sock_close(l);
	c = connect_nb(closed, &err);
	assert_int_equal(err, -ECONNREFUSED);
	ph_sock_close(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_places),
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_sockets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
