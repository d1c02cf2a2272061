#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""No-change pulls of phsync.exe under Wine: two builds alternated on the same folders.

    python3 bench/wine_walk.py OLD_EXE NEW_EXE [--files 20000] [--folders 40] [--reps 5]
                               [--data DIR]

What it measures is the laptop's side of a Windows pull: the local walk of a folder that
already holds every file (each run changes nothing). It starts its own throwaway sshd on
127.0.0.1 (tests/lib/harness.py) serving DATA/phone, pulls it once with NEW into
DATA/laptop, then runs OLD and NEW in turn REPS times (`--helper never`: the phone's side is
OpenSSH's sftp-server for both), each checked to have moved nothing, and prints each run's
wall and the medians. Wine is not Windows: its file calls go through wineserver, so the
ratio says how much the walk's calls cost there, not on NTFS (docs/PERFORMANCE.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import harness  # noqa: E402


def make_phone(phone, files, folders):
    if os.path.isdir(phone) and sum(len(f) for _, _, f in os.walk(phone)) == files:
        return
    per = files // folders
    for d in range(folders):
        for i in range(per):
            harness.write_file(os.path.join(phone, "d%03d" % d, "IMG_%06d.jpg" % (d * per + i)),
                               b"x" * (100 + i % 400), mtime=1700000000 + i)


def pull(exe, srv, phone, laptop, state, env):
    argv = ["wine", exe, "pull", "-F", srv.config, "--state-dir", state, "--json", "-q",
            "--no-progress", "--helper", "never", "phone:" + phone, laptop]
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=1800)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit("%s exited %d:\n%s" % (exe, r.returncode, r.stderr.decode(errors="replace")))
    summary = [json.loads(x) for x in r.stdout.decode().splitlines() if x.startswith("{")][-1]
    return wall, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--folders", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--data", default="/var/tmp/phsync-bench/wine-walk")
    a = ap.parse_args()
    env = dict(os.environ, WINEDEBUG="-all")
    phone, laptop = os.path.join(a.data, "phone"), os.path.join(a.data, "laptop")
    state = os.path.join(a.data, "state")
    make_phone(phone, a.files, a.folders)
    walls = {a.old: [], a.new: []}
    with harness.SshServer() as srv:
        _, s = pull(a.new, srv, phone, laptop, state, env)
        print("first pull: %d files done" % s.get("files_done", -1))
        for rep in range(a.reps):
            for exe in (a.old, a.new):
                wall, s = pull(exe, srv, phone, laptop, state, env)
                if s.get("files_done") != 0 or s.get("files_total") != a.files:
                    sys.exit("%s: not a no-change run: %r" % (exe, s))
                walls[exe].append(wall)
                print("rep %d %-4s %.2f s" % (rep + 1, "old" if exe == a.old else "new", wall))
    mo, mn = statistics.median(walls[a.old]), statistics.median(walls[a.new])
    print("median old %.2f s (%.2f-%.2f), new %.2f s (%.2f-%.2f), new/old %.2f"
          % (mo, min(walls[a.old]), max(walls[a.old]), mn, min(walls[a.new]),
             max(walls[a.new]), mn / mo))


if __name__ == "__main__":
    main()
