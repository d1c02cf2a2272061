#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
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

--incremental measures issue 10's second target instead.  Each repetition, on a fresh copy
of the corpus (cp -a): a full backup and a pull into DST (both untimed); then 60 gallery edits
(mkcorpus.edit) and 5 new 3 MB photos; then, in rotating order, each after a write of 1 GB
into /dev/shm and its removal (see warm_memory), timed:

  inc       phsync backup --incremental (the same series as the full backup)
  pull      phsync pull --helper never phone:SRC DST: the listing, the state, and the 65
            changed files whole (the baseline "a no-change pull plus the transfer of those
            files")
  no-change the same pull again, nothing to do (always after pull)

The incremental archive is checked to hold exactly the 65 changed files (names and bytes, by
tar -tv).  Target: inc <= 1.5 x pull.  Both run over plain SFTP ($PHSYNC_HELPER_DIR empty: no
helper is brought), each in one ssh session.
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
    files = tar_files(path)
    return len(files), sum(files.values())


def timed(argv, shell=False):
    tfile = tempfile.mktemp()
    cmd = ["/usr/bin/time", "-f", "%M", "-o", tfile] + (["sh", "-c", argv] if shell else argv)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    rss = int(open(tfile).read().split()[-1])
    os.unlink(tfile)
    return p.returncode, wall, rss, p.stderr[-500:]


def tar_files(path):
    """{name: size} of the regular files in an archive, its manifest left out."""
    p = subprocess.run(["tar", "--zstd", "-tvf", path], capture_output=True, text=True, check=True)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("-"):
            f = line.split(None, 5)
            name = f[5].split(" -> ")[0]
            if not name.endswith(".phsync-manifest"):
                out[name[2:] if name.startswith("./") else name] = int(f[2])
    return out


def warm_memory(mb=1024):
    """Writes and removes MB in /dev/shm: on this VM the first write into memory the guest has
    not touched lately costs about 4 ms a MB (the host maps it in: `dd` of 1.5 GB took 5.9 s
    of sys time, then 0.27 s right after), which would land on whichever tool writes first."""
    p = "/dev/shm/phsync-bench-warm"
    try:
        with open(p, "wb") as f:
            block = b"\0" * (1 << 20)
            for _ in range(mb):
                f.write(block)
    except OSError:
        pass
    finally:
        if os.path.exists(p):
            os.unlink(p)


def incremental(a, cfg):
    import random
    sys.path.insert(0, HERE)
    import mkcorpus
    # Whole files both ways: no helper brought to the server (the pull says --helper never;
    # the backup's first, untimed run finds none and remembers the host).
    os.environ["PHSYNC_HELPER_DIR"] = ""
    base = os.path.join(a.data, "inc")
    src, dst, out = os.path.join(base, "src"), os.path.join(base, "dst"), os.path.join(base, "out")
    state = os.path.join(base, "state")
    tmpl = out + "/inc-%Y%m%d%H%M.tar.zst"
    common = ["-F", cfg, "-q", "--no-default-excludes", "--state-dir", state]
    inc = [a.phsync, "backup"] + common + ["--incremental", "phone:" + src, tmpl]
    pull = [a.phsync, "pull"] + common + ["--helper", "never", "phone:" + src, dst]
    rows = []
    for rep in range(a.reps):
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(out)
        subprocess.run(["cp", "-a", a.corpus, src], check=True)
        subprocess.run([a.phsync, "backup"] + common + ["--full", "phone:" + src, tmpl], check=True)
        subprocess.run(pull, check=True)
        before = {os.path.relpath(os.path.join(dp, f), src): os.stat(os.path.join(dp, f)).st_mtime_ns
                  for dp, _, fn in os.walk(src) for f in fn}
        mkcorpus.edit(src, 60, seed=18 + rep)
        rng = random.Random(1000 + rep)
        for i in range(5):
            mkcorpus.put(os.path.join(src, "DCIM/Camera/NEW_%d_%d.jpg" % (rep, i)),
                         mkcorpus.jpeg(rng, 3_000_000), time.time() - 7200)
        changed = {}
        for dp, _, fn in os.walk(src):
            for f in fn:
                q = os.path.join(dp, f)
                r = os.path.relpath(q, src)
                st = os.stat(q)
                if before.get(r) != st.st_mtime_ns:
                    changed[r] = st.st_size
        fulls = set(os.listdir(out))
        subprocess.run(["sync"])
        res = {}
        order = ["inc", "pull"] if rep % 2 == 0 else ["pull", "inc"]
        for what in order:
            warm_memory()
            if what == "inc":
                code, wall, rss, err = timed(inc)
                new = sorted(set(os.listdir(out)) - fulls)
                got = tar_files(os.path.join(out, new[0])) if code == 0 and len(new) == 1 else None
                ok = got == changed
                res["inc"] = {"wall": wall, "rss_kb": rss, "ok": ok,
                              "size": os.path.getsize(os.path.join(out, new[0])) if ok else 0}
                if not ok:
                    print("inc BAD: code %d %r; files %r != %r" % (code, err, got, changed))
            else:
                code, wall, rss, err = timed(pull)
                res["pull"] = {"wall": wall, "rss_kb": rss, "ok": code == 0}
                warm_memory()
                code, wall, rss, err = timed(pull)
                res["no-change"] = {"wall": wall, "rss_kb": rss, "ok": code == 0}
        res["changed_files"] = len(changed)
        res["changed_bytes"] = sum(changed.values())
        rows.append(res)
        print("rep %d: %d changed files, %d bytes; inc %.2f s (%d bytes, %s, %d kB RSS), pull %.2f s, "
              "no-change pull %.2f s" % (rep, len(changed), res["changed_bytes"], res["inc"]["wall"],
                                          res["inc"]["size"], "ok" if res["inc"]["ok"] else "BAD",
                                          res["inc"]["rss_kb"], res["pull"]["wall"], res["no-change"]["wall"]),
              flush=True)
    med = {}
    for k in ("inc", "pull", "no-change"):
        w = sorted(r[k]["wall"] for r in rows if r[k]["ok"])
        med[k] = w[len(w) // 2] if w else None
    print("\nmedian wall (s): inc %s, pull %s, no-change pull %s" % (med["inc"], med["pull"], med["no-change"]))
    if med["inc"] and med["pull"]:
        print("inc / pull = %.2f (target <= 1.5)" % (med["inc"] / med["pull"]))
    if a.out:
        json.dump({"rows": rows, "median": med}, open(a.out, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="/var/tmp/phsync-bench/corpus")
    ap.add_argument("--data", default="/var/tmp/phsync-bench/backup")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--phsync", default=os.path.join(REPO, "build", "phsync"))
    ap.add_argument("--incremental", action="store_true",
                    help="measure an incremental backup after gallery edits (see above)")
    a = ap.parse_args()
    a.corpus = os.path.abspath(a.corpus)
    src = os.path.abspath(a.corpus)
    want = corpus_stat(src)
    shutil.rmtree(a.data, ignore_errors=True)
    os.makedirs(a.data)
    # The login user's shell start-up files are not timed in every session (a .bashrc that
    # starts pyenv costs 0.7 s here).
    srv, _ = harness.start_bench_server(os.path.join(a.data, "server"))
    cfg = srv.config
    if a.incremental:
        try:
            incremental(a, cfg)
        finally:
            srv.stop()
        return
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
