# SPDX-License-Identifier: ISC
"""The state's safety rules (issue 7), against the real sshd: a destination file changed since
the last sync is never overwritten (conflict copies, exit 5, first contact included, --overwrite
to let the source win), and --delete mirrors deletions at the source, only for files this pair
synced and unchanged since, refused as a whole when the source lists empty or more would go
than --max-delete; --trash moves instead. Each test fails on the code before these rules."""

import glob
import os
import sqlite3
import unittest

from harness import SyncTestCase, write_file

T0 = 1700000000
CONFLICT = "*.phsync-conflict-*"


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ConflictTest(SyncTestCase):

    def conflicts(self, root, pattern=CONFLICT):
        return sorted(glob.glob(os.path.join(root, "**", pattern), recursive=True))

    def test_first_contact_keeps_a_differing_file(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"phone's photo", mtime=T0)
        write_file(os.path.join(self.local, "a.jpg"), b"laptop's own!", mtime=T0 + 50)
        r = self.pull("--json", expect=5)
        ev = [e for e in r.json() if e["event"] == "conflict"]
        self.assertEqual([e["path"] for e in ev], ["a.jpg"], r)
        self.assertEqual(r.json()[-1]["conflicts"], 1)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"laptop's own!")
        self.assertEqual(os.stat(os.path.join(self.local, "a.jpg")).st_mtime, T0 + 50)
        (c,) = self.conflicts(self.local)
        self.assertRegex(os.path.basename(c), r"^a\.phsync-conflict-\d{8}-\d{6}\.jpg$")
        self.assertEqual(read(c), b"phone's photo")
        self.assertEqual(os.stat(c).st_mtime, T0)
        # Settled: the next run keeps the laptop's file and makes no second copy.
        r = self.pull(expect=0)
        self.assertEqual(len(self.conflicts(self.local)), 1)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"laptop's own!")
        # The phone's version changes again: a conflict again, never an overwrite.
        write_file(os.path.join(self.remote, "a.jpg"), b"phone, edited", mtime=T0 + 100)
        self.pull(expect=5)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"laptop's own!")

    def test_first_contact_with_the_same_content_is_adopted(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"same bytes", mtime=T0)
        write_file(os.path.join(self.local, "a.jpg"), b"same bytes", mtime=T0 + 3600)
        r = self.pull("--json", expect=0)
        self.assertIn("same", [e.get("action") for e in r.json() if e["event"] == "file"])
        self.assertEqual(self.conflicts(self.local), [])
        self.assertEqual(os.stat(os.path.join(self.local, "a.jpg")).st_mtime, T0)

    def test_in_sync_at_first_contact_is_recorded(self):
        # A folder an earlier tool (rsync) synced: the same size and time on both sides, no
        # record yet. Recorded on first contact, so the phone's later edit replaces the
        # laptop's copy instead of looking like a change on both sides.
        write_file(os.path.join(self.remote, "a.jpg"), b"same bytes", mtime=T0)
        write_file(os.path.join(self.local, "a.jpg"), b"same bytes", mtime=T0)
        r = self.pull("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0)
        write_file(os.path.join(self.remote, "a.jpg"), b"phone's edit", mtime=T0 + 60)
        r = self.pull("--json", expect=0)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"phone's edit")
        self.assertEqual(self.conflicts(self.local), [])

    def test_overwrite_lets_the_source_win(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"phone", mtime=T0)
        write_file(os.path.join(self.local, "a.jpg"), b"laptop", mtime=T0 + 1)
        self.pull("--overwrite", expect=0)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"phone")
        self.assertEqual(self.conflicts(self.local), [])

    def test_edited_here_is_kept_edited_there_replaces(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"v1", mtime=T0)
        write_file(os.path.join(self.remote, "b.jpg"), b"v1", mtime=T0)
        self.pull(expect=0)
        # The laptop edits a.jpg; the phone edits b.jpg.
        write_file(os.path.join(self.local, "a.jpg"), b"laptop v2", mtime=T0 + 10)
        write_file(os.path.join(self.remote, "b.jpg"), b"phone v2", mtime=T0 + 10)
        r = self.pull("--json", expect=0)
        skips = {e["path"]: e["reason"] for e in r.json() if e["event"] == "skip"}
        self.assertEqual(skips, {"a.jpg": "kept"})
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"laptop v2")
        self.assertEqual(read(os.path.join(self.local, "b.jpg")), b"phone v2")
        # Both sides edit b.jpg: the laptop's stays, the phone's lands beside it.
        write_file(os.path.join(self.local, "b.jpg"), b"laptop v3", mtime=T0 + 20)
        write_file(os.path.join(self.remote, "b.jpg"), b"phone v3!", mtime=T0 + 30)
        self.pull(expect=5)
        self.assertEqual(read(os.path.join(self.local, "b.jpg")), b"laptop v3")
        (c,) = self.conflicts(self.local, "b.phsync-conflict-*")
        self.assertEqual(read(c), b"phone v3!")
        self.assertEqual(self.conflicts(self.local, "a.phsync-conflict-*"), [])

    def test_push_conflicts_and_first_contact(self):
        write_file(os.path.join(self.local, "same.mp3"), b"identical", mtime=T0)
        write_file(os.path.join(self.local, "differs.mp3"), b"laptop's", mtime=T0)
        write_file(os.path.join(self.remote, "same.mp3"), b"identical", mtime=T0 + 77)
        write_file(os.path.join(self.remote, "differs.mp3"), b"phone's!", mtime=T0 + 77)
        r = self.push("--json", expect=5)
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "conflict"],
                         ["differs.mp3"])
        self.assertEqual(read(os.path.join(self.remote, "same.mp3")), b"identical")
        self.assertEqual(os.stat(os.path.join(self.remote, "same.mp3")).st_mtime, T0)
        self.assertEqual(read(os.path.join(self.remote, "differs.mp3")), b"phone's!")
        (c,) = self.conflicts(self.remote)
        self.assertEqual(read(c), b"laptop's")
        # Later: the phone edits same.mp3 and the laptop too; the phone's stays.
        write_file(os.path.join(self.remote, "same.mp3"), b"phone edit", mtime=T0 + 200)
        write_file(os.path.join(self.local, "same.mp3"), b"laptop edit", mtime=T0 + 300)
        self.push(expect=5)
        self.assertEqual(read(os.path.join(self.remote, "same.mp3")), b"phone edit")
        (c,) = self.conflicts(self.remote, "same.phsync-conflict-*")
        self.assertEqual(read(c), b"laptop edit")


class DeleteTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        for name in ("a.jpg", "b.jpg", "c.jpg", "d.jpg"):
            write_file(os.path.join(self.remote, "DCIM", name), name.encode() * 10, mtime=T0)
        write_file(os.path.join(self.remote, "keep.txt"), b"keep", mtime=T0)

    def test_delete_mirrors_only_what_was_synced_and_unchanged(self):
        self.pull(expect=0)
        write_file(os.path.join(self.local, "DCIM", "mine.jpg"), b"never synced", mtime=T0)
        os.unlink(os.path.join(self.remote, "DCIM", "a.jpg"))
        os.unlink(os.path.join(self.remote, "DCIM", "b.jpg"))
        # Without --delete nothing goes.
        self.pull(expect=0)
        self.assertTrue(os.path.exists(os.path.join(self.local, "DCIM", "a.jpg")))
        # b.jpg was edited on the laptop since: kept.
        write_file(os.path.join(self.local, "DCIM", "b.jpg"), b"edited here", mtime=T0 + 5)
        r = self.pull("--delete", "--json", expect=0)
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "delete"], ["DCIM/a.jpg"])
        self.assertEqual(r.json()[-1]["files_deleted"], 1)
        self.assertFalse(os.path.exists(os.path.join(self.local, "DCIM", "a.jpg")))
        self.assertEqual(read(os.path.join(self.local, "DCIM", "b.jpg")), b"edited here")
        self.assertEqual(read(os.path.join(self.local, "DCIM", "mine.jpg")), b"never synced")
        self.assertTrue(os.path.exists(os.path.join(self.local, "DCIM", "c.jpg")))

    def test_empty_source_refuses_every_delete(self):
        self.pull(expect=0)
        for name in os.listdir(os.path.join(self.remote, "DCIM")):
            os.unlink(os.path.join(self.remote, "DCIM", name))
        os.rmdir(os.path.join(self.remote, "DCIM"))
        os.unlink(os.path.join(self.remote, "keep.txt"))
        r = self.pull("--delete", expect=1)
        self.assertIn("listed empty", r.err)
        self.assertEqual(len(os.listdir(os.path.join(self.local, "DCIM"))), 4)

    def test_max_delete_refuses_the_whole_run(self):
        self.pull(expect=0)
        for name in ("a.jpg", "b.jpg", "c.jpg"):
            os.unlink(os.path.join(self.remote, "DCIM", name))
        r = self.pull("--delete", "--max-delete", "2", expect=1)
        self.assertIn("--max-delete", r.err)
        self.assertEqual(len(os.listdir(os.path.join(self.local, "DCIM"))), 4)
        self.pull("--delete", "--max-delete", "3", expect=0)
        self.assertEqual(os.listdir(os.path.join(self.local, "DCIM")), ["d.jpg"])

    def test_trash_moves_instead(self):
        self.pull(expect=0)
        os.unlink(os.path.join(self.remote, "DCIM", "a.jpg"))
        self.pull("--delete", "--trash", ".trash", expect=0)
        self.assertFalse(os.path.exists(os.path.join(self.local, "DCIM", "a.jpg")))
        self.assertEqual(read(os.path.join(self.local, ".trash", "DCIM", "a.jpg")), b"a.jpg" * 10)

    def test_push_delete_and_state_forgets(self):
        src = os.path.join(self.tmp, "src")
        state = os.path.join(self.tmp, "state")
        write_file(os.path.join(src, "x.mp3"), b"x", mtime=T0)
        write_file(os.path.join(src, "y.mp3"), b"y", mtime=T0)
        dst = os.path.join(self.tmp, "phone2")
        os.makedirs(dst)
        self.push("--state-dir", state, src=src, dst=dst, expect=0)
        os.unlink(os.path.join(src, "x.mp3"))
        self.push("--state-dir", state, "--delete", src=src, dst=dst, expect=0)
        self.assertEqual(os.listdir(dst), ["y.mp3"])
        (db,) = glob.glob(os.path.join(state, "*.db"))
        with sqlite3.connect(db) as c:
            self.assertEqual([p for (p,) in c.execute("SELECT path FROM files")], ["y.mp3"])


