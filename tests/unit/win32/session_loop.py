#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The daemon as Windows runs it: phsync.exe under Wine against the loopback
OpenSSH, in a Wine prefix of its own whose graphics driver is Wine's null
driver (windows can exist there without a display, so the session's end can
be told as Windows tells it).

    python3 session_loop.py [EMULATOR...] PHSYNC_EXE

- its default config: `phsync daemon` with no -c and no file says it cannot
  read %APPDATA%\\phsync\\phsync.conf (the roaming application data of the
  prefix's user, not the profile's .config; exit 1); once a pull pair is
  written there, `phsync daemon` alone runs it (the phone's file arrives);
- the end of the session: while that daemon pulls a 12 MB file, `wineboot
  --end-session` sends WM_QUERYENDSESSION and WM_ENDSESSION to the
  top-level windows, as a log-off or shutdown does (a console program that
  loads user32 gets no CTRL_LOGOFF_EVENT/CTRL_SHUTDOWN_EVENT); the daemon's
  hidden window turns it into its stop: "end of session: stopping", exit 0
  before Wine would end it, no temp file left, the file whole or absent.
Exits 0 when every check holds, 1 with what differed.
"""

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from held_loop import run  # noqa: E402
from pull_loop import Failed, check, read_or_none, run_steps  # noqa: E402

T0 = 1700000000
DEADLINE = 180  # Wine starts slowly under load; a wait that passes returns at once


def own_prefix(emu, env):
    """Makes env's Wine prefix, with the null graphics driver, its wineserver
    restarted so that the desktop takes it."""
    r = run(emu + ["wineboot", "-i"], env)
    check(r.returncode == 0, "wineboot -i exited %d" % r.returncode, r)
    r = run(emu + ["reg", "add", "HKCU\\Software\\Wine\\Drivers", "/v", "Graphics", "/d",
                   "null", "/f"], env)
    check(r.returncode == 0, "reg add exited %d" % r.returncode, r)
    subprocess.run(["wineserver", "-k"], env=env, timeout=120)
    subprocess.run(["wineserver", "-w"], env=env, timeout=120)


class Daemon:
    """The exe in the background, its stderr in a file (a Wine process may
    start the desktop, which keeps its pipes open)."""

    def __init__(self, argv, env, path):
        self.path = path
        self.f = open(path, "wb")
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=self.f)

    def text(self):
        with open(self.path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for(self, cond, what):
        end = time.monotonic() + DEADLINE
        while not cond():
            if self.p.poll() is not None and not cond():
                raise Failed("phsync exited (%d) before %s:\n%s"
                             % (self.p.returncode, what, self.text()[-4000:]))
            if time.monotonic() > end:
                raise Failed("no %s within %d s:\n%s" % (what, DEADLINE, self.text()[-4000:]))
            time.sleep(0.05)

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.f.close()


def daemon_session(exe, srv, tmp, env):
    env = dict(env, WINEPREFIX=os.path.join(tmp, "wine"))
    try:
        own_prefix(exe[:-1], env)
        r = run(exe + ["daemon"], env)
        err = r.stderr.decode(errors="replace")
        m = re.search(r"([A-Za-z]:\\\S*\\AppData\\Roaming\\phsync\\phsync\.conf)", err)
        check(r.returncode == 1 and m is not None,
              "a daemon without a config did not name %APPDATA%\\phsync\\phsync.conf", r)
        r = run(["winepath", "-u", m.group(1)], env)
        conf = r.stdout.decode().strip()
        check(r.returncode == 0 and conf.startswith(env["WINEPREFIX"]),
              "winepath -u %s: %r" % (m.group(1), conf), r)
        phone = os.path.join(tmp, "phone")
        local = os.path.join(tmp, "pictures")
        harness.write_file(os.path.join(phone, "IMG_0.jpg"), b"photo 0", mtime=T0)
        harness.write_file(conf, "[defaults]\nssh-config = %s\nstate-dir = %s\ninterval = 1\n\n"
                           "[photos]\ndirection = pull\nremote = phone:%s\nlocal = %s\n"
                           % (srv.config, os.path.join(tmp, "dstate"), phone, local))
        d = Daemon(exe + ["daemon"], env, os.path.join(tmp, "daemon.err"))
        try:
            d.wait_for(lambda: read_or_none(os.path.join(local, "IMG_0.jpg")) == b"photo 0",
                       "IMG_0.jpg pulled by the daemon from its default config")
            data = os.urandom(12 << 20)
            harness.write_file(os.path.join(phone, "VID_1.mp4"), data, mtime=T0 + 1)
            # The run for it has begun once its temp is there (or it came whole first).
            d.wait_for(lambda: harness.leftovers(local) or
                       read_or_none(os.path.join(local, "VID_1.mp4")) is not None,
                       "the pull of VID_1.mp4 to begin")
            r = run(exe[:-1] + ["wineboot", "--end-session"], env)
            check(r.returncode == 0, "wineboot --end-session exited %d" % r.returncode, r)
            d.wait_for(lambda: d.p.poll() is not None, "the daemon's exit")
        finally:
            d.close()
        text = d.text()
        if d.p.returncode != 0 or not re.search(r"^phsync: end of session: stopping", text, re.M):
            raise Failed("the daemon exited %d at the session's end:\n%s"
                         % (d.p.returncode, text[-4000:]))
        if harness.leftovers(local):
            raise Failed("temporary files left: %r" % harness.leftovers(local))
        got = read_or_none(os.path.join(local, "VID_1.mp4"))
        if got is not None and got != data:
            raise Failed("VID_1.mp4 is %d bytes of %d" % (len(got), len(data)))
    finally:
        subprocess.run(["wineserver", "-k"], env=env, timeout=120)


def main(argv):
    return run_steps("session_loop", __doc__, [daemon_session], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
