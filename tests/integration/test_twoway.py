# SPDX-License-Identifier: ISC
"""phsync sync (two-way, issue 26, docs/TWOWAY.md) against a real OpenSSH sshd on 127.0.0.1.

Proves, with bytes and mtimes on both sides and exit codes: each row of TWOWAY.md's table (a
change on one side goes to the other, a delete goes across, a change beats a delete, deleted on
both is forgotten); a conflict keeps both versions on both sides (the newer at the name, the
other as NAME.phsync-conflict-*), exit 5, and --prefer local|remote|newer decide instead with no
copy; first contact makes the union (equal bytes adopted, different bytes a conflict, nothing
deleted); the delete guards (an empty side refuses deletes, --max-delete,
--max-delete-percent); a move on either side travels as a move; -n changes nothing and says
which way each file would go, --json events carry "dir"; either argument order; a seeded
model of two replicas and their last sync agrees with phsync over random rounds of edits,
creates, deletes, moves and conflicting edits on both sides (bench/twoway_model.py runs it
long).
"""

import glob
import json
import os
import signal
import sqlite3

import twoway_model
from harness import EXIT_CONNECT, EXIT_ERROR, SyncTestCase, random_bytes, tree, write_file

T0 = 1700000000
CONFLICT = ".phsync-conflict-"


def files(root):
    """{relative path: (bytes, mtime seconds)} of the regular files under root."""
    out = {}
    for k, e in tree(root).items():
        if e.type == "f":
            with open(os.path.join(root, k), "rb") as f:
                out[k] = (f.read(), int(e.mtime))
    return out


def snap(root):
    """Everything a run could change under root, comparable."""
    return {k: (e.type, e.size, e.mtime_ns, e.mode, e.ino, e.ctime_ns, e.digest)
            for k, e in tree(root).items()}


class TwoWayCase(SyncTestCase):

    def setUp(self):
        super().setUp()
        os.makedirs(self.local)

    def sync(self, *opts, expect=None, reverse=False):
        srv = self.srv
        sides = ["phone:" + self.remote, self.local]
        if reverse:
            sides.reverse()
        r = srv.run(["sync", "-F", srv.config] + srv._helper_opts(opts) + list(opts) + sides)
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        if r.code == 0:
            self.assertNoLeftovers()
        return r

    def put(self, side, rel, data, mtime):
        write_file(os.path.join(side, rel), data, mtime=mtime)

    def assertSame(self):
        """Both sides hold the same files, bytes and mtimes."""
        self.assertEqual(files(self.local), files(self.remote))


