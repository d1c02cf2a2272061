# SPDX-License-Identifier: ISC
"""phsync push against a real OpenSSH sshd + sftp-server on 127.0.0.1.

Proves: a push copies the tree to the server (bytes, file and folder mtimes, permission bits &
0777 set explicitly whatever the server's umask, empty files and folders); a re-run rewrites
nothing on the server (inode and ctime of every remote file unchanged); edits move; Unicode and
odd names; the remote DIR is created if missing; local symlinks and FIFOs are skipped, not
recreated; a symlink on the server at a destination path is never written through; nothing is
deleted on the server.
"""

import os
import unicodedata
import unittest

from harness import SyncTestCase, sample_tree, set_dir_mtimes, tree, write_file, random_bytes

T0 = 1700000000


class PushTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        os.makedirs(self.local)

    def test_push_copies_tree(self):
        sample_tree(self.local)
        r = self.push(expect=0)
        self.assertTreesEqual(self.local, self.remote)
        self.assertNoLeftovers()
        self.assertOutsideUntouched()
        self.assertEqual(r.err.strip(), "")

    def test_remote_dir_created(self):
        sample_tree(self.local)
        dst = os.path.join(self.remote, "new folder")
        self.push(dst=dst, expect=0)
        self.assertTreesEqual(self.local, dst)
        self.assertNoLeftovers(dst)

    def test_rerun_rewrites_nothing_on_server(self):
        sample_tree(self.local)
        self.push(expect=0)
        before = tree(self.remote)
        r = self.push("--json", expect=0)
        after = tree(self.remote)
        self.assertEqual(sorted(after), sorted(before))
        for k, b in before.items():
            a = after[k]
            if b.type == "f":
                self.assertEqual((a.ino, a.ctime_ns, a.mtime_ns), (b.ino, b.ctime_ns, b.mtime_ns),
                                 "remote %s rewritten or touched by a no-change re-run" % k)
            else:
                self.assertEqual(a.mtime_ns, b.mtime_ns, "remote folder %s mtime changed" % k)
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertEqual((summary["files_done"], summary["bytes_done"]), (0, 0), r)

    def test_edits_move(self):
        sample_tree(self.local)
        self.push(expect=0)
        same_size = "DCIM/Camera/IMG_20231114_100100.jpg"
        new_size = "Download/notes.txt"
        p = os.path.join(self.local, same_size)
        write_file(p, random_bytes(os.path.getsize(p), 77), mtime=T0 + 99_999)
        p = os.path.join(self.local, new_size)
        m = int(os.stat(p).st_mtime)
        write_file(p, b"a longer note than before", mtime=m)
        before = tree(self.remote)
        r = self.push("--json", expect=0)
        self.assertTreesEqual(self.local, self.remote)
        after = tree(self.remote)
        for k, b in before.items():
            if b.type == "f" and k not in (same_size, new_size):
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), "%s rewritten" % k)
        moved = sorted((e.get("action"), e["path"]) for e in r.json() if e["event"] == "file")
        self.assertEqual(moved, sorted([("update", same_size), ("update", new_size)]), r)
        self.assertNoLeftovers()

    def test_new_folders_and_empty_things(self):
        sample_tree(self.local)
        self.push(expect=0)
        write_file(os.path.join(self.local, "New/Sub/a.jpg"), random_bytes(5000, 3), mtime=T0 + 1)
        write_file(os.path.join(self.local, "New/empty.jpg"), b"", mtime=T0 + 2)
        os.makedirs(os.path.join(self.local, "New/empty/dir"))
        set_dir_mtimes(os.path.join(self.local, "New"), T0 - 500)
        os.utime(self.local, (T0 - 600, T0 - 600))
        self.push(expect=0)
        self.assertTreesEqual(self.local, self.remote)

    def test_unicode_and_odd_names(self):
        nfc = unicodedata.normalize("NFC", "Ångström")
        nfd = unicodedata.normalize("NFD", "Ångström")
        names = [nfc + ".jpg", nfd + ".jpg", "with space.jpg", " lead.jpg", "trail .jpg",
                 "日本語 写真.jpg", "emoji 📷.heic", "quote'\"$`.txt", "glob*?[x].txt", "-n.txt",
                 "x" * 251 + ".jpg"]
        for i, n in enumerate(names):
            write_file(os.path.join(self.local, "Dir ünï " + nfd, n), random_bytes(10 + i, i), mtime=T0 + i)
        set_dir_mtimes(self.local, T0 - 100)
        self.push(expect=0)
        self.assertTreesEqual(self.local, self.remote)
        self.assertNoLeftovers()

    def test_permissions_under_the_servers_umask(self):
        # New files and folders get the source's bits (files: rw only) under the server's
        # umask (022 for the test sshd's sftp-server), as cp and rsync without -p do.
        modes = {"grpw.jpg": 0o664, "rw.jpg": 0o600, "exec.sh": 0o775, "ro.jpg": 0o444,
                 "suid": 0o4755, "sgid": 0o2775, "sticky": 0o1666, "all": 0o777}
        for i, (n, m) in enumerate(sorted(modes.items())):
            write_file(os.path.join(self.local, n), random_bytes(100 + i, i), mtime=T0 + i)
            os.chmod(os.path.join(self.local, n), m)
        dirs = {"gdir": 0o775, "pdir": 0o700, "sgdir": 0o2775}
        for n, m in dirs.items():
            write_file(os.path.join(self.local, n, "f"), b"f", mtime=T0)
            os.chmod(os.path.join(self.local, n), m)
        self.push(expect=0)
        # Files carry plain rw bits only (issue 2): no x, never setuid/setgid/sticky.
        for n, m in modes.items():
            got = os.lstat(os.path.join(self.remote, n)).st_mode & 0o7777
            self.assertEqual(oct(got), oct(m & 0o666 & ~0o022), "remote mode of %s" % n)
        # Folders keep rwx (a folder without x cannot be entered), never special bits.
        for n, m in dirs.items():
            got = os.lstat(os.path.join(self.remote, n)).st_mode & 0o7777
            self.assertEqual(oct(got), oct((m & 0o777 | 0o700) & ~0o022), "remote mode of %s" % n)
        # A replaced remote file keeps the bits it had there.
        os.chmod(os.path.join(self.remote, "grpw.jpg"), 0o600)
        write_file(os.path.join(self.local, "grpw.jpg"), b"edited", mtime=T0 + 60)
        self.push(expect=0)
        with open(os.path.join(self.remote, "grpw.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"edited")
        self.assertEqual(oct(os.lstat(os.path.join(self.remote, "grpw.jpg")).st_mode & 0o7777),
                         oct(0o600))
        # Updating a read-only remote file works.
        write_file(os.path.join(self.local, "ro.jpg"), b"changed", mtime=T0 + 50)
        os.chmod(os.path.join(self.local, "ro.jpg"), 0o444)
        self.push(expect=0)
        with open(os.path.join(self.remote, "ro.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"changed")

    def test_folder_mtimes_kept(self):
        sample_tree(self.local)
        for i, d in enumerate(["DCIM", "DCIM/Camera", "Music", "Music/empty-folder"]):
            os.utime(os.path.join(self.local, d), (T0 - 1000 * (i + 1),) * 2)
        self.push(expect=0)
        self.assertTreesEqual(self.local, self.remote, dir_mtimes=True)

    def test_local_symlinks_and_fifos_skipped(self):
        sample_tree(self.local)
        os.symlink("top.txt", os.path.join(self.local, "link-to-file"))
        os.symlink("DCIM", os.path.join(self.local, "link-to-dir"))
        os.symlink("/etc/passwd", os.path.join(self.local, "abs-link"))
        os.symlink("nowhere", os.path.join(self.local, "dangling"))
        os.mkfifo(os.path.join(self.local, "a-fifo"))
        r = self.push("--json", expect=0, timeout=60)
        for n in ["link-to-file", "link-to-dir", "abs-link", "dangling", "a-fifo"]:
            self.assertFalse(os.path.lexists(os.path.join(self.remote, n)), "%s recreated on the server" % n)
        self.assertTreesEqual(self.local, self.remote)
        skips = {e["path"]: e.get("reason") for e in r.json() if e["event"] == "skip"}
        for n in ["link-to-file", "link-to-dir", "abs-link", "dangling"]:
            self.assertEqual(skips.get(n), "symlink", r)
        self.assertEqual(skips.get("a-fifo"), "special", r)

    def test_remote_symlink_at_destination_not_written_through(self):
        write_file(os.path.join(self.local, "photo.jpg"), b"new photo", mtime=T0)
        write_file(os.path.join(self.local, "Album/inner.jpg"), b"inner", mtime=T0)
        target = os.path.join(self.outside, "sentinel.txt")
        os.symlink(target, os.path.join(self.remote, "photo.jpg"))
        os.symlink(self.outside, os.path.join(self.remote, "Album"))
        r = self.push(timeout=60)
        self.assertIn(r.code, (0, 5), r)
        self.assertOutsideUntouched()
        p = os.path.join(self.remote, "photo.jpg")
        if not os.path.islink(p):
            with open(p, "rb") as f:
                self.assertEqual(f.read(), b"new photo")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "inner.jpg")))
        self.assertNoLeftovers()

    def test_nothing_deleted_on_server(self):
        sample_tree(self.local)
        write_file(os.path.join(self.remote, "theirs.txt"), b"server only", mtime=T0)
        self.push(expect=0)
        os.unlink(os.path.join(self.local, "top.txt"))
        self.push(expect=0)
        self.assertTrue(os.path.isfile(os.path.join(self.remote, "theirs.txt")))
        self.assertTrue(os.path.isfile(os.path.join(self.remote, "top.txt")))


if __name__ == "__main__":
    unittest.main()
