# SPDX-License-Identifier: ISC
"""Phone-like servers: tests/lib/sftp_relay.py's phone modes in front of OpenSSH's sftp-server.

One sshd per class; each test sets the relay's modes (self.srv.relay_set(...)) before the runs
it means to affect and checks that the mode really acted (self.srv.relay_fired()), so no test
passes against a relay that did nothing.

SteppedCardTest      a FAT/exFAT card (mtime_step 2: reported and stored times rounded down to
                     even seconds): a push and a pull of 24 files with odd times, then a re-run
                     moves nothing, and a real edit (same size, new time) moves exactly that
                     file.
ShiftedClockTest     the phone's times move by +1 h between two runs (shift_mtime 3600): the
                     re-pull and the re-push move nothing and warn once; a file edited at the
                     source during the shift (later, or in the very run the shift appears) is
                     still sent, and only it.
RefusedSetstatTest   deny_setstat on every name: 10 files land, a re-push writes nothing (the
                     state compares against the time the phone gave them).
FailedListingTest    pull --delete after deletions at the source while a subfolder's listing is
                     refused (fail_opendir) or cut midway (fail_readdir): exit 1 (the deletes
                     are refused, PHSYNC_EREFUSED), nothing deleted here, the folder and the
                     refusal named, and files still on the phone were among those that looked
                     deleted (the fault really hid them); a faithful run then deletes exactly
                     what went.
NocaseRelayTest      the relay's nocase mode itself (case-insensitive, case-preserving server),
                     through OpenSSH's sftp client: an upload of photo.JPG over PHOTO.jpg, mkdir
                     and renames onto names that exist in another case.  Engine tests on a
                     case-insensitive phone belong next to it.

No test waits on time: every run is a blocking call, every check looks at bytes, times and
exit codes, the --json events and the relay's log.
"""

import os
import re
import shutil
import subprocess
import unittest

from harness import (EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, RelayFired, SyncTestCase, random_bytes,
                     skip_or_fail, tree, write_file)

T0 = 1700000000  # even
HOUR = 3600


def read(path):
    with open(path, "rb") as f:
        return f.read()


def mtime(path):
    return os.stat(path).st_mtime_ns // 10**9


class PhoneRelayTestCase(RelayFired, SyncTestCase):
    server_kwargs = {"relay": True}

    # -- --json output ---------------------------------------------------------------------------

    def summary(self, r):
        (s,) = [e for e in r.json() if e["event"] == "summary"]
        return s

    def moved(self, r):
        """Paths of the files this run transferred, moved or copied (ok or failed)."""
        return sorted(e["path"] for e in r.json() if e["event"] == "file")

    def warnings(self, r):
        return [e["message"] for e in r.json() if e["event"] == "warning"]

    def assertMovedNothing(self, r):
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertEqual(self.moved(r), [], r)
        s = self.summary(r)
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), r)

    # -- trees -------------------------------------------------------------------------------------

    def make_files(self, root, n, sub="DCIM/Camera", odd=False, seed=0):
        """n files of a few sizes under root/sub, times T0 + 60*i (+1: odd seconds)."""
        out = {}
        for i in range(n):
            rel = "%s/IMG_%03d.jpg" % (sub, i)
            data = random_bytes(1000 + 137 * i, seed * 1000 + i)
            t = T0 + 60 * i + (1 if odd else 0)
            write_file(os.path.join(root, rel), data, mtime=t)
            out[rel] = (data, t)
        return out

    def snapshot(self, root):
        return {k: (e.type, e.size, e.digest, e.mtime_ns) for k, e in tree(root).items() if e.type == "f"}


