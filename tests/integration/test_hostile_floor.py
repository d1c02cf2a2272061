# SPDX-License-Identifier: ISC
"""A phone that lists a file without a size and then sends bytes forever (sftp_relay.py's
no_size + endless modes in front of OpenSSH's sftp-server) must not fill the laptop's disk.

The destination is a small tmpfs (the test mounts it; needs root).  A file of unknown size may
take the disk down to a floor: the smaller of 1 GiB and half of what was free when its first
bytes came (docs/phsync-pull.1).  On a 64 MiB tmpfs that is about 32 MiB, so the endless file
fails long before ENOSPC: exit 5 (partial, not 1: the run was not stopped by a full disk), the
error names the floor, no temp is left, the other files arrive.  A size-less file that stays
above the floor still arrives whole.  A file listed with an absurd size (a size the floor
leaves alone) streaming forever fills the disk, and the run then stops (exit 1) instead of
reading on.
"""

import os
import re
import subprocess
import unittest

from harness import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, leftovers, random_bytes, write_file
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

    def test_endless_file_with_absurd_size_ends_at_full_disk(self):
        # A size listed (1 TiB more than the file holds) is no floor's business, but an endless
        # stream then fills the disk: the run must stop there (exit 1), not read on forever.
        write_file(os.path.join(self.remote, "stream.bin"), b"x", mtime=T0)
        self.srv.relay_set(size_lie={"stream.bin": 1 << 40}, endless=["stream.bin"])
        r = self.run_bounded(self.pull_args("--json"), 120)
        self.assertFired("endless")
        self.assertEqual(r.code, EXIT_ERROR, r)
        summary = r.json()[-1]
        self.assertEqual(summary["event"], "summary", r)
        self.assertIn("no space left", summary["error"])
        self.assertEqual(self.failed_paths(r), ["stream.bin"], "reported once, as failed: %r" % (r,))
        self.assertFalse(os.path.lexists(os.path.join(self.local, "stream.bin")))
        self.assertEqual(leftovers(self.local), [], "the temp was left on the full disk")
        self.assertGreater(self.free(), 60 * MiB, "space not given back")

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
