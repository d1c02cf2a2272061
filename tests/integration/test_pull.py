# SPDX-License-Identifier: ISC
"""phsync pull against a real OpenSSH sshd + sftp-server on 127.0.0.1.

Proves: a pull copies the tree (bytes, file and folder mtimes, permission bits & 0777, empty
files and folders); a re-run rewrites nothing (inode and ctime of every file unchanged);
edits move (same size/new mtime, new size/same mtime); a same-size same-mtime change does not
(the documented quick check); new folders arrive; Unicode (NFC and NFD), spaces and shell
metacharacters in names; setuid/setgid/sticky never carried; nothing deleted; LOCALDIR created
if missing, followed if it is itself a symlink; user@host form.
"""

import os
import shutil
import subprocess
import unicodedata
import unittest

from harness import (SyncTestCase, check_sanitizers, sample_tree, set_dir_mtimes, tree, write_file,
                     random_bytes)

T0 = 1700000000


def files(t):
    return {k: v for k, v in t.items() if v.type == "f"}


class PullTest(SyncTestCase):

    def test_pull_copies_tree(self):
        sample_tree(self.remote)
        r = self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertNoLeftovers()
        self.assertOutsideUntouched()
        self.assertEqual(r.err.strip(), "", "stderr on a clean, non-terminal run")

    def test_many_folders_keep_their_times(self):
        # More folders than one durable batch of folders holds (pull_dirs.c:
        # 64), nested, each with its own time: every one, the root's too,
        # arrives with the source's time, set after its files came.
        for a in range(9):
            for b in range(17):
                write_file(os.path.join(self.remote, "A%d" % a, "B%02d" % b, "f"), b"x%d.%d" % (a, b),
                           mtime=T0 + a * 100 + b)
        for a in range(9):
            for b in range(17):
                d = os.path.join(self.remote, "A%d" % a, "B%02d" % b)
                os.utime(d, (T0 - 1000 - a * 100 - b, T0 - 1000 - a * 100 - b))
            os.utime(os.path.join(self.remote, "A%d" % a), (T0 - 5000 - a, T0 - 5000 - a))
        os.utime(self.remote, (T0 - 9000, T0 - 9000))
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertEqual(int(os.stat(os.path.join(self.local, "A8", "B16")).st_mtime), T0 - 1816)
        self.assertEqual(int(os.stat(os.path.join(self.local, "A0")).st_mtime), T0 - 5000)
        self.assertEqual(int(os.stat(self.local).st_mtime), T0 - 9000)

    def test_trailing_slash_means_the_same(self):
        sample_tree(self.remote)
        self.pull(src=self.remote + "/", dst=self.local + "/", expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertFalse(os.path.exists(os.path.join(self.local, "phone")),
                         "DST receives the contents of SRC, with or without a trailing slash")

    def test_user_at_host_form(self):
        sample_tree(self.remote)
        r = self.srv.run(["pull", "-F", self.srv.config, "%s@phone:%s" % (self.srv.user, self.remote), self.local])
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)

    def test_rerun_rewrites_nothing(self):
        sample_tree(self.remote)
        self.pull(expect=0)
        before = tree(self.local)
        r = self.pull("--json", expect=0)
        after = tree(self.local)
        self.assertEqual(sorted(after), sorted(before))
        for k, b in before.items():
            a = after[k]
            if b.type == "f":
                self.assertEqual((a.ino, a.ctime_ns, a.mtime_ns), (b.ino, b.ctime_ns, b.mtime_ns),
                                 "%s was rewritten or touched by a no-change re-run" % k)
            else:
                self.assertEqual(a.mtime_ns, b.mtime_ns, "folder %s mtime changed by a no-change re-run" % k)
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertEqual(summary["files_done"], 0, r)
        self.assertEqual(summary["bytes_done"], 0, r)
        self.assertFalse([e for e in r.json() if e["event"] == "file"], "file events on a no-change re-run")
        self.assertNoLeftovers()

    def _edit_and_pull(self, rel, data, mtime):
        p = os.path.join(self.remote, rel)
        d = os.path.dirname(p)
        dst = os.stat(d).st_mtime
        write_file(p, data, mtime=mtime)
        os.utime(d, (dst, dst))
        before = tree(self.local)
        r = self.pull("--json", expect=0)
        after = tree(self.local)
        self.assertTreesEqual(self.remote, self.local)
        for k, b in files(before).items():
            if k != rel:
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), "%s rewritten" % k)
        fev = [e for e in r.json() if e["event"] == "file"]
        self.assertEqual([(e.get("action"), e["path"]) for e in fev], [("update", rel)], r)
        self.assertNoLeftovers()

    def test_edit_same_size_new_mtime(self):
        sample_tree(self.remote)
        self.pull(expect=0)
        rel = "DCIM/Camera/IMG_20231114_100100.jpg"
        size = os.path.getsize(os.path.join(self.remote, rel))
        self._edit_and_pull(rel, random_bytes(size, 99), T0 + 86400)

    def test_edit_new_size_same_mtime(self):
        sample_tree(self.remote)
        self.pull(expect=0)
        rel = "DCIM/Camera/IMG_20231114_100000.jpg"
        p = os.path.join(self.remote, rel)
        old = os.stat(p)
        with open(p, "rb") as f:
            data = f.read()
        self._edit_and_pull(rel, data + b"edited tail", int(old.st_mtime))

    def test_file_shrinks_to_empty(self):
        sample_tree(self.remote)
        self.pull(expect=0)
        self._edit_and_pull("Download/notes.txt", b"", T0 + 5)

    def test_same_size_same_mtime_is_not_transferred(self):
        # The documented quick check (as rsync's): size and mtime equal -> unchanged.
        sample_tree(self.remote)
        self.pull(expect=0)
        rel = "top.txt"
        p = os.path.join(self.remote, rel)
        st = os.stat(p)
        with open(p, "rb") as f:
            old = f.read()
        write_file(p, bytes([old[0] ^ 0xFF]), mtime=int(st.st_mtime))
        before = tree(self.local)[rel]
        self.pull(expect=0)
        after = tree(self.local)[rel]
        self.assertEqual((after.ino, after.ctime_ns, after.digest), (before.ino, before.ctime_ns, before.digest))

    def test_new_folders_arrive(self):
        sample_tree(self.remote)
        self.pull(expect=0)
        write_file(os.path.join(self.remote, "DCIM/Camera/2024/01/IMG_1.jpg"), random_bytes(70_000, 5), mtime=T0 + 7)
        write_file(os.path.join(self.remote, "DCIM/Camera/2024/02/IMG_2.jpg"), random_bytes(10, 6), mtime=T0 + 8)
        os.makedirs(os.path.join(self.remote, "Movies/empty/deeper"))
        set_dir_mtimes(os.path.join(self.remote, "DCIM/Camera/2024"), T0 - 50)
        set_dir_mtimes(os.path.join(self.remote, "Movies"), T0 - 60)
        os.utime(os.path.join(self.remote, "DCIM/Camera"), (T0 - 70, T0 - 70))
        os.utime(self.remote, (T0 - 80, T0 - 80))
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertNoLeftovers()

    def test_unicode_and_odd_names(self):
        nfc = unicodedata.normalize("NFC", "café")
        nfd = unicodedata.normalize("NFD", "café")
        self.assertNotEqual(nfc.encode(), nfd.encode())
        names = [
            nfc + ".jpg", nfd + ".jpg",                 # both forms, side by side: two files
            "with space.jpg", " leading space.jpg", "trailing space .jpg", "two  spaces.jpg",
            "日本語の写真 1.jpg", "emoji 📷🌅.heic", "Ελληνικά.png", "עברית.txt",
            "quote'double\"dollar$back`tick.txt", "percent %s %n %%.txt", "glob*?[ab]{c,d}.txt",
            "-rf.txt", "#hash;semi&amp|pipe<lt>gt.txt", "~tilde", "colon:name.txt",
        ]
        for i, n in enumerate(names):
            write_file(os.path.join(self.remote, "Ünïcödé dir", n), random_bytes(100 + i, i), mtime=T0 + i, mode=0o644)
        write_file(os.path.join(self.remote, nfd + " folder", nfc + " inside.jpg"), b"x", mtime=T0)
        write_file(os.path.join(self.remote, "a dir with spaces", "sub dir", "f.txt"), b"y", mtime=T0)
        set_dir_mtimes(self.remote, T0 - 1000)
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        got = set(os.listdir(os.fsencode(os.path.join(self.local, "Ünïcödé dir"))))
        self.assertIn(os.fsencode(nfc + ".jpg"), got)
        self.assertIn(os.fsencode(nfd + ".jpg"), got)
        self.assertNoLeftovers()

    def test_long_names_and_deep_paths(self):
        # 255-byte names: the temp name `.NAME.phsync-XXXXXX` cannot simply wrap them.
        names = ["x" * 251 + ".jpg", "ü" * 125 + ".jpg", "é" * 127 + "x"]
        for n in names:
            self.assertLessEqual(len(os.fsencode(n)), 255)
        for i, n in enumerate(names):
            write_file(os.path.join(self.remote, n), random_bytes(3000 + i, i), mtime=T0 + i)
        deep = os.path.join(self.remote, *["folder-%02d" % i for i in range(40)], "deep.txt")
        write_file(deep, b"deep", mtime=T0)
        set_dir_mtimes(self.remote, T0 - 1000)
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertNoLeftovers()

    def test_empty_files_and_folders(self):
        for rel in ["empty.txt", "a/empty.jpg", "b/c/d/zero"]:
            write_file(os.path.join(self.remote, rel), b"", mtime=T0 + len(rel), mode=0o644)
        os.makedirs(os.path.join(self.remote, "only-empty-dirs/x/y"))
        os.makedirs(os.path.join(self.remote, "lonely"))
        set_dir_mtimes(self.remote, T0 - 10)
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)

    def test_permissions_rw_bits_under_umask(self):
        # New files get the source's rw bits under the umask (022 for phsync here), as cp and
        # rsync without -p do: a phone reporting 0777 must not make photos world-writable.
        modes = {"rw.jpg": 0o600, "grp.jpg": 0o640, "grpw.jpg": 0o664, "exec.sh": 0o755,
                 "ro.jpg": 0o444, "suid": 0o4755, "sgid": 0o2755, "sticky": 0o1777, "all": 0o7777,
                 "none-for-others": 0o750, "phone.jpg": 0o777}
        for i, (n, m) in enumerate(sorted(modes.items())):
            write_file(os.path.join(self.remote, n), random_bytes(1000 + i, i), mtime=T0 + i)
            os.chmod(os.path.join(self.remote, n), m)
        self.pull(expect=0)
        for n, m in modes.items():
            got = os.lstat(os.path.join(self.local, n)).st_mode & 0o7777
            # Plain rw bits only (issue 2): no x, never setuid/setgid/sticky; then the umask.
            self.assertEqual(oct(got), oct(m & 0o666 & ~0o022), "mode of %s" % n)
        # Updating a read-only file must work (rename over it) and keep its mode.
        write_file(os.path.join(self.remote, "ro.jpg"), b"new content", mtime=T0 + 100)
        os.chmod(os.path.join(self.remote, "ro.jpg"), 0o444)
        # A replaced file keeps the bits the user gave it, whatever the source says.
        os.chmod(os.path.join(self.local, "phone.jpg"), 0o600)
        write_file(os.path.join(self.remote, "phone.jpg"), b"edited", mtime=T0 + 100)
        os.chmod(os.path.join(self.remote, "phone.jpg"), 0o777)
        self.pull(expect=0)
        with open(os.path.join(self.local, "ro.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"new content")
        self.assertEqual(oct(os.stat(os.path.join(self.local, "ro.jpg")).st_mode & 0o7777), oct(0o444))
        with open(os.path.join(self.local, "phone.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"edited")
        self.assertEqual(oct(os.stat(os.path.join(self.local, "phone.jpg")).st_mode & 0o7777),
                         oct(0o600))

    def test_strict_umask_is_honoured(self):
        write_file(os.path.join(self.remote, "d", "f.jpg"), b"f", mtime=T0)
        os.chmod(os.path.join(self.remote, "d", "f.jpg"), 0o777)
        os.chmod(os.path.join(self.remote, "d"), 0o777)
        argv = self.srv.argv(["pull", "-F", self.srv.config, "phone:" + self.remote, self.local])
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           env=self.srv.env(), cwd=self.srv.home, timeout=180, umask=0o077)
        check_sanitizers(p.returncode, p.stderr.decode(errors="replace"), argv)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(oct(os.lstat(os.path.join(self.local, "d", "f.jpg")).st_mode & 0o7777),
                         oct(0o600))
        self.assertEqual(oct(os.lstat(os.path.join(self.local, "d")).st_mode & 0o7777), oct(0o700))

    def test_folder_permissions_under_umask_special_bits_dropped(self):
        dirs = {"private": 0o700, "group": 0o750, "shared": 0o775, "setgid": 0o2775,
                "stickydir": 0o1777, "phone": 0o777}
        for n, m in dirs.items():
            write_file(os.path.join(self.remote, n, "f.jpg"), b"f", mtime=T0)
            os.chmod(os.path.join(self.remote, n), m)
        os.makedirs(os.path.join(self.local, "mine"))
        os.chmod(os.path.join(self.local, "mine"), 0o711)
        write_file(os.path.join(self.remote, "mine", "f.jpg"), b"f", mtime=T0)
        os.chmod(os.path.join(self.remote, "mine"), 0o777)
        self.pull(expect=0)
        for n, m in dirs.items():
            got = os.lstat(os.path.join(self.local, n)).st_mode & 0o7777
            self.assertEqual(oct(got), oct((m & 0o777 | 0o700) & ~0o022), "mode of folder %s" % n)
        # An existing folder keeps its mode.
        self.assertEqual(oct(os.lstat(os.path.join(self.local, "mine")).st_mode & 0o7777), oct(0o711))

    def test_folder_mtimes_kept(self):
        sample_tree(self.remote)
        for i, d in enumerate(["DCIM", "DCIM/Camera", "DCIM/Screenshots", "Music/empty-folder", "Download"]):
            os.utime(os.path.join(self.remote, d), (T0 - 10_000 * (i + 1), T0 - 10_000 * (i + 1)))
        os.utime(self.remote, (T0 - 999_999, T0 - 999_999))
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=True)
        self.assertEqual(int(os.stat(self.local).st_mtime), T0 - 999_999,
                         "LOCALDIR itself gets SRC's mtime (as rsync -a gives it)")

    def test_nothing_deleted(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.local, "mine.txt"), b"local only", mtime=T0)
        write_file(os.path.join(self.local, "DCIM/Camera/local.jpg"), b"local only too", mtime=T0)
        self.pull(expect=0)
        self.assertTrue(os.path.isfile(os.path.join(self.local, "mine.txt")))
        self.assertTrue(os.path.isfile(os.path.join(self.local, "DCIM/Camera/local.jpg")))
        os.unlink(os.path.join(self.remote, "top.txt"))
        self.pull(expect=0)
        self.assertTrue(os.path.isfile(os.path.join(self.local, "top.txt")), "pull deleted a local file")
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False,
                              ignore=("mine.txt", "DCIM/Camera/local.jpg", "top.txt"))

    def test_localdir_created_and_existing_localdir_used(self):
        sample_tree(self.remote)
        dst = os.path.join(self.tmp, "new-dest")
        self.assertFalse(os.path.exists(dst))
        self.pull(dst=dst, expect=0)
        self.assertTreesEqual(self.remote, dst)
        os.makedirs(self.local)
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        self.assertFalse(os.path.exists(os.path.join(self.local, "phone")))

    def test_localdir_that_is_a_symlink_is_followed(self):
        # The root given by the user may be a symlink (e.g. ~/Pictures -> /mnt/disk/pics);
        # only links *beneath* the root are never followed.
        sample_tree(self.remote)
        real = os.path.join(self.tmp, "real-dest")
        os.makedirs(real)
        os.symlink(real, self.local)
        self.pull(expect=0)
        self.assertTrue(os.path.islink(self.local))
        self.assertTreesEqual(self.remote, real, dir_mtimes=False)


