# SPDX-License-Identifier: ISC
"""`phsync delta signature|diff|patch` on real files: bytes must round-trip,
stdin/stdout must work, and bad input must fail with the documented exit
codes (0 ok, 1 error, 2 usage) without leaving a partial output file."""
import os
import random
import subprocess
import tempfile
import unittest

import deltavec
from harness import check_sanitizers, phsync_bin, sanitizer_env


def run(*args, stdin=None):
    """phsync delta ARGS with the harness's sanitizer settings; a sanitizer report (or the
    sanitizer exit codes) fails the test whatever the exit code."""
    argv = [phsync_bin(), "delta", *args]
    env = dict(os.environ)
    env.update(sanitizer_env())
    r = subprocess.run(argv, input=stdin, capture_output=True, timeout=120, env=env)
    check_sanitizers(r.returncode, r.stderr.decode("utf-8", "replace"), argv)
    return r


class DeltaCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.rng = random.Random(3)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.d, name)

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return self.path(name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def ok(self, *args, stdin=None):
        r = run(*args, stdin=stdin)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        return r.stdout

    def roundtrip(self, old, new, block=None):
        o, n = self.write("old", old), self.write("new", new)
        sig, delta, out = self.path("sig"), self.path("delta"), self.path("out")
        self.ok("signature", *(["-b", str(block)] if block else []), o, sig)
        self.ok("diff", sig, n, delta)
        self.ok("patch", o, delta, out)
        self.assertEqual(self.read("out"), new)
        return os.path.getsize(delta)

    def test_bad_delta_keeps_an_existing_out(self):
        # issue 6: patch once truncated OUT before it knew the delta was bad.
        old = bytes(self.rng.getrandbits(8) for _ in range(100_000))
        o = self.write("old", old)
        self.write("out", b"precious earlier result\n")
        self.write("bad", b"PHD1 not a delta at all")
        r = run("patch", o, self.path("bad"), self.path("out"))
        self.assertEqual(r.returncode, 1, r.stderr.decode())
        self.assertEqual(self.read("out"), b"precious earlier result\n")
        self.assertEqual(sorted(os.listdir(self.d)), ["bad", "old", "out"], "a temp file was left")
        # A good delta replaces it, with a normal file mode.
        sig, delta = self.path("sig"), self.path("delta")
        self.write("new", old[:50_000] + b"edited" + old[50_000:])
        self.ok("signature", o, sig)
        self.ok("diff", sig, self.path("new"), delta)
        self.ok("patch", o, delta, self.path("out"))
        self.assertEqual(self.read("out"), self.read("new"))
        self.assertEqual(sorted(os.listdir(self.d)), ["bad", "delta", "new", "old", "out", "sig"])

    def edited(self, data, k):
        b = bytearray(data)
        for _ in range(k):
            p = self.rng.randrange(len(b) + 1)
            kind = self.rng.randrange(3)
            if kind == 0:
                b[p:p] = self.rng.randbytes(self.rng.randrange(1, 500))
            elif kind == 1:
                del b[p:p + self.rng.randrange(1, 500)]
            else:
                b[p:p + 64] = self.rng.randbytes(64)
        return bytes(b)

    def test_roundtrip_edits(self):
        old = self.rng.randbytes(3 << 20)
        new = self.edited(old, 25)
        size = self.roundtrip(old, new)
        self.assertLess(size, 25 * 2 * 2048 + 20000)  # ~a block per edit

    def test_roundtrip_small_and_empty(self):
        self.roundtrip(b"", b"")
        self.roundtrip(b"", b"new content")
        self.roundtrip(b"old content", b"")
        self.roundtrip(b"short", b"shorter")
        text = b"".join(b"line %d of a text file\n" % i for i in range(20000))
        self.roundtrip(text, self.edited(text, 10), block=64)

    def test_identical_file_delta_is_tiny(self):
        old = self.rng.randbytes(1 << 20)
        self.assertLess(self.roundtrip(old, old), 100)

    def test_stdin_stdout(self):
        old = self.rng.randbytes(500000)
        new = self.edited(old, 5)
        o = self.write("old", old)
        sig = self.ok("signature", "-", "-", stdin=old)
        self.assertEqual(sig, self.ok("signature", "-b", "4096", o, "-"))
        self.write("sig", sig)
        delta = self.ok("diff", self.path("sig"), "-", "-", stdin=new)
        self.assertEqual(self.ok("patch", o, "-", "-", stdin=delta), new)

    def test_corrupt_delta_fails_and_leaves_no_output(self):
        old = self.rng.randbytes(200000)
        new = self.edited(old, 3)
        o, n = self.write("old", old), self.write("new", new)
        self.ok("signature", o, self.path("sig"))
        self.ok("diff", self.path("sig"), n, self.path("delta"))
        delta = bytearray(self.read("delta"))
        delta[-1] ^= 1  # the whole-file hash
        self.write("bad", bytes(delta))
        r = run("patch", o, self.path("bad"), self.path("out"))
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"XXH3-128", r.stderr)
        self.assertFalse(os.path.exists(self.path("out")))
        self.write("trunc", bytes(delta[:len(delta) // 2]))
        r = run("patch", o, self.path("trunc"), self.path("out"))
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"corrupt delta", r.stderr)

    def test_corrupt_signature(self):
        self.write("sig", b"PHSS\x01\x08\x00\x00\x00\x00\x00\x0f" + bytes(8))
        self.write("new", b"x")
        r = run("diff", self.path("sig"), self.path("new"), self.path("delta"))
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"block length", r.stderr)
        self.assertFalse(os.path.exists(self.path("delta")))

    def test_usage_errors(self):
        self.assertEqual(run().returncode, 2)
        self.assertEqual(run("frobnicate").returncode, 2)
        self.assertEqual(run("diff", "a").returncode, 2)
        self.assertEqual(run("signature", "-b", "7", "a", "b").returncode, 2)
        self.assertEqual(run("patch", "-", "d", "o").returncode, 2)
        h = run("--help")
        self.assertEqual(h.returncode, 0)
        self.assertIn(b"phsync delta signature", h.stdout)
        r = run("signature", self.path("missing"), self.path("sig"))
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"missing", r.stderr)

    def test_patch_refuses_out_equal_old(self):
        o = self.write("old", b"data" * 1000)
        self.ok("signature", o, self.path("sig"))
        self.ok("diff", self.path("sig"), o, self.path("delta"))
        r = run("patch", o, self.path("delta"), o)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.read("old"), b"data" * 1000)

    def test_fixed_vectors_give_the_recorded_bytes(self):
        # The signature and delta bytes of tests/lib/deltavec.py's inputs: phsync.exe under
        # Wine (win.phsync.delta_loop) is held to the same digests, so a signature or delta
        # made on Windows is the one Linux makes. The sparse OLD past 2^31 bytes checks the
        # 64-bit offsets (its holes cost no disk).
        for name, (block, inputs, sig_sha, delta_sha) in deltavec.VECTORS.items():
            old, new = inputs()
            o, n = self.write("old", old), self.write("new", new)
            self.ok("signature", *(["-b", str(block)] if block else []), o, self.path("sig"))
            self.ok("diff", self.path("sig"), n, self.path("delta"))
            self.assertEqual(deltavec.sha256_file(self.path("sig")), sig_sha, name)
            self.assertEqual(deltavec.sha256_file(self.path("delta")), delta_sha, name)
        o = self.path("bigold")
        deltavec.write_big_old(o)
        n = self.write("bignew", deltavec.big_new())
        self.ok("signature", "-b", str(deltavec.BIG_BLOCK), o, self.path("bigsig"))
        self.ok("diff", self.path("bigsig"), n, self.path("bigdelta"))
        self.assertEqual(deltavec.sha256_file(self.path("bigsig")), deltavec.BIG[0])
        self.assertEqual(deltavec.sha256_file(self.path("bigdelta")), deltavec.BIG[1])
        self.ok("patch", o, self.path("bigdelta"), self.path("bigout"))
        self.assertEqual(self.read("bigout"), deltavec.big_new())


if __name__ == "__main__":
    unittest.main()
