#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""phsync pull vs rsync -a over ssh vs OpenSSH sftp -r, on one loopback sshd, in one run.

Run it through bench/bench_sync.sh (which builds a Release phsync first); see --help.

Scenarios (each a fresh pull into an empty folder, then a no-change re-pull over the result):
  corpus   the phone-like camera corpus of bench/mkcorpus.py (default: about 1.5 GB, 2,500 files)
  small    the many-small-files tree (mkcorpus.py --small-tree: 500 folders x 100 files, 0.5-4 KB)
  million  issue 7's scale test, only when asked (--sets million; never in CI): 1,000,000 files of
           200-800 bytes (500 on average) in 2,000 folders of 500, DATA/million-N/dir_NNNN/
           file_NNNNNNN.dat (--million-scale N: N files in N/500 folders; 100000 to try it out).
           Made once (about a minute; 3.9 GB on disk for 1,000,000) and reused.  Its flow differs:
           one fresh pull per tool, then --million-reruns (default 3) no-change re-pulls per tool,
           alternating tools, over the kept copies (every copy and source walked once before
           them, so all of them run warm); a no-change pair during which other processes used
           more than --max-other-cpu cores is run again (the first one is kept in the raw
           results, marked superseded).  Also measured for phsync: its state database for the
           pair (.db plus -wal, bytes on disk) per file.  --profile CMD runs one more phsync
           no-change re-pull under CMD (valgrind, perf, strace), outside the medians.
