# SPDX-License-Identifier: ISC
"""Delta push over plain SFTP (issue 8): a changed file whose remote copy is still what phsync
last wrote there moves as copy-data pieces of that copy plus the changed bytes.

Runs through tests/lib/sftp_relay.py in front of OpenSSH's sftp-server (which offers
copy-data), with its "count" mode: the relay logs the bytes of every WRITE and every copy-data
request, so each test checks what crossed the link, not only the result.

Proves: a typical gallery edit (a grown EXIF block that shifts the rest, a flipped byte, an
appended tail) sends a small fraction of the file and leaves the exact bytes and mtime on the
server, twice in a row (the signature recorded is the new file's); a shrunk file; a server
without copy-data gets the whole file, right; a remote file changed behind phsync's back with
its size and time put back is caught by the block check (whole file, a warning), and one whose
time differs is never used as a basis (--overwrite: whole file); a file whose every byte
changed costs no more than a whole upload.
"""

import json
import os
import unittest

from harness import SyncTestCase, random_bytes, write_file

T0 = 1700000000
SIZE = 3_000_000
NAME = "DCIM/Camera/IMG_1.jpg"


def gallery_edit(data, seed):
    """An EXIF block grown by 5,000 bytes near the start (shifting everything after it), one
    byte flipped in the middle, 1,000 bytes appended."""
    grown = data[:200] + random_bytes(5_000, seed) + data[200:]
    mid = len(grown) // 2
    flipped = grown[:mid] + bytes([grown[mid] ^ 0xFF]) + grown[mid + 1:]
    return flipped + random_bytes(1_000, seed + 1)


class DeltaPushTest(SyncTestCase):
    server_kwargs = {"relay": True}

    def setUp(self):
        super().setUp()
        os.makedirs(self.local)
        self.path = os.path.join(self.local, NAME)
        self.data = random_bytes(SIZE, 5)
        write_file(self.path, self.data, mtime=T0)
        write_file(os.path.join(self.local, "small.txt"), b"a small file\n", mtime=T0)
        self.push(expect=0)

    def push_counted(self, *opts, **modes):
        """A push through the counting relay: (summary, events, bytes written, bytes copied)."""
        self.srv.relay_set(count=True, **modes)
        r = self.push("--json", *opts, expect=0)
        written = copied = 0
        for line in self.srv.relay_fired():
            parts = line.split()
            if parts[:2] == ["count", "WRITE"]:
                written += int(parts[2])
            elif parts[:2] == ["count", "copy-data"]:
                copied += int(parts[2])
        events = r.json()
        summary = [e for e in events if e["event"] == "summary"][-1]
        return summary, events, written, copied

    def edit(self, data, mtime):
        write_file(self.path, data, mtime=mtime)
        return data

    def assertRemoteIs(self, data, mtime):
        rp = os.path.join(self.remote, NAME)
        with open(rp, "rb") as f:
            self.assertEqual(f.read(), data, "remote content")
        self.assertEqual(int(os.stat(rp).st_mtime), mtime)
        self.assertNoLeftovers()

    def test_gallery_edit_moves_as_delta_twice(self):
        new = self.edit(gallery_edit(self.data, 11), T0 + 100)
        summary, _, written, copied = self.push_counted()
        self.assertRemoteIs(new, T0 + 100)
        self.assertEqual(summary["files_done"], 1, summary)
        # The changed bytes (5,000 + 1,000 + a block around the flip and the insert) travel;
        # the rest is copied by the server.
        self.assertLess(written, 100_000, "bytes written for a small edit")
        self.assertGreater(copied, SIZE - 100_000)
        self.assertEqual(summary["bytes_matched"], copied)
        # The signature recorded is the new file's: a second edit is a delta too.
        newer = self.edit(gallery_edit(new, 21), T0 + 200)
        summary, _, written, copied = self.push_counted()
        self.assertRemoteIs(newer, T0 + 200)
        self.assertLess(written, 100_000)
        self.assertGreater(copied, SIZE - 100_000)
        # Nothing changed: nothing moves.
        summary, _, written, copied = self.push_counted()
        self.assertEqual((summary["files_done"], written, copied), (0, 0, 0), summary)

    def test_shrunk_file(self):
        new = self.edit(self.data[:SIZE // 2], T0 + 100)
        summary, _, written, copied = self.push_counted()
        self.assertRemoteIs(new, T0 + 100)
        self.assertLess(written, 10_000)
        self.assertGreater(copied, SIZE // 2 - 10_000)

    def test_server_without_copy_data_gets_whole_file(self):
        new = self.edit(gallery_edit(self.data, 11), T0 + 100)
        summary, _, written, copied = self.push_counted(hide_extensions=["copy-data"])
        self.assertRemoteIs(new, T0 + 100)
        self.assertEqual((written, copied, summary["bytes_matched"]), (len(new), 0, 0))

    def test_remote_changed_behind_back_same_size_and_time(self):
        rp = os.path.join(self.remote, NAME)
        # Another app rewrote the phone's copy and put its size and time back.
        write_file(rp, random_bytes(SIZE, 99), mtime=T0)
        new = self.edit(gallery_edit(self.data, 11), T0 + 100)
        summary, events, written, copied = self.push_counted()
        self.assertRemoteIs(new, T0 + 100)
        self.assertEqual((written, copied, summary["bytes_matched"]), (len(new), 0, 0))
        warnings = [e for e in events if e["event"] == "warning" and e.get("path") == NAME]
        self.assertTrue(any("not what phsync last wrote" in e.get("message", "") for e in warnings),
                        events)

    def test_remote_changed_behind_back_other_time_is_no_basis(self):
        rp = os.path.join(self.remote, NAME)
        write_file(rp, self.data[:100] + b"X" + self.data[101:], mtime=T0 + 50)
        new = self.edit(gallery_edit(self.data, 11), T0 + 100)
        # Both sides changed: without --overwrite a conflict copy; with it, the whole file
        # replaces the phone's, never a delta against blocks the state did not see.
        summary, _, written, copied = self.push_counted("--overwrite")
        self.assertRemoteIs(new, T0 + 100)
        self.assertEqual((written, copied, summary["bytes_matched"]), (len(new), 0, 0))

    def test_every_block_changed_costs_a_whole_upload(self):
        new = self.edit(random_bytes(SIZE, 77), T0 + 100)
        summary, _, written, copied = self.push_counted()
        self.assertRemoteIs(new, T0 + 100)
        self.assertEqual((written, copied, summary["bytes_matched"]), (SIZE, 0, 0))


if __name__ == "__main__":
    unittest.main()
