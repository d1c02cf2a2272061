# SPDX-License-Identifier: ISC
"""Runs a program on a pseudo-terminal and answers its questions: the one loop the tests of
prompts (pair, host keys, Ctrl-C at a prompt, the README walk-through) share.

Answers are steps taken in order, each when its pattern shows in the output after the previous
step's match, never on a timer: a prompt that flushes what was typed ahead (a password prompt
turning echo off) has already shown its question when the step that answers it fires.
"""

import os
import pty
import re
import select
import signal
import time

from harness import check_sanitizers


class PtyRun:
    def __init__(self, code, out, argv):
        self.code = code
        self.out = out                       # bytes, as the terminal got them
        self.text = out.decode("utf-8", "replace")
        self.argv = argv
        self.matches = []                    # each step's match, in order
        self.after = 0                       # where the last step's match ended

    def __str__(self):
        return "exit %s, terminal:\n%s" % (self.code, self.text)


def run_on_pty(argv, env, steps=(), timeout=60, cwd=None, sanitizers=True):
    """Runs argv with a new pty as its controlling terminal, stdin, stdout and stderr (in its
    own session, so the whole group is killed at the end if it is still running).

    steps: a list of (pattern, action): pattern a bytes regex, searched in the output after the
    previous step's match; action the bytes to type (a newline is not added), or a callable
    action(pid, fd, match) that types, signals or only notes. A run still going after timeout
    seconds is killed (code -9). Returns a PtyRun; .matches says how many steps were taken."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            if cwd:
                os.chdir(cwd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    out, todo, status, eof = b"", list(steps), None, False
    run_matches, after = [], 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if eof:
                # The terminal closed: the program is ending.
                time.sleep(0.05)
            else:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:      # EIO: the last holder of the terminal closed it
                        chunk = b""
                    out += chunk
                    eof = not chunk
            while todo:
                m = re.compile(todo[0][0]).search(out, after)
                if m is None:
                    break
                action = todo.pop(0)[1]
                after = m.end()
                run_matches.append(m)
                if callable(action):
                    action(pid, fd, m)
                else:
                    os.write(fd, action)
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid:
                status = st
                break
    finally:
        if status is None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
        # What was still in the terminal when the program ended.
        try:
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                out += chunk
        except OSError:
            pass
        os.close(fd)
    res = PtyRun(os.waitstatus_to_exitcode(status), out, argv)
    res.matches, res.after = run_matches, after
    if sanitizers:
        check_sanitizers(res.code, res.text, argv)
    return res
