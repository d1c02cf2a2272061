#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""No-change re-pulls of one tree by several phsync builds and rsync, alternated on one loopback
sshd: the A/B loop behind the no-change figures of docs/PERFORMANCE.md section 7.  Not a test.

    bench/nochange_ab.py --src DIR [--reps 9] [--data /var/tmp/phsync-bench/ab] [--listing] PHSYNC...

Each PHSYNC is a phsync binary; its helpers are looked for in a "helpers" folder beside it (a
build folder's), else set PHSYNC_HELPER_DIR.  Starts a loopback sshd (tests/lib/harness.py),
pulls DIR once with each binary into its own copy and with rsync -a into another (untimed: the
helper brought to the phone's cache, the state written, and a second untimed pull so the racy
window of the first one's last files is behind), then runs --reps rounds: in each, every
binary's `pull` (its defaults: --helper auto, durable writes) into its copy, then rsync -a with
the same cipher (aes128-gcm) into its copy.  Prints per tool the median wall, each wall sorted,
the median CPU (user + system, GNU time's) and the largest peak RSS, and each binary's ratio to
rsync's median.

With --listing, the listing alone: each binary's `pull --dry-run` and `rsync -an` into an empty
folder (nothing written, every file found new), so the phone's walk and what crosses the link
are all there is to it (the local walk finds nothing): where a second helper shows on a loopback
whose two cores the "phone" shares.

Make a tree with bench/mkcorpus.py (e.g. `mkcorpus.py /var/tmp/small --small-tree 500 100`, or
the million set of bench_table.py in /var/tmp/phsync-bench/million-1000000).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import harness  # noqa: E402


def timed(argv, env, out):
    """(wall, cpu, peak RSS in MB) of argv, which must succeed, by GNU time (into out)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out] + argv, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (argv[0], p.returncode, p.stderr[-1000:]))
    with open(out) as f:
        e, u, s, m = f.read().split()[-4:]
    return float(e), float(u) + float(s), int(m) // 1024


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, help="the tree to pull (the phone's folder)")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--data", default="/var/tmp/phsync-bench/ab")
    ap.add_argument("--listing", action="store_true", help="dry runs into an empty folder")
    ap.add_argument("phsync", nargs="+")
    a = ap.parse_args(argv)
    bins = [os.path.abspath(b) for b in a.phsync]
    src = os.path.abspath(a.src)
    subprocess.run(["rm", "-rf", os.path.join(a.data, "copies")], check=True)
    os.makedirs(os.path.join(a.data, "copies"))
    srv, _ = harness.start_bench_server(os.path.join(a.data, "server"), log=print, log_level="INFO")
    names = ["%d:%s" % (i, os.path.basename(b)) for i, b in enumerate(bins)]
    res = {n: [] for n in names + ["rsync"]}
    tf = os.path.join(a.data, "time.txt")
    try:
        cmds = {}
        for n, b in zip(names, bins):
            helpers = os.environ.get("PHSYNC_HELPER_DIR") or os.path.join(os.path.dirname(b), "helpers")
            env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": helpers,
                           "XDG_STATE_HOME": os.path.join(a.data, "copies", "xdg-" + n[0])})
            dst = os.path.join(a.data, "copies", "p" + n[0])
            if a.listing:
                os.makedirs(dst)
            cmds[n] = ([b, "pull", "-F", srv.config, "--no-progress"] + (["-q", "-n"] if a.listing else [])
                       + ["phone:" + src, dst], env)
        rsh = "ssh -F %s -c aes128-gcm@openssh.com" % srv.config
        if a.listing:
            os.makedirs(os.path.join(a.data, "copies", "r"))
        cmds["rsync"] = (["rsync", "-an" if a.listing else "-a", "-e", rsh, "phone:" + src + "/",
                          os.path.join(a.data, "copies", "r") + "/"], srv.env({}))
        for n in names + ["rsync"]:
            print("first pulls: %s" % n, flush=True)
            timed(*cmds[n], out=tf)
            timed(*cmds[n], out=tf)
        for rep in range(a.reps):
            for n in names + ["rsync"]:
                res[n].append(timed(*cmds[n], out=tf))
    finally:
        srv.stop()
    rs = statistics.median(w for w, _, _ in res["rsync"])
    for n in names + ["rsync"]:
        w = sorted(x[0] for x in res[n])
        print("%-28s wall median %.3f s [%s]  CPU median %.2f s  peak RSS %d MB%s" % (
            n, statistics.median(w), " ".join("%.2f" % x for x in w),
            statistics.median(x[1] for x in res[n]), max(x[2] for x in res[n]),
            "" if n == "rsync" else "  ratio %.2f" % (statistics.median(w) / rs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
