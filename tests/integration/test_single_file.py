# SPDX-License-Identifier: ISC
"""A single file as the source, as scp's (issue 25 item 3): `phsync pull phone:/DCIM/x.jpg DIR`
puts x.jpg into DIR (made when missing), `phsync push ~/x.pdf phone:/Documents/` puts it into
the remote folder. Proves: bytes and mtime as a folder pull gives them; nothing else of either
folder is touched; a re-run rewrites nothing; a phone edit arrives; a file changed on both
sides is a conflict (exit 5); --delete is refused (exit 2); the file is a pair of its own (the
folder's pair, its state and a later --delete run are unaffected); through the helper too;
--remove-source-files offloads the one file; a symlink as the source is refused on either side;
a destination that is a file is refused, never overwritten.
"""

import glob
import hashlib
import os
import unittest

from harness import SyncTestCase, phsync_bin, random_bytes, tree, write_file

T0 = 1700000000


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class SingleFileTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")
        self.cam = os.path.join(self.remote, "DCIM", "Camera")
        self.x = os.path.join(self.cam, "x.jpg")
        write_file(self.x, random_bytes(300_000, 1), mtime=T0, mode=0o644)
        write_file(os.path.join(self.cam, "y.jpg"), random_bytes(5_000, 2), mtime=T0 + 60, mode=0o644)
        write_file(os.path.join(self.cam, "sub", "z.jpg"), random_bytes(100, 3), mtime=T0 + 120)

    def pull_x(self, *opts, dst=None, src=None, expect=None):
        return self.pull("--state-dir", self.state, *opts, src=src or self.x, dst=dst, expect=expect)

    def assertSame(self, a, b):
        sa, sb = os.stat(a), os.stat(b)
        self.assertEqual(sha(a), sha(b), "bytes of %s" % b)
        self.assertEqual(int(sa.st_mtime), int(sb.st_mtime), "mtime of %s" % b)

    def test_pull_into_new_folder(self):
        r = self.pull_x("--json", expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["x.jpg"], r)
        self.assertSame(self.x, os.path.join(self.local, "x.jpg"))
        self.assertEqual(oct(os.stat(os.path.join(self.local, "x.jpg")).st_mode & 0o777), "0o644")
        self.assertNoLeftovers()
        self.assertOutsideUntouched()

    def test_pull_into_existing_folder_touches_nothing_else(self):
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "mine.txt"), b"mine", mtime=T0 - 5)
        write_file(os.path.join(self.local, "y.jpg"), b"my own y", mtime=T0 - 9)
        os.utime(self.local, (T0 - 100, T0 - 100))
        before = tree(self.local)
        self.pull_x(expect=0)
        after = tree(self.local)
        self.assertEqual(sorted(after), ["mine.txt", "x.jpg", "y.jpg"])
        for k in ("mine.txt", "y.jpg"):
            self.assertEqual((after[k].ino, after[k].ctime_ns, after[k].digest),
                             (before[k].ino, before[k].ctime_ns, before[k].digest), k)
        self.assertSame(self.x, os.path.join(self.local, "x.jpg"))

    def test_other_entries_not_looked_at(self):
        # Names a folder run would refuse and report (a failure: exit 5) are not the single
        # file's run's business on either side.
        write_file(os.path.join(self.cam, "bad\\name.jpg"), b"b", mtime=T0)
        write_file(os.path.join(self.cam, "ctl\x01.jpg"), b"c", mtime=T0)
        self.pull_x(expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["x.jpg"])
        write_file(os.path.join(self.local, "bad\\local.txt"), b"l", mtime=T0)
        src = os.path.join(self.local, "x.jpg")
        docs = os.path.join(self.remote, "Documents")
        self.push("--state-dir", self.state, src=src, dst=docs, expect=0)
        self.assertEqual(sorted(os.listdir(docs)), ["x.jpg"])

    def test_rerun_touches_nothing(self):
        self.pull_x(expect=0)
        b = os.stat(os.path.join(self.local, "x.jpg"))
        r = self.pull_x("--json", expect=0)
        a = os.stat(os.path.join(self.local, "x.jpg"))
        self.assertEqual((a.st_ino, a.st_ctime_ns, a.st_mtime_ns), (b.st_ino, b.st_ctime_ns, b.st_mtime_ns))
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertFalse([e for e in r.json() if e["event"] == "file"], r)

    def test_named_file_beats_the_default_excludes(self):
        # A name the default excludes leave out of a folder run (a file the camera is still
        # writing, one in the gallery's bin) is pulled when the user names it; the user's own
        # --exclude still applies to it, as rsync's does.
        pend = os.path.join(self.cam, ".pending-1700000000-x.jpg")
        write_file(pend, random_bytes(7_000, 11), mtime=T0 + 30, mode=0o644)
        folder = os.path.join(self.tmp, "folder")
        r = self.pull("--state-dir", self.state, "--json", src=self.cam, dst=folder, expect=0)
        self.assertNotIn(".pending-1700000000-x.jpg", os.listdir(folder), r)
        r = self.pull_x("--json", src=pend, expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), [".pending-1700000000-x.jpg"], r)
        self.assertSame(pend, os.path.join(self.local, ".pending-1700000000-x.jpg"))
        self.assertEqual(r.json()[-1]["files_done"], 1, r)
        mine = os.path.join(self.tmp, "mine")
        r = self.pull_x("--json", "--exclude", "*.jpg", src=self.x, dst=mine, expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertFalse(os.path.exists(os.path.join(mine, "x.jpg")), r)
        self.assertNoLeftovers()

    def test_phone_edit_arrives(self):
        self.pull_x(expect=0)
        write_file(self.x, random_bytes(300_001, 9), mtime=T0 + 3600)
        r = self.pull_x("--json", expect=0)
        self.assertSame(self.x, os.path.join(self.local, "x.jpg"))
        self.assertEqual([(e.get("action"), e["path"]) for e in r.json() if e["event"] == "file"],
                         [("update", "x.jpg")], r)

    def test_both_edited_is_a_conflict(self):
        self.pull_x(expect=0)
        mine = os.path.join(self.local, "x.jpg")
        write_file(mine, b"edited on the laptop", mtime=T0 + 7200)
        write_file(self.x, random_bytes(1000, 10), mtime=T0 + 3600)
        r = self.pull_x(expect=5)
        with open(mine, "rb") as f:
            self.assertEqual(f.read(), b"edited on the laptop", "the local edit was overwritten")
        copies = glob.glob(os.path.join(self.local, "x.phsync-conflict-*.jpg"))
        self.assertEqual(len(copies), 1, (os.listdir(self.local), r))
        self.assertEqual(sha(copies[0]), sha(self.x))
        self.assertNoLeftovers()

    def test_delete_refused(self):
        r = self.pull_x("--delete", expect=2)
        self.assertIn("--delete", r.err)
        self.assertFalse(os.path.exists(self.local), "a refused run made the destination")
        src = os.path.join(self.tmp, "x.pdf")
        write_file(src, b"pdf", mtime=T0)
        r = self.push("--state-dir", self.state, "--delete", src=src,
                      dst=os.path.join(self.remote, "Documents"), expect=2)
        self.assertIn("--delete", r.err)
        self.assertFalse(os.path.exists(os.path.join(self.remote, "Documents")))

    def test_folder_pair_unaffected(self):
        # The folder's own pair, pulled into the same local folder with the same state dir.
        r = self.pull("--state-dir", self.state, "--json", src=self.cam, expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 3, r)
        dbs = sorted(glob.glob(os.path.join(self.state, "*.db")))
        self.assertEqual(len(dbs), 1)
        folder_db = sha(dbs[0])
        # A single file of that folder: a pair (and a state file) of its own, which finds
        # the file here as on the phone (nothing to copy), then takes the phone's edit.
        r = self.pull_x("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        write_file(self.x, random_bytes(2000, 11), mtime=T0 + 3600)
        r = self.pull_x("--json", expect=0)
        self.assertEqual([(e.get("action"), e["path"]) for e in r.json() if e["event"] == "file"],
                         [("update", "x.jpg")], r)
        self.assertEqual(len(glob.glob(os.path.join(self.state, "*.db"))), 2)
        self.assertEqual(sha(dbs[0]), folder_db, "the single file's run wrote the folder pair's state")
        # The folder pair afterwards, with --delete: the other files are not taken for gone,
        # and the file the single run took is found as the phone has it (nothing copied).
        r = self.pull("--state-dir", self.state, "--delete", "--json", src=self.cam, expect=0)
        self.assertFalse([e for e in r.json() if e["event"] == "file"], r)
        self.assertEqual(r.json()[-1]["files_deleted"], 0, r)
        self.assertEqual(sorted(tree(self.local)), ["sub", "sub/z.jpg", "x.jpg", "y.jpg"])
        self.assertTreesEqual(self.cam, self.local, dir_mtimes=False)

    def test_other_file_is_another_pair(self):
        self.pull_x(expect=0)
        self.pull("--state-dir", self.state, src=os.path.join(self.cam, "y.jpg"), expect=0)
        self.assertEqual(len(glob.glob(os.path.join(self.state, "*.db"))), 2)
        self.assertEqual(sorted(os.listdir(self.local)), ["x.jpg", "y.jpg"])

    def test_pull_through_the_helper(self):
        helper = ("--helper", "always", "--helper-path", phsync_bin())
        r = self.pull_x(*helper, "--json", expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["x.jpg"], r)
        self.assertSame(self.x, os.path.join(self.local, "x.jpg"))
        r = self.pull_x(*helper, "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        os.symlink("x.jpg", os.path.join(self.cam, "link.jpg"))
        r = self.pull_x(*helper, src=os.path.join(self.cam, "link.jpg"), expect=1)
        self.assertIn("symlink", r.err)
        self.assertFalse(os.path.exists(os.path.join(self.local, "link.jpg")))

    def test_remove_source_files_offloads_the_one_file(self):
        data = sha(self.x)
        r = self.pull_x("--remove-source-files", expect=0)
        self.assertEqual(sha(os.path.join(self.local, "x.jpg")), data, r)
        self.assertFalse(os.path.exists(self.x), "the phone's copy was not offloaded")
        self.assertEqual(sorted(os.listdir(self.cam)), ["sub", "y.jpg"])

    def test_remote_symlink_refused(self):
        os.symlink("x.jpg", os.path.join(self.cam, "link.jpg"))
        r = self.pull_x(src=os.path.join(self.cam, "link.jpg"), expect=1)
        self.assertIn("symlink", r.err)
        self.assertFalse(os.path.exists(self.local), "a refused run made the destination")

    def test_destination_that_is_a_file_refused(self):
        dst = os.path.join(self.tmp, "x.jpg")
        write_file(dst, b"keep me", mtime=T0 - 1)
        r = self.pull_x(dst=dst, expect=1)   # as a folder pull into a file: the local folder unusable
        self.assertIn("not a folder", r.err)
        with open(dst, "rb") as f:
            self.assertEqual(f.read(), b"keep me")

    def test_push_single_file(self):
        os.makedirs(self.local)
        src = os.path.join(self.local, "x.pdf")
        write_file(src, random_bytes(70_000, 4), mtime=T0 + 5, mode=0o644)
        write_file(os.path.join(self.local, "other.txt"), b"not sent", mtime=T0)
        docs = os.path.join(self.remote, "Documents")
        r = self.push("--state-dir", self.state, "--json", src=src, dst=docs, expect=0)
        self.assertEqual(sorted(os.listdir(docs)), ["x.pdf"], r)
        self.assertSame(src, os.path.join(docs, "x.pdf"))
        # Into a folder that holds other files: they stay as they are; a re-run sends nothing.
        write_file(os.path.join(docs, "theirs.txt"), b"theirs", mtime=T0)
        b = os.stat(os.path.join(docs, "x.pdf"))
        r = self.push("--state-dir", self.state, "--json", src=src, dst=docs, expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        a = os.stat(os.path.join(docs, "x.pdf"))
        self.assertEqual((a.st_ino, a.st_ctime_ns), (b.st_ino, b.st_ctime_ns))
        self.assertEqual(sorted(os.listdir(docs)), ["theirs.txt", "x.pdf"])
        write_file(src, b"new version", mtime=T0 + 99)
        self.push("--state-dir", self.state, src=src, dst=docs, expect=0)
        self.assertSame(src, os.path.join(docs, "x.pdf"))
        self.assertNoLeftovers()

    def test_push_watch_refused(self):
        # The watcher watches a folder: a clear usage error, nothing sent.
        os.makedirs(self.local)
        src = os.path.join(self.local, "x.pdf")
        write_file(src, b"pdf", mtime=T0)
        docs = os.path.join(self.remote, "Documents")
        r = self.push("--state-dir", self.state, "--watch", src=src, dst=docs, expect=2)
        self.assertIn("--watch watches a folder", r.err)
        self.assertFalse(os.path.exists(docs))

    def test_push_local_symlink_refused(self):
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "x.pdf"), b"pdf", mtime=T0)
        link = os.path.join(self.local, "link.pdf")
        os.symlink("x.pdf", link)
        docs = os.path.join(self.remote, "Documents")
        r = self.push("--state-dir", self.state, src=link, dst=docs, expect=1)
        self.assertIn("symlink", r.err)
        self.assertFalse(os.path.exists(docs))


class SingleFileDropbearTest(SyncTestCase):
    """The same on Dropbear, whose channels close one at a time: the helper started again for
    the file's folder on the same session (plain SFTP needs no second channel)."""
    server_kwargs = {"kind": "dropbear"}

    def test_pull_and_push_one_file(self):
        cam = os.path.join(self.remote, "DCIM", "Camera")
        x = os.path.join(cam, "x.jpg")
        write_file(x, random_bytes(200_000, 5), mtime=T0, mode=0o644)
        write_file(os.path.join(cam, "y.jpg"), b"y", mtime=T0)
        for helper in (("--helper", "never"), ("--helper", "always", "--helper-path", phsync_bin())):
            dst = os.path.join(self.tmp, "L" + helper[1])
            r = self.pull(*helper, "--json", src=x, dst=dst, expect=0)
            self.assertEqual(sorted(os.listdir(dst)), ["x.jpg"], r)
            self.assertEqual(sha(os.path.join(dst, "x.jpg")), sha(x))
            self.assertEqual(int(os.stat(os.path.join(dst, "x.jpg")).st_mtime), T0)
            docs = os.path.join(self.remote, "D" + helper[1])
            self.push(*helper, src=os.path.join(dst, "x.jpg"), dst=docs, expect=0)
            self.assertEqual(sorted(os.listdir(docs)), ["x.jpg"])
            self.assertEqual(sha(os.path.join(docs, "x.jpg")), sha(x))


if __name__ == "__main__":
    unittest.main()