class SteppedCardTest(PhoneRelayTestCase):
    """mtime_step 2: the card keeps even seconds, whatever it is told."""

    N = 24

    def test_push_to_a_stepped_card(self):
        files = self.make_files(self.local, self.N, sub="Music", odd=True)
        self.srv.relay_set(mtime_step=2)
        r = self.push("--json", expect=EXIT_OK)
        self.assertFired("mtime_step", "set")
        self.assertEqual(self.summary(r)["files_done"], self.N, r)
        for rel, (data, t) in files.items():
            p = os.path.join(self.remote, rel)
            self.assertEqual(read(p), data, rel)
            self.assertEqual(mtime(p), t - 1, "the card did not keep the stepped time of %s" % rel)
        on_card = self.snapshot(self.remote)

        # Nothing changed: nothing moves, the card's files stay as they are.
        self.srv.relay_set(mtime_step=2)
        r = self.push("--json")
        self.assertMovedNothing(r)
        self.assertEqual(self.snapshot(self.remote), on_card)

        # One file edited here (same size, new time): exactly that one goes.
        rel = "Music/IMG_007.jpg"
        new = random_bytes(len(files[rel][0]), 777)
        write_file(os.path.join(self.local, rel), new, mtime=T0 + 100001)
        self.srv.relay_set(mtime_step=2)
        r = self.push("--json", expect=EXIT_OK)
        self.assertEqual(self.moved(r), [rel], r)
        self.assertEqual(self.summary(r)["bytes_done"], len(new), r)
        self.assertFired("mtime_step", "set")
        self.assertEqual(read(os.path.join(self.remote, rel)), new)
        self.assertEqual(mtime(os.path.join(self.remote, rel)), T0 + 100000)
        for other, (data, _t) in files.items():
            if other != rel:
                self.assertEqual(read(os.path.join(self.remote, other)), data, other)
        self.srv.relay_set(mtime_step=2)
        self.assertMovedNothing(self.push("--json"))

    def test_pull_from_a_stepped_card(self):
        files = self.make_files(self.remote, self.N, odd=True)
        self.srv.relay_set(mtime_step=2)
        r = self.pull("--json", expect=EXIT_OK)
        self.assertFired("mtime_step", "report")
        self.assertEqual(self.summary(r)["files_done"], self.N, r)
        for rel, (data, t) in files.items():
            p = os.path.join(self.local, rel)
            self.assertEqual(read(p), data, rel)
            self.assertEqual(mtime(p), t - 1, "%s does not keep the time the card shows" % rel)
        here = self.snapshot(self.local)

        self.srv.relay_set(mtime_step=2)
        r = self.pull("--json")
        self.assertFired("mtime_step", "report")
        self.assertMovedNothing(r)
        self.assertEqual(self.snapshot(self.local), here)

        # Edited on the phone (same size, another odd time): exactly that one comes.
        rel = "DCIM/Camera/IMG_011.jpg"
        new = random_bytes(len(files[rel][0]), 1111)
        write_file(os.path.join(self.remote, rel), new, mtime=T0 + 100001)
        self.srv.relay_set(mtime_step=2)
        r = self.pull("--json", expect=EXIT_OK)
        self.assertEqual(self.moved(r), [rel], r)
        self.assertEqual(read(os.path.join(self.local, rel)), new)
        self.assertEqual(mtime(os.path.join(self.local, rel)), T0 + 100000)
        self.srv.relay_set(mtime_step=2)
        self.assertMovedNothing(self.pull("--json"))


