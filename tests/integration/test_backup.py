# SPDX-License-Identifier: ISC
"""phsync backup / restore / verify (issue 10) against a real sshd + sftp-server on 127.0.0.1
(through the faithful-unless-told relay), real SQLite state, real libarchive, and GNU tar and
bsdtar reading every archive back.

Proves: a full backup over SFTP is read back by GNU tar and bsdtar with the same bytes and mtimes
(.tar.zst, .tar, .tar.gz, .tar.xz); photos are stored in zstd raw blocks; full + two incrementals
with edits, new files, deletions and a rename restore exactly; kill -9 while the archive is being
written leaves nothing under the final name, and the next run removes the temp and makes a good
series; verify finds a flipped byte and a cut archive; restore refuses hostile archives ('..',
absolute paths, symlinks out, a file through a symlink, hard links, a huge size) and writes
nothing outside DIR; a server that lies about a size: the file is left out (exit 5), the archive
holds no wrong content; a photo whose read fails after its first MBs went into a .tar.zst is cut
back out; --keep prunes old chains, never the newest; a listing of many folders over plain SFTP
spreads over two channels as a sync's does.
"""

import io
import os
import shutil
import signal
import subprocess
import tarfile
import time
import unittest

from harness import SyncTestCase, folders_tree, sample_tree, tree, write_file, random_bytes

T0 = 1700000000


def files(t):
    return {k: v for k, v in t.items() if v.type == "f"}