if __name__ == "__main__":
    unittest.main()


class OffloadTest(SyncTestCase):
    """pull --remove-source-files frees the phone only of what is verified here."""

    def setUp(self):
        super().setUp()
        self.files = {"DCIM/a.jpg": b"a" * 5000, "DCIM/b.jpg": b"b" * 7000, "c.mp4": b"c" * 9000}
        for rel, data in self.files.items():
            write_file(os.path.join(self.remote, rel), data, mtime=T0)

    def remote_files(self):
        return sorted(os.path.relpath(os.path.join(d, n), self.remote)
                      for d, _, ns in os.walk(self.remote) for n in ns)

    def test_dry_run_shows_what_would_be_freed(self):
        r = self.pull("-n", "--remove-source-files", "--json", expect=0)
        ev = sorted(e["path"] for e in r.json() if e["event"] == "delete" and e["action"] == "offload")
        self.assertEqual(ev, sorted(self.files))
        self.assertEqual(r.json()[-1]["bytes_freed"], 21000)
        self.assertEqual(self.remote_files(), sorted(self.files))

    def test_offload_copies_then_frees(self):
        r = self.pull("--remove-source-files", "--json", expect=0)
        s = r.json()[-1]
        self.assertEqual((s["files_offloaded"], s["bytes_freed"]), (3, 21000))
        self.assertEqual(self.remote_files(), [])
        for rel, data in self.files.items():
            self.assertEqual(read(os.path.join(self.local, rel)), data)
        # Nothing left to offload, and the copies here stay (the records are forgotten:
        # a later --delete never takes them).
        self.pull("--delete", expect=0)
        for rel, data in self.files.items():
            self.assertEqual(read(os.path.join(self.local, rel)), data)

    def test_earlier_synced_files_are_verified_before_they_go(self):
        state = os.path.join(self.tmp, "state")
        self.pull("--state-dir", state, expect=0)
        # The laptop's copy of b.jpg is damaged behind phsync's back (same size and time).
        bad = os.path.join(self.local, "DCIM", "b.jpg")
        write_file(bad, b"X" * 7000, mtime=T0)
        # ... and its identity too, as bit rot would leave it (an edit moves the ctime, and
        # is then a local change: kept, see test_trust_content.py), recorded long before.
        st = os.stat(bad)
        (db,) = glob.glob(os.path.join(state, "*.db"))
        with sqlite3.connect(db) as c:
            c.execute("UPDATE files SET lctime = ?, lino = ?, ldev = ? WHERE path = 'DCIM/b.jpg'",
                      (st.st_ctime_ns, st.st_ino, st.st_dev))
            c.execute("UPDATE runs SET ended = ? WHERE id = (SELECT lrun FROM files WHERE "
                      "path = 'DCIM/b.jpg')", (st.st_ctime_ns // 10**9 + 60,))
        r = self.pull("--state-dir", state, "--remove-source-files", "--json", expect=5)
        failed = [e["path"] for e in r.json() if e["event"] == "file" and e["status"] == "failed"]
        self.assertEqual(failed, ["DCIM/b.jpg"])
        self.assertEqual(self.remote_files(), ["DCIM/b.jpg"])
        self.assertEqual(read(os.path.join(self.remote, "DCIM", "b.jpg")), b"b" * 7000)

    def test_push_refuses(self):
        r = self.push("--remove-source-files", expect=2)
        self.assertIn("--remove-source-files", r.err)


class PhoneTimeTest(SyncTestCase):
    """Phone storage quirks that must not cause a transfer loop."""

    def shift_all(self, root, secs):
        for d, _, names in os.walk(root):
            for n in names:
                p = os.path.join(d, n)
                st = os.stat(p)
                os.utime(p, (st.st_atime + secs, st.st_mtime + secs))

    def test_phone_time_zone_change_resends_nothing(self):
        for i in range(6):
            write_file(os.path.join(self.remote, "DCIM", "IMG_%d.jpg" % i), b"%d" % i * 999,
                       mtime=T0 + i)
        self.pull(expect=0)
        self.shift_all(self.remote, 3600)
        r = self.pull("--json", expect=0)
        self.assertEqual([e for e in r.json() if e["event"] == "file"], [])
        warn = [e["message"] for e in r.json() if e["event"] == "warning"]
        self.assertTrue(any("+1 h" in m for m in warn), r)
        self.assertEqual(os.stat(os.path.join(self.local, "DCIM", "IMG_0.jpg")).st_mtime, T0)
        # Said once: the records hold the new times now.
        r = self.pull("--json", expect=0)
        self.assertEqual([e for e in r.json() if e["event"] in ("file", "warning")], [])
        # A real edit after the shift is still seen.
        write_file(os.path.join(self.remote, "DCIM", "IMG_1.jpg"), b"edited", mtime=T0 + 9999)
        r = self.pull("--json", expect=0)
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], ["DCIM/IMG_1.jpg"])

    def test_push_to_a_fat_phone_is_compared_within_two_seconds(self):
        # The phone's card keeps even times: first contact with files already there (same
        # bytes, time rounded down to even) needs no read and no write at all.
        for i in range(16):
            data = b"%d" % i * 300
            write_file(os.path.join(self.local, "m%02d.mp3" % i), data, mtime=T0 + 2 * i + 1)
            write_file(os.path.join(self.remote, "m%02d.mp3" % i), data, mtime=T0 + 2 * i)
        r = self.push("--json", expect=0)
        self.assertEqual([e for e in r.json() if e["event"] in ("file", "conflict")], [])
        # One odd time on the server: not FAT; the first contact compares content.
        os.utime(os.path.join(self.remote, "m00.mp3"), (T0 + 7, T0 + 7))
        os.utime(os.path.join(self.local, "m05.mp3"), (T0 + 99, T0 + 99))
        r = self.push("--json", "--state-dir", os.path.join(self.tmp, "other-state"), expect=0)
        actions = {e["action"] for e in r.json() if e["event"] == "file"}
        self.assertEqual(actions, {"same"})

    def test_push_to_a_phone_whose_times_shifted(self):
        for i in range(5):
            write_file(os.path.join(self.local, "Music", "t%d.mp3" % i), b"%d" % i * 500,
                       mtime=T0 + i)
        self.push(expect=0)
        self.shift_all(self.remote, -7200)
        r = self.push("--json", expect=0)
        self.assertEqual([e for e in r.json() if e["event"] in ("file", "conflict")], [])
        self.assertTrue(any("-2 h" in e["message"] for e in r.json() if e["event"] == "warning"))


