#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Bytes on the wire and wall time of syncing a gallery's edits, push and pull: phsync (plain
SFTP and through its remote helper) vs rsync vs OpenSSH sftp, through one counting proxy
(bench/linkproxy.py) in front of one loopback sshd.

    bench/bench_wire.py [--scale 0.2] [--edits 60] [--reps 3] [--link loopback,wifi]
                        [--dir push,pull] [--tools phsync,phsync-helper,rsync,sftp]

The destination holds a synced copy of the phone corpus (bench/mkcorpus.py), made by each
tool itself; mkcorpus.py --edit K applies K typical gallery edits to the source side (a grown
EXIF block that shifts the rest, an orientation flag flip, an appended tail; one hour later
each). Then each tool moves them, through the proxy:

  phsync         phsync push|pull -F CFG --no-progress --helper never --no-default-excludes
                 (push: plain SFTP with copy-data against the state's signatures, nothing
                 installed on the server; pull: whole files, SFTP cannot do better)
  phsync-helper  the same with --helper always --helper-path PHSYNC: `phsync serve` on the
                 other end (pull: the laptop signs its old copies, the helper sends deltas;
                 push: copy-data + literals as above)
  phsync-checkfile  (pull only; asked for by --tools, needs root and ProFTPD from
                 scripts/install-deps.sh) phsync pull --helper never from a second server,
                 ProFTPD's mod_sftp on loopback behind its own proxy of the same link, over
                 the same corpus: check-file deltas without a helper
  rsync          rsync -a -e 'ssh -F CFG -c aes128-gcm@openssh.com' (rsync on both ends, its
                 delta algorithm)
  rsync-fsync    the same with --fsync: each written file made durable, as phsync does by
                 default (--phsync-arg=--no-fsync gives phsync rsync's default instead)
  sftp           sftp -b BATCH phone with one "put -p"/"get -p" per edited file (whole files:
                 what a user of OpenSSH alone would do, knowing which files changed)
  rdiff          not over the wire: the bytes of `rdiff signature` of every old file plus
                 `rdiff delta` of every new one, computed locally: what librsync's protocol
                 would move

Links: loopback (the proxy only counts) and wifi (--rtt ms round trip added, --mbit cap each
way; defaults 6 ms and 300 Mbit/s, a phone's Wi-Fi).  Reported per tool and link: bytes up
(client to server), down, total, wall time (median of --reps), and ratios to rsync.  After
every run the destination is compared with the source (every file's bytes and mtime): a
wrong result is reported and fails the run.
"""

import argparse
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
from linkproxy import LinkProxy  # noqa: E402

CIPHER = "aes128-gcm@openssh.com"
TOOLS = ["phsync", "phsync-helper", "rsync", "rsync-fsync", "sftp"]
OPTIONAL_TOOLS = ["phsync-checkfile"]


def log(msg):
    sys.stderr.write("[bench_wire] %s\n" % msg)
    sys.stderr.flush()


def digest_tree(root):
    out = {}
    for dp, _, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            st = os.lstat(p)
            with open(p, "rb") as f:
                h = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
            out[os.path.relpath(p, root)] = (st.st_size, int(st.st_mtime), h)
    return out


def edited_files(before, after):
    return sorted(k for k in after if before.get(k) != after[k])


def copy_tree(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    subprocess.run(["cp", "-a", src, dst], check=True)


def run(argv, env):
    t = time.monotonic()
    r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    dt = time.monotonic() - t
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (argv[0], r.returncode, r.stderr[-2000:]))
    return dt


def rdiff_bytes(old_root, new_root, files, tmp):
    total = 0
    for k in files:
        sig, delta = os.path.join(tmp, "sig"), os.path.join(tmp, "delta")
        for x in (sig, delta):  # rdiff will not overwrite
            if os.path.exists(x):
                os.unlink(x)
        subprocess.run(["rdiff", "signature", os.path.join(old_root, k), sig], check=True)
        subprocess.run(["rdiff", "delta", sig, os.path.join(new_root, k), delta], check=True)
        total += os.path.getsize(sig) + os.path.getsize(delta)
    return total


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("PHSYNC_BENCH_DATA", "/var/tmp/phsync-bench"))
    ap.add_argument("--scale", type=float, default=0.2, help="camera corpus scale (default 0.2)")
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--link", default="loopback,wifi")
    ap.add_argument("--rtt", type=float, default=6.0, help="wifi link: round trip added, ms")
    ap.add_argument("--mbit", type=float, default=300.0, help="wifi link: cap each way, Mbit/s")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--dir", default="push,pull", help="directions measured (default push,pull)")
    ap.add_argument("--phsync", default=os.environ.get("PHSYNC_BIN", os.path.join(REPO, "build", "phsync")))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--phsync-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for every timed phsync run (e.g. --no-fsync), "
                         "to see what a part costs")
    a = ap.parse_args(argv)
    tools = [t for t in a.tools.split(",") if t]
    links = [l for l in a.link.split(",") if l]
    directions = [d for d in a.dir.split(",") if d]

    base = os.path.join(a.data, "wire")
    src = os.path.join(base, "corpus-%g" % a.scale)
    if not os.path.isdir(src):
        log("making the corpus (scale %g) in %s" % (a.scale, src))
        os.makedirs(src)
        mkcorpus.make_camera(src, a.scale, 18, int(2000 * a.scale))
        mkcorpus.settle_dirs(src)
    edited = os.path.join(base, "edited-%g-%d" % (a.scale, a.edits))
    if not os.path.isdir(edited):
        copy_tree(src, edited)
        mkcorpus.edit(edited, a.edits)
    d_src, d_new = digest_tree(src), digest_tree(edited)
    changed = edited_files(d_src, d_new)
    log("corpus: %d files, %.1f MB; %d edited files (%.1f MB)" % (
        len(d_src), sum(v[0] for v in d_src.values()) / 1e6, len(changed),
        sum(d_new[k][0] for k in changed) / 1e6))

    phsync = os.path.join(base, "phsync-under-test")
    shutil.copy2(a.phsync, phsync)
    # The login user's shell start-up files are not timed in every tool's session.
    srv, _ = harness.start_bench_server(os.path.join(base, "server"), log=log, log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": ""})
    pf = None
    if "phsync-checkfile" in tools:
        pf = harness.SshServer(kind="proftpd", statedir=os.path.join(base, "server-proftpd"))
        pf.start()
    results = []
    helper = ["--helper", "always", "--helper-path", phsync]

    def tool_argv(tool, direction, cfg, local, remote, quiet):
        """The command of one tool moving LOCAL to/from phone:REMOTE."""
        out = ["-q"] if quiet else ["--no-progress"]
        if tool in ("phsync", "phsync-helper", "phsync-checkfile"):
            h = helper if tool == "phsync-helper" else ["--helper", "never"]
            ends = [local, "phone:" + remote] if direction == "push" else ["phone:" + remote, local]
            extra = [] if quiet else a.phsync_arg
            return [phsync, direction, "-F", cfg] + out + h + ["--no-default-excludes"] + extra + ends
        if tool in ("rsync", "rsync-fsync"):
            ends = [local + "/", "phone:%s/" % remote]
            fs = ["--fsync"] if tool == "rsync-fsync" and not quiet else []
            return ["rsync", "-a"] + fs + ["-e", "ssh -F %s -c %s" % (cfg, CIPHER)] + (ends if direction == "push" else ends[::-1])
        batch = os.path.join(base, "sftp-batch")
        with open(batch, "w") as f:
            for k in changed:
                lp, rp = os.path.join(local, k), os.path.join(remote, k)
                f.write(('put -p "%s" "%s"\n' % (lp, rp)) if direction == "push" else ('get -p "%s" "%s"\n' % (rp, lp)))
        return ["sftp", "-q", "-F", cfg, "-c", CIPHER, "-b", batch, "phone"]

    try:
        for link in links:
            px = LinkProxy(srv.port, rtt_ms=a.rtt if link == "wifi" else 0,
                           mbit=a.mbit if link == "wifi" else 0).start()
            cfg = srv.write_config(name="ssh_config.wire-%s" % link, port=px.port)
            if pf is not None:
                px2 = LinkProxy(pf.port, rtt_ms=a.rtt if link == "wifi" else 0,
                                mbit=a.mbit if link == "wifi" else 0).start()
                cfg2 = pf.write_config(name="ssh_config.wire-%s" % link, port=px2.port)
            for direction in directions:
                for rep in range(a.reps):
                    for tool in tools[rep % len(tools):] + tools[:rep % len(tools)]:
                        if tool == "phsync-checkfile" and direction == "push":
                            continue    # check-file is for pulls
                        tpx, tcfg = (px2, cfg2) if tool == "phsync-checkfile" else (px, cfg)
                        local = os.path.join(base, "local-" + tool)
                        remote = os.path.join(base, "remote-" + tool)
                        xdg = os.path.join(base, "xdg-" + tool)
                        tenv = dict(env, XDG_STATE_HOME=xdg)
                        # The synced starting point, made by the tool itself through the
                        # same proxy (uncounted; the state's pair key holds the port): the
                        # source side holds the corpus, the tool copies it over; then the
                        # source side's files get the edits.
                        shutil.rmtree(xdg, ignore_errors=True)
                        src_side, dst_side = (local, remote) if direction == "push" else (remote, local)
                        copy_tree(src, src_side)
                        if tool == "sftp":
                            copy_tree(src, dst_side)
                        else:
                            if os.path.exists(dst_side):
                                shutil.rmtree(dst_side)
                            run(tool_argv(tool, direction, tcfg, local, remote, True), tenv)
                        copy_tree(edited, src_side)
                        subprocess.run(["sync"])
                        tpx.wait_idle()
                        tpx.reset()
                        dt = run(tool_argv(tool, direction, tcfg, local, remote, False), tenv)
                        tpx.wait_idle()
                        up, down = tpx.counts()
                        ok = digest_tree(dst_side) == d_new
                        results.append({"link": link, "dir": direction, "tool": tool, "rep": rep,
                                        "wall_s": dt, "up": up, "down": down, "ok": ok})
                        log("%-8s %-4s %-13s rep %d: %.2f s, up %d, down %d%s" % (
                            link, direction, tool, rep, dt, up, down, "" if ok else "  WRONG RESULT"))
            px.sock.close()
            if pf is not None:
                px2.sock.close()
        rd = rdiff_bytes(src, edited, changed, base)
    finally:
        srv.stop()
        if pf is not None:
            pf.stop()

    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, "wire-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    with open(raw, "w") as f:
        json.dump({"argv": sys.argv, "results": results, "rdiff_bytes": rd,
                   "edited_bytes": sum(d_new[k][0] for k in changed)}, f, indent=1)
    print("\n%d edited files, %.1f MB; rdiff signature+delta of them: %d bytes" % (
        len(changed), sum(d_new[k][0] for k in changed) / 1e6, rd))
    print("%-9s %-5s %-14s %12s %12s %12s %9s %9s %9s" % ("link", "dir", "tool", "up", "down", "total",
                                                          "wall s", "bytes/rs", "time/rs"))
    bad = False
    for link in links:
        for direction in directions:
            med = {}
            for tool in tools:
                rs = [r for r in results if r["link"] == link and r["tool"] == tool and r["dir"] == direction]
                if not rs:
                    continue
                bad = bad or not all(r["ok"] for r in rs)
                med[tool] = (statistics.median(r["up"] for r in rs), statistics.median(r["down"] for r in rs),
                             statistics.median(r["wall_s"] for r in rs))
            ref = med.get("rsync")
            for tool in med:
                up, down, wall = med[tool]
                print("%-9s %-5s %-14s %12d %12d %12d %9.2f %9s %9s" % (
                    link, direction, tool, up, down, up + down, wall,
                    "%.2f" % ((up + down) / sum(ref[:2])) if ref else "-",
                    "%.2f" % (wall / ref[2]) if ref else "-"))
    print("raw results: %s" % raw)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
