#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Where the weak phone's CPU goes in a fresh pull: the server side of bench_table.py's weak row
(a second sshd in a CPU-capped cgroup, behind linkproxy.py), one tool at a time, split by
process.

    bench/weak_profile.py --phsync build-rel/phsync [--scale 0.02] [--reps 2]
                          [--tools phsync,phsync-never,rsync,phsync-empty,rsync-empty] [--strace]

Each run is recorded system-wide with `perf record -a -e cpu-clock -c 250000` (a sample per
0.25 ms of CPU on any core) for exactly the client's life; the samples of the processes that
descend from the weak sshd's listener (followed through perf's fork events, so short-lived
ones such as `uname` or the bootstrap script's `ls` count too) are summed per command name.
Beside them the cgroup's own CPU-seconds (what the table reports) and the link's bytes each
way.  With --strace a second run of each tool is made with `strace -f -c` attached to the
listener: the system calls of every server process (counts, not times: strace slows them).

With --phsync-b a second build runs as b-TOOL (its helper from helpers/ beside it), alternated
with the first: before and after a change in one run.  Both builds cache their helper under one
name on the phone (.cache/phsync/phsync-helper-VERSION-ARCH): when their helpers differ, every
run finds the other's and uploads its own (about 0.85 MB up, a full check), so compare builds
with different helpers in separate runs instead (the script says so when it sees them differ).

Tools: phsync (defaults: --helper auto with the helper cached on the phone and, as in the
table, a fresh state folder, so the first-contact checks of a new laptop run), phsync-memo (the
same, but the state folder kept between runs: the helper's identity memo is fresh, as on a
laptop that pulled before), phsync-never (plain SFTP), rsync; NAME-empty is the same tool
pulling an empty folder: its start-up alone.

This is a diagnosis tool, not a benchmark: perf's own sampling costs a little CPU on every
core, the same for every tool.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import bench_sync as bs  # noqa: E402
import bench_table as bt  # noqa: E402
from linkproxy import LinkProxy  # noqa: E402