Tools (all through the same sshd, the same ssh_config, AES-128-GCM):
  phsync          phsync pull -F CFG --no-progress --no-default-excludes --helper never
                  phone:SRC DST (plain SFTP; the same files as rsync; no cipher named:
                  phsync picks aes128-gcm itself when the CPU has AES instructions)
  phsync-nofsync  the same with --no-fsync (rsync and sftp do not fsync either)
  phsync-helper   the same with --helper always --helper-path PHSYNC: `phsync serve` on the
                  other end, as on a phone that has phsync or took the bootstrapped helper
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
sftp: sftp + ssh; phsync: one process, no child: libssh runs inside it).  The server side
(sshd, sftp-server, rsync --server) is not counted for anyone.  Also per run: the load
averages before and after (/proc/loadavg), and the CPU that other processes used during it
("other CPU", in cores: all busy CPU time in /proc/stat minus the client's user+sys time, the
server's processes' (sampled) and the bench's own, over the wall time) -- the machine is shared.
Every phsync tool gets its own XDG_STATE_HOME (DATA/xdg-state/SET-TOOL), emptied before each
fresh pull: a fresh pull is a new user's first contact, and the state's size can be measured.
"""

import argparse
import datetime
import json
import os
import platform
import random
import shutil
import signal
import statistics
import struct
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
ALL_TOOLS = ["phsync", "phsync-nofsync", "phsync-helper", "rsync", "sftp"]


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# -- data ----------------------------------------------------------------------------------------

def ensure_data(data, sets, scale, small_dirs, small_files, million_n):
    """Generates the requested corpora under DATA once; reuses them while their parameters match."""
    os.makedirs(data, exist_ok=True)
    recipes = {
        "corpus": (["--scale", str(scale)], "scale=%s seed=18 small=2000" % scale),
        "small": (["--small-tree", str(small_dirs), str(small_files)], "small-tree=%dx%d seed=18" % (small_dirs, small_files)),
    }
    out = {}
    for name in sets:
        if name == "million":
            out[name] = ensure_million(data, million_n)
            continue
        args, stamp_text = recipes[name]
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


MILLION_PER_DIR = 500


def make_million(root, nfiles, per_dir=MILLION_PER_DIR, seed=18):
    """nfiles files of 200-800 bytes (each unique: its number leads it) in folders of per_dir,
    ROOT/dir_NNNN/file_NNNNNNN.dat (25-byte paths), one second apart from BASE_TIME on."""
    rng = random.Random(seed * 104729 + 3)
    pool = rng.randbytes(1 << 20)
    part = root + ".part"
    rm_tree(part)
    os.makedirs(part)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    t = mkcorpus.BASE_TIME
    dirs = []
    for d in range((nfiles + per_dir - 1) // per_dir):
        dp = os.path.join(part, "dir_%04d" % d)
        os.mkdir(dp)
        dirs.append(dp)
        for k in range(d * per_dir, min(nfiles, (d + 1) * per_dir)):
            n = rng.randint(200, 800)
            off = rng.randrange(0, len(pool) - n)
            fd = os.open(os.path.join(dp, "file_%07d.dat" % k), flags, 0o644)
            try:
                os.write(fd, struct.pack(">I", k) + pool[off + 4:off + n])
                os.utime(fd, (t + k, t + k))
            finally:
                os.close(fd)
        if d % 200 == 199:
            log("  %d files" % min(nfiles, (d + 1) * per_dir))
    when = mkcorpus.BASE_TIME - 86400
    for dp in dirs:
        os.utime(dp, (when, when))
    os.rename(part, root)
    os.utime(root, (when, when))


def ensure_million(data, n):
    """The million set at scale n: DATA/million-N, with its file count and bytes kept in the
    stamp (walking a million files takes a while)."""
    root = os.path.join(data, "million-%d" % n)
    stamp = root + ".stamp"
    stamp_text = "million=%d per_dir=%d seed=18 sizes=200-800" % (n, MILLION_PER_DIR)
    have = open(stamp).read().split("\n") if os.path.exists(stamp) else []
    if not have or have[0] != stamp_text or not os.path.isdir(root):
        log("generating million (%s) in %s ..." % (stamp_text, root))
        if os.path.exists(stamp):
            os.unlink(stamp)
        rm_tree(root)
        t = time.monotonic()
        make_million(root, n)
        st = stat_tree_fast(root)
        with open(stamp, "w") as f:
            f.write("%s\n%d %d\n" % (stamp_text, st[0], st[1]))
        log("  done in %.0f s" % (time.monotonic() - t))
        have = open(stamp).read().split("\n")
    files, nbytes = (int(x) for x in have[1].split())
    log("%-7s %s: %d files, %.2f GB" % ("million", root, files, nbytes / 1e9))
    return root, (files, nbytes)


def stat_tree_fast(root):
    """mkcorpus.stat_tree (regular files, symlinks neither counted nor followed) with one
    stat per file: (files, bytes)."""
    files = total = 0
    todo = [root]
    while todo:
        with os.scandir(todo.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    files += 1
                    total += e.stat(follow_symlinks=False).st_size
    return files, total


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


def warm_tree(root):
    """Reads every file below root once (into the page cache), as the bench's tools will.  tar
    into a pipe (into /dev/null GNU tar would skip the reads)."""
    tar = subprocess.Popen(["tar", "-cf", "-", "-C", root, "."], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    while tar.stdout.read(1 << 20):
        pass
    tar.wait()


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


CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _machine_ticks():
    """(busy, steal) clock ticks of all CPUs since boot (busy: user nice system irq softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], (v[7] if len(v) > 7 else 0)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _descendants(root):
    out, todo = [], _children(root)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        todo += _children(p)
    return out


class TreeRss(threading.Thread):
    """Samples the summed RSS of the processes below `root` every interval.  Threads show up
    as children too (a thread's parent is its process's parent), so each process (thread
    group) is counted once.  Also keeps the last CPU time seen of every process below
    `server` (the sshd: its sessions are this run's server side)."""

    def __init__(self, root, interval=0.05, server=None):
        super().__init__(daemon=True)
        self.root, self.interval, self.peak_kb = root, interval, 0
        self.server, self.server_ticks, self.server_comm = server, {}, {}
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
            if self.server:
                for p in _descendants(self.server):
                    if str(p) in procs:
                        c = _cpu_ticks(p)
                        if c is not None:
                            self.server_ticks[p] = max(c, self.server_ticks.get(p, 0))
                            try:  # the latest name: a session's shell execs the server
                                with open("/proc/%d/comm" % p) as f:
                                    self.server_comm[p] = f.read().strip()
                            except OSError:
                                pass
            self.stop_ev.wait(self.interval)


def measure(argv, env, cwd, server_pid=None, timeout=None):
    """Runs argv under GNU time; returns dict(wall, rc, maxrss_kb, tree_kb, user, sys, other_cpu,
    steal, load_before, load_after, err).  other_cpu: cores that processes other than the
    client, the server's sessions and this bench kept busy, on average over the run."""
    fd, tfile = tempfile.mkstemp(prefix="phsync-bench-time-")
    os.close(fd)
    cmd = ["/usr/bin/time", "-f", "%M %U %S", "-o", tfile] + argv
    errf = tempfile.TemporaryFile()
    load_before = loadavg()
    server_before = {p: _cpu_ticks(p) or 0 for p in _descendants(server_pid)} if server_pid else {}
    busy0, steal0 = _machine_ticks()
    self0 = os.times()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf, env=env, cwd=cwd,
                         start_new_session=True)
    sampler = TreeRss(p.pid, server=server_pid)
    sampler.start()
    timed_out = False
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
    except KeyboardInterrupt:  # the run has a session of its own: it goes too
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    wall = time.monotonic() - t0
    busy1, steal1 = _machine_ticks()
    self1 = os.times()
    sampler.stop_ev.set()
    sampler.join()
    errf.seek(0)
    err = errf.read().decode("utf-8", "replace")
    if timed_out:
        err += "\n[bench: killed after %s s]" % timeout
    maxrss = user = sys_ = None
    try:
        with open(tfile) as f:
            lines = [l.strip() for l in f if l.strip()]
        m, u, sy = lines[-1].split()
        maxrss, user, sys_ = int(m), float(u), float(sy)
    except (OSError, ValueError, IndexError):
        pass
    os.unlink(tfile)
    server_s = sum(c - server_before.get(q, 0) for q, c in sampler.server_ticks.items()) / CLK_TCK
    server_by = {}
    for q, c in sampler.server_ticks.items():
        name = sampler.server_comm.get(q, "?")
        server_by[name] = server_by.get(name, 0) + (c - server_before.get(q, 0)) / CLK_TCK
    self_s = (self1.user + self1.system) - (self0.user + self0.system)
    other = None
    if user is not None and wall > 0:
        other = max(0.0, ((busy1 - busy0) / CLK_TCK - user - sys_ - server_s - self_s) / wall)
    return {"wall": wall, "rc": rc, "maxrss_kb": maxrss, "tree_kb": sampler.peak_kb, "user": user, "sys": sys_,
            "server_cpu": server_s, "server_cpu_by": server_by, "other_cpu": other, "steal": (steal1 - steal0) / CLK_TCK / wall if wall else None,
            "load_before": load_before, "load_after": loadavg(), "err": err[-2000:]}


