# SPDX-License-Identifier: ISC
"""A full local disk: the run stops with exit 1 and a clear message, the partial temp file is
removed, and the file it was replacing is intact. The destination is a small tmpfs (the test
mounts it; CI runs as root)."""

import os
import subprocess
import unittest

from harness import SyncTestCase, leftovers, random_bytes, write_file

T0 = 1700000000


class FullDiskTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        os.makedirs(self.local)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m,mode=755", "tmpfs", self.local],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root): " + r.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.local], capture_output=True)

    def test_pull_onto_full_disk(self):
        old = random_bytes(1 << 20, 1)
        write_file(os.path.join(self.local, "DCIM/IMG_old.jpg"), old, mtime=T0)
        # The update of IMG_old.jpg (3 MB) fits; the 8 MB video cannot.
        write_file(os.path.join(self.remote, "DCIM/IMG_old.jpg"), random_bytes(3 << 20, 2), mtime=T0 + 60)
        write_file(os.path.join(self.remote, "DCIM/VID_big.mp4"), random_bytes(8 << 20, 3), mtime=T0 + 120)
        r = self.pull("--json", timeout=120)
        self.assertEqual(r.code, 1, r)
        summary = r.json()[-1]
        self.assertEqual(summary["event"], "summary")
        self.assertIn("no space left", summary["error"])
        self.assertEqual(leftovers(self.local), [], "partial temp file left on the full disk")
        self.assertFalse(os.path.exists(os.path.join(self.local, "DCIM/VID_big.mp4")),
                         "a partial video appeared under its final name")
        with open(os.path.join(self.local, "DCIM/IMG_old.jpg"), "rb") as f:
            got = f.read()
        # Either the old photo is intact or it was fully replaced: never a mix or a stub.
        if got != old:
            self.assertEqual(got, random_bytes(3 << 20, 2), "IMG_old.jpg is neither old nor new")

    def test_pull_update_that_does_not_fit_keeps_old_file(self):
        old = random_bytes(2 << 20, 4)
        write_file(os.path.join(self.local, "IMG_1.jpg"), old, mtime=T0)
        write_file(os.path.join(self.remote, "IMG_1.jpg"), random_bytes(5 << 20, 5), mtime=T0 + 60)
        r = self.pull(timeout=120)
        self.assertEqual(r.code, 1, r)
        self.assertIn("no space left", r.err)
        with open(os.path.join(self.local, "IMG_1.jpg"), "rb") as f:
            self.assertEqual(f.read(), old, "the old file was damaged")
        self.assertEqual(int(os.stat(os.path.join(self.local, "IMG_1.jpg")).st_mtime), T0)
        self.assertEqual(leftovers(self.local), [])
        # With room again, a re-run finishes the job.
        os.remove(os.path.join(self.local, "IMG_1.jpg"))
        self.pull(expect=0, timeout=120)
        with open(os.path.join(self.local, "IMG_1.jpg"), "rb") as f:
            self.assertEqual(f.read(), random_bytes(5 << 20, 5))


if __name__ == "__main__":
    unittest.main()
