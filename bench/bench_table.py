#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Issue 24's whole table in one run: every row's phsync figure against its peer measured in
the same run, on one loopback sshd this script starts (tests/lib/harness.py), AES-128-GCM for
every tool, tools alternated from one repetition to the next, each ratio printed as the ratio
of the medians with its spread (the lowest and highest of the per-repetition ratios).

    bench/bench_table.py --phsync build/phsync [--quick] [--rows camera,small,...] [--reps N]

Rows (--rows, default all):
  camera   fresh pull of the camera corpus (bench/mkcorpus.py; 1.5 GB, 2,526 files):
           phsync (its defaults: durable writes, --helper auto with the cached helper) vs
           rsync -a and OpenSSH sftp -r, and phsync --no-fsync (what durability costs).
           Target <= 0.90 x rsync.
  small    fresh pull of 50,000 small files (mkcorpus.py --small-tree 500 100), phsync and
           phsync --no-fsync vs rsync and sftp (target <= 1.00 with durable writes); then a
           no-change re-pull of each copy, phsync (auto) and phsync --helper never vs rsync
           (target <= 0.50).
  million  1,000,000 files of 200-800 bytes in 2,000 folders (bench_sync.py's set): fresh
           pull, phsync and --no-fsync (target <= 1.00 x rsync) and no-change re-pull (<= 0.40 with the helper,
           <= 0.80 plain SFTP, peak RSS <= 64 MB), with peak RSS (GNU time's %M).
  backup   phsync backup of the camera corpus to .tar.zst vs `ssh phone tar -cf - | zstd -T0`
           (target <= 0.90, phsync's RSS <= 32 MB); every archive is listed and checked.
  weak     the weak phone: a second sshd in a cgroup (cpu.max 30000/100000 on one core with
           cgroup v2; where the v2 cpu controller is not delegated, as on hybrid hosts, the v1
           cpu controller's cfs quota and a cpuset of CPU 0 do the same), reached through
           bench/linkproxy.py (--weak-rtt ms round trip, --weak-mbit cap each way); fresh pull of
           a 300 MB camera corpus (scale 0.2), phsync vs rsync: wall time and the server's
           CPU-seconds from the cgroup's cpu.stat (usage_usec; cpuacct.usage without v2).
           phsync runs twice: on first contact (a fresh state folder: the phone's own
           phsync tried, `uname -m`, the cached helper's bytes checked) and as phsync-known
           (a fresh state folder holding only the host's memo of the brought helper: a laptop
           that pulled from this phone before, pulling a new folder).
           Target <= 0.95 x rsync and server CPU per GB <= rsync's.  Without a writable cgroup
           the row is printed as skipped, with the reason.
  helper   the helper's no-change cost: a no-change re-pull of the camera corpus with
           --helper auto (the helper cached on the phone) vs --helper never, both through a
           counting proxy: wall ratio (target <= 1.05) and the bytes each run reads from the
           phone (the difference is mostly the cached helper read back by the start-up check).
  watch    watcher latency: `phsync push --watch` started --watch-starts times; after each start
           a 3 MB photo is closed in the watched folder (the first after a start), then
           --watch-photos more (the later ones); the time from close() to the photo complete
           on the phone.  Target <= 0.5 s for every photo.  No peer.

--quick shrinks every row (camera scale 0.02, 10 x 100 small files, 20,000 "million" files,
the weak row on the quick camera corpus, 2 watcher starts of 3 photos; 3 repetitions) so that
the whole table runs in a few minutes (15 on a machine with a load average of 18); a full run
takes an estimated 30-40 minutes on an idle 2-core machine plus the one-time generation of the
corpora (docs/PERFORMANCE.md, section 7).

Before each fresh pull the destination and the tool's state are removed (on ext4 without a
journal the small and million rows move the old copy into DATA/trash and delete it after the
row instead: there a create right after many deletes costs far more, see fs_note) and `sync`
runs (and the page cache is dropped with --drop-caches where /proc/sys/vm/drop_caches is
writable).  The small and million rows read every source file once before each fresh pull
(untimed, bs.warm_tree; not with --drop-caches, where every tool reads from disk): the copies a row makes push the source out of the page cache, and a
tool reading it from disk while the next reads it from memory measured the order, not the
tools (a million fresh pull 140 s cold against 116 s warm for rsync).  Each
run's copy is checked (file count and bytes; archives listed), so a broken run cannot look
fast: a failed check is reported and left out of the medians.  The machine's other load is
printed per row (other CPU, cores): on a shared machine figures move with it.  The helpers
come from helpers/ beside --phsync (copied with it, as $PHSYNC_HELPER_DIR); the cache on the
"phone" is filled once before the first row, so every auto run uses the cached helper.
"""

import argparse
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import mkcorpus  # noqa: E402
import bench_sync as bs  # noqa: E402
import bench_backup  # noqa: E402
import bench_watch  # noqa: E402
from linkproxy import LinkProxy  # noqa: E402

CIPHER = bs.CIPHER
log = bs.log

FULL = {"camera": 1.0, "small": (500, 100), "million": 1000000, "weak": 0.2, "starts": 5, "photos": 5}
QUICK = {"camera": 0.02, "small": (10, 100), "million": 20000, "weak": 0.02, "starts": 2, "photos": 3}
ROWS = ["camera", "small", "million", "backup", "weak", "helper", "watch"]


# -- data ----------------------------------------------------------------------------------------

def ensure_camera(data, scale):
    root = os.path.join(data, "camera-%g" % scale)
    stamp_text = "scale=%g seed=18 small=2000" % scale
    return ensure_made(root, stamp_text, ["--scale", str(scale)])


def ensure_small(data, dirs, files):
    root = os.path.join(data, "small-%dx%d" % (dirs, files))
    return ensure_made(root, "small-tree=%dx%d seed=18" % (dirs, files), ["--small-tree", str(dirs), str(files)])


def ensure_made(root, stamp_text, args):
    stamp = root + ".stamp"
    have = open(stamp).read().strip() if os.path.exists(stamp) else None
    if have != stamp_text or not os.path.isdir(root):
        log("generating %s (%s) ..." % (root, stamp_text))
        bs.rm_tree(root)
        t = time.monotonic()
        subprocess.run([sys.executable, os.path.join(HERE, "mkcorpus.py"), root] + args, check=True)
        with open(stamp, "w") as f:
            f.write(stamp_text + "\n")
        log("  done in %.0f s" % (time.monotonic() - t))
    return root, bs.stat_tree_fast(root)


# -- the cgroup of the weak phone -----------------------------------------------------------------

def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _cgroup2_root():
    """Where a cgroup v2 hierarchy is mounted (unified or hybrid), or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if len(p) > 2 and p[2] == "cgroup2":
                return p[1]
    return None


class CpuCage:
    """One core at PCT percent for the processes put in it, and their CPU time.  cgroup v2
    (cpu.max, cpuset.cpus) where its cpu controller can be enabled; else the v1 cpu
    controller (cpu.cfs_quota_us) and a v1 cpuset.  CPU time from the v2 group's cpu.stat
    (usage_usec: v2 keeps it without any controller) or v1 cpuacct.usage.  .reason says why
    no cage could be made (then .ok is False)."""

    def __init__(self, name, pct):
        self.name, self.pct, self.groups, self.ok, self.reason = name, pct, [], False, None
        self.mode, self.usage_file, self.stat_files = None, None, []
        try:
            self._make()
            self.ok = True
        except OSError as e:
            self.reason = "%s: %s" % (getattr(e, "filename", "") or "cgroup", e.strerror or e)
            self.close()
        except RuntimeError as e:
            self.reason = str(e)
            self.close()

    def _mk(self, parent):
        d = os.path.join(parent, self.name)
        if os.path.isdir(d):
            os.rmdir(d)  # an empty one left by a killed run
        os.mkdir(d)
        self.groups.append(d)
        return d

    def _make(self):
        quota, period = int(self.pct * 1000), 100000
        v2 = _cgroup2_root()
        v2_ctl = open(os.path.join(v2, "cgroup.controllers")).read().split() if v2 else []
        if v2 and "cpu" in v2_ctl:
            ctl = "+cpu" + (" +cpuset" if "cpuset" in v2_ctl else "")
            _write(os.path.join(v2, "cgroup.subtree_control"), ctl)
            d = self._mk(v2)
            _write(os.path.join(d, "cpu.max"), "%d %d" % (quota, period))
            if "cpuset" in v2_ctl:
                _write(os.path.join(d, "cpuset.cpus"), "0")
            self.mode = "cgroup v2 %s: cpu.max %d %d%s" % (d, quota, period, ", cpuset.cpus 0" * ("cpuset" in v2_ctl))
            self.usage_file = os.path.join(d, "cpu.stat")
            self.stat_files = [os.path.join(d, "cpu.stat")]
            return
        v1cpu = "/sys/fs/cgroup/cpu"
        if not os.path.exists(os.path.join(v1cpu, "cpu.cfs_quota_us")):
            raise RuntimeError("no cgroup v2 cpu controller (%s) and no v1 cpu controller"
                               % ("controllers of %s: %s" % (v2, " ".join(v2_ctl) or "none") if v2 else "no cgroup2 mount"))
        d = self._mk(v1cpu)
        _write(os.path.join(d, "cpu.cfs_period_us"), str(period))
        _write(os.path.join(d, "cpu.cfs_quota_us"), str(quota))
        self.stat_files = [os.path.join(d, "cpu.stat")]
        mode = "cgroup v1 %s: cfs quota %d/%d" % (d, quota, period)
        if os.path.exists("/sys/fs/cgroup/cpuset/cpuset.cpus"):
            s = self._mk("/sys/fs/cgroup/cpuset")
            _write(os.path.join(s, "cpuset.cpus"), "0")
            _write(os.path.join(s, "cpuset.mems"), open("/sys/fs/cgroup/cpuset/cpuset.mems").read().strip())
            mode += ", cpuset.cpus 0"
        if v2:  # v2's cpu.stat counts usage without a controller
            u = self._mk(v2)
            self.usage_file = os.path.join(u, "cpu.stat")
            mode += "; CPU time from %s (v2 cpu.stat, no controller: the v2 cpu controller is not available, "\
                    "controllers: %s)" % (self.usage_file, " ".join(v2_ctl) or "none")
        elif os.path.exists("/sys/fs/cgroup/cpuacct/cpuacct.usage"):
            u = d if os.path.exists(os.path.join(d, "cpuacct.usage")) else self._mk("/sys/fs/cgroup/cpuacct")
            self.usage_file = os.path.join(u, "cpuacct.usage")
            mode += "; CPU time from %s" % self.usage_file
        else:
            raise RuntimeError("no cgroup that counts CPU time (no cgroup2, no cpuacct)")
        self.mode = mode

    def add(self, pid):
        for g in self.groups:
            _write(os.path.join(g, "cgroup.procs"), str(pid))

    def cpu_s(self):
        text = open(self.usage_file).read()
        if self.usage_file.endswith("cpuacct.usage"):
            return int(text) / 1e9
        for line in text.splitlines():
            k, v = line.split()
            if k == "usage_usec":
                return int(v) / 1e6
        raise RuntimeError("no usage_usec in %s" % self.usage_file)

    def throttled(self):
        out = {}
        for f in self.stat_files:
            for line in open(f).read().splitlines():
                k, v = line.split()
                if k in ("nr_periods", "nr_throttled"):
                    out[k] = int(v)
        return out

    def close(self):
        for g in reversed(self.groups):
            try:
                parent = os.path.dirname(g)
                for pid in open(os.path.join(g, "cgroup.procs")).read().split():
                    try:
                        _write(os.path.join(parent, "cgroup.procs"), pid)
                    except OSError:
                        pass
                os.rmdir(g)
            except OSError:
                pass
        self.groups = []


# -- running --------------------------------------------------------------------------------------

class Table:
    def __init__(self, a, srv, env):
        self.a, self.srv, self.env = a, srv, env
        self.results = []          # every run: dict(row, tool, rep, wall, ..., ok)
        self.lines = []            # the printed table
        self.dst = os.path.join(a.data, "dst")
        self.xdg = os.path.join(a.data, "xdg-state")
        os.makedirs(self.dst, exist_ok=True)
        self.extra = ["--no-progress", "--no-default-excludes"]
        # On ext4 without a journal, rows of many files move the last copy aside instead of
        # deleting it before a fresh pull, and delete them all after the row: see fs_note.
        # Elsewhere the copies are deleted (kept aside, three million-file copies and a fourth
        # being written filled a 16 GB journalled image: docs/PERFORMANCE.md section 7).
        self.defer_ok = fs_note(a.data) is not None
        self.defer_deletes, self.trash, self.ntrash = False, os.path.join(a.data, "trash"), 0
        bs.rm_tree(self.trash)

    def empty_trash(self):
        bs.rm_tree(self.trash)

    def phsync_pull(self, cfg, variant):
        a = [self.a.phsync, "pull", "-F", cfg] + self.extra
        if variant == "nofsync":
            a.append("--no-fsync")
        if variant == "never":
            a += ["--helper", "never"]
        return a

    def argv(self, tool, cfg, src, dst):
        if tool in ("phsync", "phsync-known"):
            return self.phsync_pull(cfg, "") + ["phone:" + src, dst]
        if tool == "phsync-nofsync":
            return self.phsync_pull(cfg, "nofsync") + ["phone:" + src, dst]
        if tool == "phsync-never":
            return self.phsync_pull(cfg, "never") + ["phone:" + src, dst]
        return bs.tool_argv(tool, self.a.phsync, cfg, src, dst, self.a.data, [])

    def run(self, row, tool, rep, argv, check, fresh=False, dst=None, xdg=None, server_pid=None, cage=None,
            proxy=None, xdg_seed=(), warm=None):
        if fresh:
            if dst and self.defer_deletes and os.path.lexists(dst):
                self.ntrash += 1
                os.makedirs(self.trash, exist_ok=True)
                os.rename(dst, os.path.join(self.trash, "%d" % self.ntrash))
            elif dst:
                bs.rm_tree(dst)
            if xdg:
                bs.rm_tree(xdg)
            bs.settle(self.a.drop)
            if warm and not self.a.drop:
                bs.warm_tree(warm)
        if xdg:
            os.makedirs(xdg, exist_ok=True)
        for f in xdg_seed:  # files put into the fresh state folder (the host's memos)
            os.makedirs(os.path.join(xdg, "phsync"), exist_ok=True)
            shutil.copy2(f, os.path.join(xdg, "phsync", os.path.basename(f)))
        if dst and tool == "sftp":
            os.makedirs(dst, exist_ok=True)
        env = dict(self.env, XDG_STATE_HOME=xdg) if xdg else self.env
        if proxy:
            proxy.reset()
        c0 = cage.cpu_s() if cage else None
        th0 = cage.throttled() if cage else None
        m = bs.measure(argv, env, self.srv.home, server_pid=server_pid, timeout=self.a.run_timeout)
        if proxy:
            proxy.wait_idle()
            m["up"], m["down"] = proxy.counts()
        if cage:
            m["cage_cpu"] = cage.cpu_s() - c0
            th1 = cage.throttled()
            m["throttled"] = "%d of %d periods" % (th1.get("nr_throttled", 0) - th0.get("nr_throttled", 0),
                                                   th1.get("nr_periods", 0) - th0.get("nr_periods", 0))
        why = check() if m["rc"] == 0 else "exit %d" % m["rc"]
        r = dict(m, row=row, tool=tool, rep=rep, ok=why is None, argv=argv)
        self.results.append(r)
        log("rep %d  %-17s %-15s %7.2f s  client CPU %5.2f s  %%M %5.0f MB  tree %5.0f MB  other CPU %s%s%s%s" % (
            rep, row, tool, m["wall"], (m["user"] or 0) + (m["sys"] or 0), (m["maxrss_kb"] or 0) / 1024,
            m["tree_kb"] / 1024,
            "%.2f" % m["other_cpu"] if m["other_cpu"] is not None else "-",
            "  server CPU %.2f s, throttled %s" % (m["cage_cpu"], m["throttled"]) if cage else "",
            "  down %d B" % m["down"] if proxy else "",
            "" if why is None else "  CHECK FAILED: %s\n%s" % (why, m["err"][-1500:])))
        return r

    # -- reporting ------------------------------------------------------------------------------

    def rs(self, row, tool):
        return [r for r in self.results if r["row"] == row and r["tool"] == tool and r["ok"]]

    def med(self, row, tool, key="wall"):
        return bs.med([r.get(key) for r in self.rs(row, tool)])

    def ratio(self, row, tool, peer, key="wall"):
        """(ratio of medians, lowest and highest per-repetition ratio, n) or None."""
        a, b = self.med(row, tool, key), self.med(row, peer, key)
        if a is None or not b:
            return None
        per = []
        for r in self.rs(row, tool):
            q = [p for p in self.rs(row, peer) if p["rep"] == r["rep"]]
            if q and q[0].get(key):
                per.append(r[key] / q[0][key])
        return a / b, min(per) if per else None, max(per) if per else None, len(per)

    def say(self, text):
        self.lines.append(text)
        print(text, flush=True)

    def spread(self, row, tool, key="wall", unit="s"):
        v = [r.get(key) for r in self.rs(row, tool) if r.get(key) is not None]
        n = len([r for r in self.results if r["row"] == row and r["tool"] == tool])
        if not v:
            return "%-15s no good run (%d tried)" % (tool, n)
        f = "%.2f" if unit == "s" else "%.0f"
        return "%-15s %s %s (%s-%s, %d/%d ok)" % (tool, f % statistics.median(v), unit, f % min(v), f % max(v), len(v), n)

    def report_row(self, row, tools, pairs, target, rss=False, extra=()):
        self.say("")
        self.say("== %s   [target: %s]" % (row, target))
        for t in tools:
            s = "   " + self.spread(row, t)
            if rss:
                mx = self.med(row, t, "maxrss_kb")
                tr = self.med(row, t, "tree_kb")
                s += "   peak RSS %%M %s MB, tree %s MB" % ("%.0f" % (mx / 1024) if mx else "-",
                                                          "%.0f" % (tr / 1024) if tr else "-")
            oc = bs.med([r.get("other_cpu") for r in self.rs(row, t)])
            if oc is not None:
                s += "   other CPU %.2f" % oc
            self.say(s)
        for tool, peer in pairs:
            q = self.ratio(row, tool, peer)
            if q:
                self.say("   ratio %s / %s = %.2f   (per rep %s-%s, n=%d)" % (
                    tool, peer, q[0], "%.2f" % q[1] if q[1] else "-", "%.2f" % q[2] if q[2] else "-", q[3]))
            else:
                self.say("   ratio %s / %s: no figure (a side had no good run)" % (tool, peer))
        for e in extra:
            self.say("   " + e)


def tree_check(dst, want):
    def check():
        got = bs.stat_tree_fast(dst) if os.path.isdir(dst) else (0, 0)
        return None if got == want else "%d files / %d bytes, want %d / %d" % (got + want)
    return check


def rotate(tools, rep):
    return tools[rep % len(tools):] + tools[:rep % len(tools)]


# -- rows -----------------------------------------------------------------------------------------

def row_camera(t, cfg, sizes):
    src, want = ensure_camera(t.a.data, sizes["camera"])
    # phsync-nofsync: what the durable writes cost against a peer that leaves its copy in the
    # page cache (the target is on the durable run)
    tools = ["phsync", "phsync-nofsync", "rsync", "sftp"]
    for rep in range(t.a.reps):
        for tool in rotate(tools, rep):
            dst = os.path.join(t.dst, "camera-" + tool)
            t.run("camera fresh", tool, rep, t.argv(tool, cfg, src, dst), tree_check(dst, want), fresh=True,
                  dst=dst, xdg=os.path.join(t.xdg, "camera-" + tool), server_pid=t.srv.proc.pid)
            bs.rm_tree(dst)
    t.report_row("camera fresh", tools, [("phsync", "rsync"), ("phsync-nofsync", "rsync"), ("phsync", "sftp")],
                 "phsync <= 0.90 x rsync; %d files, %.2f GB" % (want[0], want[1] / 1e9), rss=True)


def row_files(t, cfg, name, src, want, fresh_reps, nochange_reps):
    """Fresh pulls, then no-change re-pulls over the kept copies (small, million)."""
    fresh_tools = ["phsync", "phsync-nofsync", "rsync"] + (["sftp"] if name == "small" else [])
    nc_tools = ["phsync", "phsync-never", "rsync"]
    # phsync-never re-pulls phsync's own copy with phsync's state (the same pair): both are
    # no-change runs, neither changes anything
    own = lambda tool: "phsync" if tool == "phsync-never" else tool  # noqa: E731
    t.defer_deletes = t.defer_ok
    d = lambda tool: os.path.join(t.dst, "%s-%s" % (name, own(tool)))  # noqa: E731
    x = lambda tool: os.path.join(t.xdg, "%s-%s" % (name, own(tool)))  # noqa: E731
    for rep in range(fresh_reps):
        for tool in rotate(fresh_tools, rep):
            t.run(name + " fresh", tool, rep, t.argv(tool, cfg, src, d(tool)), tree_check(d(tool), want), fresh=True,
                  dst=d(tool), xdg=x(tool), server_pid=t.srv.proc.pid, warm=src)
            if tool in ("phsync-nofsync", "sftp"):  # not re-pulled: no room kept for it
                bs.rm_tree(d(tool))
    # The fresh copies on disk before any no-change run is timed: rsync's (never fsynced) is
    # likely still being written back during the first no-change run after it (phsync's, in
    # rotation order: 6.40 s against 4.4-5.6 s in the other reps, 2026-11-27)
    subprocess.run(["sync"])
    for tool in nc_tools:  # all warm
        if os.path.isdir(d(tool)):
            bs.stat_tree_fast(d(tool))
    bs.stat_tree_fast(src)
    for rep in range(nochange_reps):
        for tool in rotate(nc_tools, rep):
            t.run(name + " no-change", tool, rep, t.argv(tool, cfg, src, d(tool)), tree_check(d(tool), want),
                  dst=d(tool), xdg=x(tool), server_pid=t.srv.proc.pid)
    t.defer_deletes = False
    for tool in set(fresh_tools + nc_tools):
        bs.rm_tree(d(tool))
    t.empty_trash()
    target_fresh = "phsync <= 1.00 x rsync with durable writes" + (" (1,000,000 files: 1.00)" if name != "small" else "")
    t.report_row(name + " fresh", fresh_tools, [(f, p) for f in fresh_tools if f.startswith("phsync")
                                                for p in ("rsync", "sftp") if p in fresh_tools],
                 "%s; %d files, %.2f GB" % (target_fresh, want[0], want[1] / 1e9), rss=True)
    target_nc = ("phsync <= 0.50 x rsync" if name == "small" else
                 "phsync (helper) <= 0.40 x rsync, phsync-never <= 0.80, peak RSS <= 64 MB")
    t.report_row(name + " no-change", nc_tools, [("phsync", "rsync"), ("phsync-never", "rsync"),
                                                 ("phsync", "phsync-never")], target_nc, rss=True)


def row_backup(t, cfg, sizes):
    src, want = ensure_camera(t.a.data, sizes["camera"])
    out = os.path.join(t.a.data, "backup-out")
    state = os.path.join(t.a.data, "backup-state")
    tools = ["phsync", "ssh-tar-zstd"]
    arch = {"phsync": os.path.join(out, "p.tar.zst"), "ssh-tar-zstd": os.path.join(out, "t.tar.zst")}
    argv = {"phsync": [t.a.phsync, "backup", "-F", cfg, "-q", "--no-default-excludes", "--state-dir", state,
                       "phone:" + src, arch["phsync"]],
            "ssh-tar-zstd": ["sh", "-c", "ssh -F %s -c %s phone tar -cf - -C %s . | zstd -q -T0 > %s" % (
                cfg, CIPHER, src, arch["ssh-tar-zstd"])]}
    for rep in range(t.a.reps):
        for tool in rotate(tools, rep):
            bs.rm_tree(out)
            bs.rm_tree(state)
            os.makedirs(out)

            def check(tool=tool):
                got = bench_backup.tar_stat(arch[tool])
                return None if got == want else "archive holds %d files / %d bytes, want %d / %d" % (got + want)
            t.run("backup", tool, rep, argv[tool], check, fresh=True, server_pid=t.srv.proc.pid)
    bs.rm_tree(out)
    t.report_row("backup", tools, [("phsync", "ssh-tar-zstd")], "phsync <= 0.90 x ssh tar | zstd -T0, "
                 "phsync's RSS <= 32 MB", rss=True)


def row_weak(t, sizes):
    row = "weak phone"
    src, want = ensure_camera(t.a.data, sizes["weak"])
    cage = CpuCage("phsync-bench-weak-%d" % os.getpid(), t.a.weak_pct)
    if not cage.ok:
        t.say("")
        t.say("== %s   SKIPPED: no writable cgroup to cap the server's CPU (%s)" % (row, cage.reason))
        return
    srv2 = px = None
    try:
        srv2, _ = harness.start_bench_server(os.path.join(t.a.data, "server-weak"), log=log, log_level="INFO")
        cage.add(srv2.proc.pid)  # the listener: every session it forks from now on is in the cage
        for pid in bs._descendants(srv2.proc.pid):
            try:
                cage.add(pid)
            except ProcessLookupError:  # a process that ended meanwhile
                pass
        px = LinkProxy(srv2.port, rtt_ms=t.a.weak_rtt, mbit=t.a.weak_mbit).start()
        cfg = srv2.write_config(name="ssh_config.weak", port=px.port)
        log("weak phone: %s; link %g ms round trip, %g Mbit/s each way" % (cage.mode, t.a.weak_rtt, t.a.weak_mbit))
        env_save = t.env
        t.env = srv2.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": t.env["PHSYNC_HELPER_DIR"]})
        fill = os.path.join(t.xdg, "weak-fill")
        fill_helper_cache(t, cfg, fill)
        # phsync-known: a laptop that pulled from this phone before (a new folder, pulled fresh):
        # its fresh state folder holds the host's memo of the brought helper (docs/PROTOCOL.md),
        # so the run starts the cached helper at once; phsync: first contact every run.
        memos = [os.path.join(fill, "phsync", n) for n in sorted(os.listdir(os.path.join(fill, "phsync")))
                 if n.startswith("brought-")]
        tools = ["phsync", "phsync-known", "rsync"]
        for rep in range(t.a.reps):
            for tool in rotate(tools, rep):
                dst = os.path.join(t.dst, "weak-" + tool)
                t.run(row, tool, rep, t.argv(tool, cfg, src, dst), tree_check(dst, want), fresh=True, dst=dst,
                      xdg=os.path.join(t.xdg, "weak-" + tool), cage=cage,
                      xdg_seed=memos if tool == "phsync-known" else ())
                bs.rm_tree(dst)
        t.env = env_save
        gb = want[1] / 1e9
        cpu = {tool: t.med(row, tool, "cage_cpu") for tool in tools}
        extra = ["server CPU (cgroup): %s" % "; ".join(
            "%s %.2f s = %.2f s/GB (per run %s)" % (tool, cpu[tool], cpu[tool] / gb, ", ".join(
                "%.2f" % r["cage_cpu"] for r in t.rs(row, tool))) for tool in tools if cpu[tool] is not None)]
        for tool in ("phsync", "phsync-known"):
            q = t.ratio(row, tool, "rsync", "cage_cpu")
            if q:
                extra.append("ratio server CPU %s / rsync = %.2f   (per rep %.2f-%.2f, n=%d)" % ((tool,) + q))
        extra.append("quota periods in which the server was throttled, per run: %s (none: the quota did not "
                     "bind, the link or the machine did)" % "; ".join(
                         "%s %s" % (tool, ", ".join(r["throttled"] for r in t.rs(row, tool))) for tool in tools))
        extra.append(cage.mode)
        extra.append("link: %g ms round trip, %g Mbit/s each way (bench/linkproxy.py)" % (t.a.weak_rtt, t.a.weak_mbit))
        t.report_row(row, tools, [("phsync", "rsync"), ("phsync-known", "rsync")],
                     "phsync <= 0.95 x rsync, server CPU per GB <= rsync's; "
                     "%d files, %.2f GB" % (want[0], gb), extra=extra)
    finally:
        if srv2:
            srv2.stop()
        cage.close()


def row_helper(t, sizes):
    row = "helper no-change"
    src, want = ensure_camera(t.a.data, sizes["camera"])
    px = LinkProxy(t.srv.port).start()
    cfg = t.srv.write_config(name="ssh_config.count", port=px.port)
    tools = ["phsync", "phsync-never"]
    dst = os.path.join(t.dst, "helper-copy")
    xdg = os.path.join(t.xdg, "helper")
    # one copy and one state, pulled once (untimed); both tools re-pull it
    bs.rm_tree(dst)
    bs.rm_tree(xdg)
    os.makedirs(xdg)
    r = subprocess.run(t.argv("phsync", cfg, src, dst), env=dict(t.env, XDG_STATE_HOME=xdg),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        t.say("== %s: the first pull failed (%d): %s" % (row, r.returncode, r.stderr[-500:]))
        return
    reps = max(t.a.reps, 5)
    for rep in range(reps):
        for tool in rotate(tools, rep):
            t.run(row, tool, rep, t.argv(tool, cfg, src, dst), tree_check(dst, want), dst=dst, xdg=xdg,
                  server_pid=t.srv.proc.pid, proxy=px)
    bs.rm_tree(dst)
    down = {tool: t.med(row, tool, "down") for tool in tools}
    extra = ["bytes from the phone per run (median): %s" % ", ".join(
        "%s %d" % (tool, down[tool]) for tool in tools if down[tool] is not None)]
    if all(v is not None for v in down.values()):
        extra.append("auto - never = %d bytes a run (target: nothing read back; the helper here: %d bytes)" % (
            down["phsync"] - down["phsync-never"], helper_size(t)))
    t.report_row(row, tools, [("phsync", "phsync-never")], "auto (cached helper) <= 1.05 x --helper never, "
                 "nothing read back per run; %d files" % want[0], extra=extra)


def row_watch(t, sizes):
    row = "watcher"
    base = os.path.join(t.a.data, "watch")
    os.makedirs(base, exist_ok=True)
    first, later = [], []
    for start in range(sizes["starts"]):
        local, remote, w = bench_watch.start_push_watch(t.srv, dict(t.env, XDG_STATE_HOME=os.path.join(
            base, "xdg-%d" % start)), t.a.phsync, base, "w%d" % start)
        try:
            for i in range(1 + sizes["photos"]):
                data = os.urandom(bench_watch.PHOTO)
                digest = hashlib.blake2b(data, digest_size=16).digest()
                name = "IMG_%04d.jpg" % i
                t_close = bench_watch.write_photo(os.path.join(local, name), data)
                dst = os.path.join(remote, name)
                while not bench_watch.complete(dst, bench_watch.PHOTO, digest):
                    if time.monotonic() > t_close + 60:
                        raise RuntimeError("%s did not arrive within 60 s" % name)
                    time.sleep(0.002)
                dt = time.monotonic() - t_close
                (first if i == 0 else later).append(dt)
                log("watch start %d photo %d: %.3f s" % (start, i, dt))
                time.sleep(0.5)
        finally:
            w.stop()
    t.results.append({"row": row, "tool": "phsync", "first": first, "later": later, "ok": True, "rep": 0})

    def f(v):
        return "median %.3f s (%.3f-%.3f, n=%d)" % (statistics.median(v), min(v), max(v), len(v)) if v else "-"
    t.say("")
    t.say("== %s   [target: <= 0.5 s for every photo, the first after a start included]" % row)
    t.say("   first photo after a start: %s" % f(first))
    t.say("   later photos:              %s" % f(later))


# -- setup ----------------------------------------------------------------------------------------

def fs_note(path):
    """A note when path's file system is ext4 without a journal.  There, every inode allocated
    looks at the free inodes of its group one by one and skips those freed in the last 30 s
    (5.5 min while their inode-table block is dirty): ext4's recently_deleted(), which perf
    showed taking 60 % of both phsync's and rsync's CPU in a fresh small-file pull made
    right after the last copy was deleted (docs/PERFORMANCE.md section 7).  The many-file
    rows therefore move old copies aside and delete them after the row."""
    try:
        st = os.stat(path)
        dev = os.path.basename(os.path.realpath("/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))))
        with open("/sys/fs/ext4/%s/journal_task" % dev) as f:
            if f.read().strip() == "<none>":
                return ("note: %s is on ext4 without a journal (/dev/%s): creating files right after deleting "
                        "many costs every tool far more CPU than on a journalled file system" % (path, dev))
    except OSError:
        pass
    return None


def helper_size(t):
    d = t.env["PHSYNC_HELPER_DIR"]
    sizes = [os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.startswith("phsync-helper-")] if d else []
    return max(sizes) if sizes else 0


def fill_helper_cache(t, cfg, xdg):
    """One pull of an empty folder with --helper always: the helper is brought to the phone's
    cache (or found there); every later auto run finds it cached."""
    empty = os.path.join(t.a.data, "empty-src")
    os.makedirs(empty, exist_ok=True)
    dst = os.path.join(t.a.data, "empty-dst")
    bs.rm_tree(dst)
    bs.rm_tree(xdg)
    os.makedirs(xdg)
    r = subprocess.run([t.a.phsync, "pull", "-F", cfg, "--helper", "always", "phone:" + empty, dst],
                       env=dict(t.env, XDG_STATE_HOME=xdg), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("the helper could not be brought to the phone (%d): %s" % (r.returncode, r.stderr[-800:]))
    bs.rm_tree(dst)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phsync", default=os.environ.get("PHSYNC_BIN", os.path.join(REPO, "build", "phsync")))
    ap.add_argument("--quick", action="store_true", help="every row shrunk: the whole table in a few minutes")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma list from %s" % ",".join(ROWS))
    ap.add_argument("--reps", type=int, default=None, help="repetitions per row (default 5; 3 with --quick)")
    ap.add_argument("--million-reps", type=int, default=None,
                    help="fresh pulls of the million set per tool (default 1; --reps with --quick)")
    ap.add_argument("--data", default=os.path.join(os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"),
                                                   "table"))
    ap.add_argument("--million-data", default=os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"),
                    help="where the million set lives (default: bench_sync.py's folder, so the 4 GB set is made once "
                         "for both)")
    ap.add_argument("--drop-caches", action="store_true", help="drop the page cache before every fresh run "
                    "(echo 3 > /proc/sys/vm/drop_caches; the whole machine's cache)")
    ap.add_argument("--weak-pct", type=float, default=30, help="the weak phone's CPU quota, %% of one core (default 30)")
    ap.add_argument("--weak-rtt", type=float, default=10, help="the weak phone's link, round trip ms (default 10)")
    ap.add_argument("--weak-mbit", type=float, default=1000,
                    help="its bandwidth cap each way, Mbit/s (default 1000: above what the capped server can "
                         "encrypt, so that its CPU is what binds)")
    ap.add_argument("--run-timeout", type=float, default=3600)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    for r in rows:
        if r not in ROWS:
            ap.error("unknown row %s" % r)
    sizes = QUICK if a.quick else FULL
    if a.reps is None:
        a.reps = 3 if a.quick else 5
    if a.million_reps is None:
        a.million_reps = a.reps if a.quick else 1
    if not os.access(a.phsync, os.X_OK):
        ap.error("no phsync at %s (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build)" % a.phsync)
    for prog in ("rsync", "sftp", "ssh", "zstd", "tar"):
        if not shutil.which(prog):
            ap.error("%s not installed" % prog)
    a.data = os.path.abspath(a.data)
    os.makedirs(a.data, exist_ok=True)
    a.drop = a.drop_caches and bs.can_drop_caches()

    # A private copy of phsync and its helpers: a rebuild during the run changes nothing.
    under = os.path.join(a.data, "under-test")
    bs.rm_tree(under)
    os.makedirs(under)
    shutil.copy2(a.phsync, os.path.join(under, "phsync"))
    hdir = os.path.join(os.path.dirname(os.path.abspath(a.phsync)), "helpers")
    helpers = os.path.join(under, "helpers")
    if os.path.isdir(hdir):
        shutil.copytree(hdir, helpers)
    else:
        os.makedirs(helpers)
        log("note: no helpers/ beside %s: --helper auto runs over plain SFTP" % a.phsync)
    built = a.phsync
    a.phsync = os.path.join(under, "phsync")

    srv, clean = harness.start_bench_server(os.path.join(a.data, "server"), log=log, log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": helpers})
    t = Table(a, srv, env)
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": commit,
            "phsync": built, "version": subprocess.run([a.phsync, "--version"], capture_output=True,
                                                         text=True).stdout.strip(),
            "quick": a.quick, "reps": a.reps, "rows": rows, "cpus": os.cpu_count(), "load": bs.loadavg(),
            "drop_caches": a.drop, "clean_home": clean, "argv": sys.argv}
    t.say("phsync issue-24 table, %s, commit %s, %s; %d CPUs, load %s; %s; reps %d; page cache dropped: %s" % (
        info["date"], commit, info["version"], info["cpus"], info["load"], "QUICK (shrunk rows)" if a.quick
        else "full", a.reps, a.drop))
    note = fs_note(a.data)
    if note:
        t.say(note)
    os.makedirs(a.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw = os.path.join(a.out, "table-%s.json" % stamp)
    t0 = time.monotonic()
    try:
        fill_helper_cache(t, srv.config, os.path.join(t.xdg, "fill"))
        for row in rows:
            r0 = time.monotonic()
            try:
                if row == "camera":
                    row_camera(t, srv.config, sizes)
                elif row == "small":
                    src, want = ensure_small(a.data, *sizes["small"])
                    row_files(t, srv.config, "small", src, want, a.reps, a.reps)
                elif row == "million":
                    src, want = bs.ensure_million(a.million_data, sizes["million"])
                    row_files(t, srv.config, "million", src, want, a.million_reps, a.reps)
                elif row == "backup":
                    row_backup(t, srv.config, sizes)
                elif row == "weak":
                    row_weak(t, sizes)
                elif row == "helper":
                    row_helper(t, sizes)
                elif row == "watch":
                    row_watch(t, sizes)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                t.say("== %s   FAILED: %s" % (row, e))
                t.results.append({"row": row, "tool": "-", "rep": 0, "ok": False, "error": str(e)})
            log("(row %s took %.0f s)" % (row, time.monotonic() - r0))
    finally:
        srv.stop()
        with open(raw, "w") as f:
            json.dump({"info": info, "results": t.results, "table": t.lines}, f, indent=1, default=str)
    t.say("")
    t.say("(whole run %.0f s; raw results %s)" % (time.monotonic() - t0, raw))
    with open(os.path.join(a.out, "table-%s.txt" % stamp), "w") as f:
        f.write("\n".join(t.lines) + "\n")
    return 0 if all(r["ok"] for r in t.results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