def wait_quiet(limit_s, max_busy, window=3.0):
    """Waits (up to limit_s) until the machine's busy CPU over `window` seconds is below
    max_busy cores (nothing of the bench runs meanwhile); returns the last busy figure."""
    t_end = time.monotonic() + limit_s
    busy = None
    while limit_s > 0:
        b0 = _machine_ticks()[0]
        time.sleep(window)
        busy = (_machine_ticks()[0] - b0) / CLK_TCK / window
        if busy < max_busy or time.monotonic() >= t_end:
            log("(machine busy %.2f cores over %.0f s before the pair)" % (busy, window))
            break
    return busy


def state_size(xdg):
    """The phsync state under XDG_STATE_HOME=xdg: {db, wal, shm: bytes (st_size), db_alloc,
    wal_alloc: bytes allocated on disk, n_db: databases}."""
    out = {"db": 0, "wal": 0, "shm": 0, "db_alloc": 0, "wal_alloc": 0, "n_db": 0}
    d = os.path.join(xdg, "phsync")
    try:
        names = os.listdir(d)
    except OSError:
        return out
    for n in names:
        st = os.stat(os.path.join(d, n))
        if n.endswith(".db"):
            out["db"] += st.st_size
            out["db_alloc"] += st.st_blocks * 512
            out["n_db"] += 1
        elif n.endswith(".db-wal"):
            out["wal"] += st.st_size
            out["wal_alloc"] += st.st_blocks * 512
        elif n.endswith(".db-shm"):
            out["shm"] += st.st_size
    return out


# -- tools ----------------------------------------------------------------------------------------

def tool_argv(tool, phsync, cfg, src, dst, batchdir, phsync_extra):
    if tool.startswith("phsync"):
        a = [phsync, "pull", "-F", cfg] + phsync_extra
        if tool == "phsync-nofsync":
            a.append("--no-fsync")
        # plain SFTP, or `phsync serve` on the other end (the phone has phsync
        # or took the bootstrapped helper); never auto's failed exec in between
        if tool == "phsync-helper":
            a += ["--helper", "always", "--helper-path", phsync]
        else:
            a += ["--helper", "never"]
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


def counted(r):
    """A result that counts in the medians: checked, and not superseded by a re-run."""
    return r["ok"] and not r.get("superseded")


