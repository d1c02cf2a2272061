# SPDX-License-Identifier: ISC
"""Changes the size-and-time rule cannot see (issue 22, items 1 and 13), against the real sshd.

Item 1: a move was confirmed by the first and last 64 KiB only and recorded with the old
path's hash; a later --remove-source-files then removed a phone file whose middle bytes the
laptop never held. Now a move is confirmed by the whole content, a record's hash is always one
of that path's bytes, and an offload trusts only a hash read whole from that phone path (else
it reads the phone's file whole first): after any sequence of runs the laptop holds the
phone's true bytes or the phone still holds them.

Item 13: an edit that keeps size and mtime (its time set back; two edits in one clock tick)
was missed. The local side's identity (ctime, inode, device) is recorded, as git's index does;
a file whose identity moved, or whose times lie within the racy window of the run that recorded
it, has its content checked against its record.

Each test fails on 797e3f4."""

import glob
import os
import sqlite3
import unittest

from harness import SyncTestCase, phsync_bin, write_file

T0 = 1700000000
CONFLICT = "*.phsync-conflict-*"
PROBE = 65536


def read(path):
    with open(path, "rb") as f:
        return f.read()


def edit_in_place(path, off, data, keep_mtime=True):
    """Overwrites bytes at off (same inode, same size) and sets the mtime back."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(off)
        # An edit that writes the bytes already there is no edit: the test would then
        # expect a change that is not (a random last byte is b"!" once in 256 runs).
        assert f.read(len(data)) != data, "the edit changes nothing at %d" % off
        f.seek(off)
        f.write(data)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


class MoveOffloadTest(SyncTestCase):
    """The issue's reproduction: pull; on the phone a file is moved and its middle bytes
    changed, keeping size, mtime and the first and last 64 KiB; pull; pull
    --remove-source-files."""

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")
        self.old = os.urandom(600_000)
        write_file(os.path.join(self.remote, "DCIM", "IMG_1.dng"), self.old, mtime=T0)
        write_file(os.path.join(self.remote, "DCIM", "keep.jpg"), b"k" * 1000, mtime=T0)

    def run_pull(self, *opts, expect=0):
        return self.pull("--state-dir", self.state, "--json", *opts, expect=expect)

    def move_and_edit_middle(self):
        src = os.path.join(self.remote, "DCIM", "IMG_1.dng")
        dst = os.path.join(self.remote, "Edited", "IMG_1.dng")
        os.makedirs(os.path.dirname(dst))
        os.rename(src, dst)
        edit_in_place(dst, 300_000, b"\x00" * 4096)
        new = read(dst)
        self.assertNotEqual(new, self.old)
        self.assertEqual((new[:PROBE], new[-PROBE:]), (self.old[:PROBE], self.old[-PROBE:]))
        return dst, new

    def check(self, *opts):
        self.run_pull()
        dst, new = self.move_and_edit_middle()
        self.run_pull(*opts)
        here = os.path.join(self.local, "Edited", "IMG_1.dng")
        # Not the old file under the new name: the phone's true bytes.
        self.assertTrue(read(here) == new, "the laptop holds other bytes under the new name")
        self.assertEqual(os.stat(here).st_mtime, T0)
        r = self.run_pull("--remove-source-files")
        # The phone's file goes only if the laptop holds its exact bytes.
        if not os.path.exists(dst):
            self.assertTrue(read(here) == new, "the phone's file went, its bytes are not here")
        self.assertTrue(read(here) == new)
        self.assertEqual(r.json()[-1]["files_offloaded"], 2)
        self.assertFalse(os.path.exists(dst))
        if "--delete" in opts:
            self.assertFalse(os.path.exists(os.path.join(self.local, "DCIM", "IMG_1.dng")))
        else:
            self.assertEqual(read(os.path.join(self.local, "DCIM", "IMG_1.dng")), self.old)

    def test_move_with_other_middle_bytes_and_delete(self):
        self.check("--delete")

    def test_move_with_other_middle_bytes_without_delete(self):
        self.check()

    def test_a_true_move_is_still_a_move(self):
        # A video of many read windows too (16 READs in flight), its last byte changed in a
        # twin moved beside it: that one is transferred.
        video = os.urandom(9_000_001)
        write_file(os.path.join(self.remote, "DCIM", "VID.mp4"), video, mtime=T0 + 1)
        write_file(os.path.join(self.remote, "DCIM", "VID2.mp4"), video, mtime=T0 + 2)
        self.run_pull()
        os.makedirs(os.path.join(self.remote, "Album"))
        os.rename(os.path.join(self.remote, "DCIM", "IMG_1.dng"),
                  os.path.join(self.remote, "Album", "IMG_1.dng"))
        os.rename(os.path.join(self.remote, "DCIM", "VID.mp4"),
                  os.path.join(self.remote, "Album", "VID.mp4"))
        os.rename(os.path.join(self.remote, "DCIM", "VID2.mp4"),
                  os.path.join(self.remote, "Album", "VID2.mp4"))
        edit_in_place(os.path.join(self.remote, "Album", "VID2.mp4"), 9_000_000,
                      bytes([video[-1] ^ 0xFF]))
        r = self.run_pull("--delete")
        self.assertEqual(sorted((e["action"], e["path"]) for e in r.json() if e["event"] == "file"),
                         [("moved", "Album/IMG_1.dng"), ("moved", "Album/VID.mp4"),
                          ("new", "Album/VID2.mp4")])
        self.assertTrue(read(os.path.join(self.local, "Album", "VID.mp4")) == video)
        self.assertTrue(read(os.path.join(self.local, "Album", "VID2.mp4")) ==
                        video[:-1] + bytes([video[-1] ^ 0xFF]))
        os.unlink(os.path.join(self.remote, "Album", "VID.mp4"))
        os.unlink(os.path.join(self.remote, "Album", "VID2.mp4"))
        os.unlink(os.path.join(self.local, "Album", "VID.mp4"))
        os.unlink(os.path.join(self.local, "Album", "VID2.mp4"))
        self.run_pull("--delete")
        # Its record carries the hash of its bytes, read whole from the phone: the offload
        # needs nothing more.
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            (hread,) = c.execute("SELECT hread FROM files WHERE path = 'Album/IMG_1.dng'").fetchone()
        self.assertEqual(hread, 1)
        r = self.run_pull("--remove-source-files")
        self.assertEqual(r.json()[-1]["files_offloaded"], 2)
        self.assertEqual(read(os.path.join(self.local, "Album", "IMG_1.dng")), self.old)

    def test_a_pushed_file_is_read_whole_before_it_is_offloaded(self):
        # A push records the hash of the laptop's bytes, never read from the phone. The
        # phone's copy then changes (same size and time): an offload must not trust it.
        src = os.path.join(self.tmp, "music")
        song = os.urandom(200_000)
        write_file(os.path.join(src, "a.flac"), song, mtime=T0)
        write_file(os.path.join(src, "b.flac"), song[::-1], mtime=T0)
        phone = os.path.join(self.tmp, "phone-music")
        os.makedirs(phone)
        self.push("--state-dir", self.state, src=src, dst=phone, expect=0)
        edit_in_place(os.path.join(phone, "a.flac"), 100_000, b"phone's own bytes")
        theirs = read(os.path.join(phone, "a.flac"))
        r = self.pull("--state-dir", self.state, "--json", "--remove-source-files",
                      src=phone, dst=src, expect=0)
        skipped = [e["path"] for e in r.json() if e["event"] == "skip"]
        self.assertEqual(skipped, ["a.flac"], r)
        self.assertEqual(read(os.path.join(phone, "a.flac")), theirs)
        # The untouched one was read whole, matched, and went.
        self.assertFalse(os.path.exists(os.path.join(phone, "b.flac")))
        self.assertEqual(read(os.path.join(src, "b.flac")), song[::-1])


class HelperMoveTest(MoveOffloadTest):
    """The same through the helper, which confirms a move by its file's block signature (read
    whole on the phone, only the signature crosses), and with a helper whose signature is
    garbage (the phone's file is then read whole)."""

    helper_path = None

    def test_a_pushed_file_is_read_whole_before_it_is_offloaded(self):
        # The helper signs the phone's file: its changed copy stays, the other goes.
        self.push = self.helper_push
        super().test_a_pushed_file_is_read_whole_before_it_is_offloaded()

    def helper_push(self, *opts, **kw):
        return SyncTestCase.push(self, "--helper", "always", "--helper-path",
                                 self.helper_path or phsync_bin(), *opts, **kw)

    def pull(self, *opts, **kw):
        if not any(str(o).startswith("--helper") for o in opts):
            opts = ("--helper", "always", "--helper-path", self.helper_path or phsync_bin()) + opts
        return SyncTestCase.pull(self, *opts, **kw)


class LyingSignatureMoveTest(HelperMoveTest):
    def setUp(self):
        super().setUp()
        fake = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib",
                            "fake_helper.py")
        self.helper_path = "python3 %s bad_sig %s" % (fake, phsync_bin())


