#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""`phsync delta signature|diff|patch` through phsync.exe under Wine.

    python3 delta_loop.py [EMULATOR...] PHSYNC_EXE

For every vector of tests/lib/deltavec.py (a photo with an edit, CRLF text with
-b 16, an empty OLD, -b 1 MiB over 3 MiB) the signature and the delta phsync.exe
writes have the SHA-256 the Linux build's have (test_delta_cli.py holds the Linux
build to the same table), and patch rebuilds NEW byte for byte, over an OUT that
already exists (the replacing rename). For the photo and the text, the same
through standard input and output (`-`, which must be bytes, not msvcrt's text mode): the signature on
stdout, diff reading NEW from stdin and writing the delta to stdout, patch
reading the delta from stdin. Past 2^31 bytes: a sparse OLD of 2 GiB + 195 KiB
whose marked bytes lie past 2^31 gives the Linux signature, a delta whose
copies point past 2^31, and patch reads them back there (64-bit offsets through
ph_pread's OVERLAPPED). What fails: a damaged delta exits 1 and leaves an
existing OUT as it was, with no temp file beside it; a missing OLD exits 1; a
bad -b and a missing argument exit 2; OUT naming OLD exits 1 and OLD keeps
its bytes. No server. Exits 0 when every check holds, 1 with what differed.
"""

import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import deltavec as dv  # noqa: E402
from pull_loop import Failed  # noqa: E402


def delta(exe, env, *args, stdin=None):
    return subprocess.run(exe + ["delta"] + list(args), env=env, input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)


def ok(exe, env, *args, stdin=None):
    r = delta(exe, env, *args, stdin=stdin)
    if r.returncode != 0:
        raise Failed("delta %s exited %d: %s" % (" ".join(args), r.returncode,
                                                   r.stderr.decode(errors="replace")))
    return r.stdout


def put(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def get(path):
    with open(path, "rb") as f:
        return f.read()


def equal(what, got, want):
    if got != want:
        raise Failed("%s: %s, not %s" % (what, got, want))


def vectors(exe, d, env):
    for name, (block, inputs, sig_sha, delta_sha) in dv.VECTORS.items():
        old, new = inputs()
        o, n = put(os.path.join(d, "old"), old), put(os.path.join(d, "new"), new)
        sig, dl, out = (os.path.join(d, x) for x in ("sig", "delta", "out"))
        bflag = ["-b", str(block)] if block else []
        ok(exe, env, "signature", *bflag, o, sig)
        equal(name + ": the signature's SHA-256", dv.sha256_file(sig), sig_sha)
        ok(exe, env, "diff", sig, n, dl)
        equal(name + ": the delta's SHA-256", dv.sha256_file(dl), delta_sha)
        put(out, b"an older OUT, to be replaced\r\n")
        ok(exe, env, "patch", o, dl, out)
        if get(out) != new:
            raise Failed("%s: patch made %d bytes, not NEW's %d" % (name, len(get(out)), len(new)))
        # Through standard input and output (CRLF text and binary): the same bytes.
        if name not in ("photo", "text"):
            continue
        equal(name + ": the signature on stdout", dv.sha256_file(sig),
              hashlib.sha256(ok(exe, env, "signature", *bflag, o, "-")).hexdigest())
        got = ok(exe, env, "diff", sig, "-", "-", stdin=new)
        equal(name + ": the delta on stdout", hashlib.sha256(got).hexdigest(),
              delta_sha)
        if ok(exe, env, "patch", o, "-", "-", stdin=get(dl)) != new:
            raise Failed(name + ": patch from stdin to stdout differs from NEW")
        left = [f for f in os.listdir(d) if ".phsync-delta-" in f]
        if left:
            raise Failed("%s: temp files left: %r" % (name, left))


def big(exe, d, env):
    o, n = os.path.join(d, "bigold"), put(os.path.join(d, "bignew"), dv.big_new())
    sig, dl, out = (os.path.join(d, x) for x in ("bigsig", "bigdelta", "bigout"))
    dv.write_big_old(o)
    try:
        ok(exe, env, "signature", "-b", str(dv.BIG_BLOCK), o, sig)
        equal("the 2 GiB signature's SHA-256", dv.sha256_file(sig), dv.BIG[0])
        ok(exe, env, "diff", sig, n, dl)
        equal("the delta against 2 GiB's SHA-256", dv.sha256_file(dl), dv.BIG[1])
        ok(exe, env, "patch", o, dl, out)
        if get(out) != dv.big_new():
            raise Failed("patch from the 2 GiB OLD made other bytes")
    finally:
        os.unlink(o)


def failures(exe, d, env):
    old, new = dv.VECTORS["photo"][1]()
    o, n = put(os.path.join(d, "old"), old), put(os.path.join(d, "new"), new)
    sig, dl, out = (os.path.join(d, x) for x in ("sig", "delta", "out"))
    ok(exe, env, "signature", o, sig)
    ok(exe, env, "diff", sig, n, dl)
    bad = bytearray(get(dl))
    bad[len(bad) // 2] ^= 0x40
    put(dl, bytes(bad))
    put(out, b"keep me")
    r = delta(exe, env, "patch", o, dl, out)
    if r.returncode != 1 or get(out) != b"keep me":
        raise Failed("a damaged delta: exit %d, OUT %r" % (r.returncode, get(out)[:20]))
    left = [f for f in os.listdir(d) if ".phsync-delta-" in f]
    if left:
        raise Failed("a damaged delta left temp files: %r" % left)
    r = delta(exe, env, "signature", os.path.join(d, "no such file"), sig)
    equal("a missing OLD's exit code", r.returncode, 1)
    equal("-b 15's exit code", delta(exe, env, "signature", "-b", "15", o, sig).returncode, 2)
    equal("diff without DELTA's exit code", delta(exe, env, "diff", sig, n).returncode, 2)
    r = delta(exe, env, "patch", o, dl, o)
    if r.returncode != 1 or get(o) != old:
        raise Failed("patch onto OLD itself: exit %d" % r.returncode)


def main(argv):
    if len(argv) < 1:
        sys.stderr.write(__doc__)
        return 2
    env = dict(os.environ)
    env.setdefault("WINEDEBUG", "-all")
    with tempfile.TemporaryDirectory(prefix="phsync-win-delta-") as d:
        for step in (vectors, failures, big):
            try:
                step(list(argv), d, env)
            except Failed as e:
                sys.stderr.write("delta_loop %s: %s\n" % (step.__name__, e))
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