def report(results, tools, scenarios):
    lines = []
    hdr = "%-18s %-15s %5s %9s %9s %9s %11s %11s %9s" % ("scenario", "tool", "ok/n", "median s", "min s", "max s",
                                                         "%M MB", "tree MB", "other CPU")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    meds = {}
    for sc in scenarios:
        for tool in tools:
            rs = [r for r in results if r["scenario"] == sc and r["tool"] == tool and not r.get("superseded")]
            ok = [r for r in rs if counted(r)]
            walls = [r["wall"] for r in ok]
            m = med(walls)
            meds[(sc, tool)] = (m, med([r["maxrss_kb"] for r in ok]), med([r["tree_kb"] for r in ok]))
            oc = med([r.get("other_cpu") for r in ok])
            lines.append("%-18s %-15s %2d/%-2d %9s %9s %9s %11s %11s %9s" % (
                sc, tool, len(ok), len(rs), fmt(m, "s"), fmt(min(walls) if walls else None, "s"),
                fmt(max(walls) if walls else None, "s"), fmt(meds[(sc, tool)][1], "MB"), fmt(meds[(sc, tool)][2], "MB"),
                "%.2f" % oc if oc is not None else "-"))
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
                parts.append("(%%M %s/rsync %s)" % (v, ratio(meds[(sc, v)][1], meds[(sc, "rsync")][1])))
            lines.append("  %-18s %s" % (sc, "   ".join(parts)))
    states = [r for r in results if counted(r) and r.get("state") and r["state"]["n_db"]]
    if states:
        lines.append("")
        lines.append("phsync's state database after the run (.db + -wal, st_size; allocated in brackets):")
        for sc in scenarios:
            for tool in tools:
                rs = [r for r in states if r["scenario"] == sc and r["tool"] == tool]
                if rs:
                    st = rs[-1]["state"]
                    lines.append("  %-18s %-15s %.1f MB (%.1f MB) = %.1f bytes a file (%.1f); -wal %.1f MB" % (
                        sc, tool, (st["db"] + st["wal"]) / 1e6, (st["db_alloc"] + st["wal_alloc"]) / 1e6,
                        (st["db"] + st["wal"]) / rs[-1]["files"], (st["db_alloc"] + st["wal_alloc"]) / rs[-1]["files"],
                        st["wal"] / 1e6))
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
            lines.append("  %-18s wall %.2f <= %.2f x rsync: %s" % (sc, a / b, limit, "met" if a / b <= limit else "NOT met"))
        for sc in scenarios:
            if sc.startswith("million"):
                continue
            a, b = meds[(sc, "phsync")][2], meds[(sc, "rsync")][2]
            if a is None or not b:
                continue
            lines.append("  %-18s peak RSS (tree) %.0f MB <= rsync's %.0f MB: %s" % (
                sc, a / 1024, b / 1024, "met" if a <= b else "NOT met"))
    if "million no-change" in scenarios and "phsync" in tools:
        sc = "million no-change"
        lines.append("")
        lines.append("issue 7 targets for phsync at this scale (no-change re-pull):")
        a, b = meds[(sc, "phsync")][0], meds.get((sc, "rsync"), (None,))[0]
        if a is not None and b:
            lines.append("  wall %.2f s = %.2f x rsync's %.2f s <= 0.8: %s" % (a, a / b, b, "met" if a / b <= 0.8 else "NOT met"))
        m = meds[(sc, "phsync")][1]
        if m is not None:
            lines.append("  peak RSS (%%M) %.1f MB (%.0f MiB) <= 100 MB: %s" % (
                m * 1024 / 1e6, m / 1024, "met" if m * 1024 <= 100e6 else "NOT met"))
        rs = [r for r in states if r["scenario"] == sc and r["tool"] == "phsync"]
        if rs:
            st = rs[-1]["state"]
            per = (st["db"] + st["wal"]) / rs[-1]["files"]
            lines.append("  state %.1f bytes a file <= 150: %s" % (per, "met" if per <= 150 else "NOT met"))
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="phsync vs rsync vs sftp on one loopback sshd",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="repetitions of every tool and scenario (default 5; "
                    "not for million, see --million-reruns)")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list from %s" % ",".join(ALL_TOOLS))
    ap.add_argument("--sets", default="corpus,small", help="comma list from corpus,small,million (default corpus,small)")
    ap.add_argument("--data", default=os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"),
                    help="where the corpora and destinations live (default /var/tmp/phsync-bench)")
    ap.add_argument("--scale", type=float, default=1.0, help="camera corpus scale (default 1.0: about 1.5 GB)")
    ap.add_argument("--small-tree", nargs=2, type=int, default=[500, 100], metavar=("DIRS", "FILES"))
    ap.add_argument("--million-scale", type=int, default=1000000, metavar="N",
                    help="files in the million set (default 1000000; in folders of %d)" % MILLION_PER_DIR)
    ap.add_argument("--million-reruns", type=int, default=3, metavar="K",
                    help="no-change re-pulls per tool in the million set (default 3)")
    ap.add_argument("--max-other-cpu", type=float, default=0.5, metavar="CORES",
                    help="million set: a no-change pair during which other processes kept more than this "
                         "many cores busy is run again, up to twice (default 0.5)")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="million set: before each no-change pair, wait up to S seconds for the machine to be "
                         "quiet (busy CPU below --max-other-cpu over 3 s; default 0: no wait)")
    ap.add_argument("--keep", action="store_true",
                    help="million set: keep the copies and phsync's state at the end (default: removed)")
    ap.add_argument("--profile", action="append", default=[], metavar="CMD",
                    help="million set: after the series, one more phsync no-change re-pull run as CMD PHSYNC-ARGV "
                         "(e.g. 'valgrind --tool=massif --massif-out-file=/tmp/ms.out'; '{out}' in CMD becomes "
                         "the raw results folder); outside the medians; may be repeated")
    ap.add_argument("--profile-phsync", metavar="BIN",
                    help="the phsync binary for the --profile runs (e.g. a build of the same source with -g)")
    ap.add_argument("--run-timeout", type=float, default=3600, metavar="S",
                    help="kill a run that takes longer (default 3600 s)")
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
        res = [r for r in raw["results"] if not r.get("profile")]
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
    for s in sets:
        if s not in ("corpus", "small", "million"):
            ap.error("unknown set %s" % s)
    if "million" in sets and a.million_scale < 1:
        ap.error("--million-scale must be at least 1")
    if any(t.startswith("phsync") for t in tools) and not os.access(a.phsync, os.X_OK):
        ap.error("no phsync at %s (build it: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && "
                 "cmake --build build -j)" % a.phsync)
    for prog in ("rsync", "sftp", "ssh"):
        if prog in tools or prog == "ssh":
            if not shutil.which(prog):
                ap.error("%s not installed" % prog)
    if not os.access("/usr/bin/time", os.X_OK):
        ap.error("GNU time not installed (apt-get install time)")

    data = ensure_data(a.data, sets, a.scale, a.small_tree[0], a.small_tree[1], a.million_scale)
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

    srv, clean_home = harness.start_bench_server(os.path.join(a.data, "server"),
                                                 clean_home=not a.no_clean_home, log=log,
                                                 log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": ""})
    dstroot = os.path.join(a.data, "dst")
    os.makedirs(dstroot, exist_ok=True)
    xdgroot = os.path.join(a.data, "xdg-state")

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
        "argv": sys.argv, "million_reruns": a.million_reruns, "max_other_cpu": a.max_other_cpu,
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

    def save():
        with open(raw_path, "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)

    def run_one(s, tool, kind, fresh, rep, wrap=None):
        src, (nfiles, nbytes) = data[s]
        dst = os.path.join(dstroot, "%s-%s" % (s, tool))
        xdg = os.path.join(xdgroot, "%s-%s" % (s, tool))
        argv_ = tool_argv(tool, a.phsync, srv.config, src, dst, a.data, phsync_extra)
        if wrap:
            if a.profile_phsync:
                argv_[0] = os.path.abspath(a.profile_phsync)
            argv_ = wrap + argv_
        run_env = dict(env, XDG_STATE_HOME=xdg)
        if fresh:
            rm_tree(dst)
            rm_tree(xdg)
            settle(drop)
        if tool.startswith("phsync"):
            os.makedirs(xdg, exist_ok=True)
        prepare_dst(tool, dst)
        m = measure(argv_, run_env, srv.home, server_pid=srv.proc.pid if srv.proc else None, timeout=a.run_timeout)
        if s == "million":
            got = stat_tree_fast(dst) if os.path.isdir(dst) else (0, 0)
        else:
            got = mkcorpus.stat_tree(dst) if os.path.isdir(dst) else (0, 0)
        ok = m["rc"] == 0 and got == (nfiles, nbytes)
        r = dict(m, scenario="%s %s" % (s, kind), tool=tool, rep=rep, ok=ok,
                 files=got[0], bytes=got[1], argv=argv_)
        if tool.startswith("phsync"):
            r["state"] = state_size(xdg)
        if wrap:
            r["profile"] = True
        if not ok:
            log("  CHECK FAILED: %s %s rep %d: exit %d, %d files / %d bytes (want %d / %d)\n%s"
                % (tool, r["scenario"], rep, m["rc"], got[0], got[1], nfiles, nbytes, m["err"]))
        results.append(r)
        st = r.get("state")
        log("rep %d  %-18s %-15s %7.2f s  %%M %6.0f MB  tree %6.0f MB  user %5.1f sys %5.1f  other CPU %s  "
            "load %s -> %s%s%s" % (
                rep, r["scenario"], tool, m["wall"], (m["maxrss_kb"] or 0) / 1024, m["tree_kb"] / 1024,
                m["user"] or 0, m["sys"] or 0, "%.2f" % m["other_cpu"] if m["other_cpu"] is not None else "-",
                m["load_before"], m["load_after"],
                "  state %.1f B/file" % ((st["db"] + st["wal"]) / max(1, nfiles)) if st and st["n_db"] else "",
                "" if ok else "  (FAILED CHECK)"))
        save()
        return r

    def warm(s):
        """Walks the source and every tool's copy (and reads phsync's state) so the no-change
        re-pulls all start warm, whichever fresh pull the page cache was dropped after."""
        t = time.monotonic()
        stat_tree_fast(data[s][0])
        for tool in tools:
            dst = os.path.join(dstroot, "%s-%s" % (s, tool))
            if os.path.isdir(dst):
                stat_tree_fast(dst)
            sd = os.path.join(xdgroot, "%s-%s" % (s, tool), "phsync")
            for n in (os.listdir(sd) if os.path.isdir(sd) else []):
                with open(os.path.join(sd, n), "rb") as f:
                    while f.read(1 << 20):
                        pass
        log("(warmed the source and the copies in %.0f s)" % (time.monotonic() - t))

    try:
        rep_sets = [s for s in sets if s != "million"]
        for rep in range(a.reps if rep_sets else 0):
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for s in rep_sets:
                for tool in order:
                    run_one(s, tool, "fresh", True, rep)
                    if not a.no_rerun:
                        run_one(s, tool, "no-change", False, rep)
                    rm_tree(os.path.join(dstroot, "%s-%s" % (s, tool)))
        if "million" in sets:
            s = "million"
            for tool in tools:
                run_one(s, tool, "fresh", True, 0)
            if not a.no_rerun:
                warm(s)
                for rep in range(a.million_reruns):
                    order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                    for attempt in range(3):
                        wait_quiet(a.wait_quiet, a.max_other_cpu)
                        pair = [run_one(s, tool, "no-change", False, rep) for tool in order]
                        busy = [r for r in pair if (r.get("other_cpu") or 0) > a.max_other_cpu]
                        if not busy or attempt == 2:
                            break
                        log("  other processes kept %s cores busy during %s: this pair runs again" % (
                            ", ".join("%.2f" % r["other_cpu"] for r in busy), ", ".join(r["tool"] for r in busy)))
                        for r in pair:
                            r["superseded"] = True
                for cmd in a.profile:
                    if "phsync" not in tools:
                        break
                    wrap = cmd.replace("{out}", a.out).split()
                    log("profile: %s" % " ".join(wrap))
                    run_one(s, "phsync", "profile", False, 0, wrap=wrap)
            if not a.keep:
                for tool in tools:
                    rm_tree(os.path.join(dstroot, "%s-%s" % (s, tool)))
                    rm_tree(os.path.join(xdgroot, "%s-%s" % (s, tool)))
    finally:
        srv.stop()
        save()

    table = report([r for r in results if not r.get("profile")], tools, scenarios)
    head = "phsync bench %s on %s (%d CPUs, %s), page cache dropped before fresh runs: %s\n" % (
        info["date"], info["cpu"], info["cpus"], info["kernel"], drop)
    head += "data: %s\n" % "; ".join("%s %d files %.2f GB" % (k, v["files"], v["bytes"] / 1e9) for k, v in info["data"].items())
    head += "reps: %s\n" % ", ".join(
        ["%d (fresh + no-change) for %s" % (a.reps, ",".join(s for s in sets if s != "million"))] * any(s != "million" for s in sets) +
        ["million: 1 fresh + %d no-change per tool" % a.million_reruns] * ("million" in sets))
    print(head + table)
    with open(os.path.join(a.out, "bench-%s.txt" % stamp), "w") as f:
        f.write(head + table + "\n")
    log("raw results: %s" % raw_path)
    return 0 if all(r["ok"] for r in results if not r.get("profile")) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
