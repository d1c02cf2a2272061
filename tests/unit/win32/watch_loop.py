#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The watcher through phsync.exe under Wine against a real OpenSSH sshd on
127.0.0.1.

    python3 watch_loop.py [EMULATOR...] PHSYNC_EXE

Starts a throwaway sshd (tests/lib/harness.py) and runs the exe (under the
emulator: Wine) with the server's ssh_config (-F) and a state folder of its
own, as a Windows user would:
- `push --watch`: the first run sends what the laptop folder held; a file
  written after the start (libuv's ReadDirectoryChangesW, which Wine serves
  from inotify) arrives on the phone with its bytes and mtime, and then an
  edit of it; Ctrl-C (SIGINT to the Wine process, which Wine hands to the
  console handlers as CTRL_C_EVENT: libuv's uv_signal) stops it with status
  0 and no temporary file left on the phone; so does Ctrl-C once a run for a
  12 MB file began (the file whole on the phone or not there, no temp);
- `daemon -c FILE` with one pull pair: the phone's file is pulled by the
  first run, new photos and a new folder on the phone by the poll (every
  second: SFTP has no notifications); a second daemon on the same config
  finds the lock (LockFileEx) held and exits 1, naming the config as
  Windows spells it (Z:\\tmp\\..., its backslashes not escaped); Ctrl-C stops the first
  with status 0, no temporary file left on the laptop.
Every wait is on a condition (the bytes on disk, a line on stderr) with a
generous deadline; nothing depends on how fast Wine runs. Exits 0 when every
check holds, 1 with what differed.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from pull_loop import Failed, files, read_or_none, run_steps  # noqa: E402

T0 = 1700000000
DEADLINE = 120  # Wine starts slowly; a wait that passes returns at once


def arrived(path, data, mtime):
    return read_or_none(path) == data and int(os.stat(path).st_mtime) == mtime


class Bg:
    """The exe in the background, its stderr collected line by line."""

    def __init__(self, argv, env):
        self.lines = []
        self.lock = threading.Lock()
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for raw in self.p.stderr:
            with self.lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def text(self):
        with self.lock:
            return "\n".join(self.lines)

    def wait_for(self, cond, what):
        end = time.monotonic() + DEADLINE
        while not cond():
            if self.p.poll() is not None:
                self.t.join(5)
                if cond():
                    return
                raise Failed("phsync exited (%d) before %s:\n%s"
                             % (self.p.returncode, what, self.text()[-4000:]))
            if time.monotonic() > end:
                raise Failed("no %s within %d s:\n%s" % (what, DEADLINE, self.text()[-4000:]))
            time.sleep(0.05)

    def wait_line(self, pattern, count=1):
        rx = re.compile(pattern)
        self.wait_for(lambda: sum(1 for l in self.text().splitlines() if rx.search(l)) >= count,
                      "%d stderr line(s) matching %r" % (count, pattern))

    def interrupt(self):
        """Ctrl-C, as Wine delivers it; returns the exit code."""
        self.p.send_signal(signal.SIGINT)
        try:
            code = self.p.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            raise Failed("phsync did not stop on Ctrl-C:\n" + self.text()[-4000:])
        self.t.join(5)
        return code

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def push_watch(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    state = os.path.join(tmp, "state")
    os.makedirs(phone)
    harness.write_file(os.path.join(local, "old.jpg"), b"before the start", mtime=T0)
    w = Bg(exe + ["push", "--watch", "-v", "-F", srv.config, "--state-dir", state, local,
                  "phone:" + phone], env)
    try:
        w.wait_line(r": watching ")
        w.wait_for(lambda: arrived(os.path.join(phone, "old.jpg"), b"before the start", T0),
                   "old.jpg on the phone (the first run)")
        note = os.path.join(local, "note.txt")
        harness.write_file(note, b"written on Windows\r\n", mtime=T0 + 60)
        w.wait_for(lambda: arrived(os.path.join(phone, "note.txt"), b"written on Windows\r\n",
                                   T0 + 60), "the new note.txt on the phone with its mtime")
        harness.write_file(note, b"edited on Windows, longer now\r\n", mtime=T0 + 120)
        w.wait_for(lambda: arrived(os.path.join(phone, "note.txt"),
                                   b"edited on Windows, longer now\r\n", T0 + 120),
                   "the edited note.txt on the phone with its mtime")
        # A folder made after the start, and a file in it (the watch is recursive).
        deep = os.path.join(local, "Trip", "Day 1", "IMG 1.jpg")
        harness.write_file(deep, b"trip photo", mtime=T0 + 180)
        w.wait_for(lambda: arrived(os.path.join(phone, "Trip", "Day 1", "IMG 1.jpg"),
                                   b"trip photo", T0 + 180), "the file in a new folder")
        # Stopped while idle: once the last run said what it did.
        w.wait_line(r"push: 1 file\(s\) copied", count=4)
        code = w.interrupt()
    finally:
        w.kill()
    if code != 0 or not re.search(r"^phsync: SIGINT: stopping", w.text(), re.M):
        raise Failed("push --watch exited %d on Ctrl-C:\n%s" % (code, w.text()[-4000:]))
    if harness.leftovers(phone):
        raise Failed("temporary files left on the phone: %r" % harness.leftovers(phone))
    if files(phone) != files(local):
        raise Failed("the phone's files %r are not the laptop's %r"
                     % (sorted(files(phone)), sorted(files(local))))


def stop_in_flight(exe, srv, tmp, env):
    """Ctrl-C once a run for a 12 MB file began: the file in flight is
    finished or abandoned, its temp removed (under PH_PUSH_RESUME_MIN, 16
    MiB: a larger cut file keeps its temp for the next run to resume), never
    left half under its name."""
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    w = Bg(exe + ["push", "--watch", "-v", "-F", srv.config, "--state-dir",
                  os.path.join(tmp, "state"), local, "phone:" + phone], env)
    try:
        w.wait_line(r": watching ")
        data = os.urandom(12 << 20)
        harness.write_file(os.path.join(local, "VID_1.mp4"), data, mtime=T0 + 240)
        w.wait_line(r"change\(s\): VID_1\.mp4")
        code = w.interrupt()
    finally:
        w.kill()
    if code != 0 or not re.search(r"^phsync: SIGINT: stopping", w.text(), re.M):
        raise Failed("push --watch exited %d on Ctrl-C in a run:\n%s" % (code, w.text()[-4000:]))
    if harness.leftovers(phone):
        raise Failed("temporary files left on the phone: %r" % harness.leftovers(phone))
    got = read_or_none(os.path.join(phone, "VID_1.mp4"))
    if got is not None and got != data:
        raise Failed("VID_1.mp4 on the phone is %d bytes of %d" % (len(got), len(data)))


def daemon_pull(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone-dcim")
    local = os.path.join(tmp, "pictures")
    conf = os.path.join(tmp, "phsync.conf")
    harness.write_file(os.path.join(phone, "IMG_0.jpg"), b"photo 0", mtime=T0)
    with open(conf, "w") as f:
        f.write("[defaults]\nssh-config = %s\nstate-dir = %s\ninterval = 1\n\n"
                "[photos]\ndirection = pull\nremote = phone:%s\nlocal = %s\n"
                % (srv.config, os.path.join(tmp, "dstate"), phone, local))
    d = Bg(exe + ["daemon", "-c", conf], env)
    try:
        d.wait_line(r"^phsync: photos: watching ")
        d.wait_for(lambda: arrived(os.path.join(local, "IMG_0.jpg"), b"photo 0", T0),
                   "IMG_0.jpg pulled by the first run")
        # The phone is polled every interval: a new photo and a new folder come down.
        harness.write_file(os.path.join(phone, "IMG_1.jpg"), b"photo 1" * 1000, mtime=T0 + 1)
        harness.write_file(os.path.join(phone, "Trip", "IMG_2.jpg"), b"photo 2", mtime=T0 + 2)
        d.wait_for(lambda: arrived(os.path.join(local, "IMG_1.jpg"), b"photo 1" * 1000, T0 + 1)
                   and arrived(os.path.join(local, "Trip", "IMG_2.jpg"), b"photo 2", T0 + 2),
                   "the phone's new photos pulled by the poll")
        # One daemon per config: a second one finds the lock (LockFileEx) held.
        r = subprocess.run(exe + ["daemon", "-c", conf], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 1 or "another phsync daemon already runs" not in err:
            raise Failed("a second daemon on the same config exited %d:\n%s"
                         % (r.returncode, err))
        # Its message names the config by its Windows path, backslashes as they are.
        shown = "Z:" + conf.replace("/", "\\")
        if "runs on %s (pid " % shown not in err:
            raise Failed("the second daemon's message does not name %s:\n%s" % (shown, err))
        code = d.interrupt()
    finally:
        d.kill()
    if code != 0 or not re.search(r"^phsync: SIGINT: stopping", d.text(), re.M):
        raise Failed("the daemon exited %d on Ctrl-C:\n%s" % (code, d.text()[-4000:]))
    if harness.leftovers(local):
        raise Failed("temporary files left on the laptop: %r" % harness.leftovers(local))
    if files(local) != files(phone):
        raise Failed("the laptop's files %r are not the phone's %r"
                     % (sorted(files(local)), sorted(files(phone))))


def main(argv):
    return run_steps("watch_loop", __doc__, (push_watch, stop_in_flight, daemon_pull), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
