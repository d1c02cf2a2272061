# SPDX-License-Identifier: ISC
"""Two-way sync (issue 26) with phones that behave as phones do, and the bytes a run moves.

Each quirk is emulated by tests/lib/sftp_relay.py in front of OpenSSH's sftp-server (or, for
Unicode forms, by names on disk) and checked the same way: a first `phsync sync`, then two runs
that must move nothing (exit 0, no file, delete or conflict event, no bytes, every file on both
sides with the same bytes, mtime, inode and ctime as before; `phsync status sync` says nothing
is to be done), then edits on each side that must travel exactly once, each in its own
direction, with the right bytes and the time the quirk allows, and a run after them that moves
nothing again.

RefusedTimesTest   a phone that refuses to set times (deny_setstat): the phone's copy keeps its
                   own mtime, the record holds it, nothing moves again; moves, deletes and a
                   conflict won by each side too.
SteppedCardTest    a FAT/exFAT card (mtime_step 2): odd times read and stored one second down,
                   with few files (no modify window) and with many (a 2 s window); moves,
                   deletes and conflicts too.
ShiftedClockTest   the phone's times all move by whole hours between runs (shift_mtime): the
                   pull's rule (a shift of at least 4 known files, 90 % of them, is taken off)
                   holds both ways: nothing moves, said once, a laptop edit made meanwhile goes
                   to the phone without a conflict, deletes go across and moves travel as moves;
                   below the rule's threshold each shifted file reads as changed on the phone,
                   and a laptop edit of one of them is a conflict that keeps both versions,
                   never overwritten (docs/TWOWAY.md).
CombinedQuirksTest a shift of -1 h on a phone that refuses times, and on a FAT card.
NocasePhoneTest    a case-insensitive phone (nocase): two laptop names that differ by case are
                   two files on the phone (one numbered) and one each on the laptop, every run;
                   a name in another case on the phone is the laptop's file; a rename that only
                   changes case on either side moves no bytes, loses nothing, and later edits
                   reach the one file; the same new name made on both sides in two cases; a
                   folder spelt in another case; a known limit (deleting one of two case names).
UnicodeFormTest    NFC names on the phone, NFD on the laptop (as a Mac writes them): one file,
                   not two; an edit on either side goes to the other's file of that name.
EditsMoveOnceTest  N = 5 edits of 4 KiB in 256 KiB files on each side, through the remote
                   helper and a counting TCP proxy: each direction carries about the edits'
                   bytes (deltas), well under a whole file each, nothing is sent back, and a
                   second run costs what a quiet run costs; over plain SFTP the laptop's edits
                   go as copy-data deltas and the phone's come whole, each once.

No test waits on time: every run is a blocking call; checks are on bytes, times, exit codes, the
--json events, the relay's log and the proxy's counts.
"""

import os
import unicodedata

from harness import CuttingProxy, RelayFired, SyncTestCase, phsync_bin, random_bytes, tree, write_file

T0 = 1700000000  # even
HOUR = 3600
CONFLICT = ".phsync-conflict-"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def mtime(path):
    return os.stat(path).st_mtime_ns // 10**9


def files(root):
    """{relative path: (bytes, mtime seconds)} of the regular files under root."""
    return {k: (read(os.path.join(root, k)), int(e.mtime))
            for k, e in tree(root).items() if e.type == "f"}


def snap(root):
    """Everything a run could change under root, comparable: a rewrite, a time set, a rename."""
    return {k: (e.type, e.size, e.mtime_ns, e.mode, e.ino, e.ctime_ns, e.digest)
            for k, e in tree(root).items()}


