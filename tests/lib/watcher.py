# SPDX-License-Identifier: ISC
"""Helpers for the watcher's tests (test_watch.py, test_daemon.py): a phsync process running in
the background whose stderr is read line by line, and waits on conditions (never on time alone).
"""

import os
import re
import signal
import subprocess
import threading
import time

from harness import check_sanitizers, phsync_bin

# Generous: an ssh login takes 2 s on some machines, and the tests run under ASan.
DEADLINE = 60


def wait_for(cond, timeout=DEADLINE, what="condition", interval=0.05):
    """Polls cond() until it returns something true; returns it, or fails the test after
    timeout seconds naming `what`."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out after %s s waiting for %s" % (timeout, what))
        time.sleep(interval)


def read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def arrived(path, data, mtime=None):
    """True once path holds exactly data (and has mtime, whole seconds, if given)."""
    if read_or_none(path) != data:
        return False
    return mtime is None or int(os.stat(path).st_mtime) == int(mtime)


class Bg:
    """phsync ARGS in the background (own session, no tty, the harness's environment), stderr
    collected in .lines by a thread."""

    def __init__(self, srv, args, env=None, prefix=()):
        argv = list(prefix) + [phsync_bin()] + [str(a) for a in args]
        self.argv = argv
        self.lines = []
        self._lock = threading.Lock()
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=srv.env(env), cwd=srv.home,
                                  start_new_session=True, umask=0o022)
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self.code = None

    def _read(self):
        for raw in self.p.stderr:
            with self._lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def text(self):
        with self._lock:
            return "\n".join(self.lines)

    def matching(self, pattern):
        rx = re.compile(pattern)
        with self._lock:
            return [l for l in self.lines if rx.search(l)]

    def wait_line(self, pattern, timeout=DEADLINE, count=1):
        """Waits until count stderr lines match pattern (a regex); fails naming the output, at
        once if phsync exited without printing them."""
        end = time.monotonic() + timeout
        while True:
            got = self.matching(pattern)
            if len(got) >= count:
                return got
            if self.p.poll() is not None:
                self._t.join(5)
                if len(self.matching(pattern)) >= count:
                    return self.matching(pattern)
                raise AssertionError("phsync exited (%r) with no stderr line matching %r:\n%s"
                                     % (self.p.poll(), pattern, self.text()[-6000:]))
            if time.monotonic() > end:
                raise AssertionError("no stderr line matching %r within %s s:\n%s"
                                     % (pattern, timeout, self.text()[-6000:]))
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM, timeout=DEADLINE):
        """Sends sig and waits for the exit; returns the exit code (sanitizer reports fail)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=DEADLINE):
        try:
            self.code = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("phsync did not exit within %s s:\n%s" % (timeout, self.text()[-6000:]))
        self._t.join(5)
        self.p.stdout.close()
        check_sanitizers(self.code, self.text(), self.argv)
        return self.code

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
            self.p.wait()
        self._t.join(5)
        for f in (self.p.stdout, self.p.stderr):
            if f is not None and not f.closed:
                f.close()
