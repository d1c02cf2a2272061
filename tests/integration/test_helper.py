"""The remote helper (issue 8): `phsync serve ROOT` on the other end of an ssh exec channel.

The helper under test is the phsync binary under test, started by the test sshd's shell through
`--helper-path` (the test server's PATH holds no phsync). Proves:
- pull and push through the helper: changed files travel as deltas both ways (edits that
  shift the rest, a flipped byte, growth, truncation), the bytes and mtimes come out exact,
  bytes_matched says how much did not travel, and the summary names the protocol in use;
- --helper auto falls back to plain SFTP quietly when the helper is missing, speaks plain SFTP
  only or another protocol version, or prints a banner first; --helper always fails (exit 3)
  with the reason, and writes nothing; a host found without a helper is remembered (the
  next auto run brings none), but not past a day or across versions;
- a helper that sends more delta than asked for, a delta whose result does not hash to its
  END, or a COPY outside the old copy: the file fails (exit 5), the old copy stays intact and
  nothing half-built is left; a garbage signature on push: the file goes whole, right;
- the helper itself, spoken to over pipes: paths outside ROOT, with '..', through a symlink,
  or NUL bytes are refused, ROOT cannot be removed, and malformed packets end the session
  without touching anything.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import unittest

from harness import SyncTestCase, phsync_bin, random_bytes, skip_or_fail, tree, write_file

T0 = 1700000000
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "lib", "fake_helper.py")


def summary(r):
    for line in r.out.splitlines():
        ev = json.loads(line)
        if ev.get("event") == "summary":
            return ev
    raise AssertionError("no summary in %r" % (r,))


def events(r, kind):
    return [json.loads(l) for l in r.out.splitlines() if json.loads(l).get("event") == kind]


def edits(data, seed):
    """Typical gallery edits: a grown EXIF block near the start (shifts the rest), a flipped
    byte in the middle, a tail appended."""
    grown = data[:200] + random_bytes(5_000, seed) + data[200:]
    mid = len(grown) // 2
    return grown[:mid] + bytes([grown[mid] ^ 0xFF]) + grown[mid + 1:] + random_bytes(1_000, seed + 1)


class HelperSyncTest(SyncTestCase):
    def helper(self, *extra):
        return ["--json", "--helper", "always", "--helper-path", phsync_bin()] + list(extra)

    def make_photos(self, root, n=4, size=600_000):  # also used by the classes below
        datas = {}
        for i in range(n):
            rel = "DCIM/Camera/IMG_%d.jpg" % i
            datas[rel] = random_bytes(size + i * 7, 100 + i)
            write_file(os.path.join(root, rel), datas[rel], mtime=T0)
        write_file(os.path.join(root, "notes.txt"), b"small\n", mtime=T0)
        return datas

    def test_pull_moves_changed_files_as_deltas(self):
        datas = self.make_photos(self.remote)
        # A second folder: the I/O thread moves between folders while it copies old bytes.
        other = "Pictures/Edited/IMG_9.jpg"
        datas[other] = random_bytes(500_000, 9)
        write_file(os.path.join(self.remote, other), datas[other], mtime=T0)
        r = self.pull(*self.helper(), expect=0)
        self.assertEqual(summary(r)["helper"], 1)
        self.assertTreesEqual(self.remote, self.local)
        # Edits of every kind on the phone: shifted, grown, truncated, rewritten.
        new = dict(datas)
        new["DCIM/Camera/IMG_0.jpg"] = edits(datas["DCIM/Camera/IMG_0.jpg"], 1)
        new["DCIM/Camera/IMG_1.jpg"] = datas["DCIM/Camera/IMG_1.jpg"][:400_000]
        new["DCIM/Camera/IMG_2.jpg"] = datas["DCIM/Camera/IMG_2.jpg"] + random_bytes(300_000, 3)
        new["DCIM/Camera/IMG_3.jpg"] = random_bytes(len(datas["DCIM/Camera/IMG_3.jpg"]), 4)
        new[other] = edits(datas[other], 11)
        for i, rel in enumerate(sorted(new)):
            write_file(os.path.join(self.remote, rel), new[rel], mtime=T0 + 100 + i)
        r = self.pull(*self.helper(), expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["files_failed"], s["helper"]), (5, 0, 1), r)
        self.assertTreesEqual(self.remote, self.local)
        for rel, data in new.items():
            with open(os.path.join(self.local, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
        # What did not travel: all but ~6 KB of IMG_0 and IMG_9, all of IMG_1 and of IMG_2's old
        # part; nothing of the rewritten IMG_3.
        unchanged = (len(datas["DCIM/Camera/IMG_0.jpg"]) - 20_000) + 400_000 + len(datas["DCIM/Camera/IMG_2.jpg"]) - 4096 \
            + len(datas[other]) - 20_000
        self.assertGreater(s["bytes_matched"], unchanged, s)
        self.assertLess(s["bytes_matched"], s["bytes_committed"] - len(new["DCIM/Camera/IMG_3.jpg"]) + 1, s)
        self.assertNoLeftovers()
        self.assertOutsideUntouched()

    def test_push_moves_changed_files_as_deltas_without_state(self):
        os.makedirs(self.local)
        datas = self.make_photos(self.local)
        r = self.push(*self.helper(), expect=0)
        self.assertEqual(summary(r)["helper"], 1)
        new = {rel: edits(d, 7 + i) for i, (rel, d) in enumerate(sorted(datas.items()))}
        for i, rel in enumerate(sorted(new)):
            write_file(os.path.join(self.local, rel), new[rel], mtime=T0 + 200 + i)
        # No state to stand on (--overwrite: the phone's copies are what we pushed): the helper
        # signs the phone's old version.
        r = self.push(*self.helper("--reset-state", "--overwrite"), expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["files_failed"]), (4, 0), r)
        self.assertTreesEqual(self.local, self.remote)
        self.assertGreater(s["bytes_matched"], sum(len(d) for d in datas.values()) - 4 * 20_000, s)
        self.assertNoLeftovers()
        self.assertOutsideUntouched()

    def test_auto_falls_back_to_plain_sftp_quietly(self):
        self.make_photos(self.remote, n=2, size=50_000)
        cases = {
            "missing": "/nonexistent/phsync",
            "plain": "python3 %s plain %s" % (FAKE, phsync_bin()),
            "other version": "python3 %s version=7 %s" % (FAKE, phsync_bin()),
            "banner": "python3 %s banner %s" % (FAKE, phsync_bin()),
        }
        for what, path in cases.items():
            with self.subTest(what):
                dst = os.path.join(self.tmp, "auto-" + what.replace(" ", "_"))
                r = self.pull("--json", "--helper-path", path, dst=dst, expect=0)
                self.assertEqual(summary(r)["helper"], 0, r)
                self.assertEqual(r.err, "", r)
                self.assertTreesEqual(self.remote, dst)

    def test_always_fails_clearly_and_writes_nothing(self):
        self.make_photos(self.remote, n=1, size=50_000)
        cases = {
            "missing": ("/nonexistent/phsync", "No such file"),
            "plain": ("python3 %s plain %s" % (FAKE, phsync_bin()), "plain SFTP"),
            "other version": ("python3 %s version=7 %s" % (FAKE, phsync_bin()), "another protocol version (7)"),
        }
        for what, (path, says) in cases.items():
            with self.subTest(what):
                dst = os.path.join(self.tmp, "always-" + what.replace(" ", "_"))
                r = self.pull("--helper", "always", "--helper-path", path, dst=dst, expect=3)
                self.assertIn("helper", r.err)
                self.assertIn(says, r.err)
                self.assertFalse(os.path.exists(dst), "a failed start wrote %s" % dst)
        r = self.pull("--helper", "sometimes", expect=2)
        self.assertIn("--helper takes auto, never or always", r.err)

    def test_hostile_delta_fails_the_file_and_keeps_the_old_copy(self):
        datas = self.make_photos(self.remote, n=1, size=600_000)
        rel = "DCIM/Camera/IMG_0.jpg"
        self.pull(*self.helper(), expect=0)
        def files():
            return {k: (v.size, v.mtime_ns, v.digest, v.ino) for k, v in tree(self.local).items()
                    if v.type == "f"}

        old = files()
        # The file's start rewritten: the delta opens with a 256 KiB LITERAL.
        changed = random_bytes(300_000, 55) + datas[rel][300_000:]
        write_file(os.path.join(self.remote, rel), changed, mtime=T0 + 500)
        for mode, says in (("long_delta", "more than asked"), ("flip_literal", "does not match the hash"),
                           ("forge_delta", "malformed delta")):
            with self.subTest(mode):
                path = "python3 %s %s %s" % (FAKE, mode, phsync_bin())
                r = self.pull("--json", "--helper", "always", "--helper-path", path, expect=5)
                failed = events(r, "file")
                failed = [e for e in failed if e.get("status") == "failed"]
                self.assertEqual([e["path"] for e in failed], [rel], r)
                self.assertIn(says, failed[0]["error"])
                self.assertEqual(files(), old, "the old copy changed")
                self.assertNoLeftovers(self.local)
        # The honest helper then brings it.
        self.pull(*self.helper(), expect=0)
        with open(os.path.join(self.local, rel), "rb") as f:
            self.assertEqual(f.read(), changed)

    def test_garbage_signature_on_push_sends_the_file_whole(self):
        os.makedirs(self.local)
        datas = self.make_photos(self.local, n=1, size=600_000)
        self.push(*self.helper(), expect=0)
        rel = "DCIM/Camera/IMG_0.jpg"
        write_file(os.path.join(self.local, rel), edits(datas[rel], 9), mtime=T0 + 300)
        path = "python3 %s bad_sig %s" % (FAKE, phsync_bin())
        r = self.push("--json", "--reset-state", "--overwrite", "--helper", "always", "--helper-path", path,
                      expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["bytes_matched"]), (1, 0), r)
        self.assertTreesEqual(self.local, self.remote)


# -- bootstrap: no phsync on the phone -------------------------------------------------------------

def helpers_dir():
    return os.path.join(os.path.dirname(phsync_bin()), "helpers")


def host_arch():
    m = os.uname().machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


class BootstrapTest(SyncTestCase):
    """The test server's login home is a fresh folder (clean_home): no phsync on its PATH, no
    cache; phsync brings its static helper there."""
    server_kwargs = {"clean_home": True}

    def cached(self):
        return os.path.join(self.srv.login_home, ".cache", "phsync",
                            "phsync-helper-0.1.0-%s" % host_arch())

    def local_helper(self):
        with open(os.path.join(helpers_dir(), "phsync-helper-" + host_arch()), "rb") as f:
            return f.read()

    def test_upload_reuse_and_a_tampered_copy_replaced(self):
        datas = HelperSyncTest.make_photos(self, self.remote, n=2, size=300_000)
        env = {"PHSYNC_HELPER_DIR": helpers_dir()}
        r = self.pull("--json", "--helper", "auto", env=env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)
        st = os.stat(self.cached())
        self.assertEqual(st.st_mode & 0o777, 0o700)
        with open(self.cached(), "rb") as f:
            self.assertEqual(f.read(), self.local_helper())
        self.assertEqual(os.listdir(os.path.dirname(self.cached())), [os.path.basename(self.cached())])
        # Reused: the cached copy is checked, not sent again; deltas flow through it.
        rel = "DCIM/Camera/IMG_0.jpg"
        write_file(os.path.join(self.remote, rel), edits(datas[rel], 3), mtime=T0 + 10)
        r = self.pull("--json", "--helper", "auto", env=env, expect=0)
        s = summary(r)
        self.assertEqual((s["helper"], s["files_done"]), (1, 1), r)
        self.assertGreater(s["bytes_matched"], 250_000, s)
        st2 = os.stat(self.cached())
        self.assertEqual((st2.st_ino, st2.st_mtime_ns), (st.st_ino, st.st_mtime_ns), "uploaded again")
        # Tampered with (same size): refused, replaced, and the replacement is what runs.
        with open(self.cached(), "r+b") as f:
            f.seek(1000)
            b = f.read(1)
            f.seek(1000)
            f.write(bytes([b[0] ^ 0xFF]))
        write_file(os.path.join(self.remote, rel), edits(datas[rel], 4), mtime=T0 + 20)
        r = self.pull("--json", "--helper", "auto", env=env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        with open(self.cached(), "rb") as f:
            self.assertEqual(f.read(), self.local_helper())
        self.assertNotEqual(os.stat(self.cached()).st_ino, st.st_ino)
        self.assertTreesEqual(self.remote, self.local)

    def test_no_helper_to_bring(self):
        HelperSyncTest.make_photos(self, self.remote, n=1, size=50_000)
        empty = os.path.join(self.tmp, "no-helpers")
        os.makedirs(empty)
        r = self.pull("--json", "--helper", "auto", env={"PHSYNC_HELPER_DIR": empty}, expect=0)
        self.assertEqual(summary(r)["helper"], 0, r)
        self.assertTreesEqual(self.remote, self.local)
        # The host is remembered as one without a helper: the next auto run goes straight to
        # SFTP even though a helper could be brought now (nothing is uploaded) ...
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        memos = [n for n in os.listdir(sdir) if n.startswith("nohelper-")]
        self.assertEqual(len(memos), 1, os.listdir(sdir))
        with open(os.path.join(sdir, memos[0])) as f:
            memo = f.read().splitlines()
        self.assertEqual(memo[0], "phsync 0.1.0", memo)
        self.assertEqual(memo[1], "%s ssh-ed25519 %s" % (self.srv.user, self.srv.host_fingerprint))
        here = {"PHSYNC_HELPER_DIR": helpers_dir()}
        r = self.pull("--json", "--helper", "auto", env=here, expect=0)
        self.assertEqual(summary(r)["helper"], 0, r)
        self.assertFalse(os.path.exists(self.cached()))
        # ... while the memo is fresh and of this version; an old memo or one of another
        # version is not taken, and the helper is tried (and brought) again.
        os.utime(os.path.join(sdir, memos[0]), (T0, T0))
        r = self.pull("--json", "--helper", "auto", env=here, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTrue(os.path.exists(self.cached()))
        with open(os.path.join(sdir, memos[0]), "w") as f:
            f.write("phsync 0.0.9\n%s\nold\n" % memo[1])
        r = self.pull("--json", "--helper", "auto", env=here, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        os.unlink(self.cached())
        r = self.pull("--helper", "always", dst=os.path.join(self.tmp, "x"),
                      env={"PHSYNC_HELPER_DIR": empty}, expect=3)
        self.assertIn("no helper for this phone here", r.err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x")))
        self.assertFalse(os.path.exists(self.cached()))


class CrossHelperTest(SyncTestCase):
    """The phone helpers built by the cross compilers, run under qemu-user as the phone would
    run them: a pull and a push with deltas through each."""

    def test_aarch64_and_armv7_helpers_sync_deltas(self):
        for arch, qemu in (("aarch64", "qemu-aarch64-static"), ("armv7", "qemu-arm-static")):
            with self.subTest(arch):
                helper = os.path.join(helpers_dir(), "phsync-helper-" + arch)
                if not os.access(helper, os.X_OK) or not shutil.which(qemu):
                    skip_or_fail("qemu", "%s or %s missing (apt-get install qemu-user-static "
                                 "gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf)" % (helper, qemu))
                path = "%s %s" % (shutil.which(qemu), helper)
                remote = os.path.join(self.remote, arch)
                local = os.path.join(self.tmp, "laptop-" + arch)
                datas = HelperSyncTest.make_photos(self, remote, n=2, size=200_000)
                opts = ["--json", "--helper", "always", "--helper-path", path]
                self.assertEqual(summary(self.pull(*opts, src=remote, dst=local, expect=0))["helper"], 1)
                rel = "DCIM/Camera/IMG_1.jpg"
                write_file(os.path.join(remote, rel), edits(datas[rel], 5), mtime=T0 + 50)
                s = summary(self.pull(*opts, src=remote, dst=local, expect=0))
                self.assertGreater(s["bytes_matched"], 150_000, s)
                self.assertTreesEqual(remote, local)
                write_file(os.path.join(local, rel), edits(datas[rel], 6), mtime=T0 + 60)
                s = summary(self.push(*opts, "--reset-state", "--overwrite", src=local, dst=remote, expect=0))
                self.assertGreater(s["bytes_matched"], 150_000, s)
                self.assertTreesEqual(local, remote)


# -- the helper over pipes ---------------------------------------------------------------------

def pkt(t, body=b"", rid=None):
    b = bytes([t]) + (struct.pack(">I", rid) if rid is not None else b"") + body
    return struct.pack(">I", len(b)) + b


def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


def replies(data):
    out = []
    while len(data) >= 4:
        (n,) = struct.unpack(">I", data[:4])
        out.append(data[4:4 + n])
        data = data[4 + n:]
    return out


class ServeTest(unittest.TestCase):
    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="phsync-serve-")
        self.root = os.path.join(self.tmp, "root")
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(os.path.join(self.root, "dir"))
        os.makedirs(self.outside)
        write_file(os.path.join(self.root, "dir", "a.txt"), b"inside\n", mtime=T0)
        write_file(os.path.join(self.outside, "secret.txt"), b"outside\n", mtime=T0)
        os.symlink(self.outside, os.path.join(self.root, "link"))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, data):
        p = subprocess.run([phsync_bin(), "serve", self.root], input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        return p.returncode, replies(p.stdout), p.stderr.decode()

    def init(self, version=b"1"):
        return pkt(1, struct.pack(">I", 3) + s("phsync@phsync.org") + s(version))

    def status_of(self, reply):
        self.assertEqual(reply[0], 101, reply)
        return struct.unpack(">I", reply[5:9])[0]

    def test_version_negotiation(self):
        code, rs, _ = self.serve(self.init(b"1"))
        self.assertEqual(code, 0)
        self.assertEqual(rs[0][0], 2)
        self.assertIn(s("phsync@phsync.org") + s("1"), rs[0])
        # A client speaking up to 9 gets the highest the helper speaks; one without the
        # extension (or with garbage) gets plain SFTP.
        _, rs, _ = self.serve(self.init(b"9"))
        self.assertIn(s("phsync@phsync.org") + s("1"), rs[0])
        for offer in (pkt(1, struct.pack(">I", 3)), self.init(b"x1"), self.init(b"0")):
            _, rs, _ = self.serve(offer)
            self.assertNotIn(b"phsync@phsync.org", rs[0])
            self.assertIn(b"copy-data", rs[0])

    def test_paths_outside_root_refused(self):
        bad = [self.outside + "/secret.txt", self.root + "/../outside/secret.txt",
               self.root + "/link/secret.txt", self.root + "/dir/./a.txt", self.root + "//dir/a.txt",
               self.root + "/dir/a.txt\0x", self.root + "x/dir/a.txt", "relative/a.txt"]
        data = self.init()
        for i, path in enumerate(bad):
            data += pkt(3, s(path) + struct.pack(">II", 1, 0), rid=i + 1)     # OPEN for reading
        data += pkt(13, s(self.root + "/link"), rid=100)                      # REMOVE the link itself
        data += pkt(15, s(self.root), rid=101)                                # RMDIR the root
        data += pkt(7, s(self.root + "/dir/a.txt"), rid=102)                  # LSTAT inside: fine
        code, rs, _ = self.serve(data)
        self.assertEqual(code, 0)
        for i, path in enumerate(bad):
            self.assertEqual(self.status_of(rs[1 + i]), 3, "opened %r" % path)   # PERMISSION_DENIED
        self.assertEqual(self.status_of(rs[1 + len(bad)]), 0)    # a symlink itself may go
        self.assertNotEqual(self.status_of(rs[2 + len(bad)]), 0)  # the root may not
        self.assertEqual(rs[3 + len(bad)][0], 105)                # ATTRS
        self.assertTrue(os.path.isdir(self.root))
        with open(os.path.join(self.outside, "secret.txt"), "rb") as f:
            self.assertEqual(f.read(), b"outside\n")
        self.assertFalse(os.path.lexists(os.path.join(self.root, "link")))

    def test_malformed_packets_end_the_session_cleanly(self):
        cases = {
            "huge length": self.init() + struct.pack(">I", 0x7FFFFFFF) + b"\x03",
            "zero length": self.init() + struct.pack(">I", 0),
            "request before INIT": pkt(3, s(self.root + "/dir/a.txt") + struct.pack(">II", 1, 0), rid=1),
            "second INIT": self.init() + self.init(),
            "cut mid-packet": self.init() + pkt(3, s(self.root + "/dir/a.txt"), rid=1)[:-3],
        }
        for what, data in cases.items():
            with self.subTest(what):
                code, _, err = self.serve(data)
                self.assertEqual(code, 1, what)
                self.assertIn("phsync serve", err)
        # Truncated fields inside a well-framed packet get BAD_MESSAGE, and the session goes on.
        data = self.init() + pkt(5, b"\x00\x00", rid=7) + pkt(200, s("phsync-delta-read@phsync.org") + s(b"\0" * 8), rid=8)
        data += pkt(200, s("phsync-delta-start@phsync.org") + s(b"\0" * 8) + s(b"PHSSgarbage"), rid=9)
        data += pkt(7, s(self.root + "/dir/a.txt"), rid=10)
        code, rs, _ = self.serve(data)
        self.assertEqual(code, 0)
        self.assertEqual([r[0] for r in rs[1:]], [101, 101, 101, 105])
        self.assertEqual(self.status_of(rs[1]), 5)


if __name__ == "__main__":
    unittest.main()
