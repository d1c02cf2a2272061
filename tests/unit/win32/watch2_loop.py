#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""`pull --watch` and `sync --watch` through phsync.exe under Wine against a
real OpenSSH sshd on 127.0.0.1 (watch_loop.py does push --watch and the daemon).

    python3 watch2_loop.py [EMULATOR...] PHSYNC_EXE

- `pull --watch --interval 1`: the first run brings the phone's photo; the poll
  (SFTP has no notifications) brings a new 300 kB photo, a photo in a new folder
  two levels deep, then the next photo in that folder, each with its bytes and
  mtime; a file made on the laptop meanwhile never goes to the phone (a pull);
  Ctrl-C (SIGINT, which Wine hands to the console handlers) stops it with status
  0 and no temporary file on the laptop.
- `sync --watch --interval 1` (two-way): the first run makes the union; a file
  made on the laptop goes up (the local events: libuv's ReadDirectoryChangesW),
  a file made on the phone comes down by the poll, each once and the right way
  (the -v lines "NAME (push)" / "NAME (pull)"), and what a run wrote here is not
  sent back; an edit on the laptop goes up; a file deleted on the phone is
  deleted here and one deleted here is deleted on the phone; Ctrl-C stops it
  with status 0, no temp file on either side, the two folders the same.
Every wait is on a condition with a generous deadline. Exits 0 when every check
holds, 1 with what differed.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from pull_loop import Failed, files, run_steps  # noqa: E402
from watch_loop import Bg, arrived  # noqa: E402

T0 = 1700000000


def gone(path):
    return not os.path.lexists(path)


def stopped(w, what, *roots):
    code = w.interrupt()
    if code != 0 or not re.search(r"^phsync: SIGINT: stopping", w.text(), re.M):
        raise Failed("%s exited %d on Ctrl-C:\n%s" % (what, code, w.text()[-4000:]))
    for root in roots:
        if harness.leftovers(root):
            raise Failed("temporary files left in %s: %r" % (root, harness.leftovers(root)))


def pull_watch(exe, srv, tmp, env):
    phone = os.path.join(tmp, "pw-phone")
    local = os.path.join(tmp, "pw-laptop")
    harness.write_file(os.path.join(phone, "DCIM", "IMG_0.jpg"), b"first", mtime=T0)
    w = Bg(exe + ["pull", "--watch", "--interval", "1", "-v", "-F", srv.config, "--state-dir",
                  os.path.join(tmp, "pw-state"), "phone:" + phone, local], env)
    try:
        w.wait_line(r": watching ")
        w.wait_for(lambda: arrived(os.path.join(local, "DCIM", "IMG_0.jpg"), b"first", T0),
                   "IMG_0.jpg pulled by the first run")
        data = harness.random_bytes(300_000, 5)
        harness.write_file(os.path.join(phone, "DCIM", "IMG_1.jpg"), data, mtime=T0 + 1)
        # Made on the laptop: a pull never sends it.
        harness.write_file(os.path.join(local, "DCIM", "laptop only.txt"), b"stays here",
                           mtime=T0 + 1)
        w.wait_for(lambda: arrived(os.path.join(local, "DCIM", "IMG_1.jpg"), data, T0 + 1),
                   "a new photo on the phone pulled by the poll")
        trip = os.path.join("DCIM", "Trip", "Day1")
        harness.write_file(os.path.join(phone, trip, "IMG_2.jpg"), b"trip", mtime=T0 + 2)
        w.wait_for(lambda: arrived(os.path.join(local, trip, "IMG_2.jpg"), b"trip", T0 + 2),
                   "a photo in a new folder on the phone")
        harness.write_file(os.path.join(phone, trip, "IMG_3.jpg"), b"trip 3", mtime=T0 + 3)
        w.wait_for(lambda: arrived(os.path.join(local, trip, "IMG_3.jpg"), b"trip 3", T0 + 3),
                   "the next photo in the new folder")
        stopped(w, "pull --watch", local)
    finally:
        w.kill()
    if not gone(os.path.join(phone, "DCIM", "laptop only.txt")):
        raise Failed("pull --watch sent a laptop file to the phone")
    want = files(phone)
    want[os.path.join("DCIM", "laptop only.txt")] = (b"stays here", T0 + 1)
    if files(local) != want:
        raise Failed("the laptop's files %r are not the phone's and its own %r"
                     % (sorted(files(local)), sorted(want)))


def moved_once(w, name, way):
    moved = [l for l in w.text().splitlines()
             if re.search(r" %s \((pull|push)\)$" % re.escape(name), l)]
    if len(moved) != 1 or not moved[0].endswith("(%s)" % way):
        raise Failed("%s went %r, not once by %s:\n%s" % (name, moved, way, w.text()[-4000:]))


def sync_watch(exe, srv, tmp, env):
    phone = os.path.join(tmp, "sw-phone")
    local = os.path.join(tmp, "sw-laptop")
    harness.write_file(os.path.join(local, "l0.txt"), b"here before", mtime=T0)
    harness.write_file(os.path.join(phone, "r0.txt"), b"phone before", mtime=T0)
    w = Bg(exe + ["sync", "--watch", "--interval", "1", "-v", "-F", srv.config, "--state-dir",
                  os.path.join(tmp, "sw-state"), "phone:" + phone, local], env)
    try:
        w.wait_line(r": watching ")
        w.wait_for(lambda: arrived(os.path.join(phone, "l0.txt"), b"here before", T0)
                   and arrived(os.path.join(local, "r0.txt"), b"phone before", T0),
                   "the union made by the first run")
        harness.write_file(os.path.join(local, "here.txt"), b"made on Windows\r\n", mtime=T0 + 1)
        w.wait_for(lambda: arrived(os.path.join(phone, "here.txt"), b"made on Windows\r\n",
                                   T0 + 1), "a laptop file sent to the phone")
        harness.write_file(os.path.join(phone, "Notes", "phone.txt"), b"made on the phone",
                           mtime=T0 + 2)
        w.wait_for(lambda: arrived(os.path.join(local, "Notes", "phone.txt"),
                                   b"made on the phone", T0 + 2),
                   "a phone file brought here by the poll")
        harness.write_file(os.path.join(local, "here.txt"), b"edited on Windows, longer\r\n",
                           mtime=T0 + 3)
        w.wait_for(lambda: arrived(os.path.join(phone, "here.txt"),
                                   b"edited on Windows, longer\r\n", T0 + 3),
                   "the laptop's edit on the phone")
        os.remove(os.path.join(phone, "r0.txt"))
        w.wait_for(lambda: gone(os.path.join(local, "r0.txt")), "r0.txt deleted here")
        os.remove(os.path.join(local, "l0.txt"))
        w.wait_for(lambda: gone(os.path.join(phone, "l0.txt")), "l0.txt deleted on the phone")
        # A last phone file: every run before it has said what it moved.
        harness.write_file(os.path.join(phone, "last.txt"), b"last", mtime=T0 + 4)
        w.wait_for(lambda: arrived(os.path.join(local, "last.txt"), b"last", T0 + 4),
                   "last.txt brought here")
        stopped(w, "sync --watch", local, phone)
    finally:
        w.kill()
    for name, way in (("l0.txt", "push"), ("r0.txt", "pull"), ("Notes/phone.txt", "pull"),
                      ("last.txt", "pull")):
        moved_once(w, name, way)
    if files(local) != files(phone):
        raise Failed("the laptop's files %r are not the phone's %r"
                     % (sorted(files(local)), sorted(files(phone))))


def main(argv):
    return run_steps("watch2_loop", __doc__, (pull_watch, sync_watch), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