class TwoWayQuirkCase(RelayFired, SyncTestCase):
    server_kwargs = {"relay": True}

    def setUp(self):
        super().setUp()
        os.makedirs(self.local)
        self.modes = {}

    # -- running -----------------------------------------------------------------------------

    def sync(self, *opts, expect=0, config=None):
        """One `phsync sync --json phone:REMOTE LOCAL`, the relay set to self.modes first (its
        log then holds what this run made it do)."""
        srv = self.srv
        if srv.relay:
            srv.relay_set(**self.modes)
        r = srv.run(["sync", "-F", config or srv.config, "--json"] + srv._helper_opts(opts)
                    + list(opts) + ["phone:" + self.remote, self.local])
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        if r.code == 0:
            self.assertNoLeftovers()
        return r

    def summary(self, r):
        (s,) = [e for e in r.json() if e["event"] == "summary"]
        return s

    def moved(self, r):
        """(direction, path) of every file this run moved, sorted."""
        return sorted((e.get("dir"), e["path"]) for e in r.json() if e["event"] == "file")

    def warnings(self, r):
        return [e["message"] for e in r.json() if e["event"] == "warning"]

    # -- checks ------------------------------------------------------------------------------

    def assertQuiet(self, r):
        """The run moved, deleted and decided nothing, and wrote no byte."""
        self.assertEqual(r.code, 0, r)
        ev = r.json()
        self.assertEqual(self.moved(r), [], r)
        self.assertEqual([e for e in ev if e["event"] in ("delete", "conflict")], [], r)
        s = self.summary(r)
        self.assertEqual((s["files_done"], s["bytes_done"], s["files_deleted"], s["conflicts"]),
                         (0, 0, 0, 0), r)

    def settled(self, runs=2):
        """runs more syncs, each moving nothing and changing nothing on either side; and
        `phsync status sync` says there is nothing to do."""
        before = (snap(self.local), snap(self.remote))
        out = []
        for _ in range(runs):
            r = self.sync()
            self.assertQuiet(r)
            self.assertEqual((snap(self.local), snap(self.remote)), before,
                             "a run that moved nothing changed a file")
            out.append(r)
        srv = self.srv
        if srv.relay:
            srv.relay_set(**self.modes)
        r = srv.run(["status", "-F", srv.config, "--json", "sync", "phone:" + self.remote,
                     self.local] + srv._helper_opts(()))
        self.assertEqual(r.code, 0, r)
        st = [e for e in r.json() if e["event"] == "status"][0]
        self.assertEqual((st["files_to_copy"], st["files_to_delete"], st["conflicts"]), (0, 0, 0), r)
        self.assertEqual((snap(self.local), snap(self.remote)), before)
        return out

    def edit(self, root, rel, seed, t):
        """rel under root rewritten in place with other bytes of the same size, mtime t."""
        p = os.path.join(root, rel)
        data = random_bytes(os.path.getsize(p), seed)
        write_file(p, data, mtime=t)
        return data

    def make(self, root, names, seed, t0, step=60, odd=False):
        """Files of a few sizes: {rel: (bytes, mtime)}."""
        out = {}
        for i, rel in enumerate(names):
            data = random_bytes(700 + 113 * i, seed * 100 + i)
            t = t0 + step * i + (1 if odd else 0)
            write_file(os.path.join(root, rel), data, mtime=t)
            out[rel] = (data, t)
        return out


    def churn(self, lap, ph, fired):
        """After a settled first sync of lap (laptop files) and ph (phone files), each side
        moves one file, deletes one and both edit two (the laptop's newer in one, the phone's in
        the other): the moves travel as moves, the deletes go across, each conflict keeps both
        versions on both sides (exit 5);
        both sides then hold the same names and bytes, and the next runs move nothing."""
        L, R = self.local, self.remote
        lk, pk = sorted(lap), sorted(ph)
        os.makedirs(os.path.join(L, "moved"))
        os.rename(os.path.join(L, lk[0]), os.path.join(L, "moved", "l.bin"))
        os.makedirs(os.path.join(R, "moved"))
        os.rename(os.path.join(R, pk[0]), os.path.join(R, "moved", "p.bin"))
        os.unlink(os.path.join(L, pk[1]))
        os.unlink(os.path.join(R, lk[1]))
        mine = self.edit(L, lk[2], 41, T0 + 90001)     # the laptop's newer
        theirs = self.edit(R, lk[2], 42, T0 + 80001)
        older = self.edit(L, pk[2], 43, T0 + 80003)    # the phone's newer
        newer = self.edit(R, pk[2], 44, T0 + 90003)
        r = self.sync(expect=5)
        self.assertFired(*fired)
        done = sorted((e.get("dir"), e["action"], e["path"]) for e in r.json()
                      if e["event"] == "file" and e["action"] == "moved")
        self.assertEqual(done, [("pull", "moved", "moved/p.bin"), ("push", "moved", "moved/l.bin")], r)
        gone = sorted((e.get("dir"), e["path"]) for e in r.json() if e["event"] == "delete")
        self.assertEqual(gone, [("pull", lk[1]), ("push", pk[1])], r)
        self.assertEqual(self.summary(r)["conflicts"], 2, r)
        got_l, got_r = files(L), files(R)
        self.assertEqual(sorted(got_l), sorted(got_r))
        self.assertEqual({k: d for k, (d, _t) in got_l.items()}, {k: d for k, (d, _t) in got_r.items()})
        self.assertEqual(got_l[lk[2]][0], mine)
        self.assertEqual(got_l[pk[2]][0], newer)
        copies = sorted(k for k in got_l if CONFLICT in k)
        self.assertEqual(len(copies), 2, sorted(got_l))
        self.assertEqual(sorted(got_l[k][0] for k in copies), sorted([theirs, older]))
        self.assertEqual(got_l["moved/l.bin"][0], lap[lk[0]][0])
        self.assertEqual(got_l["moved/p.bin"][0], ph[pk[0]][0])
        self.settled()