class TwoWayTest(TwoWayCase):

    def synced(self, n=0):
        """Files on both sides, recorded by a first sync (n more files on the laptop)."""
        self.put(self.remote, "a.txt", b"phone a\n", T0)
        self.put(self.local, "b.txt", b"laptop b\n", T0 + 10)
        self.put(self.remote, "dir/c.txt", b"c\n", T0 + 20)
        for i in range(n):
            self.put(self.local, "pad/%02d.txt" % i, b"pad %d" % i, T0 + 30 + i)
        self.sync(expect=0)
        self.assertSame()

    def test_first_contact(self):
        # The union; equal bytes adopted (also with other times: compared, then both sides
        # get the older time); other bytes a conflict, the newer at the name; nothing deleted.
        self.put(self.remote, "p.txt", b"from the phone", T0)
        self.put(self.local, "l/q.txt", b"from the laptop", T0 + 5)
        self.put(self.remote, "same.txt", b"equal", T0 + 7)
        self.put(self.local, "same.txt", b"equal", T0 + 7)
        self.put(self.remote, "t.txt", b"same bytes", T0)
        self.put(self.local, "t.txt", b"same bytes", T0 + 100)
        self.put(self.remote, "x.txt", b"phone version", T0 + 50)
        self.put(self.local, "x.txt", b"laptop", T0)
        r = self.sync("--json", expect=5)
        self.assertEqual(files(self.local)["t.txt"], (b"same bytes", T0))
        got = files(self.local)
        self.assertEqual(got["p.txt"], (b"from the phone", T0))
        self.assertEqual(got["l/q.txt"], (b"from the laptop", T0 + 5))
        self.assertEqual(got["x.txt"], (b"phone version", T0 + 50))
        copies = [k for k in got if CONFLICT in k]
        self.assertEqual(len(copies), 1, got)
        self.assertTrue(copies[0].startswith("x" + CONFLICT) and copies[0].endswith(".txt"))
        self.assertEqual(got[copies[0]], (b"laptop", T0))
        self.assertSame()
        ways = {(e.get("dir"), e.get("path")) for e in r.json() if e["event"] == "file"}
        self.assertIn(("pull", "p.txt"), ways)
        self.assertIn(("push", "l/q.txt"), ways)
        self.assertEqual(r.json()[-1]["conflicts"], 1, r)

    def test_adopted_bytes_get_the_older_time(self):
        # The same new name with the same bytes on both sides, first contact or created on
        # both since: adopted, both sides given the older of the two times (the original's;
        # a copy made later carries a later time), set on the side whose time is later.
        self.put(self.remote, "phone-older.txt", b"one", T0)
        self.put(self.local, "phone-older.txt", b"one", T0 + 100)
        self.put(self.remote, "laptop-older.txt", b"two", T0 + 200)
        self.put(self.local, "laptop-older.txt", b"two", T0 + 5)
        self.sync(expect=0)
        want = {"phone-older.txt": (b"one", T0), "laptop-older.txt": (b"two", T0 + 5)}
        self.assertEqual(files(self.local), want)
        self.assertEqual(files(self.remote), want)
        # Created on both sides since the last sync, alike.
        self.put(self.local, "both/new.txt", b"made twice", T0 + 300)
        self.put(self.remote, "both/new.txt", b"made twice", T0 + 250)
        self.sync(expect=0)
        self.assertEqual(files(self.local)["both/new.txt"], (b"made twice", T0 + 250))
        self.assertSame()
        # Recorded so: the next run moves nothing and changes nothing on either side.
        before = (snap(self.local), snap(self.remote))
        r = self.sync("--json", expect=0)
        self.assertEqual((r.json()[-1]["files_done"], r.json()[-1]["bytes_done"]), (0, 0), r)
        self.assertEqual((snap(self.local), snap(self.remote)), before)

    def test_table_rows(self):
        # Every row of docs/TWOWAY.md's table at once, each on its own file.
        self.put(self.local, "lmod.txt", b"base", T0)
        self.put(self.local, "rmod.txt", b"base", T0)
        self.put(self.local, "ldel.txt", b"base", T0)
        self.put(self.local, "rdel.txt", b"base", T0)
        self.put(self.local, "ldel-rmod.txt", b"base", T0)
        self.put(self.local, "lmod-rdel.txt", b"base", T0)
        self.put(self.local, "bothdel.txt", b"base", T0)
        self.put(self.local, "sameedit.txt", b"base", T0)
        self.synced(n=12)
        L, R = self.local, self.remote
        self.put(L, "lmod.txt", b"laptop edit", T0 + 1000)
        self.put(R, "rmod.txt", b"phone edit", T0 + 1001)
        self.put(L, "lnew/new.txt", b"new here", T0 + 1002)
        self.put(R, "dir/rnew.txt", b"new there", T0 + 1003)
        os.unlink(os.path.join(L, "ldel.txt"))
        os.unlink(os.path.join(R, "rdel.txt"))
        os.unlink(os.path.join(L, "ldel-rmod.txt"))
        self.put(R, "ldel-rmod.txt", b"phone's change beats a delete", T0 + 1004)
        os.unlink(os.path.join(R, "lmod-rdel.txt"))
        self.put(L, "lmod-rdel.txt", b"laptop's change beats a delete", T0 + 1005)
        os.unlink(os.path.join(L, "bothdel.txt"))
        os.unlink(os.path.join(R, "bothdel.txt"))
        self.put(L, "sameedit.txt", b"the same edit", T0 + 1006)
        self.put(R, "sameedit.txt", b"the same edit", T0 + 1006)
        self.sync(expect=0)
        self.assertSame()
        got = files(L)
        self.assertEqual(got["lmod.txt"], (b"laptop edit", T0 + 1000))
        self.assertEqual(got["rmod.txt"], (b"phone edit", T0 + 1001))
        self.assertEqual(got["lnew/new.txt"], (b"new here", T0 + 1002))
        self.assertEqual(got["dir/rnew.txt"], (b"new there", T0 + 1003))
        self.assertEqual(got["ldel-rmod.txt"], (b"phone's change beats a delete", T0 + 1004))
        self.assertEqual(got["lmod-rdel.txt"], (b"laptop's change beats a delete", T0 + 1005))
        self.assertEqual(got["sameedit.txt"], (b"the same edit", T0 + 1006))
        for gone in ("ldel.txt", "rdel.txt", "bothdel.txt"):
            self.assertNotIn(gone, got)
        self.assertFalse([k for k in got if CONFLICT in k], got)
        # Nothing left to do; the record of bothdel.txt is forgotten: new again, not deleted.
        self.put(R, "bothdel.txt", b"again", T0 + 9)
        r = self.sync("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 1, r)
        self.assertEqual(files(L)["bothdel.txt"], (b"again", T0 + 9))

    def test_conflicts_keep_both_on_both_sides(self):
        self.synced()
        self.put(self.local, "a.txt", b"laptop's older edit", T0 + 300)   # the phone's newer
        self.put(self.remote, "a.txt", b"phone's newer edit", T0 + 400)
        self.put(self.remote, "b.txt", b"phone's older edit", T0 + 300)   # the laptop's newer
        self.put(self.local, "b.txt", b"laptop's newer edit", T0 + 400)
        r = self.sync("--json", expect=5)
        self.assertEqual(r.json()[-1]["conflicts"], 2, r)
        self.assertEqual({e["path"] for e in r.json() if e["event"] == "conflict"}, {"a.txt", "b.txt"})
        self.assertSame()
        got = files(self.local)
        self.assertEqual(got["a.txt"], (b"phone's newer edit", T0 + 400))
        self.assertEqual(got["b.txt"], (b"laptop's newer edit", T0 + 400))
        for name, loser in (("a", b"laptop's older edit"), ("b", b"phone's older edit")):
            copies = [k for k in got if k.startswith(name + CONFLICT) and k.endswith(".txt")]
            self.assertEqual(len(copies), 1, got)
            self.assertEqual(got[copies[0]], (loser, T0 + 300))
        r = self.sync("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)

    def test_prefer(self):
        self.synced()
        t = T0 + 1000
        for prefer, winner in (("local", b"laptop"), ("remote", b"phone"), ("newer", b"phone")):
            t += 100
            self.put(self.local, "a.txt", b"laptop " + prefer.encode(), t)
            self.put(self.remote, "a.txt", b"phone " + prefer.encode(), t + 10)
            r = self.sync("--prefer", prefer, expect=0)
            self.assertIn("--prefer %s" % prefer, r.err)
            self.assertSame()
            got = files(self.local)
            self.assertEqual(got["a.txt"][0], winner + b" " + prefer.encode(), prefer)
            self.assertFalse([k for k in got if CONFLICT in k], got)

    def test_empty_side_refuses_deletes(self):
        self.synced()
        for k in files(self.remote):
            os.unlink(os.path.join(self.remote, k))   # dir/ stays: no file, still "empty"
        r = self.sync("--max-delete-percent", "100", expect=1)
        self.assertIn("listed empty", r.err)
        self.assertEqual(sorted(files(self.local)), ["a.txt", "b.txt", "dir/c.txt"])

    def test_max_delete_and_percent(self):
        self.synced()
        os.unlink(os.path.join(self.local, "a.txt"))
        os.unlink(os.path.join(self.local, "b.txt"))
        self.put(self.local, "dir/new.txt", b"goes on", T0 + 5)
        r = self.sync(expect=1)   # 2 of the phone's 3 files: over the default 50 %
        self.assertIn("50%", r.err)
        # None deleted, the rest of the run went on.
        self.assertEqual(sorted(files(self.remote)), ["a.txt", "b.txt", "dir/c.txt", "dir/new.txt"])
        r = self.sync("--max-delete", "1", "--max-delete-percent", "100", expect=1)
        self.assertIn("--max-delete", r.err)
        self.assertEqual(len(files(self.remote)), 4)
        self.sync("--max-delete-percent", "70", expect=0)
        self.assertSame()
        self.assertEqual(sorted(files(self.remote)), ["dir/c.txt", "dir/new.txt"])

    def test_trash_on_either_side(self):
        self.synced(n=4)
        os.unlink(os.path.join(self.local, "a.txt"))
        os.unlink(os.path.join(self.remote, "b.txt"))
        self.sync("--trash", ".trash", expect=0)
        self.assertEqual(files(os.path.join(self.remote, ".trash")), {"a.txt": (b"phone a\n", T0)})
        self.assertEqual(files(os.path.join(self.local, ".trash")), {"b.txt": (b"laptop b\n", T0 + 10)})
        # Each side's trash is its own: not synced, not new on the other side.
        r = self.sync("--trash", ".trash", "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertNotIn(".trash/b.txt", files(self.remote))

    def test_moves_travel_as_moves(self):
        self.put(self.remote, "big/photo.jpg", os.urandom(200_000), T0)
        self.put(self.local, "doc/report.pdf", os.urandom(150_000), T0 + 1)
        for i in range(4):
            self.put(self.local, "pad%d.txt" % i, b"pad", T0)
        self.sync(expect=0)
        os.makedirs(os.path.join(self.remote, "album"))
        os.rename(os.path.join(self.remote, "big/photo.jpg"), os.path.join(self.remote, "album/photo.jpg"))
        os.rename(os.path.join(self.local, "doc/report.pdf"), os.path.join(self.local, "report.pdf"))
        r = self.sync("--json", expect=0)
        self.assertSame()
        done = {(e.get("dir"), e["action"], e["path"]) for e in r.json() if e["event"] == "file"}
        self.assertIn(("pull", "moved", "album/photo.jpg"), done, r)
        self.assertIn(("push", "moved", "report.pdf"), done, r)
        self.assertEqual(r.json()[-1]["bytes_done"], 0, r)

    def test_dry_run_changes_nothing_and_says_the_way(self):
        self.synced()
        self.put(self.local, "b.txt", b"laptop edit", T0 + 70)
        self.put(self.remote, "new.txt", b"phone new", T0 + 80)
        self.put(self.local, "a.txt", b"both", T0 + 90)
        self.put(self.remote, "a.txt", b"both!", T0 + 95)
        before = (snap(self.local), snap(self.remote))
        r = self.sync("-n", expect=5)
        self.assertEqual((snap(self.local), snap(self.remote)), before)
        self.assertIn("push update b.txt", r.out)
        self.assertIn("pull new new.txt", r.out)
        self.assertIn("conflict: a.txt", r.err)

    def test_status_of_a_two_way_pair(self):
        self.synced()
        self.put(self.local, "b.txt", b"laptop edit", T0 + 70)
        self.put(self.remote, "new.txt", b"phone new", T0 + 80)
        os.unlink(os.path.join(self.remote, "dir/c.txt"))
        before = (snap(self.local), snap(self.remote))
        r = self.srv.run(["status", "-F", self.srv.config, "--json", "sync", self.local,
                          "phone:" + self.remote] + self.srv._helper_opts(()))
        self.assertEqual(r.code, 0, r)
        st = [e for e in r.json() if e["event"] == "status"][0]
        self.assertEqual((st["files_to_copy"], st["files_to_delete"], st["conflicts"]), (2, 1, 0), r)
        self.assertEqual((snap(self.local), snap(self.remote)), before)

    def test_either_order(self):
        self.put(self.local, "l.txt", b"l", T0)
        self.put(self.remote, "r.txt", b"r", T0)
        self.sync(expect=0, reverse=True)
        self.assertSame()
        self.assertEqual(sorted(files(self.local)), ["l.txt", "r.txt"])

    def test_usage(self):
        for args in (["sync", self.local, self.tmp], ["sync", "--prefer", "mine", "phone:x", self.local],
                     ["sync", "--max-delete-percent", "0", "phone:x", self.local],
                     ["sync", "--watch", "--json", "phone:x", self.local]):
            r = self.srv.run(args)
            self.assertEqual(r.code, 2, r)
        r = self.srv.run(["sync", "-F", self.srv.config, "--overwrite", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)
        self.assertIn("--prefer", r.err)


class FailedListingTest(TwoWayCase):
    """A phone folder that cannot be listed (tests/lib/sftp_relay.py refuses it) is unknown,
    not deleted: nothing is deleted here, nothing is written into it there."""
    server_kwargs = {"relay": True}

    def test_failed_phone_listing_refuses_deletes_here(self):
        self.put(self.remote, "Locked/inside.jpg", b"inside", T0)
        self.put(self.remote, "a.txt", b"phone a\n", T0)
        for i in range(4):
            self.put(self.local, "pad/%d.txt" % i, b"pad", T0)
        self.put(self.local, "b.txt", b"laptop b\n", T0)
        self.sync("--helper", "never", expect=0)
        os.unlink(os.path.join(self.remote, "a.txt"))         # would go here too
        self.put(self.local, "b.txt", b"laptop edit", T0 + 50)
        self.put(self.local, "Locked/new.jpg", b"not into a folder not listed", T0 + 51)
        self.srv.relay_set(fail_opendir=["Locked"])   # the phone refuses to list Locked/
        r = self.sync("--helper", "never", expect=1)
        self.srv.relay_set()
        self.assertIn("listing error", r.err)
        got = files(self.local)
        # Nothing deleted here: not Locked/ (unlisted, not deleted), not even a.txt.
        self.assertEqual(got["Locked/inside.jpg"], (b"inside", T0))
        self.assertIn("a.txt", got)
        # The rest went on, but nothing into the folder the phone could not list.
        self.assertEqual(files(self.remote)["b.txt"], (b"laptop edit", T0 + 50))
        self.assertNotIn("Locked/new.jpg", files(self.remote))
        # Listed again: the delete and the new file go.
        self.sync("--helper", "never", expect=0)
        self.assertSame()
        self.assertNotIn("a.txt", files(self.local))


class CutTest(TwoWayCase):
    """kill -9 at several points of a two-way run (each on a JSON event appearing, never on
    time), then a clean run: both sides equal, every version still there."""

    def prepare(self):
        for i in range(4):
            self.put(self.local, "anchor%d.txt" % i, b"anchor", T0)
        self.put(self.local, "c1.txt", b"base 1", T0)
        self.put(self.local, "c2.txt", b"base 2", T0)
        self.sync(expect=0)
        want = set()
        for i in range(40):
            data = b"phone new %d" % i
            self.put(self.remote, "r/%02d.txt" % i, data, T0 + i)
            want.add(data)
            data = b"laptop new %d" % i
            self.put(self.local, "l/%02d.txt" % i, data, T0 + i)
            want.add(data)
        # A conflict each way: the phone's newer, the laptop's newer.
        for side, rel, data, t in ((self.local, "c1.txt", b"laptop's c1", T0 + 100),
                                   (self.remote, "c1.txt", b"phone's c1", T0 + 200),
                                   (self.local, "c2.txt", b"laptop's c2", T0 + 300),
                                   (self.remote, "c2.txt", b"phone's c2", T0 + 200)):
            self.put(side, rel, data, t)
            want.add(data)
        return want

    def cut_at(self, pred):
        srv = self.srv
        p = srv.popen(["sync", "-F", srv.config, "--json"] + srv._helper_opts(()) +
                      ["phone:" + self.remote, self.local])
        killed = False
        try:
            for line in p.stdout:
                ev = json.loads(line)
                if pred(ev):
                    p.send_signal(signal.SIGKILL)
                    killed = True
                    break
            p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertTrue(killed, "the run ended before the point to cut it at")
        return p.returncode

    def finish(self, want):
        r = self.sync()
        self.assertIn(r.code, (0, 5), r)
        self.sync(expect=0)
        self.assertSame()
        have = {data for data, _ in files(self.local).values()}
        self.assertEqual(want - have, set(), "versions lost")

    def count(self, kind, dir_, n):
        seen = [0]

        def pred(ev):
            if ev.get("event") == kind and ev.get("dir") == dir_:
                seen[0] += 1
            return seen[0] >= n
        return pred

    def test_cut_in_the_pull_pass_then_in_the_push_pass(self):
        want = self.prepare()
        self.cut_at(self.count("file", "pull", 5))
        self.cut_at(self.count("file", "push", 3))
        self.finish(want)

    def test_cut_after_the_conflict_copies(self):
        want = self.prepare()
        self.cut_at(self.count("conflict", "pull", 2))
        self.finish(want)


class ResumeTest(TwoWayCase):
    """A big upload or download cut by a dying link (tests/lib/sftp_relay.py) in a two-way run
    keeps its temp, on the phone or here, and its kept prefix in the state; the next run goes
    on from it as push and pull do, sending only the rest."""
    server_kwargs = {"relay": True}
    SIZE = 40 << 20

    def run_counted(self, *opts):
        """A sync through the counting relay: (result, bytes WRITE carried to the phone)."""
        self.srv.relay_set(count=True)
        r = self.sync("--state-dir", self.state, "--json", *opts)
        written = sum(int(l.split()[2]) for l in self.srv.relay_fired()
                      if l.split()[:2] == ["count", "WRITE"])
        return r, written

    def partials(self):
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            return list(c.execute("SELECT path, tmp, have FROM partial"))

    def record(self, path):
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            return c.execute("SELECT lsize, lmtime, rsize, rmtime FROM files WHERE path = ?",
                             (path,)).fetchone()

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def cut(self, dst, kind, **fault):
        """A sync of VID.mp4 cut by the relay's fault: the link lost, no VID.mp4 at dst but our
        temp of that kind ("t" a push's, "p" a pull's) and its one partial row. (temp, have)."""
        self.srv.relay_set(**fault)
        r = self.sync("--state-dir", self.state)
        self.assertTrue(any(f.split()[0] in fault for f in self.srv.relay_fired()))
        self.assertIn(r.code, (EXIT_ERROR, EXIT_CONNECT), r)
        self.srv.relay_set()
        self.assertFalse(os.path.exists(os.path.join(dst, "VID.mp4")))
        (tmp,) = [n for n in os.listdir(dst) if n.startswith(".VID.mp4.phsync-%s." % kind)]
        ((path, name, have),) = self.partials()
        self.assertEqual((path, name), ("VID.mp4", tmp))
        self.assertGreaterEqual(have, 1 << 20)
        return tmp, have

    def test_cut_upload_resumes(self):
        data = random_bytes(self.SIZE, 26)
        self.put(self.local, "VID.mp4", data, T0)
        self.put(self.remote, "phone.txt", b"from the phone", T0)
        tmp, have = self.cut(self.remote, "t", die_after_write={"name": "VID.mp4",
                                                                 "bytes": 12 << 20})
        with open(os.path.join(self.remote, tmp), "rb") as f:
            self.assertEqual(f.read()[:have], data[:have], "the kept prefix is not the file's")

        # The next run checks the kept prefix and sends only the rest.
        r, written = self.run_counted()
        self.assertEqual(r.code, 0, r)
        self.assertEqual([(e.get("dir"), e["action"], e["path"]) for e in r.json()
                          if e["event"] == "file"], [("push", "resume", "VID.mp4")])
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE - have, r)
        self.assertLessEqual(written, self.SIZE - have + (1 << 20), "more than the rest was sent")
        self.assertEqual(files(self.remote)["VID.mp4"], (data, T0))
        self.assertEqual(files(self.local)["phone.txt"], (b"from the phone", T0))
        self.assertSame()
        self.assertEqual(self.partials(), [])
        self.assertEqual(self.record("VID.mp4"), (self.SIZE, T0, self.SIZE, T0))
        # Settled: nothing moves.
        r, written = self.run_counted()
        self.assertEqual((r.code, r.json()[-1]["bytes_done"], written), (0, 0, 0), r)

    def test_changed_laptop_file_starts_over(self):
        # The laptop's file changed after the cut: its kept temp goes, the file goes whole.
        self.put(self.local, "VID.mp4", random_bytes(self.SIZE, 27), T0)
        self.cut(self.remote, "t", die_after_write={"name": "VID.mp4", "bytes": 12 << 20})
        data = random_bytes(self.SIZE, 28)
        self.put(self.local, "VID.mp4", data, T0 + 60)
        r, written = self.run_counted()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE, r)
        self.assertEqual(files(self.remote), {"VID.mp4": (data, T0 + 60)})
        self.assertEqual(self.partials(), [])

    def test_cut_download_resumes(self):
        data = random_bytes(self.SIZE, 29)
        self.put(self.remote, "VID.mp4", data, T0)
        self.put(self.local, "laptop.txt", b"from the laptop", T0)
        _, have = self.cut(self.local, "p", die_mid_data={"name": "VID.mp4", "at": 20 << 20})

        # The next run reads only the rest from the phone; the laptop's file goes across.
        r = self.sync("--state-dir", self.state, "--json", expect=0)
        self.assertEqual(sorted((e.get("dir"), e["action"], e["path"]) for e in r.json()
                                if e["event"] == "file"),
                         [("pull", "resume", "VID.mp4"), ("push", "new", "laptop.txt")])
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE - have + len(b"from the laptop"))
        self.assertEqual(files(self.local)["VID.mp4"], (data, T0))
        self.assertSame()
        self.assertEqual(self.partials(), [])
        self.assertEqual(self.record("VID.mp4"), (self.SIZE, T0, self.SIZE, T0))


class AdoptRefusedTest(TwoWayCase):
    """Adopted equal bytes on a phone that will not set times (tests/lib/sftp_relay.py's
    deny_setstat): the phone keeps its own time, which is recorded; nothing moves after."""
    server_kwargs = {"relay": True}

    def test_phone_refusing_times_keeps_its_own(self):
        self.put(self.remote, "same.txt", b"equal bytes", T0 + 100)
        self.put(self.local, "same.txt", b"equal bytes", T0)
        self.srv.relay_set(deny_setstat=["same.txt"])
        self.sync("--helper", "never", expect=0)
        self.assertTrue(any(f.split()[0] == "deny_setstat" for f in self.srv.relay_fired()))
        self.assertEqual(files(self.remote), {"same.txt": (b"equal bytes", T0 + 100)})
        self.assertEqual(files(self.local), {"same.txt": (b"equal bytes", T0)})
        before = (snap(self.local), snap(self.remote))
        r = self.sync("--helper", "never", "--json", expect=0)
        self.assertEqual((r.json()[-1]["files_done"], r.json()[-1]["bytes_done"]), (0, 0), r)
        self.assertEqual((snap(self.local), snap(self.remote)), before)


class ModelTest(TwoWayCase):
    """A seeded model (tests/lib/twoway_model.py) against phsync over a few rounds;
    bench/twoway_model.py runs it long."""

    def test_model_rounds(self):
        m = twoway_model.Model(int(os.environ.get("PHSYNC_TWOWAY_SEED", "26")), self.local, self.remote)
        m.first_contact()
        for rnd in range(5):
            if rnd > 0:
                m.round()
            expected, conflicts = m.expect()
            r = self.sync("--max-delete-percent", "100", "--json")
            self.assertEqual(r.code, 5 if conflicts else 0, (rnd, conflicts, r))
            wrong = m.check(expected, conflicts)
            self.assertEqual(wrong, [], "round %d: %r" % (rnd, r))
