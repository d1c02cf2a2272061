# SPDX-License-Identifier: ISC
"""Other server implementations phones run: the same pull, push, no-change re-run and two-way
sync (first contact, edits, new files, deletes and a move on both sides, a conflict), and a
listing of many folders over plain SFTP (a second SFTP channel on OpenSSH only), against

DropbearTest          Dropbear (SimpleSSHD and many phone apps) with OpenSSH's sftp-server
GesftpserverTest      OpenSSH sshd with Green End's gesftpserver (a different sftp-server)
DropbearGesftpTest    Dropbear with gesftpserver
PlainV3Test           OpenSSH sshd with evil_sftp.py in its faithful mode: a bare SFTP v3
                      server with no extensions (no limits@, posix-rename@, fsync@), and reads
                      capped at 256 KiB, so phsync's fall-backs are used
OneSessionTest        OpenSSH with MaxSessions 1: a listing of many folders, whose second SFTP
                      channel is refused, on its one channel
ProftpdTest           ProFTPD's own SSH and SFTP server (mod_sftp), and on it the check-file
                      deltas of a pull without the helper: edits of every kind come out exact
                      with the unchanged blocks taken from the old copies
CheckFileShapesTest   evil_sftp.py answering check-file in MINA's shape (Android SFTP apps),
                      ProFTPD's, and wrongly (a digest short, an algorithm not asked for, lying
                      digests): right shapes move as deltas, the rest come whole, all exact
Dropbear needs root here (its authorized_keys path is fixed, so the harness runs it in a private
mount namespace); the classes skip with the reason when a server is unavailable.
"""

import json
import os
import sys
import tempfile
import unittest

from harness import (EVIL_SFTP, GESFTPSERVER, SyncTestCase, folders_tree, leftovers, phsync_bin,
                     sample_tree, tree, write_file, random_bytes)

T0 = 1700000000
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


