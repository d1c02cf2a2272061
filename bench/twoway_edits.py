#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Bytes on the wire of a two-way run after N edits on each side (issue 26: "moves each edit
once"), against rsync moving the same edits one way each, through one counting TCP proxy
(bench/linkproxy.py) in front of a loopback sshd.  Not in CI.

    bench/twoway_edits.py [--files 5] [--size 262144] [--edit 4096] [--data DIR] PHSYNC

2N+2 random files of SIZE bytes on both sides, synced; then EDIT bytes overwritten in place
(same size, new mtime) in N files on the laptop and N other files on the phone.  Counted:

  sync-helper  phsync sync --helper always --helper-path PHSYNC (`phsync serve` on the phone:
               deltas both ways), one run, one connection; then a second run (no change)
  sync-sftp    phsync sync --helper never (plain SFTP: the push's edits as copy-data plus
               literals; the pull's as whole files, SFTP offers no better)
  rsync        rsync -a --files-from (only the edited files, as if rsync knew them) pushing the
               laptop's edits, then pulling the phone's: two connections, one way each

Each tool starts from its own synced copy, made by itself (uncounted), and each result is
checked: both sides hold the edited bytes.  Prints bytes up (client to server) and down per
tool, and the bytes the edits changed."""
import argparse
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from linkproxy import LinkProxy  # noqa: E402

T0 = 1700000000


def write(path, data, mtime):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, (mtime, mtime))


def read_tree(root):
    out = {}
    for dp, _dn, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5, help="edits on each side (N)")
    ap.add_argument("--size", type=int, default=256 << 10)
    ap.add_argument("--edit", type=int, default=4 << 10)
    ap.add_argument("--data", default="/tmp/phsync-twoway-edits")
    ap.add_argument("phsync")
    a = ap.parse_args()
    phsync = os.path.abspath(a.phsync)
    shutil.rmtree(a.data, ignore_errors=True)
    rng = random.Random(26)
    base = {"f/%02d.bin" % i: rng.randbytes(a.size) for i in range(2 * a.files + 2)}
    names = sorted(base)
    on_laptop, on_phone = names[:a.files], names[a.files:2 * a.files]
    edited = dict(base)
    for j, k in enumerate(on_laptop + on_phone):
        at = rng.randrange(a.size - a.edit)
        edited[k] = base[k][:at] + rng.randbytes(a.edit) + base[k][at + a.edit:]

    srv, _ = harness.start_bench_server(os.path.join(a.data, "server"), log=print,
                                        log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": ""})
    px = LinkProxy(srv.port).start()
    cfg = srv.write_config(name="ssh_config.edits", port=px.port)

    def run(argv, tool):
        p = subprocess.run(argv, env=dict(env, XDG_STATE_HOME=os.path.join(a.data, "xdg-" + tool)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=srv.home)
        if p.returncode != 0:
            sys.exit("%s: exit %d: %s" % (argv, p.returncode, p.stderr.decode()[-800:]))

    def counted(fn):
        px.wait_idle()
        px.reset()
        fn()
        px.wait_idle()
        return px.counts()

    def setup(tool):
        """Both sides equal (the phone's files copied over by the tool itself), then edited."""
        rem, loc = os.path.join(a.data, "phone-" + tool), os.path.join(a.data, "laptop-" + tool)
        for k, d in base.items():
            write(os.path.join(rem, k), d, T0)
        return rem, loc

    def edit(rem, loc):
        for j, k in enumerate(on_laptop + on_phone):
            write(os.path.join(loc if k in on_laptop else rem, k), edited[k], T0 + 1000 + j)

    def check(tool, rem, loc):
        for side in (rem, loc):
            if read_tree(side) != edited:
                sys.exit("%s: WRONG RESULT in %s" % (tool, side))

    rows = []
    try:
        for tool, h in (("sync-helper", ["--helper", "always", "--helper-path", phsync]),
                        ("sync-sftp", ["--helper", "never"])):
            rem, loc = setup(tool)
            argv = [phsync, "sync", "-F", cfg, "-q"] + h + ["phone:" + rem, loc]
            run(argv, tool)
            edit(rem, loc)
            up, down = counted(lambda: run(argv, tool))
            check(tool, rem, loc)
            qup, qdown = counted(lambda: run(argv, tool))
            rows.append((tool, up, down, "a second run: up %d, down %d" % (qup, qdown)))

        rem, loc = setup("rsync")
        ssh = "ssh -F %s" % cfg
        run(["rsync", "-a", "-e", ssh, "phone:%s/" % rem, loc + "/"], "rsync")
        edit(rem, loc)
        lists = {}
        for what, keys in (("push", on_laptop), ("pull", on_phone)):
            lists[what] = os.path.join(a.data, "files-" + what)
            with open(lists[what], "w") as f:
                f.write("".join(k + "\n" for k in keys))
        up1, down1 = counted(lambda: run(["rsync", "-a", "--files-from", lists["push"], "-e", ssh,
                                          loc + "/", "phone:%s/" % rem], "rsync"))
        up2, down2 = counted(lambda: run(["rsync", "-a", "--files-from", lists["pull"], "-e", ssh,
                                          "phone:%s/" % rem, loc + "/"], "rsync"))
        check("rsync", rem, loc)
        rows.append(("rsync", up1 + up2, down1 + down2,
                     "push: up %d, down %d; pull: up %d, down %d" % (up1, down1, up2, down2)))
    finally:
        srv.stop()
    print("load", open("/proc/loadavg").read().strip())
    print("%d edits of %d bytes on each side in %d-byte files (%d changed bytes each way)"
          % (a.files, a.edit, a.size, a.files * a.edit))
    ref = rows[-1]
    for tool, up, down, note in rows:
        print("%-12s up %8d  down %8d  total %8d (%.2f x rsync)  %s"
              % (tool, up, down, up + down, (up + down) / (ref[1] + ref[2]), note))


if __name__ == "__main__":
    main()
