#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A no-change two-way run against the no-change pull of the same pair (issue 26's speed
target), over a loopback sshd (tests/lib/harness.py start_bench_server), plain SFTP
(`--helper never`).  Not in CI.

    bench/twoway_nochange.py [--files N] [--reps N] [--data DIR] PHSYNC [PHSYNC ...]

N one-line files in folders of 200 on the "phone"; per binary one folder here that `pull` keeps
and one that `sync` keeps (each brought up to date first); then REPS rounds, each running every
binary's pull and sync once (alternating binaries), and each command's best and median.
WRAP="strace -f -c -o /tmp/st-CMD.txt" (CMD becomes pull or sync) runs each command under a
tool."""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--data", default="/tmp/phsync-twoway-nochange")
    ap.add_argument("phsync", nargs="+")
    a = ap.parse_args()
    srv, _ = harness.start_bench_server(os.path.join(a.data, "server"), log=print, log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": ""})
    try:
        rem = os.path.join(a.data, "remote%d" % a.files)
        if not os.path.isdir(rem):
            for i in range(a.files):
                d = os.path.join(rem, "d%03d" % (i // 200))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "f%05d" % i), "w") as f:
                    f.write("x%d\n" % i)

        def run(b, cmd, loc):
            argv = os.environ.get("WRAP", "").replace("CMD", cmd).split()
            argv += [b, cmd, "-F", srv.config, "--helper", "never", "phone:" + rem, loc]
            t = time.monotonic()
            p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=srv.home)
            dt = time.monotonic() - t
            if p.returncode != 0:
                sys.exit("%s: exit %d: %s" % (argv, p.returncode, p.stderr.decode()[-500:]))
            return dt

        def loc(bi, cmd):
            return os.path.join(a.data, "loc-%d-%s-%d" % (bi, cmd, a.files))
        for bi, b in enumerate(a.phsync):
            for cmd in ("pull", "sync"):
                run(b, cmd, loc(bi, cmd))
        res = {}
        for _ in range(a.reps):
            for bi, b in enumerate(a.phsync):
                for cmd in ("pull", "sync"):
                    res.setdefault((bi, cmd), []).append(run(b, cmd, loc(bi, cmd)))
        print("load", open("/proc/loadavg").read().strip())
        for (bi, cmd), v in sorted(res.items()):
            v.sort()
            print("%s %s: best %.3f s, median %.3f s (%s)" % (
                a.phsync[bi], cmd, v[0], v[len(v) // 2], " ".join("%.3f" % x for x in v)))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