class RefusedTimesTest(TwoWayQuirkCase):
    """deny_setstat on every name: the phone keeps the time it wrote a file at."""

    def test_phone_keeps_its_own_times(self):
        self.modes = {"deny_setstat": ["*"]}
        lap = self.make(self.local, ["Music/l%d.mp3" % i for i in range(4)], 1, T0)
        ph = self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(4)], 2, T0 + 1000)
        r = self.sync()
        self.assertFired("deny_setstat")
        self.assertEqual(self.moved(r), sorted([("push", k) for k in lap] + [("pull", k) for k in ph]))
        for rel, (data, t) in lap.items():
            self.assertEqual(read(os.path.join(self.remote, rel)), data, rel)
            self.assertNotEqual(mtime(os.path.join(self.remote, rel)), t,
                                "the phone was meant to keep its own time (%s)" % rel)
        for rel, (data, t) in ph.items():
            self.assertEqual(files(self.local)[rel], (data, t), rel)
        self.settled()

        # An edit on each side of a file that came from each side: each goes once, the other way.
        edits = {("push", "Music/l1.mp3"): (self.local, 11, T0 + 5000),
                 ("push", "DCIM/p0.jpg"): (self.local, 12, T0 + 5001),
                 ("pull", "DCIM/p2.jpg"): (self.remote, 13, T0 + 6000),
                 ("pull", "Music/l3.mp3"): (self.remote, 14, T0 + 6001)}
        new = {k: self.edit(root, k[1], seed, t) for k, (root, seed, t) in edits.items()}
        phone_times = {k: mtime(os.path.join(self.remote, k)) for k in files(self.remote)}
        r = self.sync()
        self.assertEqual(self.moved(r), sorted(edits), r)
        for (way, rel), data in new.items():
            self.assertEqual(read(os.path.join(self.local, rel)), data, rel)
            self.assertEqual(read(os.path.join(self.remote, rel)), data, rel)
            t = edits[(way, rel)][2]
            self.assertEqual(mtime(os.path.join(self.local, rel)), t, rel)
            if way == "pull":
                self.assertEqual(mtime(os.path.join(self.remote, rel)), t, rel)
        for rel, t in phone_times.items():
            if ("push", rel) not in edits and ("pull", rel) not in edits:
                self.assertEqual(mtime(os.path.join(self.remote, rel)), t, rel)
        self.settled()


    def test_moves_deletes_and_a_conflict(self):
        self.modes = {"deny_setstat": ["*"]}
        lap = self.make(self.local, ["Music/l%d.mp3" % i for i in range(4)], 1, T0)
        ph = self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(4)], 2, T0 + 1000)
        self.sync()
        self.settled(1)
        self.churn(lap, ph, ("deny_setstat",))


class SteppedCardTest(TwoWayQuirkCase):
    """mtime_step 2: the card reports and stores even seconds, whatever it is told."""

    def stepped(self, n_laptop):
        self.modes = {"mtime_step": 2}
        lap = self.make(self.local, ["Music/l%02d.mp3" % i for i in range(n_laptop)], 1, T0, odd=True)
        ph = self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(4)], 2, T0 + 5000, odd=True)
        r = self.sync()
        self.assertFired("mtime_step", "set")
        self.assertFired("mtime_step", "report")
        self.assertEqual(self.moved(r), sorted([("push", k) for k in lap] + [("pull", k) for k in ph]))
        got_l, got_r = files(self.local), files(self.remote)
        for rel, (data, t) in lap.items():
            self.assertEqual(got_l[rel], (data, t), rel)           # the laptop keeps its time
            self.assertEqual(got_r[rel], (data, t - 1), rel)       # the card the stepped one
        for rel, (data, t) in ph.items():
            self.assertEqual(got_l[rel], (data, t - 1), rel)       # the time the card shows
            self.assertEqual(got_r[rel], (data, t), rel)           # untouched on the card
        self.settled()

        edits = {("push", "Music/l01.mp3"): (self.local, 11, T0 + 100001),
                 ("push", "DCIM/p1.jpg"): (self.local, 12, T0 + 100003),
                 ("pull", "DCIM/p2.jpg"): (self.remote, 13, T0 + 200001),
                 ("pull", "Music/l02.mp3"): (self.remote, 14, T0 + 200003)}
        new = {k: self.edit(root, k[1], seed, t) for k, (root, seed, t) in edits.items()}
        r = self.sync()
        self.assertEqual(self.moved(r), sorted(edits), r)
        got_l, got_r = files(self.local), files(self.remote)
        for (way, rel), data in new.items():
            t = edits[(way, rel)][2]
            if way == "push":
                self.assertEqual(got_l[rel], (data, t), rel)
                self.assertEqual(got_r[rel], (data, t - 1), rel)
            else:
                self.assertEqual(got_l[rel], (data, t - 1), rel)
                self.assertEqual(got_r[rel], (data, t), rel)
        self.settled()

    def test_moves_deletes_and_a_conflict(self):
        self.modes = {"mtime_step": 2}
        lap = self.make(self.local, ["Music/l%d.mp3" % i for i in range(4)], 1, T0, odd=True)
        ph = self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(4)], 2, T0 + 1000, odd=True)
        self.sync()
        self.settled(1)
        self.churn(lap, ph, ("mtime_step", "set"))

    def test_few_files(self):
        # 8 files on the card: too few to call it stepped, so no 2 s window: the records must
        # hold the stepped times exactly.
        self.stepped(4)

    def test_many_files(self):
        # 24 files, every one even: the push's side compares within 2 s.
        self.stepped(20)


