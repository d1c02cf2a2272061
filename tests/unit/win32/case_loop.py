#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Case-insensitive names on a Windows laptop: phsync.exe under Wine against
the loopback OpenSSH. Wine looks names up without case on its Z: drive, as
NTFS does on Windows, and scan/probe.c's ph_probe_fold finds that out by
asking the folder (a stat of the case-swapped name), so the pull behaves as
on a case-insensitive Mac (docs/MACOS.md, docs/TWOWAY.md):

    python3 case_loop.py [EMULATOR...] PHSYNC_EXE

- pull: the phone's IMG.jpg and img.jpg (and folders Dir/ and dir/) are
  both kept, the second as `img (2).jpg` (`dir (2)/`), each with a warning
  naming it; never one file written over the other; a second pull moves
  nothing; a laptop file spelt in another case (Photo.JPG for the phone's
  photo.jpg, same bytes) is that file: nothing copied beside it;
- later: a phone name that arrives when its other-case twin is already on
  the laptop goes beside as `NAME (2).EXT` too, and an edit of the first
  updates the first in place;
- sync (two-way, from a fresh state): the laptop's `img (2).jpg` is the
  phone's img.jpg, not a new file for the phone; an edit of it on the laptop
  reaches the phone's img.jpg; a run after that moves nothing.
Exits 0 when every check holds, 1 with what differed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from held_loop import run  # noqa: E402
from pull_loop import check, events, file_paths, files, run_steps  # noqa: E402

T0 = 1700000000


def warned(r):
    return sorted(e.get("path") for e in events(r) if e.get("event") == "warning")


def done(r):
    return file_paths(r, "ok")


def both_kept(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    for rel, data, t in (("IMG.jpg", b"upper", T0), ("img.jpg", b"lower", T0 + 1),
                         ("Dir/a.txt", b"A", T0), ("dir/b.txt", b"B", T0)):
        harness.write_file(os.path.join(phone, rel), data, mtime=t)
    pull = exe + ["pull", "-F", srv.config, "--state-dir", os.path.join(tmp, "st"), "--json",
                  "phone:" + phone, local]
    r = run(pull, env)
    check(r.returncode == 0, "the pull exited %d" % r.returncode, r)
    want = {"IMG.jpg": (b"upper", T0), "img (2).jpg": (b"lower", T0 + 1),
            "Dir/a.txt": (b"A", T0), "dir (2)/b.txt": (b"B", T0)}
    check(files(local) == want, "the laptop holds %r" % files(local), r)
    check(warned(r) == ["dir", "img.jpg"], "warnings for %r" % warned(r), r)
    check(any("img (2).jpg" in e.get("message", "") for e in events(r)
              if e.get("event") == "warning"), "the warning does not name img (2).jpg", r)
    r = run(pull, env)
    check(r.returncode == 0 and events(r)[-1].get("files_done") == 0,
          "a second pull moved something", r)
    check(files(local) == want, "the second pull changed the laptop: %r" % files(local), r)


def later_twin(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone2")
    local = os.path.join(tmp, "laptop2")
    harness.write_file(os.path.join(phone, "photo.jpg"), b"same photo", mtime=T0)
    harness.write_file(os.path.join(local, "Photo.JPG"), b"same photo", mtime=T0)
    harness.write_file(os.path.join(phone, "IMG.jpg"), b"upper", mtime=T0)
    pull = exe + ["pull", "-F", srv.config, "--state-dir", os.path.join(tmp, "st2"), "--json",
                  "phone:" + phone, local]
    r = run(pull, env)
    check(r.returncode == 0, "the pull exited %d" % r.returncode, r)
    check(done(r) == ["IMG.jpg"], "the first pull copied %r, not IMG.jpg alone" % done(r), r)
    check(files(local) == {"Photo.JPG": (b"same photo", T0), "IMG.jpg": (b"upper", T0)},
          "the laptop after the first pull: %r" % files(local), r)

    harness.write_file(os.path.join(phone, "img.jpg"), b"lower", mtime=T0 + 100)
    harness.write_file(os.path.join(phone, "IMG.jpg"), b"upper edited", mtime=T0 + 200)
    r = run(pull, env)
    check(r.returncode == 0, "the second pull exited %d" % r.returncode, r)
    check(warned(r) == ["img.jpg"], "warnings for %r" % warned(r), r)
    want = {"Photo.JPG": (b"same photo", T0), "IMG.jpg": (b"upper edited", T0 + 200),
            "img (2).jpg": (b"lower", T0 + 100)}
    check(files(local) == want, "the laptop after the twin came: %r" % files(local), r)

    sync = exe + ["sync", "-F", srv.config, "--state-dir", os.path.join(tmp, "st3"), "--json",
                  "phone:" + phone, local]
    phone_want = {"photo.jpg": (b"same photo", T0), "IMG.jpg": (b"upper edited", T0 + 200),
                  "img.jpg": (b"lower", T0 + 100)}
    r = run(sync, env)
    check(r.returncode == 0 and events(r)[-1].get("files_done") == 0,
          "a first two-way run over matching sides moved something", r)
    check(files(local) == want and files(phone) == phone_want,
          "the first two-way run changed a side: %r %r" % (files(local), files(phone)), r)
    harness.write_file(os.path.join(local, "img (2).jpg"), b"lower, edited on Windows",
                       mtime=T0 + 300)
    r = run(sync, env)
    check(r.returncode == 0 and done(r) == ["img (2).jpg"],
          "the laptop's edit of img (2).jpg: %r" % done(r), r)
    phone_want["img.jpg"] = (b"lower, edited on Windows", T0 + 300)
    check(files(phone) == phone_want, "the phone after the edit: %r" % files(phone), r)
    r = run(sync, env)
    check(r.returncode == 0 and events(r)[-1].get("files_done") == 0,
          "a two-way run after the edit moved something", r)
    check(harness.leftovers(local) == [] and harness.leftovers(phone) == [],
          "temp files left", r)


def main(argv):
    return run_steps("case_loop", __doc__, [both_kept, later_twin], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
