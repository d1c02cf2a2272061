#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Runs a command and samples its memory and threads from /proc while it runs (stdlib only).

    proc_trace.py [--interval S] --out FILE -- CMD [ARG...]

Every S seconds (default 0.01) one line goes to FILE:

    T RSS_KB HWM_KB ANON_KB  TID:COMM:STATE:CPU_TICKS ...

T is time.monotonic() (CLOCK_MONOTONIC: `perf record -k CLOCK_MONOTONIC` stamps its events on
the same clock, so uprobe phase marks line up with the samples), RSS/HWM/ANON from
/proc/PID/status (VmRSS, VmHWM, RssAnon), one field per thread with its utime+stime so far.
The exit code is the command's.  A final line "# peak RSS_KB at T" closes the file.
bench_sync.py uses it as a --profile wrapper (docs/PERFORMANCE.md, issue 7 scale).
"""

import os
import subprocess
import sys
import time


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon"):
                out[k] = int(v.split()[0])
    return out


def threads(pid):
    out = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")].replace(" ", "_").replace(":", "_")
        rest = s[s.rindex(")") + 2:].split()
        out.append("%s:%s:%s:%d" % (tid, comm, rest[0], int(rest[11]) + int(rest[12])))
    return out


def main(argv):
    interval, out = 0.01, None
    while argv and argv[0] != "--":
        if argv[0] == "--interval":
            interval = float(argv[1])
            argv = argv[2:]
        elif argv[0] == "--out":
            out = argv[1]
            argv = argv[2:]
        else:
            sys.exit(__doc__)
    if out is None or len(argv) < 2:
        sys.exit(__doc__)
    p = subprocess.Popen(argv[1:])
    peak, peak_t = 0, None
    with open(out, "w") as f:
        f.write("# %s\n" % " ".join(argv[1:]))
        while p.poll() is None:
            t = time.monotonic()
            try:
                st = status(p.pid)
                th = threads(p.pid)
            except (OSError, ValueError):
                break
            rss = st.get("VmRSS", 0)
            if rss > peak:
                peak, peak_t = rss, t
            f.write("%.4f %d %d %d  %s\n" % (t, rss, st.get("VmHWM", 0), st.get("RssAnon", 0), " ".join(th)))
            time.sleep(interval)
        rc = p.wait()
        f.write("# peak %d at %s\n" % (peak, "%.4f" % peak_t if peak_t else "-"))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