class ShiftedClockTest(TwoWayQuirkCase):
    """shift_mtime: every time the phone shows moved by whole hours (set times are stored
    minus the shift, so a read back shows what was set)."""

    def shift_warnings(self, r, hours):
        return [m for m in self.warnings(r) if ("moved by %+d h" % hours) in m]

    def test_shift_is_taken_off_both_ways(self):
        lap = self.make(self.local, ["Music/l%d.mp3" % i for i in range(5)], 1, T0)
        ph = self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(5)], 2, T0 + 1000)
        self.sync()
        self.settled(1)
        on_phone = snap(self.remote)

        # The shift appears, and the laptop edits a file in that same run: only that one goes
        # (to the phone, no conflict); the shift is said once; nothing else is touched.
        self.modes = {"shift_mtime": HOUR}
        rel = "DCIM/p1.jpg"
        new = self.edit(self.local, rel, 21, T0 + 50000)
        r = self.sync()
        self.assertFired("shift_mtime", "report")
        self.assertFired("shift_mtime", "set")
        self.assertEqual(self.moved(r), [("push", rel)], r)
        self.assertEqual(len(self.shift_warnings(r, 1)), 1, r)
        self.assertEqual(files(self.local)[rel], (new, T0 + 50000))
        self.assertEqual(read(os.path.join(self.remote, rel)), new)
        # stored minus the shift: the phone shows the laptop's time
        self.assertEqual(mtime(os.path.join(self.remote, rel)), T0 + 50000 - HOUR)
        after = snap(self.remote)
        for k, v in on_phone.items():
            if k != rel and v[0] == "f":
                self.assertEqual(after[k], v, "%s was touched on the phone" % k)
        for k, (data, t) in list(lap.items()) + list(ph.items()):
            if k != rel:
                self.assertEqual(files(self.local)[k], (data, t), k)
        for r in self.settled():
            self.assertEqual(self.shift_warnings(r, 1), [], r)

        # Edits on both sides during the shift: each goes once; the laptop gets the time the
        # phone shows, the phone shows the laptop's time.
        e_lap = self.edit(self.local, "Music/l2.mp3", 22, T0 + 60000)
        e_ph = self.edit(self.remote, "DCIM/p3.jpg", 23, T0 + 70000)
        r = self.sync()
        self.assertEqual(self.moved(r), [("pull", "DCIM/p3.jpg"), ("push", "Music/l2.mp3")], r)
        self.assertEqual(files(self.local)["DCIM/p3.jpg"], (e_ph, T0 + 70000 + HOUR))
        self.assertEqual(files(self.local)["Music/l2.mp3"], (e_lap, T0 + 60000))
        self.assertEqual(files(self.remote)["Music/l2.mp3"], (e_lap, T0 + 60000 - HOUR))
        self.settled()

        # The phone's clock goes back: said once, nothing moves.
        self.modes = {}
        r = self.sync()
        self.assertQuiet(r)
        self.assertEqual(len(self.shift_warnings(r, -1)), 1, r)
        self.settled(1)

    def test_deletes_and_moves_during_a_shift(self):
        # A shift on the phone is no change there: a delete on either side goes across (not
        # undone as "changed on the other side"), and a move on either side travels as a move.
        self.make(self.local, ["Music/l%d.mp3" % i for i in range(5)], 1, T0)
        self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(5)], 2, T0 + 1000)
        self.sync()
        self.modes = {"shift_mtime": HOUR}
        L, R = self.local, self.remote
        os.unlink(os.path.join(L, "Music/l0.mp3"))
        os.makedirs(os.path.join(L, "Music/old"))
        os.rename(os.path.join(L, "Music/l1.mp3"), os.path.join(L, "Music/old/l1.mp3"))
        os.unlink(os.path.join(R, "DCIM/p0.jpg"))
        os.makedirs(os.path.join(R, "Album"))
        os.rename(os.path.join(R, "DCIM/p1.jpg"), os.path.join(R, "Album/p1.jpg"))
        lap = files(L)
        r = self.sync()
        self.assertFired("shift_mtime", "report")
        self.assertEqual(len(self.shift_warnings(r, 1)), 1, r)
        done = sorted((e.get("dir"), e["action"], e["path"]) for e in r.json() if e["event"] == "file")
        self.assertEqual(done, [("pull", "moved", "Album/p1.jpg"), ("push", "moved", "Music/old/l1.mp3")], r)
        gone = sorted((e.get("dir"), e["path"]) for e in r.json() if e["event"] == "delete")
        self.assertEqual(gone, [("pull", "DCIM/p0.jpg"), ("push", "Music/l0.mp3")], r)
        self.assertEqual(self.summary(r)["bytes_done"], 0, r)
        self.assertEqual(sorted(files(L)), sorted(files(R)))
        now = files(L)
        for k, v in now.items():
            if k in lap:
                self.assertEqual(v, lap[k], k)   # the laptop's own files untouched
        self.assertEqual(now["Album/p1.jpg"], lap["DCIM/p1.jpg"])
        self.assertEqual(now["Music/old/l1.mp3"], lap["Music/old/l1.mp3"])
        self.settled()

    def test_small_folder_keeps_a_laptop_edit(self):
        # Three files: too few for the rule to call it a shift, so each phone time that moved
        # reads as a change there (as for a pull). An unchanged laptop copy takes the phone's
        # bytes and time; a laptop edit meets it as a conflict and both versions are kept on
        # both sides; nothing is overwritten.
        self.make(self.remote, ["a.txt", "b.txt"], 1, T0)
        self.make(self.local, ["c.txt"], 2, T0 + 500)
        self.sync()
        old_a = read(os.path.join(self.remote, "a.txt"))
        self.modes = {"shift_mtime": HOUR}
        new_a = self.edit(self.local, "a.txt", 31, T0 + 9000)
        r = self.sync(expect=5)
        self.assertFired("shift_mtime", "report")
        self.assertEqual(self.summary(r)["conflicts"], 1, r)
        for root in (self.local, self.remote):
            got = files(root)
            datas = sorted(d for k, (d, _t) in got.items() if k.startswith("a"))
            self.assertEqual(datas, sorted([old_a, new_a]), (root, sorted(got)))
            self.assertEqual(len([k for k in got if CONFLICT in k]), 1, got)
        # The laptop edit is the newer: it keeps the name on both sides.
        self.assertEqual(read(os.path.join(self.remote, "a.txt")), new_a)
        self.assertEqual(read(os.path.join(self.local, "a.txt")), new_a)
        loc = files(self.local)
        self.assertEqual(loc["b.txt"][1], T0 + 60 + HOUR, "the time the phone shows")
        self.settled()