class BackupTest(SyncTestCase):
    server_kwargs = {"relay": True}

    def setUp(self):
        super().setUp()
        self.arch = os.path.join(self.tmp, "backups")
        os.makedirs(self.arch)
        self.state = os.path.join(self.tmp, "state")

    def backup(self, *opts, name="phone-%Y%m%d.tar.zst", expect=0, src=None):
        r = self.srv.run(["backup", "-F", self.srv.config, "--state-dir", self.state, "--json"]
                         + list(opts) + [src or "phone:" + self.remote,
                                         os.path.join(self.arch, name)])
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        return r

    def published(self, r):
        s = [e for e in r.json() if e["event"] == "summary"][-1]
        return s.get("archive")

    def extract_with(self, tool, archive):
        out = os.path.join(self.tmp, "x-%s-%d" % (tool, len(os.listdir(self.tmp))))
        os.makedirs(out)
        if tool == "gnutar":
            flag = {".zst": "--zstd", ".gz": "-z", ".xz": "-J"}.get(os.path.splitext(archive)[1], "")
            argv = ["tar"] + ([flag] if flag else []) + ["-xpf", archive, "-C", out]
        else:
            argv = ["bsdtar", "-xpf", archive, "-C", out]
        p = subprocess.run(argv, capture_output=True)
        self.assertEqual(p.returncode, 0, p)
        os.unlink(os.path.join(out, ".phsync-manifest"))
        return out

    def restore(self, archives, dst, expect=0):
        r = self.srv.run(["restore", "--json"] + list(archives) + [dst])
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        return r

    def assertNoTemps(self):
        self.assertEqual([n for n in os.listdir(self.arch) if ".phsync-" in n], [])

    # -- tests ------------------------------------------------------------------------------------

    def test_full_backup_read_back_by_gnu_tar_and_bsdtar(self):
        sample_tree(self.remote)
        for ext in (".tar.zst", ".tar", ".tar.gz", ".tar.xz"):
            with self.subTest(ext=ext):
                r = self.backup(name="full" + ext)
                a = self.published(r)
                self.assertEqual(a, os.path.join(self.arch, "full" + ext))
                self.assertEqual(os.stat(a).st_mode & 0o777, 0o600)
                for tool in ("gnutar", "bsdtar"):
                    out = self.extract_with(tool, a)
                    self.assertTreesEqual(self.remote, out, modes=False)
                v = self.srv.run(["verify", a])
                self.assertEqual(v.code, 0, v)
                dst = os.path.join(self.tmp, "restored" + ext)
                self.restore([a], dst)
                self.assertTreesEqual(self.remote, dst)
        self.assertNoTemps()
        self.assertOutsideUntouched()

    def test_many_folders_listed_over_two_channels(self):
        # A backup lists as a sync does: past 64 folders over plain SFTP, on a second channel.
        folders_tree(self.remote, 90, 1, T0)
        self.srv.relay_set(trace=True, trace_pid=True)
        r = self.backup(name="many.tar.zst")
        self.assertIn("listing over 2 SFTP channels",
                      [e.get("message") for e in r.json() if e["event"] == "info"])
        pids = {f.split()[3] for f in self.srv.relay_fired() if f.startswith("trace OPENDIR")}
        self.assertEqual(len(pids), 2, self.srv.relay_fired())
        self.srv.relay_set()
        out = self.extract_with("gnutar", self.published(r))
        self.assertTreesEqual(self.remote, out, modes=False)
        self.assertNoTemps()

    def test_many_tiny_files(self):
        # Files that each come whole in one reply: every open file of the fetch's window can be
        # done and handed over in one pass, and the next one is then not open yet.
        for i in range(600):
            write_file(os.path.join(self.remote, "n%d" % (i % 3), "t%03d.txt" % i),
                       b"x" * (i % 5), mtime=T0 + i)
        r = self.backup(name="tiny.tar.zst")
        out = self.extract_with("gnutar", self.published(r))
        self.assertTreesEqual(self.remote, out, modes=False)

    def test_photos_stored_not_recompressed(self):
        write_file(os.path.join(self.remote, "DCIM/IMG_1.jpg"),
                   b"\xff\xd8\xff\xe0" + random_bytes(2_000_000, 5), mtime=T0)
        write_file(os.path.join(self.remote, "notes.txt"), b"hello world\n" * 200_000, mtime=T0)
        a = self.published(self.backup(name="m.tar.zst"))
        p = subprocess.run(["zstd", "-lv", a], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p)
        import re
        frames = int(re.search(r"# Zstandard Frames: (\d+)", p.stdout + p.stderr).group(1))
        # compressed (head manifest), raw (the photo), compressed (text, manifest)
        self.assertGreaterEqual(frames, 3, "the photo was not stored in a raw frame")
        size = os.path.getsize(a)
        self.assertLess(size, 2_000_000 + 200_000, "text not compressed")
        self.assertGreater(size, 2_000_000, "a random photo cannot shrink")
        out = self.extract_with("gnutar", a)
        self.assertTreesEqual(self.remote, out, modes=False, dir_mtimes=False)

    def test_full_and_two_incrementals_restore_exactly(self):
        sample_tree(self.remote)
        a1 = self.published(self.backup(name="s.tar.zst"))
        # Edits, a new file, a deletion, a rename.
        write_file(os.path.join(self.remote, "Download/notes.txt"), b"edited notes\n", mtime=T0 + 500)
        write_file(os.path.join(self.remote, "DCIM/Camera/IMG_new.jpg"), random_bytes(70_000, 7), mtime=T0 + 600)
        os.unlink(os.path.join(self.remote, "top.txt"))
        os.rename(os.path.join(self.remote, "DCIM/Camera/IMG_20231114_100000.jpg"),
                  os.path.join(self.remote, "DCIM/Camera/renamed.jpg"))
        r2 = self.backup("--incremental", name="s.tar.zst")
        a2 = self.published(r2)
        done = sorted(e["path"] for e in r2.json() if e["event"] == "file")
        self.assertEqual(done, ["DCIM/Camera/IMG_new.jpg", "DCIM/Camera/renamed.jpg",
                                "Download/notes.txt"])
        dels = sorted(e["path"] for e in r2.json() if e["event"] == "delete")
        self.assertEqual(dels, ["DCIM/Camera/IMG_20231114_100000.jpg", "top.txt"])
        # Second incremental: another edit, a deleted folder's file, a new folder.
        write_file(os.path.join(self.remote, "DCIM/Camera/IMG_new.jpg"), random_bytes(80_000, 8), mtime=T0 + 700)
        shutil.rmtree(os.path.join(self.remote, "DCIM/.cache"))
        write_file(os.path.join(self.remote, "New/a.txt"), b"a", mtime=T0 + 800)
        a3 = self.published(self.backup("--incremental", name="s.tar.zst"))
        for a in (a1, a2, a3):
            self.assertEqual(self.srv.run(["verify", a]).code, 0)
        dst = os.path.join(self.tmp, "restored")
        self.restore([a1, a2, a3], dst)
        self.assertTreesEqual(self.remote, dst, dir_mtimes=False)
        # Out of order, or an incremental first: refused, nothing written.
        dst2 = os.path.join(self.tmp, "restored2")
        r = self.restore([a1, a3], dst2, expect=None)
        self.assertEqual(r.code, 2, r)
        r = self.restore([a2], os.path.join(self.tmp, "restored3"), expect=2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "restored3")))
        # GNU tar applied in order gives the same files (deletions aside, as tar knows none).
        out = self.extract_with("gnutar", a1)
        subprocess.run(["tar", "--zstd", "-xpf", a2, "-C", out], check=True)
        subprocess.run(["tar", "--zstd", "-xpf", a3, "-C", out], check=True)
        for k, e in files(tree(self.remote)).items():
            self.assertEqual(tree(out)[k].digest, e.digest, k)
        self.assertNoTemps()

    def test_kill_during_backup_leaves_no_archive_and_next_run_is_right(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.remote, "DCIM/Camera/VID_big.mp4"), random_bytes(12 << 20, 3), mtime=T0)
        self.srv.relay_set(hang={"type": "READ", "name": "VID_big.mp4"})
        p = self.srv.popen(["backup", "-F", self.srv.config, "--state-dir", self.state,
                            "phone:" + self.remote, os.path.join(self.arch, "k.tar.zst")])
        deadline = time.time() + 60
        while time.time() < deadline and not [n for n in os.listdir(self.arch) if ".phsync-" in n]:
            time.sleep(0.05)
        temps = [n for n in os.listdir(self.arch) if ".phsync-" in n]
        self.assertTrue(temps, "no temp archive appeared")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        p.stdout.close()
        p.stderr.close()
        self.assertFalse(os.path.exists(os.path.join(self.arch, "k.tar.zst")))
        self.srv.relay_set()
        # The series did not advance: --incremental makes a full one; the dead temp is gone.
        r = self.backup("--incremental", name="k.tar.zst")
        a = self.published(r)
        self.assertEqual(a, os.path.join(self.arch, "k.tar.zst"))
        self.assertNoTemps()
        self.assertEqual(self.srv.run(["verify", a]).code, 0)
        dst = os.path.join(self.tmp, "r")
        self.restore([a], dst)
        self.assertTreesEqual(self.remote, dst)
        man = subprocess.run(["tar", "--zstd", "-xOf", a, ".phsync-manifest"], capture_output=True,
                             text=True).stdout
        self.assertIn("kind full", man)
        self.assertIn("seq 1\n", man)

    def test_verify_finds_a_flipped_byte_and_a_cut_archive(self):
        write_file(os.path.join(self.remote, "a.txt"), b"A" * 300_000, mtime=T0)
        write_file(os.path.join(self.remote, "b.jpg"), b"\xff\xd8\xff" + random_bytes(500_000, 2), mtime=T0)
        for ext in (".tar", ".tar.zst"):
            with self.subTest(ext=ext):
                a = self.published(self.backup(name="v" + ext))
                self.assertEqual(self.srv.run(["verify", a]).code, 0)
                with open(a, "rb") as f:
                    data = bytearray(f.read())
                bad = os.path.join(self.tmp, "bad" + ext)
                data2 = bytearray(data)
                data2[len(data2) // 2] ^= 0x40
                with open(bad, "wb") as f:
                    f.write(data2)
                r = self.srv.run(["verify", bad])
                self.assertNotEqual(r.code, 0, r)
                cut = os.path.join(self.tmp, "cut" + ext)
                with open(cut, "wb") as f:
                    f.write(data[:len(data) * 2 // 3])
                r = self.srv.run(["verify", cut])
                self.assertNotEqual(r.code, 0, r)
                # restore of the damaged ones writes nothing (not even the folder).
                dst = os.path.join(self.tmp, "r" + ext)
                r = self.restore([bad], dst, expect=None)
                self.assertNotEqual(r.code, 0, r)
                self.assertFalse(os.path.exists(dst))

    def _hostile_tar(self, path, build):
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
            build(t)

    def _add(self, t, name, data=b"x", kind=tarfile.REGTYPE, linkname="", size=None):
        ti = tarfile.TarInfo(name)
        ti.type = kind
        ti.linkname = linkname
        ti.mtime = T0
        ti.size = len(data) if kind == tarfile.REGTYPE and size is None else (size or 0)
        t.addfile(ti, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

    def test_restore_refuses_hostile_archives(self):
        ev = os.path.join(self.outside, "evil.txt")
        a = os.path.join(self.tmp, "hostile.tar")

        def build(t):
            self._add(t, "ok.txt", b"fine")
            self._add(t, "../escape.txt", b"out")
            self._add(t, "a/../../escape2.txt", b"out")
            self._add(t, ev, b"abs")
            self._add(t, "link", kind=tarfile.SYMTYPE, linkname=self.outside)
            self._add(t, "link/through.txt", b"through the link")
            self._add(t, "hard", kind=tarfile.LNKTYPE, linkname="ok.txt")
            self._add(t, "dev", kind=tarfile.CHRTYPE)
        self._hostile_tar(a, build)
        dst = os.path.join(self.tmp, "dst")
        r = self.restore([a], dst, expect=5)
        self.assertOutsideUntouched()
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape.txt")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape2.txt")))
        got = {k: v.type for k, v in tree(dst).items()}
        # The symlink was never made; its path became a plain folder inside DST.
        self.assertEqual(got, {"ok.txt": "f", "link": "d", "link/through.txt": "f"})
        failed = sorted(e["path"] for e in r.json() if e["event"] == "file" and e["status"] == "failed")
        self.assertEqual(len(failed), 6, r)
        self.assertEqual(leftover_temps(dst), [])
        # A symlink already in DST pointing out is not followed either.
        dst2 = os.path.join(self.tmp, "dst2")
        os.makedirs(dst2)
        os.symlink(self.outside, os.path.join(dst2, "link"))
        self._hostile_tar(a, lambda t: self._add(t, "link/through.txt", b"through"))
        self.restore([a], dst2, expect=5)
        self.assertOutsideUntouched()
        # A huge size that cannot fit: a clear error, nothing written.
        big = os.path.join(self.tmp, "huge.tar")
        with open(big, "wb") as f:
            ti = tarfile.TarInfo("huge.bin")
            ti.size = 1 << 50
            f.write(ti.tobuf(tarfile.PAX_FORMAT))
            f.write(b"\0" * 4096)
        dst3 = os.path.join(self.tmp, "dst3")
        r = self.restore([big], dst3, expect=None)
        self.assertNotIn(r.code, (0, 5), r)
        self.assertFalse(os.path.exists(dst3))

    def test_server_lying_about_a_size(self):
        write_file(os.path.join(self.remote, "good.txt"), b"good\n", mtime=T0)
        write_file(os.path.join(self.remote, "liar.jpg"), random_bytes(300_000, 1), mtime=T0)
        write_file(os.path.join(self.remote, "grown.jpg"), random_bytes(300_000, 2), mtime=T0)
        self.srv.relay_set(size_lie={"liar.jpg": 1000, "grown.jpg": -1000})
        r = self.backup(name="lie.tar.zst", expect=5)
        a = self.published(r)
        failed = sorted(e["path"] for e in r.json() if e["event"] == "file" and e["status"] == "failed")
        self.assertEqual(failed, ["grown.jpg", "liar.jpg"])
        for tool in ("gnutar", "bsdtar"):
            out = self.extract_with(tool, a)
            self.assertEqual(sorted(files(tree(out))), ["good.txt"])
        self.assertEqual(self.srv.run(["verify", a]).code, 0)
        # Honest again: the next incremental takes both.
        self.srv.relay_set()
        r = self.backup("--incremental", name="lie.tar.zst", expect=0)
        done = sorted(e["path"] for e in r.json() if e["event"] == "file")
        self.assertEqual(done, ["grown.jpg", "liar.jpg"])

    def test_file_failing_mid_read_is_taken_back_out(self):
        """A photo of a few MB is streamed into a .tar.zst after a mark, not held in memory: when
        its read fails after its first MBs are in the archive, they are cut back out. The
        failing READ (at 7.8 MB) is asked for only after the first bytes were handed over (the
        fetch budget is 4 MB), so the file's header is in the archive when it fails."""
        big = b"\xff\xd8\xff\xe0" + random_bytes(7_900_000, 11)
        write_file(os.path.join(self.remote, "a.txt"), b"a\n" * 1000, mtime=T0)
        write_file(os.path.join(self.remote, "b.jpg"), big, mtime=T0)
        write_file(os.path.join(self.remote, "c.mp4"), random_bytes(1_500_000, 12), mtime=T0)
        write_file(os.path.join(self.remote, "d.txt"), b"d\n" * 1000, mtime=T0)
        self.srv.relay_set(fail_read={"name": "b.jpg", "at": 7_800_000})
        r = self.backup(name="cut.tar.zst", expect=5)
        self.assertEqual(len(self.srv.relay_fired()), 1, self.srv.relay_fired())
        a = self.published(r)
        failed = [e["path"] for e in r.json() if e["event"] == "file" and e["status"] == "failed"]
        self.assertEqual(failed, ["b.jpg"])
        p = subprocess.run(["zstd", "-t", a], capture_output=True)
        self.assertEqual(p.returncode, 0, p)
        for tool in ("gnutar", "bsdtar"):
            out = self.extract_with(tool, a)
            self.assertEqual(sorted(files(tree(out))), ["a.txt", "c.mp4", "d.txt"])
            for n in ("a.txt", "c.mp4", "d.txt"):
                with open(os.path.join(out, n), "rb") as f, open(os.path.join(self.remote, n), "rb") as g:
                    self.assertEqual(f.read(), g.read(), n)
        self.assertEqual(self.srv.run(["verify", a]).code, 0)
        self.srv.relay_set()
        r = self.backup("--incremental", name="cut.tar.zst", expect=0)
        done = sorted(e["path"] for e in r.json() if e["event"] == "file")
        self.assertEqual(done, ["b.jpg"])
        dst = os.path.join(self.tmp, "r")
        self.restore([a, self.published(r)], dst)
        self.assertTreesEqual(self.remote, dst)

    def test_keep_prunes_old_chains_only(self):
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        names = []
        for i, mode in enumerate(["--full", "--incremental", "--full", "--incremental", "--full"]):
            write_file(os.path.join(self.remote, "f%d.txt" % i), b"x" * i, mtime=T0 + i)
            names.append(self.published(self.backup(mode, "--keep", "2", name="k.tar")))
        self.assertEqual([os.path.exists(n) for n in names], [False, False, True, True, True])
        # The newest chain restores alone.
        dst = os.path.join(self.tmp, "r")
        self.restore(names[4:], dst)
        self.assertTreesEqual(self.remote, dst)

    def test_full_disk_is_a_clear_error(self):
        # The archive's folder is a 6 MiB tmpfs (root only, as test_full_disk.py).
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m,mode=755", "tmpfs", self.arch],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root): " + r.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.arch], capture_output=True)
        write_file(os.path.join(self.remote, "VID_1.mp4"), random_bytes(9 << 20, 4), mtime=T0)
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        r = self.backup(name="d.tar.zst", expect=1)
        summary = r.json()[-1]
        self.assertIn("no space left", summary["error"])
        self.assertEqual(os.listdir(self.arch), [], "an archive or its temp left on the full disk")
        # The series did not advance: with room, --incremental makes a full archive.
        subprocess.run(["umount", "-l", self.arch], check=True)
        a = self.published(self.backup("--incremental", name="d.tar.zst"))
        man = subprocess.run(["tar", "--zstd", "-xOf", a, ".phsync-manifest"], capture_output=True,
                             text=True).stdout
        self.assertIn("kind full", man)

    def test_local_source_and_usage(self):
        sample_tree(self.remote)
        r = self.backup(name="l.tar.zst", src=self.remote)
        a = self.published(r)
        out = self.extract_with("bsdtar", a)
        self.assertTreesEqual(self.remote, out, modes=False)
        for args in (["backup", self.remote], ["backup", self.remote, os.path.join(self.arch, "x.zip")],
                     ["restore", a], ["verify"], ["backup", "--keep", "0", self.remote, "x.tar"]):
            r = self.srv.run(args)
            self.assertIn(r.code, (1, 2), r)
        self.assertFalse(os.path.exists(os.path.join(self.arch, "x.zip")))


def leftover_temps(root):
    return [k for k in tree(root) if ".phsync-" in k]


if __name__ == "__main__":
    unittest.main()
