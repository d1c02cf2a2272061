/* SPDX-License-Identifier: ISC */
/* phsync/console.h over platform/psys.h: the command's terminal and stop
 * requests, the same on every OS. */
#include <errno.h>
#include <string.h>

#include "phsync/console.h"
#include "phsync/error.h"
#include "psys.h"

/* Called through a volatile pointer, so a secret's wipe is never optimised
 * away (explicit_bzero is not everywhere: macOS has memset_s instead). */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

int
phsync_on_stop(void (*fn)(int n))
{
	return ph_on_interrupt(fn) == 0 ? 0 : PHSYNC_EIO;
}

int
phsync_on_session_end(void (*fn)(void))
{
	return ph_on_session_end(fn) == 0 ? 0 : PHSYNC_EUNSUPPORTED;
}

int
phsync_hangup_stops(void)
{
	return ph_hangup_is_close();
}

int
phsync_tty_exists(void)
{
	struct ph_tty *t;

	if (ph_tty_open(1, &t) != 0)
		return 0;
	ph_tty_close(t);
	return 1;
}

int
phsync_tty_ask(const char *question, int echo, char *buf, size_t len,
               int (*stop)(void *arg), void *arg)
{
	struct ph_tty *t;
	int rc;

	if (len == 0)
		return PHSYNC_EINVAL;
	buf[0] = '\0';
	if (ph_tty_open(echo, &t) != 0)
		return PHSYNC_ENOENT;
	if (ph_tty_write(t, question) != 0)
		rc = PHSYNC_EIO;
	else if ((rc = ph_tty_read_line(t, buf, len, stop, arg)) != 0)
		rc = rc == -EINTR ? PHSYNC_EINTR : PHSYNC_EIO;
	ph_tty_close(t);
	if (rc != 0)
		wipe_memset(buf, 0, len);
	return rc;
}

void
phsync_tty_restore(void)
{
	ph_tty_restore_now();
}
