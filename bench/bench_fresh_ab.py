#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Two builds of phsync side by side on bench_table.py's fresh many-file pulls: each repetition
runs every build (durable writes, --helper auto) and rsync -a in one rotating order on one
loopback sshd, so each build's ratio to rsync comes from the same minutes of a loaded machine.

    bench/bench_fresh_ab.py --build old=/tmp/base/build-rel/phsync --build new=build-rel/phsync \\
        [--set small|million] [--quick] [--reps 3] [--nofsync new]

The sets are bench_table.py's: small = 500 x 100 files (--quick 10 x 100), million = bench_sync.py's
million set (--quick 20,000 files in 40 folders).  Old copies are moved aside before each run and
deleted at the end (bench_table.py's fs_note: ext4 without a journal).  Prints each run, then per
tool the median wall time with its range and the ratio of medians to rsync with the per-repetition
range.  The helpers beside the first --build are used by every build (the phone side).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import bench_sync as bs  # noqa: E402
import bench_table as bt  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="NAME=PATH of a phsync binary")
    ap.add_argument("--nofsync", action="append", default=[], help="NAME of a build also run with --no-fsync")
    ap.add_argument("--set", default="small", choices=["small", "million"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", default="/var/tmp/phsync-bench/table")
    ap.add_argument("--million-data", default="/var/tmp/phsync-bench")
    ap.add_argument("--run-timeout", type=float, default=3600)
    a = ap.parse_args(argv)
    builds = dict(b.split("=", 1) for b in a.build)
    a.drop = False
    sizes = bt.QUICK if a.quick else bt.FULL
    if a.set == "small":
        src, want = bt.ensure_small(a.data, *sizes["small"])
    else:
        src, want = bs.ensure_million(a.million_data, sizes["million"])
    first = os.path.abspath(builds[a.build[0].split("=", 1)[0]])
    helpers = os.path.join(os.path.dirname(first), "helpers")
    srv, _ = harness.start_bench_server(os.path.join(a.data, "server-ab"), log=bs.log, log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": helpers})
    a.phsync = first
    t = bt.Table(a, srv, env)
    t.defer_deletes = True
    tools = list(builds) + ["%s-nofsync" % n for n in a.nofsync] + ["rsync"]
    bs.log("fresh %s pull, %d files; load %s; tools %s" % (a.set, want[0], bs.loadavg(), tools))
    try:
        bt.fill_helper_cache(t, srv.config, os.path.join(t.xdg, "fill"))
        for rep in range(a.reps):
            for tool in bt.rotate(tools, rep):
                dst = os.path.join(t.dst, "ab-" + tool)
                name = tool[:-len("-nofsync")] if tool.endswith("-nofsync") else tool
                if tool == "rsync":
                    argv_ = t.argv("rsync", srv.config, src, dst)
                else:
                    argv_ = [os.path.abspath(builds[name]), "pull", "-F", srv.config] + t.extra + \
                        (["--no-fsync"] if tool.endswith("-nofsync") else []) + ["phone:" + src, dst]
                t.run("fresh", tool, rep, argv_, bt.tree_check(dst, want), fresh=True, dst=dst,
                      xdg=os.path.join(t.xdg, "ab-" + tool), server_pid=srv.proc.pid)
        for tool in tools:
            bs.rm_tree(os.path.join(t.dst, "ab-" + tool))
        t.empty_trash()
        t.report_row("fresh", tools, [(x, "rsync") for x in tools if x != "rsync"],
                     "%s, %d files, load now %s" % (a.set, want[0], bs.loadavg()))
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
