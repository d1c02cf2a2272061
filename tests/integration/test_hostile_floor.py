# SPDX-License-Identifier: ISC
"""A phone that lists a file without a size and then sends bytes forever (sftp_relay.py's
no_size + endless modes in front of OpenSSH's sftp-server) must not fill the laptop's disk.

The destination is a small tmpfs (the test mounts it; needs root).  A file of unknown size may
take the disk down to a floor: the smaller of 1 GiB and half of what was free when its first
bytes came (docs/phsync-pull.1).  On a 64 MiB tmpfs that is about 32 MiB, so the endless file
fails long before ENOSPC: exit 5 (partial, not 1: the run was not stopped by a full disk), the
error names the floor, no temp is left, the other files arrive.  A size-less file that stays
above the floor still arrives whole.  A file listed with an absurd size (1 TiB more than it
holds, then endless) is refused before a byte of it is read, naming its size and the free space
(src/sync/pull_space.c): exit 5, the others arrive, and --dry-run says the same.  A cut
download's kept prefix counts as already there: the rest of a 48 MiB video fits where the whole
would not.
"""

import os
import re
import subprocess
import unittest

from harness import EXIT_OK, EXIT_PARTIAL, leftovers, random_bytes, write_file
from test_hostile_relay import RelayTestCase, read

T0 = 1700000000
MiB = 1 << 20


