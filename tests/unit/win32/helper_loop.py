#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""phsync.exe from the zip brings its phone helper and syncs through it, under
Wine against a real OpenSSH sshd on 127.0.0.1.

    python3 helper_loop.py ZIP [EMULATOR...]

Unpacks phsync-VERSION-win64.zip as a Windows user would and runs the
phsync.exe in it (with -F the server's ssh_config and a state folder of its
own) against a throwaway sshd whose login home starts empty, so the phone has
no phsync and no cached helper:
- a pull with --helper always copies every file with its bytes and mtime
  through the helper (the summary says helper 1), and the program the phone
  now caches is, byte for byte, the zip's helpers/phsync-helper-ARCH for the
  phone's machine: phsync.exe found its helpers beside itself (a Windows
  path) and brought the right one;
- a photo edited on the phone comes as a delta through the helper (bytes
  matched against the laptop's copy, the file whole and with its mtime);
- a file edited on the laptop goes up the same way (push, a delta).
Exits 0 when every check holds, 1 with what differed.
"""

import json
import os
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from pull_loop import check, files, run, run_steps  # noqa: E402

T0 = 1700000000
BIG = bytes((i * 131 >> 3) & 0xFF for i in range(600001))
FILES = {"DCIM/IMG_0001.jpg": BIG, "DCIM/note.txt": b"from the phone\n", "empty": b""}


def summary(r):
    for line in r.stdout.decode().splitlines():
        if line.startswith("{") and json.loads(line).get("event") == "summary":
            return json.loads(line)
    check(False, "no summary event", r)
    return None


def machine():
    m = os.uname().machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def edit(data, at, new):
    return data[:at] + new + data[at + len(new):]


def loop(zpath, srv, tmp, env, emu):
    top = os.path.basename(zpath)[:-len(".zip")]
    version = top[len("phsync-"):-len("-win64")]
    unz = os.path.join(tmp, "Program Files")
    with zipfile.ZipFile(zpath) as z:
        z.extractall(unz)
    exe = emu + [os.path.join(unz, top, "phsync.exe")]
    with open(os.path.join(unz, top, "helpers", "phsync-helper-" + machine()), "rb") as f:
        helper = f.read()
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    state = os.path.join(tmp, "state")
    for rel, data in FILES.items():
        harness.write_file(os.path.join(phone, rel), data, mtime=T0)
    cached = os.path.join(srv.login_home, ".cache", "phsync",
                          "phsync-helper-%s-%s" % (version, machine()))
    check(not os.path.exists(cached), "the phone had a cached helper before the test")
    common = ["-F", srv.config, "--state-dir", state, "--json", "--helper", "always"]

    pull = exe + ["pull"] + common + ["phone:" + phone, local]
    r = run(pull, env)
    check(r.returncode == 0, "the first pull exited %d" % r.returncode, r)
    check(summary(r)["helper"] == 1, "the first pull did not go through the helper", r)
    check(files(local) == {rel: (data, T0) for rel, data in FILES.items()},
          "the laptop folder after the first pull: %r" % sorted(files(local)), r)
    with open(cached, "rb") as f:
        check(f.read() == helper, "the phone's helper is not the zip's phsync-helper-" + machine())

    edited = edit(BIG, 300000, b"edited on the phone")
    harness.write_file(os.path.join(phone, "DCIM/IMG_0001.jpg"), edited, mtime=T0 + 60)
    r = run(pull, env)
    s = summary(r)
    check(r.returncode == 0 and s["helper"] == 1 and s["files_done"] == 1,
          "the pull of the edit (helper %s, files %s)" % (s["helper"], s["files_done"]), r)
    check(s["bytes_matched"] >= len(BIG) // 2, "the edit did not come as a delta: %d bytes "
          "matched" % s["bytes_matched"], r)
    check(files(local)["DCIM/IMG_0001.jpg"] == (edited, T0 + 60), "the edited photo", r)

    mine = edit(edited, 100, b"edited on Windows")
    harness.write_file(os.path.join(local, "DCIM/IMG_0001.jpg"), mine, mtime=T0 + 120)
    r = run(exe + ["push"] + common + [local, "phone:" + phone], env)
    s = summary(r)
    check(r.returncode == 0 and s["helper"] == 1 and s["files_done"] == 1,
          "the push of the edit (helper %s, files %s)" % (s["helper"], s["files_done"]), r)
    check(s["bytes_matched"] >= len(BIG) // 2, "the push was not a delta: %d bytes matched"
          % s["bytes_matched"], r)
    check(files(phone)["DCIM/IMG_0001.jpg"] == (mine, T0 + 120), "the pushed photo", r)


def main(argv):
    if len(argv) < 1:
        sys.stderr.write(__doc__)
        return 2
    zpath, emu = argv[0], argv[1:]
    # run_steps hands each step its argv (the emulator); the zip is this loop's own.
    return run_steps("helper_loop", __doc__,
                     [lambda _argv, srv, tmp, env: loop(zpath, srv, tmp, env, emu)],
                     ["-"], clean_home=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
