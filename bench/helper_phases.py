#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Where a no-change run's time goes before any file is looked at: the SSH session's channels,
from the timestamps of libssh's own debug lines (`phsync pull -vv`), for --helper auto (the
helper cached on the phone) against --helper never (plain SFTP).  Not a test.

    bench/helper_phases.py --phsync build/phsync [--reps 5] [--files 10x100]

Starts a loopback sshd (tests/lib/harness.py), makes a small tree (mkcorpus.py --small-tree),
pulls it once (the helper brought to the phone's cache) and once more with --helper auto (its
memos written), then runs --reps no-change re-pulls
with -vv for each mode, alternating, and prints per mode the median of:

  connect    from the first libssh line to "Authentication successful" (TCP, kex, auth)
  ch N ...   every channel in order: what was asked (the exec'd command's first word or
             the sftp subsystem), its open-to-exit time (or to the end of the run for the
             channel the run speaks over) and the bytes the phone sent on it; for the
             channel that ends in the helper, "check" is the time until phsync answered
             "run" (the start-up script: its forks, and the cached helper's bytes read back
             unless its identity is the remembered one)
  total      first to last libssh line

The bytes are the channel data libssh counted ("Channel receiving N bytes"): no SSH framing.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import harness  # noqa: E402

TS = re.compile(r"^\[(\d+)/(\d+)/(\d+) (\d+):(\d+):([\d.]+), \d\] (\w+): +(.*)$")


def parse(text):
    """[(phase, seconds, bytes)] of one -vv run."""
    events = []
    for line in text.splitlines():
        m = TS.match(line)
        if m:
            t = int(m.group(4)) * 3600 + int(m.group(5)) * 60 + float(m.group(6))
            events.append((t, m.group(7), m.group(8)))
    if not events:
        return []
    t0, out, ch = events[0][0], [], None
    for t, fn, msg in events:
        if "Authentication successful" in msg:
            out.append(["connect", t - t0, 0])
        elif fn == "channel_open" and msg.startswith("Creating a channel"):
            ch = {"t": t, "what": "?", "bytes": 0, "run": None, "end": None}
            out.append(ch)
        elif ch is not None and fn == "channel_request" and msg.startswith("Sent a SSH_MSG_CHANNEL_REQUEST"):
            ch["what"] = msg.split()[-1]
        elif ch is not None and fn == "channel_rcv_data" and msg.startswith("Channel receiving"):
            ch["bytes"] += int(msg.split()[2])
        elif ch is not None and fn == "packet_send2" and "type=94" in msg and "payload=13]" in msg \
                and ch["run"] is None and ch["what"] == "exec":
            # "run\n": the first 4 bytes of channel data phsync sends on the start-up
            # script's channel (after the helper's bytes, or without them since issue 24)
            ch["run"] = t - ch["t"]
            ch["run_bytes"] = ch["bytes"]
        elif ch is not None and "received exit-status" in msg and ch["end"] is None:
            ch["end"] = t - ch["t"]
            ch["status"] = msg.split()[-1]
    t_end = events[-1][0]
    rows, n = [], 0
    for x in out:
        if isinstance(x, list):
            rows.append(tuple(x))
            continue
        n += 1
        name = "ch %d %s%s" % (n, x["what"], " (exit %s)" % x["status"] if "status" in x else "")
        end = x["end"] if x["end"] is not None else t_end - x["t"]
        if x["run"] is not None:
            rows.append(("ch %d boot check (until 'run')" % n, x["run"], x["run_bytes"]))
        rows.append((name, end, x["bytes"]))
    rows.append(("total", t_end - t0, sum(r[2] for r in rows if r[0].startswith("ch") and "check" not in r[0])))
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phsync", default=os.path.join(REPO, "build", "phsync"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--files", default="10x100", help="DIRSxFILES of the small tree (default 10x100)")
    ap.add_argument("--data", default="/var/tmp/phsync-bench/phases")
    a = ap.parse_args(argv)
    phsync = os.path.abspath(a.phsync)
    helpers = os.path.join(os.path.dirname(phsync), "helpers")
    d, f = (int(x) for x in a.files.split("x"))
    src, dst, xdg = (os.path.join(a.data, x) for x in ("src-" + a.files, "dst", "xdg"))
    if not os.path.isdir(src):
        subprocess.run([sys.executable, os.path.join(HERE, "mkcorpus.py"), src, "--small-tree", str(d), str(f)],
                       check=True)
    subprocess.run(["rm", "-rf", dst, xdg], check=True)
    os.makedirs(xdg)
    srv, _ = harness.start_bench_server(os.path.join(a.data, "server"), log=print, log_level="INFO")
    env = srv.env({"ASAN_OPTIONS": "", "UBSAN_OPTIONS": "", "PHSYNC_HELPER_DIR": helpers, "XDG_STATE_HOME": xdg})
    base = [phsync, "pull", "-F", srv.config, "--no-progress", "--no-default-excludes"]
    runs = {"auto": [], "never": []}
    walls = {"auto": [], "never": []}
    try:
        subprocess.run(base + ["--helper", "always", "phone:" + src, dst], env=env, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        # One untimed auto run: whatever memo auto keeps (brought-*, and since issue 24 the
        # cached copy's identity) is there for every timed one, whichever phsync this is.
        subprocess.run(base + ["--helper", "auto", "phone:" + src, dst], env=env, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        for rep in range(a.reps):
            for mode in (["auto", "never"] if rep % 2 == 0 else ["never", "auto"]):
                t = time.monotonic()
                p = subprocess.run(base + ["-vv", "--helper", mode, "phone:" + src, dst], env=env,
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True)
                walls[mode].append(time.monotonic() - t)
                if p.returncode != 0:
                    sys.exit("phsync failed (%d): %s" % (p.returncode, p.stderr[-1000:]))
                runs[mode].append(parse(p.stderr))
    finally:
        srv.stop()
    for mode in ("auto", "never"):
        print("--helper %s: wall median %.3f s (%s)" % (mode, statistics.median(walls[mode]),
                                                       " ".join("%.3f" % w for w in walls[mode])))
        names = [r[0] for r in runs[mode][-1]]
        for i, name in enumerate(names):
            v = [r[i][1] for r in runs[mode] if len(r) > i and r[i][0] == name]
            b = [r[i][2] for r in runs[mode] if len(r) > i and r[i][0] == name]
            print("   %-34s %7.1f ms (%5.1f-%5.1f)  %9d bytes from the phone" % (
                name, statistics.median(v) * 1000, min(v) * 1000, max(v) * 1000, statistics.median(b)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
