# SPDX-License-Identifier: ISC
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


class CaseInsensitivePhoneTest(SyncTestCase):
    """A push to a phone whose storage ignores case (the relay's nocase mode)."""

    server_kwargs = {"relay": True}

    def nocase(self):
        self.srv.relay_set(nocase=True)

    def test_names_differing_by_case_are_both_kept(self):
        write_file(os.path.join(self.local, "IMG.jpg"), b"upper case photo", mtime=T0)
        write_file(os.path.join(self.local, "img.jpg"), b"lower case photo!", mtime=T0 + 1)
        write_file(os.path.join(self.local, "Album", "a.jpg"), b"album A", mtime=T0)
        write_file(os.path.join(self.local, "album", "a.jpg"), b"album a!", mtime=T0)
        write_file(os.path.join(self.local, "album", "b.jpg"), b"album b", mtime=T0)
        self.nocase()
        r = self.push("--json", expect=0)
        got = {}
        for dp, dn, fn in os.walk(self.remote):
            for n in fn:
                p = os.path.join(dp, n)
                got[os.path.relpath(p, self.remote)] = read(p)
        self.assertEqual(got, {
            "IMG.jpg": b"upper case photo",
            "img (2).jpg": b"lower case photo!",
            "Album/a.jpg": b"album A",
            "album (2)/a.jpg": b"album a!",
            "album (2)/b.jpg": b"album b",
        })
        warns = sorted(e["path"] for e in r.json() if e["event"] == "warning")
        self.assertEqual(warns, ["album", "img.jpg"], r)
        # The same mapping next run: nothing moves, nothing is renamed again.
        self.nocase()
        r = self.push("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 0, r)
        # An edit of the renamed one goes to its numbered copy.
        write_file(os.path.join(self.local, "img.jpg"), b"lower case, edited", mtime=T0 + 5)
        self.nocase()
        r = self.push("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 1, r)
        self.assertEqual(read(os.path.join(self.remote, "img (2).jpg")), b"lower case, edited")
        self.assertEqual(read(os.path.join(self.remote, "IMG.jpg")), b"upper case photo")
        self.assertEqual(len(os.listdir(self.remote)), 4)

    def test_the_phones_name_in_another_case_is_the_same_file(self):
        # The phone has PHOTO.JPG and DCIM/; the laptop calls them photo.jpg and dcim/.
        write_file(os.path.join(self.remote, "PHOTO.JPG"), b"same photo", mtime=T0)
        write_file(os.path.join(self.remote, "DCIM", "x.jpg"), b"x", mtime=T0)
        write_file(os.path.join(self.local, "photo.jpg"), b"same photo", mtime=T0)
        write_file(os.path.join(self.local, "dcim", "x.jpg"), b"x", mtime=T0)
        write_file(os.path.join(self.local, "dcim", "new.jpg"), b"new one", mtime=T0)
        self.nocase()
        r = self.push("--json", expect=0)
        self.assertEqual(summary(r)["files_done"], 1, r)
        self.assertEqual(sorted(os.listdir(self.remote)), ["DCIM", "PHOTO.JPG"])
        self.assertEqual(sorted(os.listdir(os.path.join(self.remote, "DCIM"))), ["new.jpg", "x.jpg"])
        # The laptop edits photo.jpg: the phone's PHOTO.JPG is updated, not a second file.
        write_file(os.path.join(self.local, "photo.jpg"), b"edited photo", mtime=T0 + 7)
        self.nocase()
        r = self.push("--json", expect=0)
        self.assertEqual(read(os.path.join(self.remote, "PHOTO.JPG")), b"edited photo")
        self.assertEqual(sorted(os.listdir(self.remote)), ["DCIM", "PHOTO.JPG"])

    def test_a_case_sensitive_phone_keeps_both_names(self):
        # The faithful relay (ext4 behind it): nothing renamed, no warning.
        write_file(os.path.join(self.local, "IMG.jpg"), b"upper", mtime=T0)
        write_file(os.path.join(self.local, "img.jpg"), b"lower", mtime=T0)
        write_file(os.path.join(self.remote, "Existing.txt"), b"e", mtime=T0)
        r = self.push("--json", expect=0)
        self.assertEqual(sorted(os.listdir(self.remote)), ["Existing.txt", "IMG.jpg", "img.jpg"])
        self.assertEqual([e for e in r.json() if e["event"] == "warning"], [])

    def test_empty_phone_is_probed_before_names_collide(self):
        # Nothing on the phone to ask about: a probe folder tells, and goes again.
        write_file(os.path.join(self.local, "A.txt"), b"A", mtime=T0)
        write_file(os.path.join(self.local, "a.txt"), b"a", mtime=T0)
        self.nocase()
        self.push(expect=0)
        self.assertEqual(sorted(os.listdir(self.remote)), ["A.txt", "a (2).txt"])
        self.assertEqual(read(os.path.join(self.remote, "a (2).txt")), b"a")


if __name__ == "__main__":
    unittest.main()
