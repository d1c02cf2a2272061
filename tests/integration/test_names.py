"""Names across file systems (issue 7): a name in NFC on one side and in NFD on the other (Android
writes composed, a Mac decomposed) is one file, not two; two source names that differ only by
case on a destination that ignores case (Android's shared storage, FAT) are both kept, one
numbered and reported, and the next run maps them the same way. Real sshd; the case-insensitive
server is the relay's "nocase" mode in front of the real sftp-server."""

import json
import os
import unicodedata
import unittest

from harness import SyncTestCase, write_file

T0 = 1700000000
NFC = unicodedata.normalize("NFC", "caf\u00e9")
NFD = unicodedata.normalize("NFD", "caf\u00e9")
assert NFC != NFD


def read(path):
    with open(path, "rb") as f:
        return f.read()


def summary(r):
    return r.json()[-1]


class UnicodeFormTest(SyncTestCase):

    def test_pull_into_a_mac_made_folder(self):
        # The phone names the album in NFC; the laptop got it from a Mac, in NFD.
        write_file(os.path.join(self.remote, NFC, "old.jpg"), b"old photo", mtime=T0)
        write_file(os.path.join(self.remote, NFC, NFC + ".jpg"), b"named photo", mtime=T0)
        write_file(os.path.join(self.remote, NFC, "new.jpg"), b"new photo!", mtime=T0 + 5)
        write_file(os.path.join(self.local, NFD, "old.jpg"), b"old photo", mtime=T0)
        write_file(os.path.join(self.local, NFD, NFD + ".jpg"), b"named photo", mtime=T0)
        r = self.pull("--json", expect=0)
        # One album, the laptop's; the new photo went into it; nothing else moved.
        self.assertEqual(os.listdir(self.local), [NFD])
        self.assertEqual(sorted(os.listdir(os.path.join(self.local, NFD))),
                         sorted(["old.jpg", NFD + ".jpg", "new.jpg"]))
        self.assertEqual(read(os.path.join(self.local, NFD, "new.jpg")), b"new photo!")
        self.assertEqual(summary(r)["bytes_done"], len(b"new photo!"), r)
        # The phone edits the photo named in NFC: the laptop's NFD copy is updated in place.
        write_file(os.path.join(self.remote, NFC, NFC + ".jpg"), b"named, edited", mtime=T0 + 9)
        r = self.pull("--json", expect=0)
        self.assertEqual(read(os.path.join(self.local, NFD, NFD + ".jpg")), b"named, edited")
        self.assertEqual(sorted(os.listdir(os.path.join(self.local, NFD))),
                         sorted(["old.jpg", NFD + ".jpg", "new.jpg"]))
        self.assertEqual(os.listdir(self.local), [NFD])
        # Settled: a re-pull moves nothing.
        r = self.pull("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 0, r)

    def test_push_from_a_mac_made_folder(self):
        write_file(os.path.join(self.local, NFD, "a.jpg"), b"a", mtime=T0)
        write_file(os.path.join(self.local, NFD, "b.jpg"), b"bb", mtime=T0)
        write_file(os.path.join(self.remote, NFC, "a.jpg"), b"a", mtime=T0)
        r = self.push("--json", expect=0)
        self.assertEqual(os.listdir(self.remote), [NFC])
        self.assertEqual(sorted(os.listdir(os.path.join(self.remote, NFC))), ["a.jpg", "b.jpg"])
        self.assertEqual(read(os.path.join(self.remote, NFC, "b.jpg")), b"bb")
        self.assertEqual(summary(r)["files_done"], 1, r)
        r = self.push("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 0, r)

    def test_both_forms_in_the_source_are_both_kept(self):
        # A Linux phone folder can hold both forms of one name: two files. A destination that
        # keeps them apart (ext4 here) gets both under their own names, every run the same.
        write_file(os.path.join(self.remote, NFC + ".txt"), b"composed", mtime=T0)
        write_file(os.path.join(self.remote, NFD + ".txt"), b"decomposed", mtime=T0)
        self.pull(expect=0)
        got = {n: read(os.path.join(self.local, n)) for n in os.listdir(self.local)}
        self.assertEqual(got, {NFC + ".txt": b"composed", NFD + ".txt": b"decomposed"})
        write_file(os.path.join(self.remote, NFD + ".txt"), b"decomposed, edited", mtime=T0 + 9)
        r = self.pull("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 1, r)
        got = {n: read(os.path.join(self.local, n)) for n in os.listdir(self.local)}
        self.assertEqual(got, {NFC + ".txt": b"composed", NFD + ".txt": b"decomposed, edited"})
        r = self.pull("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 0, r)

if __name__ == "__main__":
    unittest.main()
