# SPDX-License-Identifier: ISC
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
  without touching anything;
- (issue 22) setuid, setgid and sticky bits are refused by SETSTAT, FSETSTAT, MKDIR and OPEN;
  SETSTAT of a symlink to an outside file leaves that file's mode alone, of a FIFO is refused;
  copy-data within one file (same handle, overlapping, two handles, a hard link) is refused
  with the file's size unchanged and the helper still answering (tests/unit/test_serve.c
  covers a symlink swapped in right after the helper's first look).
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import unittest

from harness import (SyncTestCase, check_sanitizers, folders_tree, phsync_bin, random_bytes, skip_or_fail,
                     tree, write_file)

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

    def test_endless_delta_fails_the_file_within_bounded_memory(self):
        """Issue 22, item 7: a helper whose delta never ends (one-byte COPY ops, each reply as
        long as asked). The file fails once its COPY ops outnumber what a file of its listed
        size can need (listed size / block length + 1, src/rdelta/dbound.h: 722 here, long
        before its output would pass the listed size after 600,000); the client's memory
        stays bounded (peak RSS from wait4, polled VmHWM as a guard that
        kills a runaway run); the old copy and nothing else stays; exit 5."""
        datas = self.make_photos(self.remote, n=1, size=600_000)
        rel = "DCIM/Camera/IMG_0.jpg"
        self.pull(*self.helper(), expect=0)
        def files():
            return {k: (v.size, v.mtime_ns, v.digest, v.ino) for k, v in tree(self.local).items()
                    if v.type == "f"}

        old = files()
        changed = random_bytes(300_000, 56) + datas[rel][300_000:]
        write_file(os.path.join(self.remote, rel), changed, mtime=T0 + 500)
        limit_kb = 300 * 1024
        out_path = os.path.join(self.tmp, "endless.out")
        path = "python3 %s endless_delta %s" % (FAKE, phsync_bin())
        argv = ["pull", "-F", self.srv.config, "--json", "--helper", "always", "--helper-path", path,
                "phone:" + self.remote, self.local]
        # ASan's quarantine keeps up to 256 MB of freed memory by default: kept small here, so
        # the peak is phsync's own.
        asan = "exitcode=86:detect_leaks=1:quarantine_size_mb=8"
        with open(out_path, "wb") as out, open(out_path + ".err", "wb") as errf:
            p = self.srv.popen(argv, env={"ASAN_OPTIONS": asan}, stdout=out, stderr=errf)
            peak, status, ru = 0, None, None
            deadline = time.monotonic() + 300
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid == p.pid:
                    break
                try:
                    with open("/proc/%d/status" % p.pid) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak = max(peak, int(line.split()[1]))
                except OSError:
                    pass
                if peak > limit_kb or time.monotonic() > deadline:
                    os.killpg(p.pid, 9)
                    os.waitpid(p.pid, 0)
                    p.returncode = -9
                    self.fail("phsync's memory grew to %d kB (or it never ended): the endless "
                              "delta was not stopped" % peak)
                time.sleep(0.05)
            p.returncode = os.waitstatus_to_exitcode(status)
        with open(out_path + ".err", errors="replace") as f:
            err = f.read()
        with open(out_path) as f:
            outs = f.read()
        check_sanitizers(p.returncode, err, argv)
        self.assertEqual(p.returncode, 5, err + outs)
        self.assertLess(ru.ru_maxrss, limit_kb, "peak RSS %d kB" % ru.ru_maxrss)
        failed = [json.loads(l) for l in outs.splitlines()]
        failed = [e for e in failed if e.get("event") == "file" and e.get("status") == "failed"]
        self.assertEqual([e["path"] for e in failed], [rel], outs)
        self.assertIn("more than the 722 block copies a file of 600000 bytes can need",
                      failed[0]["error"])
        self.assertEqual(files(), old, "the old copy changed")
        self.assertNoLeftovers(self.local)
        # The honest helper then brings it.
        self.pull(*self.helper(), expect=0)
        with open(os.path.join(self.local, rel), "rb") as f:
            self.assertEqual(f.read(), changed)

    def test_endless_literals_fail_the_file(self):
        """Literals without end: 256 KiB ones fail the file where its output would pass the
        listed size; one-byte ones (six delta bytes per byte built) where the delta grows
        longer than any delta of a file of the listed size can be (about 3 % over it here),
        a sixth of the way. Either way exit 5, the old copy intact, no temp left; the honest
        helper then brings the file."""
        datas = self.make_photos(self.remote, n=1, size=600_000)
        rel = "DCIM/Camera/IMG_0.jpg"
        self.pull(*self.helper(), expect=0)
        def files():
            return {k: (v.size, v.mtime_ns, v.digest, v.ino) for k, v in tree(self.local).items()
                    if v.type == "f"}

        old = files()
        changed = random_bytes(300_000, 57) + datas[rel][300_000:]
        write_file(os.path.join(self.remote, rel), changed, mtime=T0 + 500)
        for mode, says in (("endless_literal", "writes past the 600000 bytes listed"),
                           ("tiny_literals", "longer than the 615932 bytes")):
            with self.subTest(mode):
                path = "python3 %s %s %s" % (FAKE, mode, phsync_bin())
                r = self.pull("--json", "--helper", "always", "--helper-path", path, expect=5)
                failed = [e for e in events(r, "file") if e.get("status") == "failed"]
                self.assertEqual([e["path"] for e in failed], [rel], r)
                self.assertIn(says, failed[0]["error"])
                self.assertIn("the old copy is kept", failed[0]["error"])
                self.assertEqual(files(), old, "the old copy changed")
                self.assertNoLeftovers(self.local)
        self.pull(*self.helper(), expect=0)
        with open(os.path.join(self.local, rel), "rb") as f:
            self.assertEqual(f.read(), changed)

    def test_pull_reads_each_file_without_an_eof_probe(self):
        """Issue 24: from the helper, whose READ answers short only at the end of the file,
        a file's last READ asks one byte past its listed size and no READ at that size
        follows (the EOF probe of plain SFTP), except where the size is 0 or a multiple of
        the largest read (256 KiB, the helper's limits, which are not asked): every byte still
        arrives."""
        chunk = 256 * 1024
        sizes = {"empty.bin": 0, "one.bin": 1, "small.txt": 5000, "chunk.bin": chunk,
                 "chunk1.bin": chunk + 1, "DCIM/big.jpg": 700_000}
        datas = {}
        for i, (rel, n) in enumerate(sorted(sizes.items())):
            datas[rel] = random_bytes(n, 300 + i)
            write_file(os.path.join(self.remote, rel), datas[rel], mtime=T0)
        log = os.path.join(self.tmp, "reads.log")
        path = "python3 %s read_log=%s %s" % (FAKE, log, phsync_bin())
        self.pull("--json", "--helper", "always", "--helper-path", path, expect=0)
        for rel, data in datas.items():
            with open(os.path.join(self.local, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
        reads, exts = {}, []
        with open(log) as f:
            for line in f:
                if line.startswith("EXTENDED "):
                    exts.append(line.split()[1])
                    continue
                name, off, n = line.rsplit(" ", 2)
                reads.setdefault(os.path.relpath(name, self.remote) if name.startswith("/") else name,
                                 []).append((int(off), int(n)))
        for rel, n in sizes.items():
            got = sorted(reads.get(rel, []))
            want = [(off, min(chunk, n - off)) for off in range(0, n, chunk)]
            if n % chunk == 0:
                want.append((n, chunk))  # the probe: a read of 256 KiB + 1 the helper would cut
            else:
                want[-1] = (want[-1][0], want[-1][1] + 1)
            self.assertEqual(got, want, rel)
        # The helper's limits are its protocol version's: not asked (one round trip less).
        self.assertNotIn("limits@openssh.com", exts)

    def test_spoiled_read_replies_fail_the_file(self):
        """The helper's last READ reply is what says where the file ends: a reply cut short
        (the file shrank), one padded to the byte past the listed size (it grew) or one longer
        than asked fails the file, never committed cut or padded; the honest helper then
        brings it."""
        datas = {"DCIM/Camera/IMG_0.jpg": random_bytes(600_000, 61), "notes.txt": random_bytes(5000, 62)}
        for rel, data in datas.items():
            write_file(os.path.join(self.remote, rel), data, mtime=T0)
        for mode, says in (("short_read", "ends at byte"), ("grow_read", "grew"),
                           ("long_read", "more data than asked")):
            with self.subTest(mode):
                path = "python3 %s %s %s" % (FAKE, mode, phsync_bin())
                r = self.pull("--json", "--helper", "always", "--helper-path", path, expect=5)
                failed = [e for e in events(r, "file") if e.get("status") == "failed"]
                self.assertEqual(sorted(e["path"] for e in failed), sorted(datas), r)
                for e in failed:
                    self.assertIn(says, e["error"])
                for rel in datas:
                    self.assertFalse(os.path.lexists(os.path.join(self.local, rel)), rel)
                self.assertNoLeftovers(self.local)
        self.pull(*self.helper(), expect=0)
        for rel, data in datas.items():
            with open(os.path.join(self.local, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)

    def test_long_signature_on_push_is_not_kept(self):
        """Issue 22, item 7: a signature reply of another length than the helper's for the old
        file's size (here a valid one with 16-byte blocks) is not held nor planned against:
        the file goes whole, right."""
        os.makedirs(self.local)
        datas = self.make_photos(self.local, n=1, size=600_000)
        self.push(*self.helper(), expect=0)
        rel = "DCIM/Camera/IMG_0.jpg"
        write_file(os.path.join(self.local, rel), edits(datas[rel], 10), mtime=T0 + 300)
        path = "python3 %s long_sig %s" % (FAKE, phsync_bin())
        r = self.push("--json", "--reset-state", "--overwrite", "--helper", "always", "--helper-path", path,
                      expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["bytes_matched"]), (1, 0), r)
        self.assertTreesEqual(self.local, self.remote)

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


# -- a long listing over two helpers --------------------------------------------------------------

class ListingHelpersTest(SyncTestCase):
    """Issue 24: a listing of more folders than remote.c's MORE_AFTER (64) asks, once the local
    walk is done, for a second helper started as the first was (here `--helper-path`; the
    brought copy in test_helper_bootstrap.py): each folder is listed once, on one of the two
    processes. A second one that cannot start, or answers another protocol, leaves the run on
    its one helper, exact; one that dies mid-listing fails the run and nothing is copied or
    deleted."""

    FOLDERS = 90

    def make_tree(self):
        folders_tree(self.remote, self.FOLDERS, 2, T0)

    def fake(self, mode):
        return ["--json", "--helper", "always", "--helper-path",
                "python3 %s %s %s" % (FAKE, mode, phsync_bin())]

    def infos(self, r):
        return [e.get("message") for e in events(r, "info")]

    def test_every_folder_listed_once_over_two_helpers(self):
        self.make_tree()
        log = os.path.join(self.tmp, "list.log")
        r = self.pull(*self.fake("list_log=" + log), expect=0, timeout=120)
        self.assertIn("listing over 2 helpers", self.infos(r), r)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)
        with open(log) as f:
            seen = [line.split(None, 2) for line in f]
        paths = [os.path.basename(p.rstrip("\n").rstrip("/")) or p for _, _, p in seen]
        want = ["d%03d" % i for i in range(self.FOLDERS)] + [os.path.basename(self.remote)]
        self.assertEqual(sorted(paths), sorted(want), "every folder listed exactly once")
        self.assertEqual(len({pid for pid, _, _ in seen}), 2, "listed by two helper processes")
        r = self.pull(*self.fake("relay"), expect=0, timeout=120)
        self.assertEqual(events(r, "file"), [])
        self.assertEqual(summary(r)["files_done"], 0, r)

    def test_second_helper_refused_run_goes_on_with_one(self):
        self.make_tree()
        for mode, says in (("plain", "answers plain SFTP"),
                           ("version=7", "another protocol version")):
            with self.subTest(mode):
                starts = os.path.join(self.tmp, "starts-" + mode)
                dst = os.path.join(self.tmp, "dst-" + mode)
                r = self.pull(*self.fake("starts=%s,%s" % (starts, mode)), dst=dst, expect=0,
                              timeout=120)
                with open(starts) as f:
                    self.assertEqual(len(f.read().split()), 2, "a second helper was started")
                info = [m for m in self.infos(r) if m.startswith("one helper: another could "
                                                                 "not start: ")]
                self.assertEqual(len(info), 1, self.infos(r))
                self.assertIn(says, info[0])
                self.assertNotIn("listing over 2 helpers", self.infos(r))
                self.assertEqual(summary(r)["helper"], 1, r)
                self.assertEqual(r.err, "", r)
                self.assertTreesEqual(self.remote, dst)

    def test_second_helper_dies_mid_listing(self):
        self.make_tree()
        self.pull(*self.fake("relay"), expect=0, timeout=120)
        self.assertTreesEqual(self.remote, self.local)
        # Gone from the phone (a --delete would remove it here) and a new file there.
        os.unlink(os.path.join(self.remote, "d080", "f0.jpg"))
        write_file(os.path.join(self.remote, "d000", "new.jpg"), b"new\n", mtime=T0)
        before = tree(self.local)
        starts = os.path.join(self.tmp, "starts")
        r = self.pull(*self.fake("starts=%s,die_list=5" % starts), "--delete", timeout=120)
        with open(starts) as f:
            self.assertEqual(len(f.read().split()), 2, "a second helper was started")
        self.assertIn(r.code, (1, 3), "a listing cut by a dead helper must fail the run: %r" % (r,))
        self.assertIn("the second helper a long listing started beside the first: ",
                      summary(r).get("error", ""), r)
        self.assertEqual([e for e in events(r, "file") if e.get("status") == "ok"], [],
                         "files were copied or deleted after a listing that failed")
        def shape(t):
            return {k: (e.type, e.size, e.mtime_ns, e.ino, e.ctime_ns, e.digest) for k, e in t.items()}
        self.assertEqual(shape(tree(self.local)), shape(before), "the run changed the laptop's copy")


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


    # -- a session spoken to one request at a time (issue 22, items 4 and 5) --

    def session(self):
        """Starts `phsync serve` with files capped at 32 MiB (SIGXFSZ ignored: a write past it
        fails with EFBIG), so a copy that never ends on its own ends there instead of filling
        the disk; returns request(type, body) -> the one reply."""
        import resource
        import select
        import signal

        def cap():
            resource.setrlimit(resource.RLIMIT_FSIZE, (32 << 20, 32 << 20))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        p = subprocess.Popen([phsync_bin(), "serve", self.root], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=cap)
        self.addCleanup(lambda: (p.stdin.close(), p.wait(timeout=60), p.stdout.close()))
        ids = iter(range(1, 1 << 30))

        def read_n(n):
            data = b""
            while len(data) < n:
                ready, _, _ = select.select([p.stdout], [], [], 60)
                self.assertTrue(ready, "the helper answered nothing for 60 s")
                chunk = os.read(p.stdout.fileno(), n - len(data))
                self.assertTrue(chunk, "the helper closed its side")
                data += chunk
            return data

        def request(t, body=b""):
            p.stdin.write(pkt(t, body, rid=None if t == 1 else next(ids)))
            p.stdin.flush()
            (n,) = struct.unpack(">I", read_n(4))
            return read_n(n)

        self.assertEqual(request(1, struct.pack(">I", 3) + s("phsync@phsync.org") + s("1"))[0], 2)
        return request

    def open_handle(self, request, path, pflags, mode=None):
        attrs = struct.pack(">II", 4, mode) if mode is not None else struct.pack(">I", 0)
        r = request(3, s(path) + struct.pack(">I", pflags) + attrs)
        self.assertEqual(r[0], 102, r)                       # HANDLE
        (n,) = struct.unpack(">I", r[5:9])
        return r[9:9 + n]

    def test_setstat_refuses_setid_bits_and_never_follows_a_symlink(self):
        a = os.path.join(self.root, "dir", "a.txt")
        secret = os.path.join(self.outside, "secret.txt")
        os.chmod(a, 0o644)
        os.chmod(secret, 0o600)
        os.symlink(secret, os.path.join(self.root, "dir", "to-secret"))
        request = self.session()
        perm = lambda m: struct.pack(">II", 4, m)
        for m in (0o4755, 0o2755, 0o1755, 0o6777):
            with self.subTest(mode=oct(m)):
                r = request(9, s(a) + perm(m))                                    # SETSTAT
                self.assertEqual(self.status_of(r), 3, r)
                self.assertIn(b"setuid, setgid and sticky bits are refused", r)
                self.assertEqual(os.stat(a).st_mode & 0o7777, 0o644)
        h = self.open_handle(request, a, 2)                                        # WRITE
        r = request(10, s(h) + perm(0o4755))                                       # FSETSTAT
        self.assertEqual(self.status_of(r), 3, r)
        self.assertEqual(os.stat(a).st_mode & 0o7777, 0o644)
        new_dir = os.path.join(self.root, "dir", "shared")
        self.assertEqual(self.status_of(request(14, s(new_dir) + perm(0o2775))), 3)  # MKDIR
        self.assertFalse(os.path.lexists(new_dir))
        new_file = os.path.join(self.root, "dir", "new.bin")
        r = request(3, s(new_file) + struct.pack(">I", 2 | 8) + perm(0o4755))      # OPEN CREAT
        self.assertEqual(self.status_of(r), 3, r)
        self.assertFalse(os.path.lexists(new_file))
        # Through a symlink below the root: refused, the outside file keeps its mode.
        r = request(9, s(os.path.join(self.root, "dir", "to-secret")) + perm(0o646))
        self.assertEqual(self.status_of(r), 3, r)
        self.assertEqual(os.stat(secret).st_mode & 0o7777, 0o600)
        # A FIFO is no file to change.
        os.mkfifo(os.path.join(self.root, "dir", "fifo"), 0o600)
        r = request(9, s(os.path.join(self.root, "dir", "fifo")) + perm(0o644))
        self.assertEqual(self.status_of(r), 4, r)
        self.assertEqual(os.stat(os.path.join(self.root, "dir", "fifo")).st_mode & 0o7777, 0o600)
        # What a sync asks for still works, by path and by handle, times too.
        self.assertEqual(self.status_of(request(9, s(a) + perm(0o640))), 0)
        self.assertEqual(os.stat(a).st_mode & 0o7777, 0o640)
        r = request(10, s(h) + struct.pack(">IIII", 4 | 8, 0o600, T0 + 5, T0 + 7))
        self.assertEqual(self.status_of(r), 0, r)
        st = os.stat(a)
        self.assertEqual((st.st_mode & 0o7777, int(st.st_mtime)), (0o600, T0 + 7))
        self.assertEqual(self.status_of(request(14, s(new_dir) + perm(0o755))), 0)
        self.assertTrue(os.path.isdir(new_dir))

    def test_copy_data_within_one_file_refused(self):
        src = os.path.join(self.root, "dir", "src.bin")
        data = random_bytes(300_000, 7)
        write_file(src, data, mtime=T0)
        os.link(src, os.path.join(self.root, "dir", "hard.bin"))
        request = self.session()
        rw = self.open_handle(request, src, 1 | 2)
        ro = self.open_handle(request, src, 1)
        hard = self.open_handle(request, os.path.join(self.root, "dir", "hard.bin"), 2)

        def copy(rh, roff, length, wh, woff):
            return request(200, s("copy-data") + s(rh) + struct.pack(">QQ", roff, length) +
                           s(wh) + struct.pack(">Q", woff))

        cases = {"same handle": (rw, 0, 0, rw, len(data)),
                 "same handle, overlapping": (rw, 0, 1 << 20, rw, 4096),
                 "two handles on one file": (ro, 0, 0, rw, len(data)),
                 "a hard link of the source": (ro, 0, 0, hard, 4096)}
        for what, args in cases.items():
            with self.subTest(what):
                r = copy(*args)
                self.assertEqual(self.status_of(r), 4, r)                     # FAILURE
                self.assertIn(b"within one file", r)
                self.assertEqual(os.path.getsize(src), len(data))
        # The helper still answers, and a copy into another file works, bounded by the source.
        self.assertEqual(request(7, s(src))[0], 105)                              # ATTRS
        dst = os.path.join(self.root, "dir", "copy.bin")
        out = self.open_handle(request, dst, 2 | 8 | 32, mode=0o600)
        self.assertEqual(self.status_of(copy(ro, 0, 0, out, 0)), 0)
        self.assertEqual(self.status_of(copy(ro, 1000, 1 << 40, out, 0)), 1)       # EOF: ended early
        with open(src, "rb") as f:
            self.assertTrue(f.read() == data, "the source changed")
        with open(dst, "rb") as f:
            self.assertTrue(f.read() == data[1000:] + data[-1000:], "the copy is wrong")


if __name__ == "__main__":
    unittest.main()
