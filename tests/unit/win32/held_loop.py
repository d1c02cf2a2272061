#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A file another program holds open fails that file only: phsync.exe under
Wine against the loopback OpenSSH, beside holdopen.exe (tests/unit/win32/
holdopen.c) run in the same Wine prefix, whose wineserver enforces Windows'
share modes between the two.

    python3 held_loop.py HOLDOPEN_EXE [EMULATOR...] PHSYNC_EXE

- pull: after a first pull, the phone edits four files; one laptop copy is
  held open with no sharing at all (as a program that locks its document),
  another shared for read and write but not delete (as most editors and
  viewers hold a file). The pull updates the two others, fails each held one
  (exit 5, a failed file event naming it, its error saying another program
  has it open), leaves the
  held files' bytes and mtimes as they were and no temp file; once the
  holders close, the next pull brings both, exit 0;
- push: a laptop file held open for writing without sharing read fails alone
  (a line on stderr naming it and saying why, exit 5), the other new file reaches the phone, the
  phone gets no part of the held one and no temp; after the holder closes the
  next push sends it.
Exits 0 when every check holds, 1 with what differed.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from pull_loop import Failed, check, events, file_paths, files, run_steps  # noqa: E402

T0 = 1700000000
HOLDOPEN = []  # [EMULATOR..., holdopen.exe], set by main
TEMP_MARK = ".phsync-"  # every phsync temp name has it (scan/tempname.c)


def run(argv, env):
    """The exe to its end, its output through files: a Wine process may start
    the wineserver or the desktop (explorer.exe), which inherit its pipes and
    outlive it, so the end of a pipe is not the end of the run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                           timeout=600)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, p.returncode, out.read(), err.read())


class Holder:
    """holdopen.exe holding path (access, share as holdopen.c takes them) until closed."""

    def __init__(self, env, access, share, path):
        # Waited for by its exit, never by the end of its output: a Wine
        # process may start the wineserver, which keeps the pipes open.
        self.p = subprocess.Popen(HOLDOPEN + [access, share, path], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        line = self.p.stdout.readline()
        if line.strip() != b"held":
            self.p.kill()
            self.p.wait()
            raise Failed("holdopen did not hold %s: %r (exit %r)" % (path, line, self.p.returncode))

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write(b"done\n")
            self.p.stdin.close()
            self.p.wait(timeout=120)
        self.p.stdout.close()
        check(self.p.returncode == 0, "holdopen exited %r" % self.p.returncode)


def temps(root):
    return sorted(rel for rel in files(root) if TEMP_MARK in os.path.basename(rel) or
                  os.path.basename(rel).startswith(".phsync"))


def failed_files(r):
    return file_paths(r, "failed")


def held_pull(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    state = os.path.join(tmp, "state")
    names = ["a.txt", "locked.txt", "shared.doc", "z.txt"]
    for n in names:
        harness.write_file(os.path.join(phone, n), ("first %s\n" % n).encode() * 50, mtime=T0)
    pull = exe + ["pull", "-F", srv.config, "--state-dir", state, "--json",
                  "phone:" + phone, local]
    r = run(pull, env)
    check(r.returncode == 0, "the first pull exited %d" % r.returncode, r)
    for n in names:
        harness.write_file(os.path.join(phone, n), ("edited %s\n" % n).encode() * 70,
                           mtime=T0 + 60)
    before = files(local)
    holders = [Holder(env, "r", "-", os.path.join(local, "locked.txt")),
               Holder(env, "rw", "rw", os.path.join(local, "shared.doc"))]
    try:
        r = run(pull, env)
    finally:
        for h in holders:
            h.close()
    check(r.returncode == 5, "a pull with two held files exited %d, not 5" % r.returncode, r)
    check(failed_files(r) == ["locked.txt", "shared.doc"],
          "failed files %r, not the two held ones" % failed_files(r), r)
    for e in events(r):
        if e.get("event") == "file" and e.get("status") == "failed":
            check("another program has it open" in e.get("error", ""),
                  "the error of %s does not say another program holds it" % e.get("path"), r)
    after = files(local)
    for n in ("a.txt", "z.txt"):
        check(after[n] == (("edited %s\n" % n).encode() * 70, T0 + 60), n + " was not updated", r)
    for n in ("locked.txt", "shared.doc"):
        check(after[n] == before[n], n + " changed while it was held", r)
    check(temps(local) == [], "temp files left: %r" % temps(local), r)
    check(sorted(after) == sorted(names), "the laptop holds %r" % sorted(after), r)

    r = run(pull, env)
    check(r.returncode == 0, "the pull after the holders closed exited %d" % r.returncode, r)
    after = files(local)
    for n in names:
        check(after[n] == (("edited %s\n" % n).encode() * 70, T0 + 60), n + " after release", r)
    check(temps(local) == [], "temp files left: %r" % temps(local), r)


def held_push(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone2")
    local = os.path.join(tmp, "laptop2")
    state = os.path.join(tmp, "state2")
    os.makedirs(phone)
    harness.write_file(os.path.join(local, "free.txt"), b"free\n" * 100, mtime=T0)
    harness.write_file(os.path.join(local, "writing.log"), b"being written\n" * 100, mtime=T0)
    push = exe + ["push", "-F", srv.config, "--state-dir", state, local, "phone:" + phone]
    h = Holder(env, "w", "-", os.path.join(local, "writing.log"))
    try:
        r = run(push, env)
    finally:
        h.close()
    check(r.returncode == 5, "a push with a held source exited %d, not 5" % r.returncode, r)
    # Without --json the failure is a line on stderr that names the file.
    err = [l for l in r.stderr.decode(errors="replace").splitlines() if "writing.log" in l]
    check(len(err) == 1 and "another program has it open" in err[0],
          "stderr does not name writing.log as held by another program", r)
    got = files(phone)
    check(sorted(got) == ["free.txt"], "the phone holds %r" % sorted(got), r)
    check(got["free.txt"] == (b"free\n" * 100, T0), "free.txt on the phone", r)

    r = run(push, env)
    check(r.returncode == 0, "the push after the holder closed exited %d" % r.returncode, r)
    got = files(phone)
    check(got.get("writing.log") == (b"being written\n" * 100, T0),
          "writing.log on the phone after release: %r" % (got.get("writing.log"),), r)
    check(temps(phone) == [], "temp files on the phone: %r" % temps(phone), r)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    HOLDOPEN[:] = argv[1:-1] + [argv[0]]
    return run_steps("held_loop", __doc__, [held_pull, held_push], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
