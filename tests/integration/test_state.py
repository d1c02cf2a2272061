# SPDX-License-Identifier: ISC
"""The sync state from the command line (issue 7, first part): each pair gets a state that
records what was put in place and how the run ended, `phsync status` lists the pairs, a second
run on a pair that is in progress is refused with a clear message, and a damaged state file is
a clear error whose way out (--reset-state) works."""

import fcntl
import glob
import os
import sqlite3
import subprocess
import unittest

from harness import SyncTestCase, sample_tree, write_file

T0 = 1700000000


class StateTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def dbs(self):
        return sorted(glob.glob(os.path.join(self.state, "*.db")))

    def test_runs_are_recorded_and_listed(self):
        sample_tree(self.remote)
        r = self.pull("--state-dir", self.state, "--json", expect=0)
        done = r.json()[-1]["files_done"]
        self.assertEqual(len(self.dbs()), 1)
        with sqlite3.connect(self.dbs()[0]) as db:
            files = dict(db.execute("SELECT path, lsize FROM files"))
        for path, size in files.items():
            self.assertEqual(os.path.getsize(os.path.join(self.local, path)), size)
        self.assertEqual(len(files), done)
        r = self.srv.run(["status", "--json", "--state-dir", self.state])
        self.assertEqual(r.code, 0, r)
        pairs = r.json()
        self.assertEqual(len(pairs), 1)
        p = pairs[0]
        self.assertTrue(p["remote"].endswith(":" + self.remote), p)
        self.assertEqual(p["local"], os.path.realpath(self.local))
        self.assertEqual((p["last_result"], p["last_exit"], p["files_done"], p["files_known"],
                          p["running"]), ("success", 0, done, done, False))
        r = self.srv.run(["status", "--state-dir", self.state])
        self.assertEqual(r.code, 0, r)
        self.assertIn("ok, %d copied, 0 failed" % done, r.out)
        # A dry run takes no lock and writes nothing.
        write_file(os.path.join(self.remote, "new.jpg"), b"n", mtime=T0)
        self.pull("--state-dir", self.state, "-n", expect=0)
        with sqlite3.connect(self.dbs()[0]) as db:
            self.assertEqual(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0], 1)

    def test_status_of_one_pair_says_what_a_sync_would_do(self):
        sample_tree(self.remote)
        r = self.pull("--state-dir", self.state, "--json", expect=0)
        total = r.json()[-1]["files_total"]
        write_file(os.path.join(self.remote, "new.jpg"), b"x" * 1000, mtime=T0)
        args = ["status", "-F", self.srv.config, "--state-dir", self.state,
                "phone:" + self.remote + "/", self.local]
        r = self.srv.run(args + ["--json"])
        self.assertEqual(r.code, 0, r)
        status, pair = r.json()
        self.assertEqual((status["event"], status["files_to_copy"], status["bytes_to_copy"],
                          status["conflicts"], status["files_total"]),
                         ("status", 1, 1000, 0, total + 1))
        self.assertEqual((pair["event"], pair["last_result"], pair["local"]),
                         ("pair", "success", os.path.realpath(self.local)))
        self.assertFalse(os.path.exists(os.path.join(self.local, "new.jpg")))
        r = self.srv.run(args)
        self.assertEqual(r.code, 0, r)
        self.assertIn("now: 1 of %d files to copy" % (total + 1), r.out)
        self.assertIn("last run", r.out)
        # The other order is a push: of the same pair (one state per pair, both ways),
        # with nothing to send; another local folder never synced.
        r = self.srv.run(["status", "-F", self.srv.config, "--state-dir", self.state,
                          self.local, "phone:" + self.remote])
        self.assertEqual(r.code, 0, r)
        self.assertIn("now: 0 of %d files to copy" % total, r.out)
        self.assertIn("last run", r.out)
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        r = self.srv.run(["status", "-F", self.srv.config, "--state-dir", self.state,
                          "phone:" + self.remote, other])
        self.assertEqual(r.code, 0, r)
        self.assertIn("now: %d of %d files to copy" % (total + 1, total + 1), r.out)
        self.assertIn("never synced", r.out)

    def test_second_run_on_a_pair_is_refused(self):
        sample_tree(self.remote)
        self.pull("--state-dir", self.state, expect=0)
        lock = self.dbs()[0][:-3] + ".lock"
        with open(lock, "r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            f.truncate()
            f.write("4242\n")
            f.flush()
            r = self.pull("--state-dir", self.state, expect=1)
            self.assertIn("another phsync run on this pair is in progress (pid 4242)", r.err)
            r = self.srv.run(["status", "--json", "--state-dir", self.state])
            self.assertTrue(r.json()[0]["running"])
        self.pull("--state-dir", self.state, expect=0)

    def test_damaged_state_is_a_clear_error_with_a_way_out(self):
        sample_tree(self.remote)
        self.pull("--state-dir", self.state, expect=0)
        db = self.dbs()[0]
        for side in ("-wal", "-shm"):
            if os.path.exists(db + side):
                os.unlink(db + side)
        with open(db, "wb") as f:
            f.write(b"garbage " * 1000)
        before = open(os.path.join(self.local, "top.txt"), "rb").read()
        r = self.pull("--state-dir", self.state, expect=1)
        self.assertIn("damaged", r.err)
        self.assertIn("--reset-state", r.err)
        self.assertEqual(open(os.path.join(self.local, "top.txt"), "rb").read(), before)
        self.pull("--state-dir", self.state, "--reset-state", expect=0)
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("PRAGMA integrity_check").fetchone()[0], "ok")

    def xxh128(self, path):
        # xxhsum (Debian's xxhash package) prints the canonical XXH3-128 the state stores.
        out = subprocess.run(["xxhsum", "-H2", path], check=True, capture_output=True).stdout
        return out.split()[0].decode()

    def test_content_hash_is_recorded_as_it_streams(self):
        sample_tree(self.remote)
        self.pull("--state-dir", self.state, expect=0)
        with sqlite3.connect(self.dbs()[0]) as db:
            rows = list(db.execute("SELECT path, hex(hash) FROM files"))
        self.assertTrue(rows)
        for path, h in rows:
            self.assertEqual(h.lower(), self.xxh128(os.path.join(self.local, path)), path)
        src = os.path.join(self.tmp, "src")
        write_file(os.path.join(src, "big.bin"), os.urandom(3 << 20), mtime=T0)
        write_file(os.path.join(src, "empty"), b"", mtime=T0)
        self.push("--state-dir", self.state, src=src, expect=0)
        seen = []
        for d in self.dbs():  # the pull's pair and the push's
            with sqlite3.connect(d) as c:
                for path, h in c.execute("SELECT path, hex(hash) FROM files"):
                    if path in ("big.bin", "empty"):
                        self.assertEqual(h.lower(), self.xxh128(os.path.join(src, path)), path)
                        seen.append(path)
        self.assertEqual(sorted(seen), ["big.bin", "empty"])

    def test_push_records_the_block_signature_of_what_it_wrote(self):
        src = os.path.join(self.tmp, "src")
        files = {"video.mp4": os.urandom(5 << 20), "tiny.txt": b"hi", "empty": b""}
        for name, data in files.items():
            write_file(os.path.join(src, name), data, mtime=T0)
        self.push("--state-dir", self.state, src=src, expect=0)
        with sqlite3.connect(self.dbs()[0]) as db:
            sigs = dict(db.execute("SELECT path, sig FROM files"))
        self.assertEqual(sorted(sigs), sorted(files))
        for name in files:
            sig = sigs[name]
            self.assertEqual(sig[:4], b"PHSS", name)
            block = int.from_bytes(sig[8:12], "big")
            if name == "video.mp4":  # at most 1024 blocks a file
                self.assertLessEqual(-(-len(files[name]) // block), 1024)
            out = os.path.join(self.tmp, name + ".sig")
            r = self.srv.run(["delta", "signature", "-b", str(block), os.path.join(src, name), out])
            self.assertEqual(r.code, 0, r)
            with open(out, "rb") as f:
                self.assertEqual(sig, f.read(), name)

    def test_push_records_too(self):
        src = os.path.join(self.tmp, "src")
        write_file(os.path.join(src, "a.jpg"), b"aaa", mtime=T0)
        self.push("--state-dir", self.state, src=src, expect=0)
        with sqlite3.connect(self.dbs()[0]) as db:
            rows = list(db.execute("SELECT path, lsize, lmtime, rsize, rmtime FROM files"))
        self.assertEqual(rows, [("a.jpg", 3, T0, 3, T0)])


class RecordsMergeTest(SyncTestCase):
    """A pull reads its records in two halves: each row's local side (its file here, its
    identity checked) while the phone is listed, the phone's side once the listing is in.
    Every kind of record, interleaved in one folder's order, must come out as one ordered
    pass over both trees would have it."""

    KINDS = ["same", "phone_changed", "deleted_here", "edited_here", "gone_from_phone",
             "phone_time_recorded_apart", "same"]

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def name(self, d, i):
        return "%s/f%03d.txt" % (d, i)

    def test_every_kind_of_record_in_one_pull(self):
        from test_trust_content import edit_in_place
        names = {}
        for d in ("A", "B/deep", "C"):
            for i in range(3 * len(self.KINDS)):
                n = self.name(d, i)
                names[n] = self.KINDS[i % len(self.KINDS)]
                write_file(os.path.join(self.remote, n), ("%s phone v1\n" % n).encode() * 40,
                           mtime=T0 + i)
        self.pull("--state-dir", self.state, expect=0)
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        before = {}
        for n, kind in names.items():
            here, there = os.path.join(self.local, n), os.path.join(self.remote, n)
            if kind == "phone_changed":
                write_file(there, b"phone v2 " * 99, mtime=T0 + 5000)
            elif kind == "deleted_here":
                os.unlink(here)
            elif kind == "edited_here":
                edit_in_place(here, 0, b"LAPTOP")
            elif kind == "gone_from_phone":
                os.unlink(there)
            elif kind == "phone_time_recorded_apart":
                # The phone's time as recorded differs from the copy's (a phone that
                # kept its own time): the row is kept whole, not folded into the entry.
                with sqlite3.connect(db) as c:
                    c.execute("UPDATE files SET rmtime = rmtime - 7 WHERE path = ?", (n,))
            if os.path.exists(here):
                st = os.stat(here)
                before[n] = (st.st_ino, st.st_mtime_ns, read_bytes(here))
        # New on the phone between recorded names; here only, never recorded.
        write_file(os.path.join(self.remote, "B/deep/f000a.txt"), b"new", mtime=T0)
        write_file(os.path.join(self.local, "A/f001a.txt"), b"mine", mtime=T0)
        r = self.pull("--state-dir", self.state, "--json", expect=0)
        ev = r.json()
        copied = sorted(e["path"] for e in ev if e["event"] == "file")
        skipped = sorted(e["path"] for e in ev if e["event"] == "skip")
        want = sorted([n for n, k in names.items() if k in ("phone_changed", "deleted_here")] +
                      ["B/deep/f000a.txt"])
        self.assertEqual(copied, want)
        self.assertEqual(skipped, sorted(n for n, k in names.items() if k == "edited_here"))
        for n, kind in names.items():
            here, there = os.path.join(self.local, n), os.path.join(self.remote, n)
            if kind in ("phone_changed", "deleted_here"):
                self.assertEqual(read_bytes(here), read_bytes(there), n)
                continue
            st = os.stat(here)
            # Untouched: the same file, time and bytes as before the run.
            self.assertEqual((st.st_ino, st.st_mtime_ns, read_bytes(here)), before[n], n)
        self.assertEqual(read_bytes(os.path.join(self.local, "A/f001a.txt")), b"mine")
        # And a run after it finds nothing to copy.
        r = self.pull("--state-dir", self.state, "--json", expect=0)
        self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], [])


