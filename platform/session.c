/* SPDX-License-Identifier: ISC */
/* ph_on_session_end and ph_hangup_is_close (psys.h), the POSIX side: the
 * session's end is a signal here (SIGHUP when the terminal goes, SIGTERM
 * from systemd or launchd at log-out), and SIGHUP is a reload request. The
 * Windows side is platform/win32/session.c. */
#include <errno.h>

#include "psys.h"

int
ph_on_session_end(void (*fn)(void))
{
	(void)fn;
	return -ENOSYS;
}

int
ph_hangup_is_close(void)
{
	return 0;
}