PERIOD_NS = 250000
FORK = re.compile(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")
SAMPLE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+cpu-clock:")


def server_cpu(perf_data, listener):
    """{command name: ms} of the listener's descendants, and the pids per name."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,pid,tid,event",
                          "--show-task-events"], capture_output=True, text=True).stdout
    parent, samples = {}, []
    for line in out.splitlines():
        m = FORK.search(line)
        if m:
            child, par = int(m.group(1)), int(m.group(2))
            if child != par:
                parent.setdefault(child, par)
            continue
        m = SAMPLE.match(line)
        if m:
            samples.append((m.group(1).strip(), int(m.group(2))))

    def below(pid):
        seen = 0
        while pid in parent and seen < 64:
            pid = parent[pid]
            if pid == listener:
                return True
            seen += 1
        return False

    ms, pids = collections.Counter(), collections.defaultdict(set)
    memo = {}
    for comm, pid in samples:
        if pid not in memo:
            memo[pid] = pid == listener or below(pid)
        if memo[pid]:
            ms[comm] += PERIOD_NS / 1e6
            pids[comm].add(pid)
    return ms, pids


def argv(tool, phsync, cfg, src, dst, data, other=None):
    if tool.startswith("b-"):  # the same tool from the build of --phsync-b
        return argv(tool[2:], other, cfg, src, dst, data)
    base = tool[:-6] if tool.endswith("-empty") else tool
    if base in ("phsync", "phsync-memo"):
        return [phsync, "pull", "-F", cfg, "--no-progress", "--no-default-excludes", "phone:" + src, dst]
    if base == "phsync-never":
        return [phsync, "pull", "-F", cfg, "--no-progress", "--no-default-excludes", "--helper", "never",
                "phone:" + src, dst]
    return bs.tool_argv(base, phsync, cfg, src, dst, data, [])


def main(args):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phsync", required=True)
    ap.add_argument("--phsync-b", help="a second build: tools named b-TOOL run it (A/B in one run, alternated)")
    ap.add_argument("--data", default="/var/tmp/weak-profile")
    ap.add_argument("--scale", type=float, default=0.02, help="camera corpus scale (0.02: the --quick row)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--tools", default="phsync,phsync-memo,phsync-never,rsync,phsync-empty,rsync-empty")
    ap.add_argument("--pct", type=float, default=30)
    ap.add_argument("--rtt", type=float, default=10)
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--no-perf", action="store_true", help="only the cgroup's CPU-seconds (no perf record: less "
                    "overhead, for many repetitions)")
    a = ap.parse_args(args)
    os.makedirs(a.data, exist_ok=True)
    phsync = os.path.abspath(a.phsync)
    b = os.path.abspath(a.phsync_b) if a.phsync_b else None
    if b:
        import filecmp
        ha, hb = (os.path.join(os.path.dirname(x), "helpers", "phsync-helper-" + os.uname().machine)
                  for x in (phsync, b))
        if not (os.path.exists(ha) and os.path.exists(hb) and filecmp.cmp(ha, hb, shallow=False)):
            print("WARNING: the two builds' helpers differ (or are missing): each alternation uploads "
                  "the other's to the phone; the figures include those uploads")
    src, want = bt.ensure_camera(a.data, a.scale)
    empty = os.path.join(a.data, "empty-src")
    os.makedirs(empty, exist_ok=True)
    cage = bt.CpuCage("phsync-weak-profile-%d" % os.getpid(), a.pct)
    if not cage.ok:
        sys.exit("no cgroup: %s" % cage.reason)
    srv = px = None
    try:
        srv, _ = harness.start_bench_server(os.path.join(a.data, "server"), log=bs.log, log_level="INFO")
        cage.add(srv.proc.pid)
        px = LinkProxy(srv.port, rtt_ms=a.rtt, mbit=1000).start()
        cfg = srv.write_config(name="ssh_config.weak", port=px.port)
        hdir = os.path.join(os.path.dirname(phsync), "helpers")
        env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": hdir})
        xroot = os.path.join(a.data, "xdg")

        def benv(tool):
            return {"PHSYNC_HELPER_DIR": os.path.join(os.path.dirname(b), "helpers")} if tool.startswith("b-") else {}
        fill = os.path.join(xroot, "fill")
        bs.rm_tree(fill)
        os.makedirs(fill)
        subprocess.run([phsync, "pull", "-F", cfg, "--helper", "always", "phone:" + empty,
                        os.path.join(a.data, "empty-dst")], env=dict(env, XDG_STATE_HOME=fill), check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        print("weak server: %s; link %g ms; corpus %s: %d files, %.3f GB; load %s" % (
            cage.mode, a.rtt, src, want[0], want[1] / 1e9, bs.loadavg()))
        tools = [t for t in a.tools.split(",") if t]
        rows = collections.defaultdict(list)
        for rep in range(a.reps):
            for tool in bt.rotate(tools, rep):
                s = empty if tool.endswith("-empty") else src
                dst = os.path.join(a.data, "dst-" + tool)
                bs.rm_tree(dst)
                xdg = os.path.join(xroot, tool)
                if not tool.endswith("phsync-memo") or rep == 0:
                    bs.rm_tree(xdg)
                os.makedirs(xdg, exist_ok=True)
                if tool.endswith("phsync-memo") and rep == 0:  # the memo: one run before the measured ones
                    subprocess.run(argv(tool, phsync, cfg, empty, dst, a.data, b), env=dict(env, XDG_STATE_HOME=xdg, **benv(tool)),
                                   stdin=subprocess.DEVNULL, capture_output=True)
                    bs.rm_tree(dst)
                if tool.startswith("rsync") or tool == "sftp":
                    os.makedirs(dst, exist_ok=True)
                perf = os.path.join(a.data, "perf-%s.data" % tool)
                px.reset()
                c0 = cage.cpu_s()
                t0 = time.monotonic()
                rec = [] if a.no_perf else ["perf", "record", "-q", "-a", "-e", "cpu-clock", "-c", str(PERIOD_NS),
                                            "-o", perf, "--"]
                r = subprocess.run(rec + argv(tool, phsync, cfg, s, dst, a.data, b),
                                   env=dict(env, XDG_STATE_HOME=xdg, **benv(tool)), stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, cwd=srv.home)
                wall = time.monotonic() - t0
                px.wait_idle()
                up, down = px.counts()
                pieces = px.pieces["up"]
                cpu = cage.cpu_s() - c0
                ms, pids = (collections.Counter(), {}) if a.no_perf else server_cpu(perf, srv.proc.pid)
                rows[tool].append((wall, cpu, up, down, ms, pids, r.returncode))
                print("rep %d %-14s rc %d wall %5.2f s  cgroup %.3f s  up %d B in %d pieces, down %d B  load %s" % (
                    rep, tool, r.returncode, wall, cpu, up, pieces, down, bs.loadavg()), flush=True)
                if not a.no_perf:
                    print("      " + "  ".join("%s %.0f ms (%d)" % (k, v, len(pids[k])) for k, v in ms.most_common()))
                if r.returncode != 0:
                    print(r.stderr[-800:])
                if not a.no_perf:
                    os.unlink(perf)
                bs.rm_tree(dst)
        print("\nmedian per tool (ms of server CPU per process name, from perf; cgroup CPU):")
        for tool in tools:
            rs = rows[tool]
            names = sorted({k for r in rs for k in r[4]}, key=lambda k: -sum(r[4][k] for r in rs))
            print("  %-14s cgroup %.3f s, perf %.0f ms: %s" % (
                tool, bs.med([r[1] for r in rs]), bs.med([sum(r[4].values()) for r in rs]),
                ", ".join("%s %.0f" % (k, bs.med([r[4].get(k, 0) for r in rs])) for k in names)))
        if a.strace:
            for tool in tools:
                s = empty if tool.endswith("-empty") else src
                dst = os.path.join(a.data, "dst-" + tool)
                bs.rm_tree(dst)
                if tool.startswith("rsync"):
                    os.makedirs(dst, exist_ok=True)
                xdg = os.path.join(xroot, tool)
                if not tool.endswith("phsync-memo"):
                    bs.rm_tree(xdg)
                os.makedirs(xdg, exist_ok=True)
                so = os.path.join(a.data, "strace-%s.txt" % tool)
                st = subprocess.Popen(["strace", "-f", "-c", "-o", so, "-p", str(srv.proc.pid)])
                time.sleep(1)
                subprocess.run(argv(tool, phsync, cfg, s, dst, a.data, b), env=dict(env, XDG_STATE_HOME=xdg, **benv(tool)),
                               stdin=subprocess.DEVNULL, capture_output=True, cwd=srv.home)
                time.sleep(0.5)
                st.terminate()
                st.wait()
                print("\n== strace -f -c of the server processes, %s" % tool)
                print(open(so).read())
                bs.rm_tree(dst)
    finally:
        if px:
            px.sock.close()
        if srv:
            srv.stop()
        cage.close()


if __name__ == "__main__":
    main(sys.argv[1:])
