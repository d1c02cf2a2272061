#!/usr/bin/env python3
"""Backup benchmark (issue 10; not a test, not in CI): phsync backup of the phone corpus over
SFTP into .tar.zst against the two ways people do it without phsync, on one loopback sshd
(tests/lib/harness.py), the same ssh_config, AES-128-GCM:

  phsync        phsync backup -F CFG -q --no-default-excludes phone:SRC OUT/p.tar.zst
  phsync-nofsync  the same with --no-fsync (the others do not fsync)
  ssh-tar-zstd  ssh -F CFG -c aes128-gcm phone tar -cf - -C SRC . | zstd -q -T0 > OUT/t.tar.zst
                (needs tar on the phone; phsync does not)
  sftp-then-tar sftp -F CFG -c aes128-gcm -b BATCH phone (get -r -p SRC/* TMP/), then
                tar -cf - -C TMP . | zstd -q -T0 > OUT/s.tar.zst (the copy on disk first)

Each repetition runs every tool (order rotating); wall time by the monotonic clock, peak RSS of
the client by GNU time (%M; for pipelines the largest process).  Every archive is checked:
file count and bytes as the corpus (tar -tv), so a broken run cannot look fast.

    bench/bench_backup.py [--corpus DIR] [--reps N] [--out FILE]
    (the corpus: bench/mkcorpus.py DIR, default /var/tmp/phsync-bench/corpus)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import harness  # noqa: E402

CIPHER = "aes128-gcm@openssh.com"


def corpus_stat(root):
    n = b = 0
    for dp, dn, fn in os.walk(root):
        for f in fn:
            st = os.lstat(os.path.join(dp, f))
            n += 1
            b += st.st_size
    return n, b


def tar_stat(path):
    p = subprocess.run(["tar", "--zstd", "-tvf", path], capture_output=True, text=True, check=True)
    n = b = 0
    for line in p.stdout.splitlines():
        f = line.split()
        if line.startswith("-") and not line.rstrip().endswith(".phsync-manifest"):
            n += 1
            b += int(f[2])
    return n, b


def timed(argv, shell=False):
    tfile = tempfile.mktemp()
    cmd = ["/usr/bin/time", "-f", "%M", "-o", tfile] + (["sh", "-c", argv] if shell else argv)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    rss = int(open(tfile).read().split()[-1])
    os.unlink(tfile)
    return p.returncode, wall, rss, p.stderr[-500:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="/var/tmp/phsync-bench/corpus")
    ap.add_argument("--data", default="/var/tmp/phsync-bench/backup")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--phsync", default=os.path.join(REPO, "build", "phsync"))
    a = ap.parse_args()
    src = os.path.abspath(a.corpus)
    want = corpus_stat(src)
    shutil.rmtree(a.data, ignore_errors=True)
    os.makedirs(a.data)
    srv = harness.SshServer(statedir=os.path.join(a.data, "server"))
    srv.start()
    cfg = srv.config
    out = os.path.join(a.data, "out")
    env_state = os.path.join(a.data, "state")
    tools = {
        "phsync": lambda: timed([a.phsync, "backup", "-F", cfg, "-q", "--no-default-excludes",
                                 "--state-dir", env_state, "phone:" + src, out + "/p.tar.zst"]),
        "phsync-nofsync": lambda: timed([a.phsync, "backup", "-F", cfg, "-q", "--no-fsync",
                                         "--no-default-excludes", "--state-dir", env_state,
                                         "phone:" + src, out + "/p.tar.zst"]),
        "ssh-tar-zstd": lambda: timed("ssh -F %s -c %s phone tar -cf - -C %s . | zstd -q -T0 > %s/t.tar.zst"
                                      % (cfg, CIPHER, src, out), shell=True),
        "sftp-then-tar": lambda: timed("printf 'get -r -p %s/* %s/tmp/\\n' > %s/batch && "
                                       "sftp -q -F %s -c %s -b %s/batch phone >/dev/null && "
                                       "tar -cf - -C %s/tmp . | zstd -q -T0 > %s/s.tar.zst"
                                       % (src, out, out, cfg, CIPHER, out, out, out), shell=True),
    }
    arch = {"phsync": "p.tar.zst", "phsync-nofsync": "p.tar.zst", "ssh-tar-zstd": "t.tar.zst",
            "sftp-then-tar": "s.tar.zst"}
    results = {k: [] for k in tools}
    names = list(tools)
    try:
        for rep in range(a.reps):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for t in order:
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(os.path.join(out, "tmp"))
                shutil.rmtree(env_state, ignore_errors=True)
                subprocess.run(["sync"])
                code, wall, rss, err = tools[t]()
                got = tar_stat(os.path.join(out, arch[t])) if code == 0 else None
                ok = code == 0 and got == want
                size = os.path.getsize(os.path.join(out, arch[t])) if code == 0 else 0
                results[t].append({"wall": wall, "rss_kb": rss, "ok": ok, "size": size})
                print("%-15s rep %d: %6.2f s  %7d kB RSS  %d bytes  %s" %
                      (t, rep, wall, rss, size, "ok" if ok else "BAD %r %r" % (got, err)), flush=True)
    finally:
        srv.stop()
    med = {}
    for t, rs in results.items():
        w = sorted(r["wall"] for r in rs if r["ok"])
        med[t] = w[len(w) // 2] if w else None
    print("\nmedian wall (s): " + ", ".join("%s %.2f" % (t, v) for t, v in med.items() if v))
    if med.get("phsync") and med.get("ssh-tar-zstd"):
        print("phsync / ssh-tar-zstd = %.2f;  phsync / sftp-then-tar = %.2f" %
              (med["phsync"] / med["ssh-tar-zstd"], med["phsync"] / med["sftp-then-tar"]))
    if a.out:
        json.dump({"corpus": want, "results": results, "median": med}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