class _Compat:

    def test_pull_push_rerun(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.remote, "DCIM/Camera/VID_big.mp4"), random_bytes(9_000_001, 4), mtime=T0)
        self.pull(expect=0, timeout=120)
        self.assertTreesEqual(self.remote, self.local)
        before = tree(self.local, hashes=False)
        self.pull(expect=0)
        after = tree(self.local, hashes=False)
        for k, b in before.items():
            if b.type == "f":
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), k)
        dst = os.path.join(self.remote, "back")
        self.push(dst=dst, expect=0, timeout=120)
        self.assertTreesEqual(self.local, dst)
        before = tree(dst, hashes=False)
        self.push(dst=dst, expect=0)
        after = tree(dst, hashes=False)
        for k, b in before.items():
            if b.type == "f":
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), k)
        self.assertEqual(leftovers(self.local) + leftovers(self.remote), [])

    def test_update_over_existing_file(self):
        # Without posix-rename a plain SFTP v3 rename fails when the target exists. The
        # file is synced first, so the second push replaces it (a file met on first
        # contact with other content is never overwritten: test_rules.py).
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "a.jpg"), b"one", mtime=T0)
        self.push(expect=0)
        write_file(os.path.join(self.local, "a.jpg"), b"two!", mtime=T0 + 1)
        self.push(expect=0)
        with open(os.path.join(self.remote, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"two!")
        self.assertEqual(leftovers(self.remote), [])


    def sync(self, *opts, expect=None):
        srv = self.srv
        r = srv.run(["sync", "-F", srv.config, "--json"] + srv._helper_opts(opts) + list(opts)
                    + ["phone:" + self.remote, self.local], timeout=120)
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        return r

    def assertSidesEqual(self):
        """Both sides hold the same files with the same bytes and mtimes (to the second)."""
        def files(root):
            return {k: (e.digest, int(e.mtime)) for k, e in tree(root).items() if e.type == "f"}
        self.assertEqual(files(self.local), files(self.remote))

    def test_two_way(self):
        # phsync sync on this server: the union at first contact, an edit and a new file on
        # each side, a delete on each side, a move on the laptop, a file changed on both sides
        # (a conflict: both versions on both sides, exit 5), and no-change runs moving nothing.
        os.makedirs(self.local)
        rp = lambda rel: os.path.join(self.remote, rel)  # noqa: E731
        lp = lambda rel: os.path.join(self.local, rel)  # noqa: E731
        write_file(rp("DCIM/a.jpg"), random_bytes(300_000, 1), mtime=T0)
        write_file(rp("DCIM/gone.jpg"), b"deleted on the laptop", mtime=T0)
        write_file(rp("Docs/both.txt"), b"first\n", mtime=T0 + 1)
        write_file(lp("Notes/n.txt"), b"laptop note\n", mtime=T0 + 2)
        write_file(lp("Notes/gone.txt"), b"deleted on the phone", mtime=T0 + 3)
        write_file(lp("Notes/move.txt"), random_bytes(70_000, 2), mtime=T0 + 4)
        self.assertEqual(summary(self.sync(expect=0))["files_done"], 6)
        self.assertSidesEqual()
        s = summary(self.sync(expect=0))
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), s)

        a2 = random_bytes(300_000, 3)
        write_file(rp("DCIM/a.jpg"), a2, mtime=T0 + 100)
        write_file(lp("Notes/n.txt"), b"laptop note, edited\n", mtime=T0 + 101)
        write_file(rp("DCIM/new.jpg"), b"new on the phone", mtime=T0 + 102)
        write_file(lp("Notes/new.txt"), b"new on the laptop", mtime=T0 + 103)
        os.unlink(lp("DCIM/gone.jpg"))
        os.unlink(rp("Notes/gone.txt"))
        os.rename(lp("Notes/move.txt"), lp("Notes/moved.txt"))
        self.sync(expect=0)
        self.assertSidesEqual()
        with open(lp("DCIM/a.jpg"), "rb") as f:
            self.assertEqual(f.read(), a2)
        with open(rp("Notes/n.txt"), "rb") as f:
            self.assertEqual(f.read(), b"laptop note, edited\n")
        for gone in ("DCIM/gone.jpg", "Notes/gone.txt", "Notes/move.txt"):
            self.assertFalse(os.path.exists(rp(gone)) or os.path.exists(lp(gone)), gone)
        self.assertTrue(os.path.isfile(rp("Notes/moved.txt")))

        write_file(rp("Docs/both.txt"), b"the phone's version\n", mtime=T0 + 200)
        write_file(lp("Docs/both.txt"), b"the laptop's version\n", mtime=T0 + 300)
        r = self.sync(expect=5)
        self.assertEqual(summary(r)["conflicts"], 1, r)
        self.assertSidesEqual()
        names = sorted(os.listdir(lp("Docs")))
        self.assertEqual(len(names), 2, names)
        self.assertEqual(names[1], "both.txt", names)
        self.assertTrue(names[0].startswith("both.phsync-conflict-"), names)
        with open(lp("Docs/both.txt"), "rb") as f:
            self.assertEqual(f.read(), b"the laptop's version\n")   # the newer keeps the name
        with open(lp("Docs/" + names[0]), "rb") as f:
            self.assertEqual(f.read(), b"the phone's version\n")
        s = summary(self.sync(expect=0))
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), s)
        self.assertEqual(leftovers(self.local) + leftovers(self.remote), [])


    # What a plain-SFTP listing of many folders says of its channels (ph_login_more): a
    # second SFTP channel on an OpenSSH server, one channel on any other.
    CHANNELS = "listing over 2 SFTP channels"

    def test_many_folders(self):
        folders_tree(self.remote, 90, 1, T0)
        r = self.pull("--helper", "never", "--json", expect=0, timeout=120)
        self.assertIn(self.CHANNELS, [e.get("message") for e in r.json() if e["event"] == "info"])
        self.assertTreesEqual(self.remote, self.local)
        r = self.pull("--helper", "never", "--json", expect=0, timeout=120)
        self.assertEqual([e for e in r.json() if e["event"] == "file"], [])


def infos(r):
    return [e.get("message") for e in r.json() if e["event"] == "info"]