class ShiftedClockTest(PhoneRelayTestCase):
    """shift_mtime 3600, switched on between two runs: the phone's times all read +1 h."""

    N = 20

    def shift_warnings(self, r):
        return [m for m in self.warnings(r) if re.search(r"moved by \+1 h", m)]

    def test_pull_after_the_phone_changed_time_zone(self):
        files = self.make_files(self.remote, self.N)
        self.pull(expect=EXIT_OK)
        here = self.snapshot(self.local)

        self.srv.relay_set(shift_mtime=HOUR)
        r = self.pull("--json")
        self.assertFired("shift_mtime", "report")
        self.assertMovedNothing(r)
        self.assertEqual(len(self.shift_warnings(r)), 1, r)
        self.assertEqual(self.snapshot(self.local), here, "a shifted time reached the laptop")

        # Said once; a photo edited on the phone during the shift still comes.
        rel = "DCIM/Camera/IMG_004.jpg"
        new = random_bytes(len(files[rel][0]), 4444)
        write_file(os.path.join(self.remote, rel), new, mtime=T0 + 50000)
        self.srv.relay_set(shift_mtime=HOUR)
        r = self.pull("--json", expect=EXIT_OK)
        self.assertFired("shift_mtime", "report")
        self.assertEqual(self.moved(r), [rel], r)
        self.assertEqual(self.summary(r)["bytes_done"], len(new), r)
        self.assertEqual(self.shift_warnings(r), [], r)
        self.assertEqual(read(os.path.join(self.local, rel)), new)
        self.assertEqual(mtime(os.path.join(self.local, rel)), T0 + 50000 + HOUR,
                         "the new copy does not have the time the phone shows")
        self.srv.relay_set(shift_mtime=HOUR)
        r = self.pull("--json")
        self.assertMovedNothing(r)
        self.assertEqual(self.shift_warnings(r), [], r)

    def test_push_after_the_phone_changed_time_zone(self):
        files = self.make_files(self.local, self.N, sub="Music")
        self.push(expect=EXIT_OK)
        on_phone = self.snapshot(self.remote)

        self.srv.relay_set(shift_mtime=HOUR)
        r = self.push("--json")
        self.assertFired("shift_mtime", "report")
        self.assertMovedNothing(r)
        self.assertEqual(len(self.shift_warnings(r)), 1, r)
        self.assertEqual(self.snapshot(self.remote), on_phone, "the phone's files were touched")

        # Said once; a song edited here during the shift still goes, and only it.
        rel = "Music/IMG_013.jpg"
        new = random_bytes(len(files[rel][0]), 1313)
        write_file(os.path.join(self.local, rel), new, mtime=T0 + 50000)
        self.srv.relay_set(shift_mtime=HOUR)
        r = self.push("--json", expect=EXIT_OK)
        self.assertFired("shift_mtime", "set")
        self.assertEqual(self.moved(r), [rel], r)
        self.assertEqual(self.summary(r)["bytes_done"], len(new), r)
        self.assertEqual(self.shift_warnings(r), [], r)
        self.assertEqual(read(os.path.join(self.remote, rel)), new)
        # The phone stores the time in its own (shifted) clock and shows back what was set.
        self.assertEqual(mtime(os.path.join(self.remote, rel)), T0 + 50000 - HOUR)
        self.srv.relay_set(shift_mtime=HOUR)
        r = self.push("--json")
        self.assertMovedNothing(r)
        self.assertEqual(self.shift_warnings(r), [], r)

    def test_push_with_an_edit_in_the_run_the_shift_appears(self):
        files = self.make_files(self.local, self.N, sub="Music")
        self.push(expect=EXIT_OK)
        for rel, (_d, t) in files.items():
            self.assertEqual(mtime(os.path.join(self.remote, rel)), t)

        # The shift appears, and a song is edited here meanwhile: only that one goes.
        rel = "Music/IMG_013.jpg"
        new = random_bytes(len(files[rel][0]), 1313)
        write_file(os.path.join(self.local, rel), new, mtime=T0 + 50000)
        self.srv.relay_set(shift_mtime=HOUR)
        r = self.push("--json", expect=EXIT_OK)
        self.assertFired("shift_mtime", "report")
        self.assertFired("shift_mtime", "set")
        self.assertEqual(self.moved(r), [rel], r)
        self.assertEqual(self.summary(r)["bytes_done"], len(new), r)
        self.assertEqual(len(self.shift_warnings(r)), 1, r)
        self.assertEqual(read(os.path.join(self.remote, rel)), new)
        # The phone stores the time in its own (shifted) clock and shows back what was set.
        self.assertEqual(mtime(os.path.join(self.remote, rel)), T0 + 50000 - HOUR)
        for other, (data, t) in files.items():
            if other != rel:
                self.assertEqual(read(os.path.join(self.remote, other)), data, other)
                self.assertEqual(mtime(os.path.join(self.remote, other)), t, other)

        self.srv.relay_set(shift_mtime=HOUR)
        r = self.push("--json")
        self.assertFired("shift_mtime", "report")
        self.assertMovedNothing(r)
        self.assertEqual(self.shift_warnings(r), [], r)


class RefusedSetstatTest(PhoneRelayTestCase):

    def test_push_to_a_phone_that_sets_no_times(self):
        files = self.make_files(self.local, 10, sub="Music")
        self.srv.relay_set(deny_setstat=["*"])
        r = self.push("--json", expect=EXIT_OK)
        self.assertFired("deny_setstat")
        self.assertEqual(self.summary(r)["files_done"], 10, r)
        kept = {}
        for rel, (data, t) in files.items():
            p = os.path.join(self.remote, rel)
            self.assertEqual(read(p), data, rel)
            kept[rel] = mtime(p)
            self.assertNotEqual(kept[rel], t, "the phone was meant to keep its own time (%s)" % rel)
        on_phone = self.snapshot(self.remote)

        self.srv.relay_set(deny_setstat=["*"])
        r = self.push("--json")
        self.assertMovedNothing(r)
        self.assertEqual(self.snapshot(self.remote), on_phone)