class MoveTest(SyncTestCase):
    """A photo moved to another album (or renamed) is moved at the destination, not sent
    again; confirmed by content, never by size and time alone."""

    def setUp(self):
        super().setUp()
        self.a = os.urandom(300_000)
        self.b = os.urandom(1000)
        write_file(os.path.join(self.remote, "DCIM", "a.jpg"), self.a, mtime=T0)
        write_file(os.path.join(self.remote, "DCIM", "b.jpg"), self.b, mtime=T0 + 1)

    def test_pull_moves_with_delete_and_copies_without(self):
        self.pull(expect=0)
        os.makedirs(os.path.join(self.remote, "Album"))
        os.rename(os.path.join(self.remote, "DCIM", "a.jpg"), os.path.join(self.remote, "Album", "a.jpg"))
        os.rename(os.path.join(self.remote, "DCIM", "b.jpg"), os.path.join(self.remote, "DCIM", "renamed.jpg"))
        r = self.pull("-n", "--delete", "--json", expect=0)
        self.assertEqual(sorted((e["action"], e["path"], e.get("from")) for e in r.json()
                                if e["event"] == "file"),
                         [("move", "Album/a.jpg", "DCIM/a.jpg"), ("move", "DCIM/renamed.jpg", "DCIM/b.jpg")])
        r = self.pull("--delete", "--json", expect=0)
        files = sorted((e["action"], e["path"]) for e in r.json() if e["event"] == "file")
        self.assertEqual(files, [("moved", "Album/a.jpg"), ("moved", "DCIM/renamed.jpg")])
        self.assertEqual(r.json()[-1]["bytes_done"], 0, "a moved file was transferred")
        self.assertEqual(read(os.path.join(self.local, "Album", "a.jpg")), self.a)
        self.assertEqual(os.stat(os.path.join(self.local, "Album", "a.jpg")).st_mtime, T0)
        self.assertEqual(read(os.path.join(self.local, "DCIM", "renamed.jpg")), self.b)
        self.assertEqual(sorted(os.listdir(os.path.join(self.local, "DCIM"))), ["renamed.jpg"])
        self.pull("--delete", "--json", expect=0)  # settled
        # Without --delete the old copy stays: the new one is a local copy.
        os.rename(os.path.join(self.remote, "Album", "a.jpg"), os.path.join(self.remote, "Album", "c.jpg"))
        r = self.pull("--json", expect=0)
        self.assertEqual([(e["action"], e["path"]) for e in r.json() if e["event"] == "file"],
                         [("copied", "Album/c.jpg")])
        self.assertEqual(r.json()[-1]["bytes_done"], 0)
        self.assertEqual(read(os.path.join(self.local, "Album", "c.jpg")), self.a)
        self.assertEqual(read(os.path.join(self.local, "Album", "a.jpg")), self.a)

    def test_same_size_and_time_but_other_content_is_transferred(self):
        self.pull(expect=0)
        os.unlink(os.path.join(self.remote, "DCIM", "a.jpg"))
        other = bytearray(self.a)
        other[-1] ^= 0xff  # differs only in its last byte
        write_file(os.path.join(self.remote, "DCIM", "new.jpg"), bytes(other), mtime=T0)
        r = self.pull("--delete", "--json", expect=0)
        self.assertIn(("new", "DCIM/new.jpg"),
                      [(e["action"], e["path"]) for e in r.json() if e["event"] == "file"])
        self.assertEqual(read(os.path.join(self.local, "DCIM", "new.jpg")), bytes(other))
        self.assertFalse(os.path.exists(os.path.join(self.local, "DCIM", "a.jpg")))

    def test_push_moves_on_the_phone(self):
        src = os.path.join(self.tmp, "src")
        write_file(os.path.join(src, "Music", "song.mp3"), self.a, mtime=T0)
        dst = os.path.join(self.tmp, "phone2")
        os.makedirs(dst)
        self.push(src=src, dst=dst, expect=0)
        os.makedirs(os.path.join(src, "Music", "Album"))
        os.rename(os.path.join(src, "Music", "song.mp3"), os.path.join(src, "Music", "Album", "song.mp3"))
        r = self.push("--delete", "--json", src=src, dst=dst, expect=0)
        self.assertEqual([(e["action"], e["path"]) for e in r.json() if e["event"] == "file"],
                         [("moved", "Music/Album/song.mp3")])
        self.assertEqual(r.json()[-1]["bytes_done"], 0)
        self.assertEqual(read(os.path.join(dst, "Music", "Album", "song.mp3")), self.a)
        self.assertFalse(os.path.exists(os.path.join(dst, "Music", "song.mp3")))
