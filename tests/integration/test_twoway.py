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

import json
import os
import signal

import twoway_model
from harness import SyncTestCase, tree, write_file

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

    def synced(self):
        """Two files and a folder on both sides, recorded by a first sync."""
        self.put(self.remote, "a.txt", b"phone a\n", T0)
        self.put(self.local, "b.txt", b"laptop b\n", T0 + 10)
        self.put(self.remote, "dir/c.txt", b"c\n", T0 + 20)
        self.sync(expect=0)
        self.assertSame()

    def test_first_contact_union(self):
        self.put(self.remote, "p.txt", b"from the phone", T0)
        self.put(self.local, "l/q.txt", b"from the laptop", T0 + 5)
        self.put(self.remote, "same.txt", b"equal", T0 + 7)
        self.put(self.local, "same.txt", b"equal", T0 + 7)
        r = self.sync("--json", expect=0)
        self.assertSame()
        got = files(self.local)
        self.assertEqual(sorted(got), ["l/q.txt", "p.txt", "same.txt"])
        self.assertEqual(got["p.txt"], (b"from the phone", T0))
        dirs = {(e.get("dir"), e.get("path")) for e in r.json() if e["event"] == "file"}
        self.assertIn(("pull", "p.txt"), dirs)
        self.assertIn(("push", "l/q.txt"), dirs)

    def test_first_contact_same_bytes_other_times_adopted(self):
        self.put(self.remote, "x.txt", b"same bytes", T0)
        self.put(self.local, "x.txt", b"same bytes", T0 + 100)
        self.sync(expect=0)
        self.assertEqual(files(self.local), {"x.txt": (b"same bytes", T0 + 100)})
        self.assertEqual(files(self.remote), {"x.txt": (b"same bytes", T0)})
        # Adopted and recorded: a second run moves nothing.
        r = self.sync("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)

    def test_first_contact_different_bytes_conflict(self):
        self.put(self.remote, "x.txt", b"phone version", T0 + 50)
        self.put(self.local, "x.txt", b"laptop", T0)
        r = self.sync(expect=5)
        self.assertIn("conflict", r.err)
        self.assertSame()
        got = files(self.local)
        self.assertEqual(got["x.txt"], (b"phone version", T0 + 50))   # the newer wins
        copies = [k for k in got if CONFLICT in k]
        self.assertEqual(len(copies), 1, got)
        self.assertEqual(got[copies[0]][0], b"laptop")
        self.assertTrue(copies[0].endswith(".txt"))
        self.sync(expect=0)
        self.assertSame()

    def test_rows_one_side_changes(self):
        self.synced()
        self.put(self.local, "b.txt", b"laptop b, edited\n", T0 + 1000)   # L modified
        self.put(self.remote, "a.txt", b"phone a, edited\n", T0 + 1001)   # R modified
        self.put(self.local, "new-l.txt", b"new here", T0 + 1002)          # L new
        self.put(self.remote, "dir/new-r.txt", b"new there", T0 + 1003)    # R new
        self.sync(expect=0)
        self.assertSame()
        got = files(self.local)
        self.assertEqual(got["b.txt"], (b"laptop b, edited\n", T0 + 1000))
        self.assertEqual(got["a.txt"], (b"phone a, edited\n", T0 + 1001))
        self.assertEqual(got["dir/new-r.txt"], (b"new there", T0 + 1003))
        self.assertEqual(got["new-l.txt"], (b"new here", T0 + 1002))
        r = self.sync("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)

    def test_rows_deletes(self):
        self.synced()
        self.put(self.local, "keep1.txt", b"k1", T0)
        self.put(self.local, "keep2.txt", b"k2", T0)
        self.put(self.local, "keep3.txt", b"k3", T0)
        self.sync(expect=0)
        os.unlink(os.path.join(self.local, "a.txt"))          # L deleted, R unchanged
        os.unlink(os.path.join(self.remote, "b.txt"))         # R deleted, L unchanged
        self.sync(expect=0)
        self.assertSame()
        self.assertNotIn("a.txt", files(self.remote))
        self.assertNotIn("b.txt", files(self.local))

    def test_change_beats_delete(self):
        self.synced()
        os.unlink(os.path.join(self.local, "a.txt"))                  # L deleted
        self.put(self.remote, "a.txt", b"phone edit", T0 + 500)       # R modified
        os.unlink(os.path.join(self.remote, "b.txt"))                 # R deleted
        self.put(self.local, "b.txt", b"laptop edit", T0 + 600)       # L modified
        self.sync(expect=0)
        self.assertSame()
        got = files(self.local)
        self.assertEqual(got["a.txt"], (b"phone edit", T0 + 500))
        self.assertEqual(got["b.txt"], (b"laptop edit", T0 + 600))

    def test_deleted_on_both_forgotten(self):
        self.synced()
        os.unlink(os.path.join(self.local, "a.txt"))
        os.unlink(os.path.join(self.remote, "a.txt"))
        self.sync(expect=0)
        self.assertSame()
        # Forgotten: a new a.txt on one side later is new, not a delete.
        self.put(self.remote, "a.txt", b"again", T0 + 9)
        self.sync(expect=0)
        self.assertEqual(files(self.local)["a.txt"], (b"again", T0 + 9))

    def conflict(self, *opts, expect):
        self.synced()
        self.put(self.local, "a.txt", b"laptop's edit", T0 + 300)
        self.put(self.remote, "a.txt", b"phone's edit!", T0 + 400)
        r = self.sync(*opts, expect=expect)
        self.assertSame()
        return r, files(self.local)

    def test_conflict_phone_newer_both_kept(self):
        r, got = self.conflict(expect=5)
        self.assertEqual(got["a.txt"], (b"phone's edit!", T0 + 400))
        copies = [k for k in got if k.startswith("a" + CONFLICT)]
        self.assertEqual(len(copies), 1, got)
        self.assertEqual(got[copies[0]], (b"laptop's edit", T0 + 300))
        r = self.sync("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertSame()

    def test_conflict_laptop_newer_both_kept(self):
        self.synced()
        self.put(self.remote, "a.txt", b"phone's edit!", T0 + 300)
        self.put(self.local, "a.txt", b"laptop's edit", T0 + 400)
        r = self.sync("--json", expect=5)
        self.assertSame()
        got = files(self.local)
        self.assertEqual(got["a.txt"], (b"laptop's edit", T0 + 400))
        copies = [k for k in got if k.startswith("a" + CONFLICT)]
        self.assertEqual(len(copies), 1, got)
        self.assertEqual(got[copies[0]], (b"phone's edit!", T0 + 300))
        self.assertEqual(r.json()[-1]["conflicts"], 1, r)
        self.sync(expect=0)
        self.assertSame()

    def test_prefer_local(self):
        r, got = self.conflict("--prefer", "local", expect=0)
        self.assertEqual(got["a.txt"], (b"laptop's edit", T0 + 300))
        self.assertFalse([k for k in got if CONFLICT in k], got)
        self.assertIn("--prefer local", r.err)

    def test_prefer_remote(self):
        r, got = self.conflict("--prefer", "remote", expect=0)
        self.assertEqual(got["a.txt"], (b"phone's edit!", T0 + 400))
        self.assertFalse([k for k in got if CONFLICT in k], got)
        self.assertIn("--prefer remote", r.err)

    def test_prefer_newer(self):
        r, got = self.conflict("--prefer", "newer", expect=0)
        self.assertEqual(got["a.txt"], (b"phone's edit!", T0 + 400))
        self.assertFalse([k for k in got if CONFLICT in k], got)

    def test_same_edit_on_both_sides_is_no_conflict(self):
        self.synced()
        self.put(self.local, "a.txt", b"the same edit", T0 + 300)
        self.put(self.remote, "a.txt", b"the same edit", T0 + 300)
        self.sync(expect=0)
        self.assertSame()

    def test_empty_side_refuses_deletes(self):
        self.synced()
        for k in files(self.remote):
            os.unlink(os.path.join(self.remote, k))
        r = self.sync("--max-delete-percent", "100", expect=1)
        self.assertIn("listed empty", r.err)
        self.assertEqual(sorted(files(self.local)), ["a.txt", "b.txt", "dir/c.txt"])

    def test_max_delete(self):
        self.synced()
        os.unlink(os.path.join(self.local, "a.txt"))
        os.unlink(os.path.join(self.local, "b.txt"))
        r = self.sync("--max-delete", "1", "--max-delete-percent", "100", expect=1)
        self.assertIn("--max-delete", r.err)
        self.assertEqual(sorted(files(self.remote)), ["a.txt", "b.txt", "dir/c.txt"])

    def test_max_delete_percent_default_50(self):
        self.synced()
        os.unlink(os.path.join(self.local, "a.txt"))
        os.unlink(os.path.join(self.local, "b.txt"))
        r = self.sync(expect=1)   # 2 of 3 files: over 50 %
        self.assertIn("%", r.err)
        self.assertEqual(sorted(files(self.remote)), ["a.txt", "b.txt", "dir/c.txt"])
        self.sync("--max-delete-percent", "70", expect=0)
        self.assertSame()

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
        before = (snap(self.local), snap(self.remote))
        r = self.sync("-n", expect=0)
        self.assertEqual((snap(self.local), snap(self.remote)), before)
        self.assertIn("push update b.txt", r.out)
        self.assertIn("pull new new.txt", r.out)

    def test_either_order(self):
        self.put(self.local, "l.txt", b"l", T0)
        self.sync(expect=0, reverse=True)
        self.assertSame()

    def test_usage(self):
        r = self.srv.run(["sync", self.local, self.tmp])
        self.assertEqual(r.code, 2, r)
        r = self.srv.run(["sync", "--prefer", "mine", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)


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

    def test_cut_in_the_pull_pass(self):
        want = self.prepare()
        self.cut_at(self.count("file", "pull", 5))
        self.finish(want)

    def test_cut_after_the_conflict_copies(self):
        want = self.prepare()
        self.cut_at(self.count("conflict", "pull", 2))
        self.finish(want)

    def test_cut_in_the_push_pass(self):
        want = self.prepare()
        self.cut_at(self.count("file", "push", 3))
        self.finish(want)

    def test_cut_twice(self):
        want = self.prepare()
        self.cut_at(self.count("conflict", "pull", 1))
        self.cut_at(self.count("file", "push", 1))
        self.finish(want)


class ModelTest(TwoWayCase):
    """A seeded model (tests/lib/twoway_model.py) against phsync over a few rounds;
    bench/twoway_model.py runs it long."""

    def test_model_rounds(self):
        m = twoway_model.Model(int(os.environ.get("PHSYNC_TWOWAY_SEED", "26")), self.local, self.remote)
        m.first_contact()
        for rnd in range(8):
            if rnd > 0:
                m.round()
            expected, conflicts = m.expect()
            r = self.sync("--max-delete-percent", "100", "--json")
            self.assertEqual(r.code, 5 if conflicts else 0, (rnd, conflicts, r))
            wrong = m.check(expected, conflicts)
            self.assertEqual(wrong, [], "round %d: %r" % (rnd, r))