class CombinedQuirksTest(TwoWayQuirkCase):
    """A phone that changes time zone (-1 h) while it also refuses to set times, or while its
    card keeps 2 s steps: the shift is still found and taken off both ways."""

    def combined(self, base):
        self.modes = dict(base)
        self.make(self.local, ["Music/l%d.mp3" % i for i in range(5)], 1, T0, odd=True)
        self.make(self.remote, ["DCIM/p%d.jpg" % i for i in range(5)], 2, T0 + 1000, odd=True)
        self.sync()
        self.settled(1)
        self.modes = dict(base, shift_mtime=-HOUR)
        new = self.edit(self.local, "DCIM/p1.jpg", 21, T0 + 50001)
        r = self.sync()
        self.assertFired("shift_mtime", "report")
        self.assertEqual(self.moved(r), [("push", "DCIM/p1.jpg")], r)
        self.assertEqual(len([m for m in self.warnings(r) if "moved by -1 h" in m]), 1, r)
        self.assertEqual(read(os.path.join(self.remote, "DCIM/p1.jpg")), new)
        self.settled()
        e_ph = self.edit(self.remote, "Music/l2.mp3", 22, T0 + 60001)
        e_lap = self.edit(self.local, "Music/l3.mp3", 23, T0 + 70001)
        r = self.sync()
        self.assertEqual(self.moved(r), [("pull", "Music/l2.mp3"), ("push", "Music/l3.mp3")], r)
        self.assertEqual(read(os.path.join(self.remote, "Music/l3.mp3")), e_lap)
        self.assertEqual(read(os.path.join(self.local, "Music/l2.mp3")), e_ph)
        self.settled()
        return files(self.local)["Music/l2.mp3"][1], mtime(os.path.join(self.remote, "Music/l3.mp3"))

    def test_refused_times_and_a_shift(self):
        got, phone = self.combined({"deny_setstat": ["*"]})
        self.assertEqual(got, T0 + 60001 - HOUR)          # the time the phone shows
        self.assertNotIn(phone, (T0 + 70001, T0 + 70001 + HOUR))   # its own

    def test_stepped_card_and_a_shift(self):
        got, phone = self.combined({"mtime_step": 2})
        self.assertEqual(got, T0 + 60000 - HOUR)          # stepped, then shown shifted
        self.assertEqual(phone, T0 + 70000 + HOUR)        # stored in its clock, stepped