class OpenFileLimitTest(SyncTestCase):
    """A pull under a low open-file limit (a Mac's default is 256, a service manager may set
    less) makes its batches smaller rather than failing files with EMFILE: the batches' fds
    are counted against the limit, and a file handed back holds none."""

    def test_many_small_files_under_a_low_limit(self):
        import resource
        want = {}
        for d in range(6):
            for i in range(500):
                rel = "d%d/f%04d.txt" % (d, i)
                want[rel] = b"%d-%d " % (d, i) * 20
                write_file(os.path.join(self.remote, rel), want[rel], mtime=T0 + i)
        argv = self.srv.argv(["pull", "-F", self.srv.config] + self.srv._helper_opts(()) +
                             ["phone:" + self.remote, self.local])

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (700, 700))

        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=self.srv.env(None), cwd=self.srv.home,
                           timeout=300, start_new_session=True, umask=0o022, preexec_fn=limit)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        for rel, data in want.items():
            with open(os.path.join(self.local, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
            self.assertEqual(os.stat(os.path.join(self.local, rel)).st_mtime, T0 + int(rel[-8:-4]))


class RelativeRemotePathTest(SyncTestCase):
    """`phone:DCIM` is relative to the login's home on the server, as with scp/rsync/sftp.
    The server runs with a temp home bind-mounted over the login user's (clean_home; root
    only), so the test can put files there without touching the real home."""
    server_kwargs = {"clean_home": True}

    def test_relative_remote_path(self):
        home = os.path.join(self.srv.dir, "login-home")
        src = os.path.join(home, "DCIM")
        self.addCleanup(shutil.rmtree, src, True)
        sample_tree(src)
        self.pull(src="DCIM", expect=0)
        self.assertTreesEqual(src, self.local)
        back = os.path.join(home, "Backup")
        self.addCleanup(shutil.rmtree, back, True)
        self.push(dst="Backup", expect=0)
        self.assertTreesEqual(self.local, back)


if __name__ == "__main__":
    unittest.main()