class EndlessSizelessTest(RelayTestCase):

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        os.makedirs(self.local)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=755", "phsync-floor", self.local],
                           capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest("cannot mount a small tmpfs here: " + p.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.local], capture_output=True)

    def free(self):
        st = os.statvfs(self.local)
        return st.f_bavail * st.f_frsize

    def test_endless_file_stops_at_the_floor(self):
        write_file(os.path.join(self.remote, "stream.bin"), b"x", mtime=T0)
        sized = write_file(os.path.join(self.remote, "DCIM/IMG_1.jpg"), random_bytes(300_000, 1), mtime=T0)
        note = write_file(os.path.join(self.remote, "note.txt"), random_bytes(5000, 2), mtime=T0)
        self.srv.relay_set(no_size={"names": ["stream.bin", "note.txt"], "attrs": True},
                           endless=["stream.bin"])
        r = self.run_bounded(self.pull_args("--json"), 300)
        self.assertFired("no_size")
        self.assertFired("endless")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual(self.failed_paths(r), ["stream.bin"], r)
        err = [e for e in r.json() if e["event"] == "file" and e.get("status") == "failed"][0]["error"]
        m = re.search(r"fell below the (\d+) MiB floor", err)
        self.assertIsNotNone(m, err)
        # The floor is half of a 64 MiB disk, less what the other files took first.
        self.assertTrue(24 <= int(m.group(1)) <= 32, err)
        self.assertNotIn("no space left", r.out + r.err)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "stream.bin")),
                         "a file that never ended was committed")
        self.assertEqual(leftovers(self.local), [], "the temp of the endless file was left")
        self.assertEqual(read(os.path.join(self.local, "DCIM/IMG_1.jpg")), read(sized))
        self.assertEqual(read(os.path.join(self.local, "note.txt")), read(note))
        self.assertGreater(self.free(), 60 * MiB, "space not given back")

    def test_absurd_size_is_refused_before_a_byte_is_read(self):
        # A file listed 1 TiB larger than it is (and endless): refused before it is opened,
        # naming its size and the free space; the other files arrive; exit 5 (a failed file).
        # --dry-run says the same.
        write_file(os.path.join(self.remote, "stream.bin"), b"x", mtime=T0)
        photo = write_file(os.path.join(self.remote, "DCIM/IMG_1.jpg"), random_bytes(300_000, 4), mtime=T0)
        self.srv.relay_set(size_lie={"stream.bin": 1 << 40}, endless=["stream.bin"])
        free = self.free()
        for dry in (True, False):
            with self.subTest(dry_run=dry):
                r = self.run_bounded(self.pull_args("--json", *(["-n"] if dry else [])), 120)
                self.assertEqual(r.code, EXIT_PARTIAL, r)
                self.assertEqual(self.failed_paths(r), ["stream.bin"], r)
                err = [e for e in r.json() if e["event"] == "file" and e.get("status") == "failed"][0]["error"]
                self.assertIn("not enough space on the local disk: the file needs 1.1 TB "
                              "(1099511627777 bytes) and the disk has ", err)
                m = re.search(r"the disk has ([0-9.]+) MB free, of which phsync keeps ([0-9.]+) MB free", err)
                self.assertIsNotNone(m, err)
                # The free space as it was (the photo not yet in), a sixteenth of it kept.
                self.assertAlmostEqual(float(m.group(1)), free / 1e6, delta=0.5)
                self.assertAlmostEqual(float(m.group(2)), free / 16 / 1e6, delta=0.1)
                self.assertIn("nothing of it was read", err)
                self.assertNotIn("no space left", r.out + r.err)
                self.assertEqual(self.ok_paths(r) if not dry else
                                 sorted(e["path"] for e in r.json() if e["event"] == "file" and e.get("status") != "failed"),
                                 ["DCIM/IMG_1.jpg"], r)
        self.assertNotIn("endless", [f.split()[0] for f in self.srv.relay_fired()],
                         "the refused file was read")
        self.assertFalse(os.path.lexists(os.path.join(self.local, "stream.bin")))
        self.assertEqual(read(os.path.join(self.local, "DCIM/IMG_1.jpg")), read(photo))
        self.assertEqual(leftovers(self.local), [])

    def test_resume_needs_only_the_rest(self):
        # A 48 MiB video cut near its end keeps its good prefix on the disk; the re-run needs
        # only the rest, which fits, where the whole file would not (48 MiB is more than the
        # free space less the sixteenth kept).
        size = 48 * MiB
        video = write_file(os.path.join(self.remote, "VID.mp4"), random_bytes(size, 9), mtime=T0)
        state = os.path.join(self.tmp, "state")
        self.srv.relay_set(die_mid_data={"name": "VID.mp4", "at": 44 * MiB})
        r = self.run_bounded(self.pull_args("--state-dir", state), 120)
        self.assertFired("die_mid_data")
        self.assertNotIn(r.code, (EXIT_OK, EXIT_PARTIAL), r)
        self.srv.relay_set()
        (part,) = [n for n in os.listdir(self.local) if n.startswith(".VID.mp4.phsync-p.")]
        have = os.path.getsize(os.path.join(self.local, part))
        free = self.free()
        self.assertGreater(size, free - free // 16, "the prefix kept (%d) is too short to tell" % have)
        r = self.run_bounded(self.pull_args("--state-dir", state, "--json"), 120)
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertEqual(r.json()[-1]["bytes_done"], size - have)
        self.assertEqual(read(os.path.join(self.local, "VID.mp4")), read(video))
        self.assertEqual(leftovers(self.local), [])

    def test_sizeless_file_above_the_floor_arrives_whole(self):
        # 12 MiB of unknown size on a 64 MiB disk: three checks of the free space, all above
        # the floor (about 32 MiB), so it arrives whole.
        clip = write_file(os.path.join(self.remote, "clip.bin"), random_bytes(12 * MiB + 4321, 3), mtime=T0)
        self.srv.relay_set(no_size={"names": ["clip.bin"], "attrs": True})
        r = self.run_bounded(self.pull_args("--json"), 300)
        self.assertFired("no_size")
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertEqual(read(os.path.join(self.local, "clip.bin")), read(clip))
        self.assertEqual(int(os.stat(os.path.join(self.local, "clip.bin")).st_mtime), T0)
        self.assertEqual(leftovers(self.local), [])


if __name__ == "__main__":
    unittest.main()