class NocasePhoneTest(TwoWayQuirkCase):
    """A phone whose storage ignores case (the relay's nocase: case-insensitive,
    case-preserving), against the laptop's ext4, which keeps case apart."""

    def test_case_names_both_ways(self):
        self.modes = {"nocase": True}
        L, R = self.local, self.remote
        write_file(os.path.join(L, "IMG.jpg"), b"upper case photo", mtime=T0)
        write_file(os.path.join(L, "img.jpg"), b"lower case photo!", mtime=T0 + 1)
        write_file(os.path.join(L, "photo.jpg"), b"same photo", mtime=T0 + 2)
        write_file(os.path.join(R, "PHOTO.JPG"), b"same photo", mtime=T0 + 2)
        write_file(os.path.join(L, "doc.txt"), b"a document", mtime=T0 + 3)
        write_file(os.path.join(R, "Note.txt"), b"a note from the phone", mtime=T0 + 4)
        r = self.sync()
        self.assertFired("nocase")
        self.assertEqual(sorted(os.listdir(L)),
                         ["IMG.jpg", "Note.txt", "doc.txt", "img.jpg", "photo.jpg"])
        self.assertEqual(files(R), {
            "IMG.jpg": (b"upper case photo", T0),
            "img (2).jpg": (b"lower case photo!", T0 + 1),
            "PHOTO.JPG": (b"same photo", T0 + 2),
            "doc.txt": (b"a document", T0 + 3),
            "Note.txt": (b"a note from the phone", T0 + 4),
        })
        # (a push names a file by its name on the phone)
        self.assertEqual(self.moved(r), [("pull", "Note.txt"), ("push", "IMG.jpg"),
                                         ("push", "doc.txt"), ("push", "img (2).jpg")], r)
        self.settled()

        # An edit of each name that maps to another one reaches it, and no new name appears.
        write_file(os.path.join(R, "img (2).jpg"), b"lower, edited on the phone", mtime=T0 + 100)
        write_file(os.path.join(R, "PHOTO.JPG"), b"photo, edited on the phone", mtime=T0 + 101)
        write_file(os.path.join(L, "IMG.jpg"), b"upper, edited on the laptop", mtime=T0 + 102)
        r = self.sync()
        self.assertEqual(len(self.moved(r)), 3, r)
        self.assertEqual(files(L), {
            "IMG.jpg": (b"upper, edited on the laptop", T0 + 102),
            "img.jpg": (b"lower, edited on the phone", T0 + 100),
            "photo.jpg": (b"photo, edited on the phone", T0 + 101),
            "doc.txt": (b"a document", T0 + 3),
            "Note.txt": (b"a note from the phone", T0 + 4),
        })
        self.assertEqual(files(R), {
            "IMG.jpg": (b"upper, edited on the laptop", T0 + 102),
            "img (2).jpg": (b"lower, edited on the phone", T0 + 100),
            "PHOTO.JPG": (b"photo, edited on the phone", T0 + 101),
            "doc.txt": (b"a document", T0 + 3),
            "Note.txt": (b"a note from the phone", T0 + 4),
        })
        self.settled()

        # A rename that only changes case, one on each side: no bytes move, nothing is lost or
        # doubled; each side keeps its own spelling.
        os.rename(os.path.join(L, "doc.txt"), os.path.join(L, "Doc.txt"))
        os.rename(os.path.join(R, "Note.txt"), os.path.join(R, "note.txt"))
        r = self.sync()
        self.assertEqual(self.summary(r)["bytes_done"], 0, r)
        self.assertEqual([e for e in r.json() if e["event"] in ("delete", "conflict")], [], r)
        lap, ph = files(L), files(R)
        self.assertEqual(sorted(k for k in lap if k.lower() in ("doc.txt", "note.txt")),
                         ["Doc.txt", "Note.txt"], lap)
        self.assertEqual(sorted(k for k in ph if k.lower() in ("doc.txt", "note.txt")),
                         ["doc.txt", "note.txt"], ph)
        self.assertEqual(len(lap), 5, lap)
        self.assertEqual(len(ph), 5, ph)
        self.settled()

        # Later edits reach the one file of each name.
        write_file(os.path.join(L, "Doc.txt"), b"the document, edited", mtime=T0 + 200)
        write_file(os.path.join(R, "note.txt"), b"the note, edited on the phone", mtime=T0 + 201)
        r = self.sync()
        self.assertEqual(len(self.moved(r)), 2, r)
        self.assertEqual(files(R)["doc.txt"], (b"the document, edited", T0 + 200))
        self.assertEqual(files(L)["Note.txt"], (b"the note, edited on the phone", T0 + 201))
        self.assertEqual((len(files(L)), len(files(R))), (5, 5))
        self.settled()


    def test_same_new_name_in_two_cases(self):
        # The phone and the laptop each make a file of one name in another case: one name on
        # the phone, so the same file: equal bytes adopted, other bytes a conflict with both
        # versions kept on both sides; a new folder likewise.
        self.modes = {"nocase": True}
        L, R = self.local, self.remote
        write_file(os.path.join(L, "pad.txt"), b"pad", mtime=T0)
        self.sync()
        write_file(os.path.join(L, "Same.txt"), b"equal bytes", mtime=T0 + 10)
        write_file(os.path.join(R, "same.TXT"), b"equal bytes", mtime=T0 + 10)
        write_file(os.path.join(L, "Album/x.txt"), b"the laptop's x", mtime=T0 + 30)
        write_file(os.path.join(R, "ALBUM/y.txt"), b"the phone's y", mtime=T0 + 31)
        write_file(os.path.join(L, "Diff.txt"), b"the laptop's", mtime=T0 + 20)
        write_file(os.path.join(R, "diff.txt"), b"the phone's!", mtime=T0 + 21)
        r = self.sync(expect=5)
        self.assertFired("nocase")
        self.assertEqual(self.summary(r)["conflicts"], 1, r)
        lap, ph = files(L), files(R)
        self.assertEqual(sorted(lap), sorted(["Album/x.txt", "Album/y.txt", "Diff.txt", "Same.txt",
                                              "pad.txt"] + [k for k in lap if CONFLICT in k]), lap)
        self.assertEqual(sorted(ph), sorted(["ALBUM/x.txt", "ALBUM/y.txt", "diff.txt", "same.TXT",
                                             "pad.txt"] + [k for k in ph if CONFLICT in k]), ph)
        for side in (lap, ph):
            copies = [k for k in side if CONFLICT in k]
            self.assertEqual(len(copies), 1, side)
            self.assertEqual(sorted([side[copies[0]][0], side.get("Diff.txt", side.get("diff.txt"))[0]]),
                             sorted([b"the laptop's", b"the phone's!"]))
        self.settled()


    def test_deleting_one_of_two_case_names(self):
        # A known limit (docs/TWOWAY.md): the laptop deletes IMG.jpg, one of two names the
        # phone holds as IMG.jpg and img (2).jpg. img.jpg is then the only laptop name of its
        # folded form, so the phone's IMG.jpg is taken for it (changed there) and img (2).jpg for
        # a file the laptop deleted: a conflict (exit 5) that keeps both versions on both
        # sides, the deleted one as a conflict copy. Nothing is lost, and the runs after move
        # nothing.
        self.modes = {"nocase": True}
        L, R = self.local, self.remote
        write_file(os.path.join(L, "IMG.jpg"), b"upper case photo", mtime=T0)
        write_file(os.path.join(L, "img.jpg"), b"lower case photo!", mtime=T0 + 1)
        write_file(os.path.join(L, "pad.txt"), b"pad", mtime=T0)
        self.sync()
        os.unlink(os.path.join(L, "IMG.jpg"))
        r = self.sync(expect=5)
        self.assertEqual(self.summary(r)["conflicts"], 1, r)
        lap, ph = files(L), files(R)
        self.assertEqual(lap["img.jpg"], (b"lower case photo!", T0 + 1))
        for side in (lap, ph):
            self.assertEqual(sorted(d for d, _t in side.values()),
                             sorted([b"lower case photo!", b"upper case photo", b"pad"]), side)
        self.assertEqual(len(ph), 3, ph)
        self.settled()