class DropbearTest(_Compat, SyncTestCase):
    server_kwargs = {"kind": "dropbear"}
    CHANNELS = "one SFTP channel: the server is not OpenSSH"

    def test_many_folders_one_helper(self):
        """A long listing through the helper keeps to its one helper on Dropbear (several
        channels at once are OpenSSH's only: issue 22), and comes out exact."""
        folders_tree(self.remote, 90, 1, T0)
        r = self.pull("--helper", "always", "--helper-path", phsync_bin(), "--json", expect=0,
                      timeout=120)
        self.assertIn("one helper: the server is not OpenSSH", infos(r), r)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)


class GesftpserverTest(_Compat, SyncTestCase):
    server_kwargs = {"sftp_server": GESFTPSERVER}


class DropbearGesftpTest(_Compat, SyncTestCase):
    server_kwargs = {"kind": "dropbear", "sftp_server": GESFTPSERVER}
    CHANNELS = "one SFTP channel: the server is not OpenSSH"


class PlainV3Test(_Compat, SyncTestCase):
    server_kwargs = {"subsystem": "%s %s" % (PY, EVIL_SFTP)}


def summary(r):
    for ev in r.json():
        if ev.get("event") == "summary":
            return ev
    raise AssertionError("no summary in %r" % (r,))


def edits(data, seed):
    """Typical gallery edits at once: a grown EXIF block near the start (shifts the rest by
    5,000 bytes), a flipped byte in the middle, a tail of 1,000 bytes appended (so the shift
    is not the size change)."""
    grown = data[:200] + random_bytes(5_000, seed) + data[200:]
    mid = len(grown) // 2
    return grown[:mid] + bytes([grown[mid] ^ 0xFF]) + grown[mid + 1:] + random_bytes(1_000, seed + 1)


class ProftpdTest(_Compat, SyncTestCase):
    server_kwargs = {"kind": "proftpd"}
    CHANNELS = "one SFTP channel: the server is not OpenSSH"

    def test_pull_moves_edits_as_check_file_deltas(self):
        datas = {"DCIM/IMG_%d.jpg" % i: random_bytes(600_000 + i * 7, 40 + i) for i in range(5)}
        for rel, d in datas.items():
            write_file(os.path.join(self.remote, rel), d, mtime=T0)
        self.assertEqual(summary(self.pull("--json", expect=0))["bytes_matched"], 0)
        new = dict(datas)
        new["DCIM/IMG_0.jpg"] = edits(datas["DCIM/IMG_0.jpg"], 1)
        new["DCIM/IMG_1.jpg"] = datas["DCIM/IMG_1.jpg"][:400_000]
        new["DCIM/IMG_2.jpg"] = datas["DCIM/IMG_2.jpg"] + random_bytes(300_000, 3)
        new["DCIM/IMG_3.jpg"] = random_bytes(len(datas["DCIM/IMG_3.jpg"]), 4)
        new["DCIM/IMG_4.jpg"] = datas["DCIM/IMG_4.jpg"][:100_000] + datas["DCIM/IMG_4.jpg"][140_000:]
        for i, rel in enumerate(sorted(new)):
            write_file(os.path.join(self.remote, rel), new[rel], mtime=T0 + 100 + i)
        r = self.pull("--json", expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["files_failed"]), (5, 0), r)
        self.assertTreesEqual(self.remote, self.local)
        for rel, data in new.items():
            with open(os.path.join(self.local, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
        # Taken from the old copies: all but a few 4 KiB blocks around each edit, nothing of
        # the rewritten IMG_3 (what did not travel is at most what was not read).
        unchanged = (len(datas["DCIM/IMG_0.jpg"]) - 20_000) + 400_000 - 4096 \
            + len(datas["DCIM/IMG_2.jpg"]) - 4096 + len(new["DCIM/IMG_4.jpg"]) - 8192
        self.assertGreater(s["bytes_matched"], unchanged, s)
        self.assertLess(s["bytes_matched"], s["bytes_committed"] - len(new["DCIM/IMG_3.jpg"]) + 1, s)
        self.assertNoLeftovers()
        s = summary(self.pull("--json", expect=0))
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), s)


