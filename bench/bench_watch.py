#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The watcher's targets of issue 9, measured against a loopback sshd (never a timed test).

    bench/bench_watch.py [--phsync build-rel/phsync] [--reps 20] [--files 50000] [--idle 60]

(a) latency: `phsync push --watch LOCAL phone:REMOTE` runs; a 3 MB photo (random bytes) is
    written and closed in LOCAL; the time from its close() to the file being complete under its
    name on the "phone" (renamed into place: its full size and bytes), --reps times, median
    and spread. Target: median <= 1.0 s (issue 9); <= 0.5 s for every photo (issue 24). A file
    closed after writing waits for no settle period since issue 24 (up to 0.30 s of each
    figure before).
(b) burst: 1,000 photos (64 KiB each) written at once into the watched folder by one loop (a
    camera import); counted: the syncs that moved files (the watcher's "push: N file(s)
    copied" lines) until all 1,000 are on the phone, and the time that took. Target: a handful
    of syncs, not 1,000.
(c) idle: `phsync daemon` with one push pair over a tree of --files files (100 per folder)
    after its first sync; over --idle seconds with nothing happening, the daemon's CPU time
    (utime + stime from /proc/PID/stat) and its RSS (VmRSS, and the peak VmHWM). Targets:
    <= 0.05 s CPU, <= 30 MB. The same for a pull pair polling the phone every 30 s (the
    default) over the same tree: the remote side's idle cost.

(d) remote pickup: `phsync pull --watch --interval I` (default 10); a 3 MB photo appears in the
    phone's folder (written beside it and renamed in, as a camera app finishes a photo) at a
    random moment; the time until it is complete on the laptop, --pull-reps times. Target:
    within one poll interval plus the sync time (every figure <= I + the sync's own time).

CPU time comes from /proc/PID/stat in clock ticks (1/SC_CLK_TCK s, 10 ms here): "0.000" means
less than one tick over the whole idle period; where perf is installed, `perf stat -e
task-clock -p PID` over the same window gives it in milliseconds (all threads).

The sshd is the tests' harness (tests/lib/harness.py, as bench_wire.py uses it): a real
OpenSSH sshd on 127.0.0.1 with throwaway keys. The load average before and after each part is
printed: on a shared machine the figures move with it. Results go to stdout and, as JSON, to
bench/out/watch-DATE.json.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import harness  # noqa: E402

PHOTO = 3 * 1000 * 1000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    sys.stderr.write("[bench_watch] %s\n" % msg)
    sys.stderr.flush()


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Proc:
    """phsync in the background, its stderr lines collected (with the time each came)."""

    def __init__(self, argv, env):
        self.lines = []
        self.lock = threading.Lock()
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  start_new_session=True)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.p.stderr:
            with self.lock:
                self.lines.append((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\n")))

    def matching(self, rx, since=0.0):
        r = re.compile(rx)
        with self.lock:
            return [l for t, l in self.lines if t >= since and r.search(l)]

    def wait_line(self, rx, timeout=600):
        end = time.monotonic() + timeout
        while not self.matching(rx):
            if self.p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("no line %r; phsync said:\n%s" % (
                    rx, "\n".join(l for _, l in self.lines[-30:])))
            time.sleep(0.05)

    def cpu_s(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime

    def mem_kb(self):
        out = {}
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0])
        return out

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.t.join(5)
        return self.p.returncode


def write_photo(path, data):
    """Writes and closes path; returns the monotonic time of the close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
    return time.monotonic()


def complete(path, size, digest):
    try:
        if os.stat(path).st_size != size:
            return False
        with open(path, "rb") as f:
            return hashlib.blake2b(f.read(), digest_size=16).digest() == digest
    except OSError:
        return False


def start_push_watch(srv, env, phsync, base, tag):
    """Empty folders TAG-local and TAG-remote and a `push --watch` between them, watching:
    (local, remote, the watch's Proc)."""
    local, remote = os.path.join(base, tag + "-local"), os.path.join(base, tag + "-remote")
    for d in (local, remote):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    w = Proc([phsync, "push", "--watch", "-F", srv.config, local, "phone:" + remote], env)
    try:
        w.wait_line(r"watching ")
    except BaseException:
        w.stop()
        raise
    return local, remote, w


def part_latency(a, srv, env, phsync, base):
    local, remote, w = start_push_watch(srv, env, phsync, base, "lat")
    try:
        times = []
        la0 = loadavg()
        for i in range(a.reps):
            data = os.urandom(PHOTO)
            digest = hashlib.blake2b(data, digest_size=16).digest()
            name = "IMG_%04d.jpg" % i
            dst = os.path.join(remote, name)
            t_close = write_photo(os.path.join(local, name), data)
            end = t_close + 60
            while not complete(dst, PHOTO, digest):
                if time.monotonic() > end:
                    raise RuntimeError("%s did not arrive within 60 s" % name)
                time.sleep(0.002)
            dt = time.monotonic() - t_close
            times.append(dt)
            log("(a) %s: %.3f s" % (name, dt))
            time.sleep(0.5)  # let the run end before the next photo
        la1 = loadavg()
    finally:
        w.stop()
    return {"reps": a.reps, "median_s": statistics.median(times), "min_s": min(times),
            "max_s": max(times), "all_s": times, "load_before": la0, "load_after": la1}


def part_burst(a, srv, env, phsync, base):
    local, remote, w = start_push_watch(srv, env, phsync, base, "burst")
    try:
        blobs = [os.urandom(64 * 1024) for _ in range(a.burst)]
        la0 = loadavg()
        t0 = time.monotonic()
        for i, b in enumerate(blobs):
            write_photo(os.path.join(local, "IMG_%04d.jpg" % i), b)
        t_written = time.monotonic() - t0
        end = time.monotonic() + 600
        while True:
            try:
                n = sum(1 for e in os.scandir(remote) if e.name.startswith("IMG_"))
            except OSError:
                n = 0
            if n >= a.burst:
                break
            if time.monotonic() > end:
                raise RuntimeError("only %d of %d photos arrived" % (n, a.burst))
            time.sleep(0.01)
        t_all = time.monotonic() - t0
        # The last run's summary line comes after its last rename: wait for the count.
        w.wait_line(r"push: \d+ file")
        deadline = time.monotonic() + 30
        while True:
            syncs = w.matching(r"push: \d+ file\(s\) copied", since=t0)
            copied = sum(int(re.search(r"push: (\d+) file", l).group(1)) for l in syncs)
            if copied >= a.burst or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        la1 = loadavg()
        for l in syncs:
            log("(b) " + l)
    finally:
        w.stop()
    return {"photos": a.burst, "syncs": len(syncs), "files_per_sync":
            [int(re.search(r"push: (\d+) file", l).group(1)) for l in syncs],
            "written_in_s": t_written, "all_arrived_s": t_all, "load_before": la0,
            "load_after": la1}


def part_pickup(a, srv, env, phsync, base):
    local, remote = os.path.join(base, "pick-local"), os.path.join(base, "pick-remote")
    for d in (local, remote):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(remote)
    w = Proc([phsync, "pull", "--watch", "--interval", str(a.interval), "-F", srv.config,
              "phone:" + remote, local], env)
    rows = []
    try:
        w.wait_line(r"watching ")
        import random
        rnd = random.Random(9)
        la0 = loadavg()
        for i in range(a.pull_reps):
            time.sleep(rnd.uniform(0, a.interval))
            data = os.urandom(PHOTO)
            digest = hashlib.blake2b(data, digest_size=16).digest()
            name = "IMG_%04d.jpg" % i
            tmp = os.path.join(remote, ".pending-" + name)
            with open(tmp, "wb") as f:
                f.write(data)
            os.rename(tmp, os.path.join(remote, name))
            t0 = time.monotonic()
            dst = os.path.join(local, name)
            while not complete(dst, PHOTO, digest):
                if time.monotonic() > t0 + 10 * a.interval + 60:
                    raise RuntimeError("%s was not pulled" % name)
                time.sleep(0.005)
            dt = time.monotonic() - t0
            rows.append(dt)
            log("(d) %s: on the laptop %.2f s after it appeared on the phone" % (name, dt))
        la1 = loadavg()
    finally:
        w.stop()
    return {"interval_s": a.interval, "reps": a.pull_reps, "all_s": rows,
            "max_s": max(rows), "median_s": statistics.median(rows),
            "load_before": la0, "load_after": la1}


def make_tree(root, files):
    if os.path.isdir(root) and sum(len(f) for _, _, f in os.walk(root)) == files:
        return
    shutil.rmtree(root, ignore_errors=True)
    for i in range(files):
        d = os.path.join(root, "d%03d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, "f%05d.jpg" % i), "wb") as f:
            f.write(b"x" * 100)
        os.utime(os.path.join(d, "f%05d.jpg" % i), (1700000000, 1700000000))


def part_idle(a, srv, env, phsync, base, direction):
    tree = os.path.join(base, "idle-tree-%d" % a.files)
    log("(c) making %d files in %s" % (a.files, tree))
    make_tree(tree, a.files)
    local = os.path.join(base, "idle-local-" + direction)
    remote = os.path.join(base, "idle-remote-" + direction)
    xdg = os.path.join(base, "idle-xdg-" + direction)
    for d in (local, remote, xdg):
        shutil.rmtree(d, ignore_errors=True)
    subprocess.run(["cp", "-a", tree, local if direction == "push" else remote], check=True)
    conf = os.path.join(base, "idle-%s.conf" % direction)
    with open(conf, "w") as f:
        f.write("[defaults]\nssh-config = %s\n\n[idle]\ndirection = %s\nremote = phone:%s\n"
                "local = %s\n" % (srv.config, direction, remote, local))
    denv = dict(env, XDG_STATE_HOME=xdg)
    d = Proc([phsync, "daemon", "-c", conf], denv)
    try:
        t0 = time.monotonic()
        d.wait_line(r"idle: watching ", timeout=1800)
        first = time.monotonic() - t0
        log("(c) %s: first sync of %d files took %.1f s; idle for %d s" % (
            direction, a.files, first, a.idle))
        time.sleep(1)  # the end of the first run (threads joined, buffers freed)
        la0 = loadavg()
        c0, m0 = d.cpu_s(), d.mem_kb()
        task_ms = None
        if shutil.which("perf"):
            # task-clock of every thread (the workers a poll starts too), in ms: /proc's
            # ticks cannot tell 0 from 9 ms.
            r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-p", str(d.p.pid),
                                "--", "sleep", str(a.idle)], capture_output=True, text=True)
            for line in r.stderr.splitlines():
                f = line.split(",")
                if len(f) > 2 and f[2].startswith("task-clock"):
                    try:
                        task_ms = float(f[0])
                    except ValueError:
                        pass
        else:
            time.sleep(a.idle)
        c1, m1 = d.cpu_s(), d.mem_kb()
        la1 = loadavg()
        folders = a.files // 100 + 1
    finally:
        d.stop()
    return {"direction": direction, "files": a.files, "folders": folders, "idle_s": a.idle,
            "cpu_s": round(c1 - c0, 3), "perf_task_clock_ms": task_ms, "rss_mb_before": m0["VmRSS"] / 1024,
            "rss_mb_after": m1["VmRSS"] / 1024, "peak_rss_mb": m1["VmHWM"] / 1024,
            "first_sync_s": first, "load_before": la0, "load_after": la1}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"))
    ap.add_argument("--phsync", default=os.environ.get("PHSYNC_BIN", os.path.join(REPO, "build", "phsync")))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--idle", type=int, default=60)
    ap.add_argument("--interval", type=int, default=10, help="(d): the pull's poll interval")
    ap.add_argument("--pull-reps", type=int, default=5)
    ap.add_argument("--parts", default="latency,burst,idle-push,idle-pull,pickup")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    parts = [p for p in a.parts.split(",") if p]

    base = os.path.join(a.data, "watch")
    os.makedirs(base, exist_ok=True)
    phsync = os.path.join(base, "phsync-under-test")
    shutil.copy2(a.phsync, phsync)
    srv = harness.SshServer(statedir=os.path.join(base, "server"))
    srv.start()
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": ""})
    env["XDG_STATE_HOME"] = os.path.join(base, "xdg")
    shutil.rmtree(env["XDG_STATE_HOME"], ignore_errors=True)
    res = {"argv": sys.argv, "nproc": os.cpu_count(), "load_at_start": loadavg()}
    try:
        if "latency" in parts:
            res["latency"] = r = part_latency(a, srv, env, phsync, base)
            print("(a) 3 MB photo closed -> complete on the phone: median %.3f s (min %.3f, "
                  "max %.3f, %d reps; load %s -> %s)" % (r["median_s"], r["min_s"], r["max_s"],
                                                        r["reps"], r["load_before"], r["load_after"]))
        if "burst" in parts:
            res["burst"] = r = part_burst(a, srv, env, phsync, base)
            print("(b) %d photos dropped at once: %d sync(s) (%s files), all on the phone %.1f s "
                  "after the first was written (written in %.2f s; load %s -> %s)" % (
                      r["photos"], r["syncs"], "+".join(map(str, r["files_per_sync"])),
                      r["all_arrived_s"], r["written_in_s"], r["load_before"], r["load_after"]))
        for direction in ("push", "pull"):
            if "idle-" + direction in parts:
                res["idle_" + direction] = r = part_idle(a, srv, env, phsync, base, direction)
                print("(c) idle %d s, %s pair, %d files in %d folders: CPU %.3f s (/proc ticks; "
                      "perf task-clock %s ms), RSS %.1f MB "
                      "(peak %.1f MB; first sync %.1f s; load %s -> %s)" % (
                          r["idle_s"], direction, r["files"], r["folders"], r["cpu_s"],
                          "%.2f" % r["perf_task_clock_ms"] if r["perf_task_clock_ms"] is not None else "n/a",
                          r["rss_mb_after"], r["peak_rss_mb"], r["first_sync_s"],
                          r["load_before"], r["load_after"]))
        if "pickup" in parts:
            res["pickup"] = r = part_pickup(a, srv, env, phsync, base)
            print("(d) a photo appearing on the phone, pull --watch --interval %d: on the laptop "
                  "after %s s (max %.2f; load %s -> %s)" % (
                      r["interval_s"], ", ".join("%.2f" % x for x in r["all_s"]), r["max_s"],
                      r["load_before"], r["load_after"]))
    finally:
        srv.stop()
    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, "watch-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    with open(raw, "w") as f:
        json.dump(res, f, indent=1)
    log("raw results: %s" % raw)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