NFC = unicodedata.normalize("NFC", "caf\u00e9")
NFD = unicodedata.normalize("NFD", "caf\u00e9")
assert NFC != NFD


class UnicodeFormTest(TwoWayQuirkCase):
    """The phone names in NFC (Android), the laptop in NFD (a folder a Mac made)."""

    server_kwargs = {}

    def test_one_file_per_name_both_ways(self):
        L, R = self.local, self.remote
        nfc_file, nfd_file = os.path.join(NFC, NFC + ".txt"), os.path.join(NFD, NFD + ".txt")
        write_file(os.path.join(R, nfc_file), b"the same bytes", mtime=T0)
        write_file(os.path.join(L, nfd_file), b"the same bytes", mtime=T0)
        write_file(os.path.join(R, NFC, "p.txt"), b"from the phone", mtime=T0 + 1)
        write_file(os.path.join(L, NFD, "l.txt"), b"from the laptop", mtime=T0 + 2)
        r = self.sync()
        self.assertEqual(os.listdir(L), [NFD])
        self.assertEqual(os.listdir(R), [NFC])
        self.assertEqual(sorted(os.listdir(os.path.join(L, NFD))), sorted(["l.txt", "p.txt", NFD + ".txt"]))
        self.assertEqual(sorted(os.listdir(os.path.join(R, NFC))), sorted(["l.txt", "p.txt", NFC + ".txt"]))
        self.assertEqual(len(self.moved(r)), 2, r)
        self.settled()

        # The phone edits its NFC name, the laptop its NFD one (another file): each lands in
        # the other side's file of that name.
        write_file(os.path.join(R, nfc_file), b"edited on the phone", mtime=T0 + 10)
        write_file(os.path.join(L, NFD, "p.txt"), b"edited on the laptop", mtime=T0 + 11)
        r = self.sync()
        self.assertEqual(len(self.moved(r)), 2, r)
        self.assertEqual(files(L)[nfd_file], (b"edited on the phone", T0 + 10))
        self.assertEqual(files(R)[os.path.join(NFC, "p.txt")], (b"edited on the laptop", T0 + 11))
        self.settled()

        # And the other way round for the named file.
        write_file(os.path.join(L, nfd_file), b"edited on the laptop, again", mtime=T0 + 20)
        r = self.sync()
        self.assertEqual(len(self.moved(r)), 1, r)
        self.assertEqual(files(R)[nfc_file], (b"edited on the laptop, again", T0 + 20))
        self.assertEqual((os.listdir(L), os.listdir(R)), ([NFD], [NFC]))
        self.assertEqual(len(files(L)), 3)
        self.assertEqual(len(files(R)), 3)
        self.settled()


