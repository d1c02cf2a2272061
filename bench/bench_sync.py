#!/usr/bin/env python3
"""phsync pull vs rsync -a over ssh vs OpenSSH sftp -r, on one loopback sshd, in one run.

Run it through bench/bench_sync.sh (which builds a Release phsync first); see --help.

Scenarios (each a fresh pull into an empty folder, then a no-change re-pull over the result):
  corpus   the phone-like camera corpus of bench/mkcorpus.py (default: about 1.5 GB, 2,500 files)
  small    the many-small-files tree (mkcorpus.py --small-tree: 500 folders x 100 files, 0.5-4 KB)
Tools (all through the same sshd, the same ssh_config, AES-128-GCM):
  phsync          phsync pull -F CFG --no-progress --no-default-excludes phone:SRC DST
                  (the same files as rsync; no cipher named: phsync
                  picks aes128-gcm itself when the CPU has AES instructions)
  phsync-nofsync  the same with --no-fsync (rsync and sftp do not fsync either)
  rsync           rsync -a -e 'ssh -F CFG -c aes128-gcm@openssh.com' phone:SRC/ DST/
  sftp            sftp -F CFG -c aes128-gcm@openssh.com -b BATCH phone, BATCH = get -r -p SRC/* DST/
                  (sftp has no "skip unchanged": its re-pull copies everything again)
Each repetition runs every tool (the order rotates from one repetition to the next) so drift in
the machine's speed spreads over all of them.  Before every fresh pull the destination is
removed, `sync` run and the page cache dropped (echo 3 > /proc/sys/vm/drop_caches) when that is
writable; the re-pulls run warm.  After every run the destination is checked against the
source (file count and total bytes; and the exit code) so a broken run cannot look fast:
a failed check is reported and left out of the medians.

Measured per run: wall time (monotonic clock around the client command), and peak RSS of the
client: GNU time's %M (the largest single process of the client's tree: for rsync that is one
of its two local processes or its ssh, for sftp the larger of sftp and its ssh), plus the sum of
the RSS of the whole client tree sampled every 50 ms (rsync: both rsync processes + ssh;
sftp: sftp + ssh; phsync: one process).  The server side (sshd, sftp-server, rsync --server)
is not counted for anyone.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import mkcorpus  # noqa: E402

CIPHER = "aes128-gcm@openssh.com"
ALL_TOOLS = ["phsync", "phsync-nofsync", "rsync", "sftp"]


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# -- data ----------------------------------------------------------------------------------------

def ensure_data(data, scale, small_dirs, small_files):
    """Generates the corpora under DATA once; reuses them while their parameters match."""
    os.makedirs(data, exist_ok=True)
    sets = {
        "corpus": (["--scale", str(scale)], "scale=%s seed=18 small=2000" % scale),
        "small": (["--small-tree", str(small_dirs), str(small_files)], "small-tree=%dx%d seed=18" % (small_dirs, small_files)),
    }
    out = {}
    for name, (args, stamp_text) in sets.items():
        root = os.path.join(data, name)
        stamp = os.path.join(data, name + ".stamp")
        have = open(stamp).read().strip() if os.path.exists(stamp) else None
        if have != stamp_text:
            log("generating %s (%s) in %s ..." % (name, stamp_text, root))
            shutil.rmtree(root, ignore_errors=True)
            if os.path.exists(stamp):
                os.unlink(stamp)
            t = time.monotonic()
            subprocess.run([sys.executable, os.path.join(HERE, "mkcorpus.py"), root] + args, check=True)
            with open(stamp, "w") as f:
                f.write(stamp_text + "\n")
            log("  done in %.0f s" % (time.monotonic() - t))
        out[name] = (root, mkcorpus.stat_tree(root))
        log("%-7s %s: %d files, %.2f GB" % (name, root, out[name][1][0], out[name][1][1] / 1e9))
    return out


# -- machine state -------------------------------------------------------------------------------

def can_drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def settle(drop):
    subprocess.run(["sync"])
    if drop:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def rm_tree(path):
    if os.path.lexists(path):
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=True)


# -- measuring ----------------------------------------------------------------------------------

def _children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def _status(pid):
    """(tgid, VmRSS kB) of a task, or (None, 0)."""
    tgid, rss = None, 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Tgid:"):
                    tgid = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
    except OSError:
        pass
    return tgid, rss


class TreeRss(threading.Thread):
    """Samples the summed RSS of the processes below `root` every interval.  Threads show up
    as children too (a thread's parent is its process's parent), so each process (thread
    group) is counted once."""

    def __init__(self, root, interval=0.05):
        super().__init__(daemon=True)
        self.root, self.interval, self.peak_kb = root, interval, 0
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            seen, total, todo = set(), 0, _children(self.root)
            procs = set(os.listdir("/proc"))  # lists processes (thread group leaders) only
            while todo:
                p = todo.pop()
                tgid, rss = _status(p)
                if tgid is None or tgid in seen or tgid != p or str(p) not in procs:
                    continue
                seen.add(tgid)
                total += rss
                todo += _children(tgid)
            self.peak_kb = max(self.peak_kb, total)
            self.stop_ev.wait(self.interval)


def measure(argv, env, cwd):
    """Runs argv under GNU time; returns dict(wall, rc, maxrss_kb, tree_kb, err)."""
    fd, tfile = tempfile.mkstemp(prefix="phsync-bench-time-")
    os.close(fd)
    cmd = ["/usr/bin/time", "-f", "%M", "-o", tfile] + argv
    errf = tempfile.TemporaryFile()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf, env=env, cwd=cwd)
    sampler = TreeRss(p.pid)
    sampler.start()
    rc = p.wait()
    wall = time.monotonic() - t0
    sampler.stop_ev.set()
    sampler.join()
    errf.seek(0)
    err = errf.read().decode("utf-8", "replace")
    maxrss = None
    try:
        with open(tfile) as f:
            lines = [l.strip() for l in f if l.strip()]
        maxrss = int(lines[-1])
    except (OSError, ValueError, IndexError):
        pass
    os.unlink(tfile)
    return {"wall": wall, "rc": rc, "maxrss_kb": maxrss, "tree_kb": sampler.peak_kb, "err": err[-2000:]}


# -- tools ----------------------------------------------------------------------------------------

def tool_argv(tool, phsync, cfg, src, dst, batchdir, phsync_extra):
    if tool.startswith("phsync"):
        a = [phsync, "pull", "-F", cfg] + phsync_extra
        if tool == "phsync-nofsync":
            a.append("--no-fsync")
        return a + ["phone:" + src, dst]
    if tool == "rsync":
        return ["rsync", "-a", "-e", "ssh -F %s -c %s" % (cfg, CIPHER), "phone:%s/" % src, dst + "/"]
    if tool == "sftp":
        batch = os.path.join(batchdir, "sftp-batch-%d" % os.getpid())
        with open(batch, "w") as f:
            f.write("get -r -p %s/* %s/\n" % (src, dst))
        return ["sftp", "-q", "-F", cfg, "-c", CIPHER, "-b", batch, "phone"]
    raise ValueError(tool)


def prepare_dst(tool, dst):
    if tool == "sftp":  # sftp's get -r SRC/* DST/ needs DST to exist
        os.makedirs(dst, exist_ok=True)


# -- report ---------------------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, unit=""):
    if x is None:
        return "-"
    if unit == "s":
        return "%.2f" % x
    if unit == "MB":
        return "%.0f" % (x / 1024)
    return str(x)


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "-"


def report(results, tools, scenarios):
    lines = []
    hdr = "%-16s %-15s %5s %9s %9s %9s %11s %11s" % ("scenario", "tool", "ok/n", "median s", "min s", "max s",
                                                   "%M MB", "tree MB")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    meds = {}
    for sc in scenarios:
        for tool in tools:
            rs = [r for r in results if r["scenario"] == sc and r["tool"] == tool]
            ok = [r for r in rs if r["ok"]]
            walls = [r["wall"] for r in ok]
            m = med(walls)
            meds[(sc, tool)] = (m, med([r["maxrss_kb"] for r in ok]), med([r["tree_kb"] for r in ok]))
            lines.append("%-16s %-15s %2d/%-2d %9s %9s %9s %11s %11s" % (
                sc, tool, len(ok), len(rs), fmt(m, "s"), fmt(min(walls) if walls else None, "s"),
                fmt(max(walls) if walls else None, "s"), fmt(meds[(sc, tool)][1], "MB"), fmt(meds[(sc, tool)][2], "MB")))
        lines.append("")
    lines.append("ratios of medians (wall time; < 1 means phsync is faster):")
    for sc in scenarios:
        for v in [t for t in tools if t.startswith("phsync")]:
            parts = []
            for peer in ("rsync", "sftp"):
                if peer in tools:
                    parts.append("%s/%s %s" % (v, peer, ratio(meds[(sc, v)][0], meds[(sc, peer)][0])))
            if "rsync" in tools:
                parts.append("peak RSS (tree) %s/rsync %s" % (v, ratio(meds[(sc, v)][2], meds[(sc, "rsync")][2])))
            lines.append("  %-16s %s" % (sc, "   ".join(parts)))
    if "rsync" in tools and "phsync" in tools:
        lines.append("")
        lines.append("issue 2 targets for phsync (default options) against rsync:")
        for sc, limit in (("corpus fresh", 0.95), ("small fresh", 1.0), ("corpus no-change", 1.0),
                          ("small no-change", 1.0)):
            if sc not in scenarios:
                continue
            a, b = meds[(sc, "phsync")][0], meds[(sc, "rsync")][0]
            if a is None or not b:
                continue
            lines.append("  %-16s wall %.2f <= %.2f x rsync: %s" % (sc, a / b, limit, "met" if a / b <= limit else "NOT met"))
        for sc in scenarios:
            a, b = meds[(sc, "phsync")][2], meds[(sc, "rsync")][2]
            if a is None or not b:
                continue
            lines.append("  %-16s peak RSS (tree) %.0f MB <= rsync's %.0f MB: %s" % (
                sc, a / 1024, b / 1024, "met" if a <= b else "NOT met"))
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="phsync vs rsync vs sftp on one loopback sshd",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="repetitions of every tool and scenario (default 5)")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list from %s" % ",".join(ALL_TOOLS))
    ap.add_argument("--sets", default="corpus,small", help="comma list from corpus,small")
    ap.add_argument("--data", default=os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"),
                    help="where the corpora and destinations live (default /var/tmp/phsync-bench)")
    ap.add_argument("--scale", type=float, default=1.0, help="camera corpus scale (default 1.0: about 1.5 GB)")
    ap.add_argument("--small-tree", nargs=2, type=int, default=[500, 100], metavar=("DIRS", "FILES"))
    ap.add_argument("--phsync", default=os.environ.get("PHSYNC_BIN", os.path.join(REPO, "build", "phsync")),
                    help="the phsync binary (default: $PHSYNC_BIN, set by bench_sync.sh to its Release build in build-bench/)")
    ap.add_argument("--no-drop-caches", action="store_true", help="keep the page cache between runs")
    ap.add_argument("--no-rerun", action="store_true", help="skip the no-change re-pulls")
    ap.add_argument("--no-clean-home", action="store_true",
                    help="let sessions run the login user's shell start-up files (root only; default hides them)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="raw results folder (default bench/out)")
    ap.add_argument("--report", metavar="RAW.json", help="print the table of an earlier run's raw results and exit")
    a = ap.parse_args(argv)

    if a.report:
        with open(a.report) as f:
            raw = json.load(f)
        res = raw["results"]
        tools_ = [t for t in ALL_TOOLS if any(r["tool"] == t for r in res)]
        scen = []
        for r in res:
            if r["scenario"] not in scen:
                scen.append(r["scenario"])
        print(report(res, tools_, scen))
        return 0

    tools = [t for t in a.tools.split(",") if t]
    for t in tools:
        if t not in ALL_TOOLS:
            ap.error("unknown tool %s" % t)
    sets = [s for s in a.sets.split(",") if s]
    if any(t.startswith("phsync") for t in tools) and not os.access(a.phsync, os.X_OK):
        ap.error("no phsync at %s (build it: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && "
                 "cmake --build build -j)" % a.phsync)
    for prog in ("rsync", "sftp", "ssh"):
        if prog in tools or prog == "ssh":
            if not shutil.which(prog):
                ap.error("%s not installed" % prog)
    if not os.access("/usr/bin/time", os.X_OK):
        ap.error("GNU time not installed (apt-get install time)")

    data = ensure_data(a.data, a.scale, *a.small_tree)
    if os.access(a.phsync, os.X_OK):
        # A private copy: a rebuild of build/ during the run cannot change what is measured.
        copy = os.path.join(a.data, "phsync-under-test")
        shutil.copy2(a.phsync, copy)
        a.phsync = copy
    drop = not a.no_drop_caches and can_drop_caches()
    if not a.no_drop_caches and not drop:
        log("note: /proc/sys/vm/drop_caches is not writable: runs are not cache-cold (same for every tool)")

    phsync_extra = []
    if any(t.startswith("phsync") for t in tools):
        h = subprocess.run([a.phsync, "--help"], capture_output=True, text=True).stdout
        if "--no-progress" in h:
            phsync_extra.append("--no-progress")
        # The same work as rsync and sftp: phsync skips gallery leftovers
        # (DCIM/.thumbnails) by default, which would flatter it here.
        if "--no-default-excludes" in h:
            phsync_extra.append("--no-default-excludes")

    clean_home = os.geteuid() == 0 and not a.no_clean_home
    srv = harness.SshServer(statedir=os.path.join(a.data, "server"), clean_home=clean_home, log_level="INFO")
    try:
        srv.start()
    except harness.Unavailable as e:
        log("note: %s; sessions will run the login user's shell start-up files" % e)
        clean_home = False
        srv = harness.SshServer(statedir=os.path.join(a.data, "server"), log_level="INFO")
        srv.start()
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": ""})
    dstroot = os.path.join(a.data, "dst")
    os.makedirs(dstroot, exist_ok=True)

    info = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "aes": "aes" in open("/proc/cpuinfo").read().split(),
        "phsync": subprocess.run([a.phsync, "--version"], capture_output=True, text=True).stdout.strip()
        if os.access(a.phsync, os.X_OK) else None,
        "phsync_bin": a.phsync,
        "rsync": subprocess.run(["rsync", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
        "ssh": subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip(),
        "reps": a.reps, "drop_caches": drop, "clean_home": clean_home, "cipher": CIPHER,
        "data": {k: {"path": v[0], "files": v[1][0], "bytes": v[1][1]} for k, v in data.items()},
    }
    for k in ("cpu", "phsync", "rsync", "ssh"):
        log("%-7s %s" % (k, info[k]))
    log("page cache dropped before fresh runs: %s; login shell start-up files hidden: %s" % (drop, clean_home))

    # Connection cost, for reference.
    t = time.monotonic()
    for _ in range(3):
        subprocess.run(["ssh", "-F", srv.config, "-c", CIPHER, "phone", "true"], stdin=subprocess.DEVNULL, env=env, check=True)
    info["ssh_true_s"] = (time.monotonic() - t) / 3
    log("ssh -F CFG phone true: %.3f s (connection + auth + a session, for reference)" % info["ssh_true_s"])

    results = []
    scenarios = []
    for s in sets:
        scenarios.append(s + " fresh")
        if not a.no_rerun:
            scenarios.append(s + " no-change")
    os.makedirs(a.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw_path = os.path.join(a.out, "bench-%s.json" % stamp)
    try:
        for rep in range(a.reps):
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for s in sets:
                src, (nfiles, nbytes) = data[s]
                for tool in order:
                    dst = os.path.join(dstroot, "%s-%s" % (s, tool))
                    argv_ = tool_argv(tool, a.phsync, srv.config, src, dst, a.data, phsync_extra)
                    runs = [("fresh", True)] + ([] if a.no_rerun else [("no-change", False)])
                    for kind, fresh in runs:
                        if fresh:
                            rm_tree(dst)
                            settle(drop)
                        prepare_dst(tool, dst)
                        m = measure(argv_, env, srv.home)
                        got = mkcorpus.stat_tree(dst) if os.path.isdir(dst) else (0, 0)
                        ok = m["rc"] == 0 and got == (nfiles, nbytes)
                        r = dict(m, scenario="%s %s" % (s, kind), tool=tool, rep=rep, ok=ok,
                                 files=got[0], bytes=got[1], argv=argv_)
                        if not ok:
                            log("  CHECK FAILED: %s %s rep %d: exit %d, %d files / %d bytes (want %d / %d)\n%s"
                                % (tool, r["scenario"], rep, m["rc"], got[0], got[1], nfiles, nbytes, m["err"]))
                        results.append(r)
                        log("rep %d  %-16s %-15s %7.2f s  %%M %6.0f MB  tree %6.0f MB%s" % (
                            rep, r["scenario"], tool, m["wall"], (m["maxrss_kb"] or 0) / 1024,
                            m["tree_kb"] / 1024, "" if ok else "  (FAILED CHECK)"))
                    rm_tree(dst)
            with open(raw_path, "w") as f:
                json.dump({"info": info, "results": results}, f, indent=1)
    finally:
        srv.stop()
        with open(raw_path, "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)

    table = report(results, tools, scenarios)
    head = ("phsync bench %s on %s (%d CPUs, %s), %s reps, page cache dropped before fresh runs: %s\n"
            "data: corpus %d files %.2f GB; small %d files %.2f GB\n" % (
                info["date"], info["cpu"], info["cpus"], info["kernel"], a.reps, drop,
                info["data"].get("corpus", {}).get("files", 0), info["data"].get("corpus", {}).get("bytes", 0) / 1e9,
                info["data"].get("small", {}).get("files", 0), info["data"].get("small", {}).get("bytes", 0) / 1e9))
    print(head + table)
    with open(os.path.join(a.out, "bench-%s.txt" % stamp), "w") as f:
        f.write(head + table + "\n")
    log("raw results: %s" % raw_path)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
