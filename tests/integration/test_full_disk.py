# SPDX-License-Identifier: ISC
"""A local disk too small for the pull (the destination is a small tmpfs the test mounts; CI runs as
root).  src/sync/pull_space.c, docs/phsync-pull.1 "Room on the disk":
- a file that alone cannot fit is refused before a byte of it is read, naming its size and the
  free space; the old copy it would replace is intact; exit 5, and with room a re-run brings it;
- files that each fit but cannot fit together: the run is refused before anything is done (no
  file, no folder), naming what they need and what is free; exit 1; --dry-run says the same;
- a disk that still fills up (here with many tiny files: tmpfs gives each a whole page, which
  the listed sizes do not show): the run stops with exit 1 and a clear message, the partial temp
  file is removed, and the file it was replacing is intact.
"""

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
        # The update of IMG_old.jpg (3 MB) fits; 2000 files of 10 bytes list 20 kB but take a
        # page each on tmpfs (8 MB).
        write_file(os.path.join(self.remote, "DCIM/IMG_old.jpg"), random_bytes(3 << 20, 2), mtime=T0 + 60)
        for i in range(2000):
            write_file(os.path.join(self.remote, "DCIM/.thumbs/t%04d" % i), b"%010d" % i, mtime=T0)
        r = self.pull("--json", timeout=300)
        self.assertEqual(r.code, 1, r)
        summary = r.json()[-1]
        self.assertEqual(summary["event"], "summary")
        self.assertIn("no space left", summary["error"])
        self.assertEqual(leftovers(self.local), [], "partial temp file left on the full disk")
        thumbs = os.path.join(self.local, "DCIM/.thumbs")
        landed = os.listdir(thumbs) if os.path.isdir(thumbs) else []
        self.assertLess(len(landed), 2000, "the disk did not fill")
        for name in landed:
            with open(os.path.join(thumbs, name), "rb") as f:
                self.assertEqual(f.read(), b"%010d" % int(name[1:]), name)
        with open(os.path.join(self.local, "DCIM/IMG_old.jpg"), "rb") as f:
            got = f.read()
        # Either the old photo is intact or it was fully replaced: never a mix or a stub.
        if got != old:
            self.assertEqual(got, random_bytes(3 << 20, 2), "IMG_old.jpg is neither old nor new")

    def test_pull_update_that_does_not_fit_keeps_old_file(self):
        old = random_bytes(2 << 20, 4)
        write_file(os.path.join(self.local, "IMG_1.jpg"), old, mtime=T0)
        write_file(os.path.join(self.remote, "IMG_1.jpg"), random_bytes(5 << 20, 5), mtime=T0 + 60)
        write_file(os.path.join(self.remote, "note.txt"), b"note", mtime=T0)
        free = os.statvfs(self.local).f_bavail * os.statvfs(self.local).f_frsize
        # The new version's temp (5 MiB) must fit beside the old copy: it cannot.
        r = self.pull("--json", timeout=120)
        self.assertEqual(r.code, 5, r)
        failed = [e for e in r.json() if e["event"] == "file" and e.get("status") == "failed"]
        self.assertEqual([e["path"] for e in failed], ["IMG_1.jpg"], r)
        self.assertIn("not enough space on the local disk: the file needs 5.2 MB (5242880 bytes) "
                      "and the disk has %.1f MB free, of which phsync keeps" % (free / 1e6),
                      failed[0]["error"])
        self.assertNotIn("no space left", r.out + r.err)
        with open(os.path.join(self.local, "note.txt"), "rb") as f:
            self.assertEqual(f.read(), b"note")
        with open(os.path.join(self.local, "IMG_1.jpg"), "rb") as f:
            self.assertEqual(f.read(), old, "the old file was damaged")
        self.assertEqual(int(os.stat(os.path.join(self.local, "IMG_1.jpg")).st_mtime), T0)
        self.assertEqual(leftovers(self.local), [])
        # With room again, a re-run finishes the job.
        os.remove(os.path.join(self.local, "IMG_1.jpg"))
        self.pull(expect=0, timeout=120)
        with open(os.path.join(self.local, "IMG_1.jpg"), "rb") as f:
            self.assertEqual(f.read(), random_bytes(5 << 20, 5))

    def test_run_that_cannot_fit_is_refused_up_front(self):
        # Three videos of 2 MiB: each fits on the 6 MiB disk, the three do not.
        for i in range(3):
            write_file(os.path.join(self.remote, "DCIM/VID_%d.mp4" % i), random_bytes(2 << 20, 10 + i),
                       mtime=T0)
        free = os.statvfs(self.local).f_bavail * os.statvfs(self.local).f_frsize
        says = ("the files to copy need 6.3 MB (6291456 bytes) and the local disk has %.1f MB free, "
                "of which phsync keeps %.1f kB free; nothing was copied" % (free / 1e6, free / 16 / 1e3))
        # A dry run into a folder not made yet looks at its nearest parent.
        new = os.path.join(self.local, "new", "deeper")
        for opts, dst in ((("-n",), None), (("-n",), new), ((), None)):
            with self.subTest(opts=opts, dst=dst):
                r = self.pull("--json", *opts, dst=dst, timeout=120)
                self.assertEqual(r.code, 1, r)
                summary = r.json()[-1]
                self.assertEqual(summary["event"], "summary")
                self.assertIn(says, summary["error"])
                self.assertFalse([e for e in r.json() if e["event"] == "file" and e.get("status") == "ok"], r)
                self.assertEqual(os.listdir(self.local), [], "a refused run made something")
        # Two of them fit.
        self.pull("--exclude", "VID_2.mp4", expect=0, timeout=120)
        self.assertEqual(sorted(os.listdir(os.path.join(self.local, "DCIM"))), ["VID_0.mp4", "VID_1.mp4"])

if __name__ == "__main__":
    unittest.main()