class FailedListingTest(PhoneRelayTestCase):
    """A listing that fails must never read as "deleted at the source"."""

    def setUp(self):
        super().setUp()
        self.camera = self.make_files(self.remote, self.CAMERA, sub="DCIM/Camera")
        self.album = self.make_files(self.remote, 3, sub="DCIM/Album", seed=1)
        write_file(os.path.join(self.remote, "top.txt"), b"top\n", mtime=T0)

    def _refused_then_faithful(self, **modes):
        self.pull(expect=EXIT_OK)
        gone = ["DCIM/Album/IMG_001.jpg", "DCIM/Camera/IMG_002.jpg"]
        for rel in gone:
            os.unlink(os.path.join(self.remote, rel))
        here = self.snapshot(self.local)

        self.srv.relay_set(**modes)
        r = self.pull("--delete", "--json")
        (mode,) = modes
        self.assertFired(mode)
        self.assertEqual(r.code, EXIT_ERROR, r)
        self.assertEqual([e for e in r.json() if e["event"] == "delete"], [], r)
        self.assertEqual(self.snapshot(self.local), here, "files were deleted or changed here")
        failed = [e for e in r.json() if e["event"] == "file" and e["status"] == "failed"]
        self.assertEqual([e["path"] for e in failed], ["DCIM/Camera"], r)
        err = self.summary(r).get("error", "")
        m = re.match(r"(\d+) deletion\(s\) refused: 1 listing error", err)
        self.assertTrue(m, r)
        self.assertIn("nothing was deleted", err)
        # The listing really missed files still on the phone: they looked deleted too.
        self.assertGreater(int(m.group(1)), len(gone), r)
        # The same, as a person sees it: the folder and the refusal on stderr.
        self.srv.relay_set(**modes)
        r = self.pull("--delete", expect=EXIT_ERROR)
        self.assertRegex(r.err, r"DCIM/Camera: cannot (open|list) this folder", r)
        self.assertRegex(r.err, r"deletion\(s\) refused", r)
        self.assertEqual(self.snapshot(self.local), here)

        # The phone lists again: exactly what went at the source goes here.
        self.srv.relay_set()
        r = self.pull("--delete", "--json", expect=EXIT_OK)
        self.assertEqual(sorted(e["path"] for e in r.json() if e["event"] == "delete"), gone, r)
        for rel in gone:
            self.assertFalse(os.path.lexists(os.path.join(self.local, rel)), rel)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)


class FailedOpendirTest(FailedListingTest):
    CAMERA = 5

    def test_refused_folder_listing_refuses_the_deletes(self):
        self._refused_then_faithful(fail_opendir=["Camera"])

    def test_a_move_is_a_copy_while_a_source_listing_failed(self):
        # A photo copied to another album on the phone looks like a move while Camera/ cannot
        # be listed: the laptop's Camera copy must stay (it is still on the phone).
        self.pull(expect=EXIT_OK)
        src = os.path.join(self.remote, "DCIM/Camera/IMG_001.jpg")
        data, t = self.camera["DCIM/Camera/IMG_001.jpg"]
        write_file(os.path.join(self.remote, "DCIM/Album/copy.jpg"), data, mtime=t)
        self.srv.relay_set(fail_opendir=["Camera"])
        r = self.pull("--delete", "--json")
        self.assertFired("fail_opendir")
        self.assertEqual(r.code, EXIT_ERROR, r)
        self.assertEqual(read(os.path.join(self.local, "DCIM/Camera/IMG_001.jpg")), data)
        self.assertEqual(read(os.path.join(self.local, "DCIM/Album/copy.jpg")), data)
        self.assertTrue(os.path.exists(src))

    def test_push_past_a_phone_folder_it_cannot_list(self):
        # The phone's Camera/ cannot be listed during a push: its files are unknown there,
        # not missing; nothing is sent into it and no conflict copy appears.
        shutil.rmtree(self.remote)
        os.makedirs(self.remote)
        self.make_files(self.local, 3, sub="DCIM/Camera")
        self.make_files(self.local, 2, sub="DCIM/Album", seed=1)
        self.push(expect=EXIT_OK)
        write_file(os.path.join(self.local, "DCIM/Album/new.jpg"), b"new photo", mtime=T0)
        write_file(os.path.join(self.local, "DCIM/Camera/new.jpg"), b"new too", mtime=T0)
        before = self.snapshot(self.remote)
        self.srv.relay_set(fail_opendir=["Camera"])
        r = self.push("--json")
        self.assertFired("fail_opendir")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual([e for e in r.json() if e["event"] == "conflict"], [], r)
        self.assertEqual(self.moved(r), ["DCIM/Album/new.jpg", "DCIM/Camera"], r)
        after = self.snapshot(self.remote)
        self.assertEqual(sorted(set(after) - set(before)), ["DCIM/Album/new.jpg"])
        for k in before:
            self.assertEqual(after[k], before[k], k)
        # Listed again: the Camera file goes, still no conflict.
        self.srv.relay_set()
        r = self.push("--json", expect=EXIT_OK)
        self.assertEqual(self.moved(r), ["DCIM/Camera/new.jpg"], r)
        self.assertTreesEqual(self.local, self.remote, dir_mtimes=False)


