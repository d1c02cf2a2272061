# SPDX-License-Identifier: ISC
"""A file over 4 GiB, both ways: every offset and size is 64-bit clean.

The source is sparse (truncate + a few markers, including ones straddling 2^31 and 2^32); the
copy phsync writes is not (unless phsync seeks over zeros), so the test needs about 4.1 GB of
free space at a time and skips, saying so, when the file system has less than 6 GiB free.
Checks: exit 0, exact size, mtime, the bytes at the markers and at sampled offsets, no temp
left, and a re-run that rewrites nothing (the 64-bit size compares equal).
"""

import os
import random
import shutil
import unittest

from harness import SyncTestCase, leftovers, make_sparse, read_at, tree

T0 = 1700000000
SIZE = (4 << 30) + (1 << 20) + 123
NEED_FREE = 6 << 30


def markers(seed):
    rng = random.Random(seed)
    offs = [0, 4093, (1 << 31) - 3, (1 << 31) + 100, (1 << 32) - 5, (1 << 32) + 65536, SIZE - 7]  # none overlap
    return [(o, rng.randbytes(min(64, SIZE - o))) for o in offs]


def sample_offsets(seed):
    rng = random.Random(seed + 1000)
    offs = [o for o, _ in markers(seed)]
    offs += [rng.randrange(0, SIZE - 4096) for _ in range(24)]
    offs += [(1 << 32) - 4096, (1 << 32), SIZE - 4096]
    return offs


class LargeFileTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        free = shutil.disk_usage(self.tmp).free
        if free < NEED_FREE:
            self.skipTest("needs %.1f GiB free for a non-sparse copy of a 4 GiB file; %s has %.1f GiB"
                          % (NEED_FREE / (1 << 30), self.tmp, free / (1 << 30)))

    def check_copy(self, src, dst, seed):
        st_s, st_d = os.stat(src), os.stat(dst)
        self.assertEqual(st_d.st_size, SIZE)
        self.assertEqual(int(st_d.st_mtime), int(st_s.st_mtime))
        for off, data in markers(seed):
            self.assertEqual(read_at(dst, off, len(data)), data, "marker at offset %d" % off)
        for off in sample_offsets(seed):
            self.assertEqual(read_at(dst, off, 4096), read_at(src, off, 4096), "bytes at offset %d" % off)

    def test_pull_file_over_4gib(self):
        src = os.path.join(self.remote, "DCIM/VID_huge.mp4")
        make_sparse(src, SIZE, markers(1))
        os.utime(src, (T0, T0))
        self.pull(expect=0, timeout=900)
        dst = os.path.join(self.local, "DCIM/VID_huge.mp4")
        self.check_copy(src, dst, 1)
        self.assertEqual(leftovers(self.local), [])
        before = tree(self.local, hashes=False)
        r = self.pull("--json", expect=0, timeout=300)
        after = tree(self.local, hashes=False)
        k = "DCIM/VID_huge.mp4"
        self.assertEqual((after[k].ino, after[k].ctime_ns), (before[k].ino, before[k].ctime_ns),
                         "re-run rewrote the 4 GiB file")
        self.assertEqual(r.json()[-1]["bytes_done"], 0)

    def test_push_file_over_4gib(self):
        os.makedirs(self.local)
        src = os.path.join(self.local, "Movies/huge.mkv")
        make_sparse(src, SIZE, markers(2))
        os.utime(src, (T0 + 5, T0 + 5))
        self.push(expect=0, timeout=900)
        dst = os.path.join(self.remote, "Movies/huge.mkv")
        self.check_copy(src, dst, 2)
        self.assertEqual(leftovers(self.remote), [])
        before = tree(self.remote, hashes=False)
        self.push(expect=0, timeout=300)
        after = tree(self.remote, hashes=False)
        k = "Movies/huge.mkv"
        self.assertEqual((after[k].ino, after[k].ctime_ns), (before[k].ino, before[k].ctime_ns))


if __name__ == "__main__":
    unittest.main()
