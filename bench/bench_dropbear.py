#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""phsync push vs rsync -a over the same loopback Dropbear (issue 22, item 9).

Dropbear (as SimpleSSHD runs it on phones) opens a small channel window (24 KiB by default) and
gives it back in small steps, so a sender that waits a fixed time whenever the window is shut
crawls.  This bench starts Dropbear with OpenSSH's sftp-server through the test harness (root:
a private mount namespace, as the tests), makes SIZE MiB of incompressible files in FILES files,
and times, per repetition and in alternating order:

  phsync          phsync push -F CFG --helper never --no-progress SRC phone:DST-N  (plain SFTP)
  phsync-nofsync  the same with --no-fsync (rsync does not fsync; phsync does by default)
  rsync           rsync -a -e 'ssh -F CFG' SRC/ phone:DST-N/

each into a fresh folder (the order rotates from one repetition to the next), checking after
every run that every byte arrived.  It prints the median wall time of each and the ratios to
rsync (the goal: phsync at most 1.2).

    python3 bench/bench_dropbear.py [--phsync build/phsync] [--size 12] [--files 24] [--reps 5]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import harness  # noqa: E402


def make_source(root, size_mib, nfiles):
    os.makedirs(root)
    total = size_mib << 20
    each = total // nfiles
    for i in range(nfiles):
        n = each if i < nfiles - 1 else total - each * (nfiles - 1)
        with open(os.path.join(root, "IMG_%04d.jpg" % i), "wb") as f:
            f.write(os.urandom(n))
        os.utime(os.path.join(root, "IMG_%04d.jpg" % i), (1700000000 + i, 1700000000 + i))


def same_bytes(a, b):
    for name in os.listdir(a):
        pa, pb = os.path.join(a, name), os.path.join(b, name)
        if not os.path.isfile(pb) or os.path.getsize(pa) != os.path.getsize(pb):
            return False
        with open(pa, "rb") as fa, open(pb, "rb") as fb:
            if fa.read() != fb.read():
                return False
    return True


def timed(argv, env, timeout):
    t = time.monotonic()
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return time.monotonic() - t, p


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phsync", default=os.environ.get("PHSYNC_BIN", os.path.join(REPO, "build", "phsync")))
    ap.add_argument("--size", type=int, default=12, help="MiB in all (default 12)")
    ap.add_argument("--files", type=int, default=24, help="number of files (default 24)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each tool (default 5)")
    ap.add_argument("--timeout", type=float, default=600, help="bound on one run, s (default 600)")
    a = ap.parse_args(argv)
    phsync = os.path.abspath(a.phsync)
    if not os.access(phsync, os.X_OK):
        sys.exit("bench_dropbear: no phsync at %s (build it, or --phsync)" % phsync)
    work = tempfile.mkdtemp(prefix="phsync-bench-dropbear-")
    srv = harness.SshServer(kind="dropbear", statedir=os.path.join(work, "server"))
    try:
        os.makedirs(srv.dir)
        srv.start()
        src = os.path.join(work, "src")
        make_source(src, a.size, a.files)
        env = srv.env()
        env["XDG_STATE_HOME"] = os.path.join(work, "xdg")
        env_rsync = dict(os.environ)
        tools = ["phsync", "phsync-nofsync", "rsync"]
        times = {t: [] for t in tools}
        for rep in range(a.reps):
            order = tools[rep % 3:] + tools[:rep % 3]
            for tool in order:
                dst = os.path.join(work, "dst-%s-%d" % (tool, rep))
                shutil.rmtree(env["XDG_STATE_HOME"], ignore_errors=True)
                if tool.startswith("phsync"):
                    cmd = [phsync, "push", "-F", srv.config, "--helper", "never", "--no-progress",
                           src, "phone:" + dst] + (["--no-fsync"] if tool == "phsync-nofsync" else [])
                    t, p = timed(cmd, env, a.timeout)
                else:
                    cmd = ["rsync", "-a", "-e", "ssh -F %s" % srv.config, src + "/", "phone:%s/" % dst]
                    t, p = timed(cmd, env_rsync, a.timeout)
                if p.returncode != 0 or not same_bytes(src, dst):
                    sys.exit("bench_dropbear: %s run %d failed (exit %d): %s"
                             % (tool, rep, p.returncode, p.stderr.decode(errors="replace")[-500:]))
                times[tool].append(t)
                sys.stderr.write("%-14s rep %d: %.3f s\n" % (tool, rep, t))
                shutil.rmtree(dst)
        mr = statistics.median(times["rsync"])
        print("Dropbear %s, %d MiB in %d files, %d reps (median wall time)"
              % (harness.DROPBEAR, a.size, a.files, a.reps))
        for tool in tools:
            m = statistics.median(times[tool])
            print("  %-15s %8.3f s  (%5.1f MB/s)  ratio to rsync %.2f"
                  % (tool, m, (a.size << 20) / m / 1e6, m / mr))
        return 0
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