class LocalIdentityTest(SyncTestCase):
    """A local edit that keeps size and mtime is a change."""

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")
        self.src = os.path.join(self.tmp, "src")
        self.phone = os.path.join(self.tmp, "phone2")
        os.makedirs(self.phone)

    def push_(self, *opts, expect=0):
        return self.push("--state-dir", self.state, "--json", *opts, src=self.src, dst=self.phone,
                         expect=expect)

    def pull_(self, *opts, expect=0):
        return self.pull("--state-dir", self.state, "--json", *opts, expect=expect)

    def test_push_sees_an_edit_that_kept_size_and_mtime(self):
        path = write_file(os.path.join(self.src, "notes.txt"), b"version 1 " * 1000, mtime=T0)
        write_file(os.path.join(self.src, "other.txt"), b"other", mtime=T0)
        self.push_()
        edit_in_place(path, 0, b"version 2 ")
        r = self.push_()
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], ["notes.txt"])
        self.assertEqual(read(os.path.join(self.phone, "notes.txt")), read(path))
        # Settled: nothing more goes.
        r = self.push_()
        self.assertEqual([e for e in r.json() if e["event"] == "file"], [])

    def test_push_sees_an_edit_within_the_recording_runs_clock_step(self):
        # Two edits within one clock tick leave even the ctime as recorded: simulated by
        # recording the edited file's own identity, and the recording run ending in the same
        # second as its ctime (git's racy clean case). Its content is then checked.
        path = write_file(os.path.join(self.src, "notes.txt"), b"version 1 " * 1000, mtime=T0)
        self.push_()
        edit_in_place(path, 0, b"version 2 ")
        st = os.stat(path)
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            c.execute("UPDATE files SET lctime = ?, lino = ?, ldev = ? WHERE path = 'notes.txt'",
                      (st.st_ctime_ns, st.st_ino, st.st_dev))
            c.execute("UPDATE runs SET ended = ? WHERE id = (SELECT lrun FROM files WHERE "
                      "path = 'notes.txt')", (st.st_ctime_ns // 10**9,))
        r = self.push_()
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], ["notes.txt"])
        self.assertEqual(read(os.path.join(self.phone, "notes.txt")), read(path))

    def test_records_from_an_older_phsync_gain_an_identity(self):
        # Rows written before schema 5 have no identity: the first run trusts their size and
        # time as then and records the identity it sees; a later edit is then seen.
        path = write_file(os.path.join(self.src, "notes.txt"), b"version 1 " * 1000, mtime=T0)
        self.push_()
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            c.execute("UPDATE files SET hread = NULL, lctime = NULL, lino = NULL, ldev = NULL, "
                      "lrun = NULL")
        r = self.push_()
        self.assertEqual([e for e in r.json() if e["event"] == "file"], [])
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("SELECT lino FROM files").fetchone(), (os.stat(path).st_ino,))
        edit_in_place(path, 0, b"version 2 ")
        r = self.push_()
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], ["notes.txt"])
        self.assertEqual(read(os.path.join(self.phone, "notes.txt")), read(path))

    def test_pull_keeps_a_local_edit_that_kept_size_and_mtime(self):
        write_file(os.path.join(self.remote, "a.txt"), b"phone v1 " * 500, mtime=T0)
        write_file(os.path.join(self.remote, "b.txt"), b"gone soon " * 500, mtime=T0)
        self.pull_()
        mine = os.path.join(self.local, "a.txt")
        edit_in_place(mine, 0, b"LAPTOP!! ")
        edit_in_place(os.path.join(self.local, "b.txt"), 0, b"LAPTOP!!! ")
        mine_bytes = read(mine)
        # The phone did not change: the laptop's version stays.
        r = self.pull_()
        self.assertIn(("skip", "a.txt"), [(e["event"], e.get("path")) for e in r.json()])
        self.assertEqual(read(mine), mine_bytes)
        # The phone changes too: a conflict copy, never an overwrite.
        write_file(os.path.join(self.remote, "a.txt"), b"phone v2 " * 600, mtime=T0 + 60)
        os.unlink(os.path.join(self.remote, "b.txt"))
        self.pull_("--delete", expect=5)
        self.assertEqual(read(mine), mine_bytes)
        (c,) = glob.glob(os.path.join(self.local, CONFLICT))
        self.assertEqual(read(c), b"phone v2 " * 600)
        # b.txt, gone from the phone, was edited here: not deleted.
        self.assertEqual(read(os.path.join(self.local, "b.txt"))[:10], b"LAPTOP!!! ")


if __name__ == "__main__":
    unittest.main()