class CutReaddirTest(FailedListingTest):
    # More than the 100 entries OpenSSH's sftp-server returns per READDIR: the cut listing
    # really misses files that are still on the phone.
    CAMERA = 150

    def test_listing_cut_midway_refuses_the_deletes(self):
        self._refused_then_faithful(fail_readdir=["Camera"])


class NocaseRelayTest(PhoneRelayTestCase):
    """The relay's nocase mode (a case-insensitive, case-preserving phone), checked through
    OpenSSH's own sftp client.  Engine tests against such a phone go in this class."""

    def sftp(self, *commands, ok=True):
        """Runs sftp -b with these commands against the test server from self.local."""
        exe = shutil.which("sftp")
        if exe is None:
            skip_or_fail(None, "OpenSSH's sftp client is not installed")
        os.makedirs(self.local, exist_ok=True)
        batch = os.path.join(self.tmp, "batch")
        with open(batch, "w") as f:
            f.write("\n".join(commands) + "\n")
        p = subprocess.run([exe, "-F", self.srv.config, "-b", batch, "phone"], cwd=self.local,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=self.srv.env(), timeout=120)
        if ok:
            self.assertEqual(p.returncode, 0, "sftp failed:\n%s%s" % (p.stdout, p.stderr))
        return p

    def test_upload_in_another_case_lands_in_the_existing_file(self):
        write_file(os.path.join(self.remote, "PHOTO.jpg"), b"old photo bytes", mtime=T0)
        write_file(os.path.join(self.local, "photo.JPG"), b"the new photo, longer", mtime=T0 + 9)
        self.srv.relay_set(nocase=True)
        self.sftp("cd " + self.remote, "put photo.JPG")
        self.assertFired("nocase", "OPEN")
        self.assertEqual(os.listdir(self.remote), ["PHOTO.jpg"])
        self.assertEqual(read(os.path.join(self.remote, "PHOTO.jpg")), b"the new photo, longer")
        # A faithful (case-sensitive) server makes a second file: the mode is what did it.
        write_file(os.path.join(self.local, "photo.JPG"), b"again", mtime=T0 + 9)
        self.srv.relay_set()
        self.sftp("cd " + self.remote, "put photo.JPG")
        self.assertEqual(sorted(os.listdir(self.remote)), ["PHOTO.jpg", "photo.JPG"])
        self.assertEqual(read(os.path.join(self.remote, "PHOTO.jpg")), b"the new photo, longer")

    def test_mkdir_and_renames_onto_another_case(self):
        os.makedirs(os.path.join(self.remote, "Album"))
        write_file(os.path.join(self.remote, "IMG.jpg"), b"old", mtime=T0)
        write_file(os.path.join(self.remote, "x.jpg"), b"x", mtime=T0)
        write_file(os.path.join(self.remote, "y.jpg"), b"y", mtime=T0)
        self.srv.relay_set(nocase=True)
        p = self.sftp("cd " + self.remote, "mkdir album", ok=False)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertIn("Failure", p.stderr)
        self.assertFired("nocase", "MKDIR")
        # posix-rename onto img.jpg replaces IMG.jpg.
        self.srv.relay_set(nocase=True)
        self.sftp("cd " + self.remote, "rename x.jpg img.jpg")
        self.assertFired("nocase", "posix-rename@openssh.com")
        self.assertEqual(sorted(os.listdir(self.remote)), ["Album", "IMG.jpg", "y.jpg"])
        self.assertEqual(read(os.path.join(self.remote, "IMG.jpg")), b"x")
        # A plain RENAME onto an existing target fails; a case-only rename works.
        self.srv.relay_set(nocase=True, hide_extensions=["posix-rename@openssh.com"])
        p = self.sftp("cd " + self.remote, "rename y.jpg img.jpg", ok=False)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertFired("nocase", "RENAME")
        self.assertEqual(read(os.path.join(self.remote, "IMG.jpg")), b"x")
        self.sftp("cd " + self.remote, "rename IMG.jpg Img.JPG", "rename album ALBUM")
        self.assertEqual(sorted(os.listdir(self.remote)), ["ALBUM", "Img.JPG", "y.jpg"])


if __name__ == "__main__":
    unittest.main()