class OneSessionTest(SyncTestCase):
    """OpenSSH with MaxSessions 1: the listing's second SFTP channel is refused, the run goes on
    with its one and comes out exact."""
    server_kwargs = {"extra_sshd_config": ["MaxSessions 1"]}

    def test_many_folders_one_channel(self):
        folders_tree(self.remote, 90, 1, T0)
        r = self.pull("--helper", "never", "--json", expect=0, timeout=120)
        info = [e.get("message") for e in r.json() if e["event"] == "info"]
        self.assertTrue(any(m.startswith("one SFTP channel: the server refused another")
                            for m in info), info)
        self.assertTreesEqual(self.remote, self.local)

    def test_many_folders_one_helper(self):
        """... and through the helper: a second helper's command channel is refused, the
        listing goes on with its one helper, exact."""
        folders_tree(self.remote, 90, 1, T0)
        r = self.pull("--helper", "always", "--helper-path", phsync_bin(), "--json", expect=0,
                      timeout=120)
        self.assertIn("one helper: another could not start: the server refused another "
                      "command channel", infos(r), r)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)


class CheckFileShapesTest(SyncTestCase):
    LOG = os.path.join(tempfile.gettempdir(), "phsync-evil-checkfile-%d.log" % os.getpid())
    server_kwargs = {"subsystem": "%s %s --log %s" % (PY, EVIL_SFTP, LOG)}
    # mode -> whether the file moves as a delta
    # (A refusal, as OpenSSH's and Dropbear's, is what every other pull of a changed file in
    # the suite meets.)
    MODES = {"mina": True, "proftpd": True, "short": False, "wrong_alg": False, "lie": False}

    def test_check_file_replies_of_every_shape(self):
        datas = {}
        for i, mode in enumerate(self.MODES):
            d = os.path.join(self.remote, str(mode))
            os.makedirs(d)
            with open(os.path.join(d, ".evil-sftp.json"), "w") as f:
                json.dump({"check_file": mode}, f)
            datas[mode] = random_bytes(300_000, 70 + i)
            write_file(os.path.join(d, "IMG.jpg"), datas[mode], mtime=T0)
        self.pull(expect=0)
        for mode, d in datas.items():
            write_file(os.path.join(self.remote, str(mode), "IMG.jpg"), edits(d, 9), mtime=T0 + 50)
        r = self.pull("--json", expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["files_failed"]), (len(self.MODES), 0), r)
        for mode, d in datas.items():
            with open(os.path.join(self.local, str(mode), "IMG.jpg"), "rb") as f:
                self.assertEqual(f.read(), edits(d, 9), mode)
        # Only the two faithful shapes moved as deltas: each took all but a few blocks.
        self.assertGreater(s["bytes_matched"], 2 * (300_000 - 20_000), s)
        self.assertLess(s["bytes_matched"], 2 * 300_000, s)
        self.assertNoLeftovers()

    def check_files_asked(self):
        with open(self.LOG) as f:
            return sum(1 for line in f if line.startswith("check-file "))

    def test_refusing_server_is_asked_once(self):
        # OpenSSH and Dropbear refuse check-file. The first changed file asks; the others
        # wait for that answer and are then read whole, without asking again.
        datas = [random_bytes(200_000, 90 + i) for i in range(6)]
        for i, d in enumerate(datas):
            write_file(os.path.join(self.remote, "IMG_%d.jpg" % i), d, mtime=T0)
        self.pull(expect=0)
        for i, d in enumerate(datas):
            write_file(os.path.join(self.remote, "IMG_%d.jpg" % i), edits(d, 5), mtime=T0 + 50)
        open(self.LOG, "w").close()
        r = self.pull("--json", expect=0)
        s = summary(r)
        self.assertEqual((s["files_done"], s["files_failed"], s["bytes_matched"]), (6, 0, 0), r)
        for i, d in enumerate(datas):
            with open(os.path.join(self.local, "IMG_%d.jpg" % i), "rb") as f:
                self.assertEqual(f.read(), edits(d, 5), i)
        self.assertEqual(self.check_files_asked(), 1)
        self.assertNoLeftovers()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        if os.path.exists(cls.LOG):
            os.unlink(cls.LOG)


if __name__ == "__main__":
    unittest.main()