class EditsMoveOnceTest(TwoWayQuirkCase):
    """Issue 26: "a two-way run after N edits on each side moves each edit once", counted by a
    TCP proxy between phsync and sshd (SSH's own bytes included), the phone served by the
    remote helper (`phsync serve`, the binary under test) so deltas go both ways."""

    server_kwargs = {}
    N = 5
    SIZE = 256 << 10
    EDIT = 4 << 10

    def change(self, data, seed):
        """EDIT bytes overwritten at a place of their own in the file: same size."""
        at = (seed * 37_000) % (self.SIZE - self.EDIT)
        return data[:at] + random_bytes(self.EDIT, seed) + data[at + self.EDIT:]

    def edited(self, helper, pick):
        """2N+2 files (odd ones made on the laptop, even ones on the phone), synced through a
        counting proxy; then N files edited on each side (pick(names) -> (laptop's, phone's))
        and one run. Returns (the run, up, down, the quiet run's (up, down), the laptop's
        edited names, the phone's, the proxy, its config)."""
        proxy = CuttingProxy(self.srv.port)
        self.addCleanup(proxy.close)
        cfg = self.srv.write_config(port=proxy.port)
        self.datas = datas = {}
        for i in range(2 * self.N + 2):
            side = self.local if i % 2 else self.remote
            rel = "f/%02d.bin" % i
            datas[rel] = random_bytes(self.SIZE, 500 + i)
            write_file(os.path.join(side, rel), datas[rel], mtime=T0 + i)
        self.sync(*helper, config=cfg)
        self.assertEqual(files(self.local), files(self.remote))
        r = self.sync(*helper, config=cfg)
        self.assertQuiet(r)
        quiet = (proxy.up, proxy.down)

        on_laptop, on_phone = pick(sorted(datas))
        for j, rel in enumerate(on_laptop + on_phone):
            datas[rel] = self.change(datas[rel], j + 1)
            root = self.local if rel in on_laptop else self.remote
            write_file(os.path.join(root, rel), datas[rel], mtime=T0 + 1000 + j)
        r = self.sync(*helper, config=cfg)
        up, down = proxy.up, proxy.down
        self.assertEqual(self.moved(r), sorted([("push", k) for k in on_laptop] +
                                               [("pull", k) for k in on_phone]), r)
        for root in (self.local, self.remote):
            got = files(root)
            self.assertEqual({k: d for k, (d, _t) in got.items()}, datas, root)
        print("\n%d edits of %d bytes each way in %d KiB files (%s): up %d, down %d; a quiet "
              "run: up %d, down %d" % (self.N, self.EDIT, self.SIZE >> 10, helper[1], up, down,
                                       *quiet))
        return r, up, down, quiet, proxy, cfg

    def assertNothingSentBack(self, helper, quiet, proxy, cfg):
        """The next run moves nothing and costs what a quiet run costs."""
        r = self.sync(*helper, config=cfg)
        self.assertQuiet(r)
        self.assertLess(proxy.up, quiet[0] + 4096, (proxy.up, quiet))
        self.assertLess(proxy.down, quiet[1] + 4096, (proxy.down, quiet))

    def test_each_edit_moves_once(self):
        helper = ["--helper", "always", "--helper-path", phsync_bin()]
        r, up, down, quiet, proxy, cfg = self.edited(
            helper, lambda names: (names[:self.N], names[self.N:2 * self.N]))
        s = self.summary(r)
        self.assertEqual(s["helper"], 1, r)
        self.assertGreater(s["bytes_matched"], 2 * self.N * (self.SIZE - 4 * self.EDIT), s)
        # Each direction: what the quiet run cost (login, listings), plus per edited file 16 KiB
        # over the edit: the blocks around it, and this direction's share of the other way's
        # deltas (a pull's signature of the laptop's copy goes up); far under a whole file each.
        bound = self.N * (self.EDIT + (16 << 10))
        self.assertLess(up, quiet[0] + bound, (up, down, quiet))
        self.assertLess(down, quiet[1] + bound, (up, down, quiet))
        self.assertLess(max(up - quiet[0], down - quiet[1]), self.N * self.SIZE // 4)
        self.assertNothingSentBack(helper, quiet, proxy, cfg)

    def test_plain_sftp(self):
        # Without the helper: the laptop's edits of files it sent earlier go as copy-data of the
        # phone's copy plus the changed blocks (push's delta against the recorded signature);
        # the phone's edits come whole (SFTP offers a pull nothing better). Each edit once.
        helper = ["--helper", "never"]
        r, up, down, quiet, proxy, cfg = self.edited(
            helper, lambda names: (names[1::2][:self.N], names[0::2][:self.N]))
        s = self.summary(r)
        self.assertGreater(s["bytes_matched"], self.N * (self.SIZE - 4 * self.EDIT), s)
        self.assertLess(up, quiet[0] + self.N * (self.EDIT + (16 << 10)), (up, down, quiet))
        self.assertGreater(down, quiet[1] + self.N * self.SIZE, (up, down, quiet))
        self.assertLess(down, quiet[1] + self.N * (self.SIZE + (16 << 10)), (up, down, quiet))
        self.assertNothingSentBack(helper, quiet, proxy, cfg)


if __name__ == "__main__":
    import unittest
    unittest.main()