class PairsTakenOutTest(SyncTestCase):
    """A pull with a state takes the files exactly as recorded on both sides out of both trees
    while the phone is listed and the laptop walked (sync/pairs.c), batch by batch, the walk
    held a few folders ahead: a run over thousands of files must come out as a whole-tree
    merge would, whatever is interleaved between them: changes on either side, new and gone
    files, names that are not plain ASCII (never taken out: name matching must see them),
    names that differ in case alone, and the counts that include what was taken out (the
    summary's files, --max-delete-percent's share)."""

    FOLDERS = 24
    PER = 400   # 9,600 files: more than the taker's batch of 4,096

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def build(self):
        names = []
        for d in range(self.FOLDERS):
            sub = "D%02d" % d if d % 3 else "D%02d/deep/er" % d
            for i in range(self.PER):
                names.append("%s/IMG_%04d.jpg" % (sub, i))
        for k, n in enumerate(names):
            write_file(os.path.join(self.remote, n), b"%d" % k, mtime=T0 + k % 1000)
        # Names no pair may take out: NFD and NFC of one name, and names that differ in
        # case alone, between plain ones in the same folder.
        odd = ["D01/Cafe\u0301.jpg", "D01/Caf\u00e9 2.jpg", "D02/img_0005.JPG",
               "D02/IMG_0005.jpg.x", "D05/\u65e5\u672c.jpg"]
        for k, n in enumerate(odd):
            write_file(os.path.join(self.remote, n), b"odd %d" % k, mtime=T0 + k)
        return names, odd

    def test_a_pull_over_thousands_of_recorded_files_is_exact(self):
        from test_trust_content import edit_in_place
        names, odd = self.build()
        self.pull("--state-dir", self.state, expect=0)
        self.assertTreesEqual(self.remote, self.local)
        changed = names[7::97]        # on the phone: new bytes and time
        gone = names[11::101]         # deleted on the phone
        edited = names[13::89]        # edited here in place: size and time as recorded
        edited = [n for n in edited if n not in changed and n not in gone]
        gone = [n for n in gone if n not in changed]
        for n in changed:
            write_file(os.path.join(self.remote, n), b"phone v2 " + n.encode(), mtime=T0 + 5000)
        for n in gone:
            os.unlink(os.path.join(self.remote, n))
        for n in edited:
            edit_in_place(os.path.join(self.local, n), 0, b"L")
        new = ["D03/IMG_0100a.jpg", "D23/zz.jpg", "D00/deep/er/IMG_0000.jpg.new"]
        for n in new:
            write_file(os.path.join(self.remote, n), b"new " + n.encode(), mtime=T0)
        before = {}
        for n in names + odd:
            here = os.path.join(self.local, n)
            if os.path.exists(here) and n not in changed:
                st = os.stat(here)
                before[n] = (st.st_ino, st.st_mtime_ns, read_bytes(here))
        r = self.pull("--state-dir", self.state, "--delete", "--json", expect=0)
        ev = r.json()
        self.assertEqual(sorted(e["path"] for e in ev if e["event"] == "file"),
                         sorted(changed + new))
        self.assertEqual(sorted(e["path"] for e in ev if e["event"] == "delete"), sorted(gone))
        self.assertEqual(sorted(e["path"] for e in ev if e["event"] == "skip"), sorted(edited))
        (summary,) = [e for e in ev if e["event"] == "summary"]
        phone_files = len(names) + len(odd) - len(gone) + len(new)
        self.assertEqual(summary["files_total"], phone_files)
        for n in names + odd:
            here = os.path.join(self.local, n)
            if n in gone:
                self.assertFalse(os.path.lexists(here), n)
            elif n in changed:
                self.assertEqual(read_bytes(here), read_bytes(os.path.join(self.remote, n)), n)
            else:
                st = os.stat(here)
                self.assertEqual((st.st_ino, st.st_mtime_ns, read_bytes(here)), before[n], n)
        for n in new:
            self.assertEqual(read_bytes(os.path.join(self.local, n)),
                             read_bytes(os.path.join(self.remote, n)))
        # The run after it: nothing to copy, the edited files still kept, every file counted.
        r = self.pull("--state-dir", self.state, "--json", expect=0)
        ev = r.json()
        self.assertEqual([e["path"] for e in ev if e["event"] == "file"], [])
        self.assertEqual(sorted(e["path"] for e in ev if e["event"] == "skip"), sorted(edited))
        (summary,) = [e for e in ev if e["event"] == "summary"]
        self.assertEqual(summary["files_total"], phone_files)

    def test_a_folder_of_recorded_files_alone_is_not_a_phone_that_listed_empty(self):
        """Files at the top alone, every one as recorded but one gone from the phone: once
        the pairs are taken out the phone's tree holds nothing, and the run must still
        delete only that one (--delete), not refuse as for a phone that listed nothing;
        a phone that does list nothing is still refused."""
        names = ["IMG_%05d.jpg" % i for i in range(6000)]
        for k, n in enumerate(names):
            write_file(os.path.join(self.remote, n), b"%d" % k, mtime=T0 + k % 500)
        self.pull("--state-dir", self.state, expect=0)
        os.unlink(os.path.join(self.remote, names[4321]))
        r = self.pull("--state-dir", self.state, "--delete", "--json", expect=0)
        ev = r.json()
        self.assertEqual([e["path"] for e in ev if e["event"] == "delete"], [names[4321]])
        (summary,) = [e for e in ev if e["event"] == "summary"]
        self.assertEqual(summary["files_total"], len(names) - 1)
        self.assertTreesEqual(self.remote, self.local)
        for n in names:
            if n != names[4321]:
                os.unlink(os.path.join(self.remote, n))
        r = self.pull("--state-dir", self.state, "--delete")
        self.assertNotEqual(r.code, 0, r)
        self.assertIn("listed empty", r.err)
        self.assertEqual(len(os.listdir(self.local)), len(names) - 1)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


if __name__ == "__main__":
    unittest.main()
