# SPDX-License-Identifier: ISC
"""Names a Windows folder cannot hold (issue 27): a phone (Linux) folder can hold `a:b.jpg`,
`CON.txt`, `what?.jpg` or a folder `dir.`; a Windows laptop cannot, and neither can a FAT, exFAT
or NTFS folder on any OS (a memory card, a USB stick). A pull into such a folder reports each
such name and skips it (with what is under it), never writing it under another name; every
other file arrives, later runs move nothing and say the same, --delete still works, and a
two-way run neither copies nor deletes them on the phone. The same names pulled into an ext4
folder arrive as they are (the destination is asked, not the OS guessed).

The folder is a real NTFS file system (mkntfs) mounted through FUSE by ntfs-3g with its
windows_names option, which refuses exactly the names Windows refuses (fusefat, a FAT one, was
tried first: it refuses `:` too, but its rename resets a file's mtime, so no tool keeps times
there). On Windows itself the same rule applies to every pull (tested under Wine once
phsync.exe runs there)."""

import os
import shutil
import subprocess
import unittest

from harness import SyncTestCase, skip_or_fail, write_file

T0 = 1700000000

BAD = sorted(["a:b.jpg", "CON.txt", "dir.", "sub/what?.jpg"])          # reported, one line each
GOOD = {"ok.jpg": b"ok photo", "sub/fine.jpg": b"fine photo", "sub/z.txt": b"zz"}


class WindowsFolder:
    """An NTFS image of 32 MB mounted at mnt by ntfs-3g -o windows_names."""

    def __init__(self, test, ignore_case=False):
        tools = [shutil.which(t) for t in ("mkntfs", "ntfs-3g", "lowntfs-3g")]
        if None in tools or not os.path.exists("/dev/fuse") or os.geteuid() != 0:
            skip_or_fail("ntfs-3g", "mkntfs, ntfs-3g, /dev/fuse and root are needed")
        self.img = os.path.join(test.tmp, "card.img")
        self.mnt = os.path.join(test.tmp, "card")
        os.makedirs(self.mnt)
        with open(self.img, "wb") as f:
            f.truncate(32 << 20)
        subprocess.run(["mkntfs", "-F", "-f", "-q", self.img], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # (ignore_case: lowntfs-3g's, a folder that ignores case as a Windows or macOS
        # laptop's does by default.)
        p = subprocess.run(["lowntfs-3g", "-o", "windows_names,ignore_case", self.img, self.mnt]
                           if ignore_case else
                           ["ntfs-3g", "-o", "windows_names", self.img, self.mnt],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            skip_or_fail("ntfs-3g", "ntfs-3g cannot mount here: %s" % p.stderr.decode())
        test.addCleanup(subprocess.run, ["umount", self.mnt], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        # The point of the test: this folder refuses a name Windows refuses.
        with test.assertRaises(OSError):
            open(os.path.join(self.mnt, "probe:x"), "wb").close()


def files(root):
    out = {}
    for dp, dn, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


class WinNamesTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        for rel, data in GOOD.items():
            write_file(os.path.join(self.remote, rel), data, mtime=T0)
        for rel in ("a:b.jpg", "CON.txt", "dir./x.jpg", "dir./y.jpg", "sub/what?.jpg"):
            write_file(os.path.join(self.remote, rel), b"bad " + rel.encode(), mtime=T0)

    def skips(self, r):
        return sorted(e["path"] for e in r.json() if e.get("event") == "skip" and
                      e.get("reason") == "name")

    def test_pull_to_a_windows_folder_skips_what_it_cannot_hold(self):
        card = WindowsFolder(self)
        dst = os.path.join(card.mnt, "Pictures")
        r = self.pull("--json", dst=dst, expect=0)
        self.assertEqual(self.skips(r), BAD, r)
        self.assertEqual(files(dst), GOOD)
        for rel in GOOD:
            self.assertEqual(os.stat(os.path.join(dst, rel)).st_mtime, T0)
        summary = r.json()[-1]
        self.assertEqual(summary["files_done"], len(GOOD), r)
        # Said without -v too, on stderr, each name once.
        r = self.pull(dst=dst, expect=0)
        for rel in BAD:
            self.assertEqual(r.err.count("%s: this folder cannot hold the name" % rel), 1, r)
        self.assertIn("CON.txt: this folder cannot hold the name, a name Windows reserves for a device", r.err)
        # Nothing else moved on the second run, nothing was mangled, no temp left.
        r = self.pull("--json", dst=dst, expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertEqual(self.skips(r), BAD, r)
        self.assertEqual(files(dst), GOOD)
        self.assertNoLeftovers(dst)
        # --delete still deletes what the phone no longer has, and only that.
        os.remove(os.path.join(self.remote, "sub", "z.txt"))
        r = self.pull("--json", "--delete", dst=dst, expect=0)
        want = dict(GOOD)
        del want["sub/z.txt"]
        self.assertEqual(files(dst), want)
        self.assertEqual(self.skips(r), BAD, r)
        # The phone kept every name.
        self.assertTrue(os.path.exists(os.path.join(self.remote, "a:b.jpg")))

    def test_an_ext4_folder_gets_every_name(self):
        r = self.pull("--json", expect=0)
        self.assertEqual(self.skips(r), [], r)
        self.assertEqual(len(files(self.local)), len(GOOD) + 5)
        self.assertEqual(files(self.local)["a:b.jpg"], b"bad a:b.jpg")

    def test_two_way_with_a_windows_folder_leaves_the_phone_names_alone(self):
        card = WindowsFolder(self)
        dst = os.path.join(card.mnt, "Pictures")
        os.makedirs(dst)
        write_file(os.path.join(dst, "laptop.txt"), b"from the laptop", mtime=T0)
        phone_before = files(self.remote)
        argv = ["sync", "-F", self.srv.config, "--json", "phone:" + self.remote, dst]
        r = self.srv.run(argv)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.skips(r), BAD, r)
        want = dict(GOOD)
        want["laptop.txt"] = b"from the laptop"
        self.assertEqual(files(dst), want)
        phone_before["laptop.txt"] = b"from the laptop"
        self.assertEqual(files(self.remote), phone_before)
        # Settled: the next run moves and deletes nothing on either side.
        r = self.srv.run(argv)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertEqual(files(self.remote), phone_before)
        self.assertEqual(files(dst), want)



class CaseFoldingPullTest(SyncTestCase):
    """A pull with a state into a folder that ignores case: the scan takes no file out as
    recorded (sync/pairs.c asks the folder first, by one file's name with its case swapped),
    so the run's name matching still sees every name that differs in case alone and keeps
    such files apart run after run; nothing moves on a second run, and a change still does."""

    def test_names_that_differ_in_case_alone_stay_apart(self):
        card = WindowsFolder(self, ignore_case=True)
        dst = os.path.join(card.mnt, "Pictures")
        state = os.path.join(self.tmp, "state")
        for i in range(300):
            write_file(os.path.join(self.remote, "dcim", "p%03d.jpg" % i), b"%d" % i, mtime=T0 + i)
        write_file(os.path.join(self.remote, "dcim", "IMG_1.JPG"), b"upper", mtime=T0)
        write_file(os.path.join(self.remote, "dcim", "img_1.jpg"), b"lower", mtime=T0 + 1)
        self.pull("--state-dir", state, dst=dst, expect=0)
        first = files(dst)
        self.assertEqual(len(first), 302, sorted(first))
        self.assertEqual(sorted(v for k, v in first.items() if v in (b"upper", b"lower")),
                         [b"lower", b"upper"])
        for _ in range(2):
            r = self.pull("--state-dir", state, "--json", dst=dst, expect=0)
            self.assertEqual([e["path"] for e in r.json() if e["event"] == "file"], [])
            self.assertEqual(files(dst), first)
        write_file(os.path.join(self.remote, "dcim", "p007.jpg"), b"changed", mtime=T0 + 999)
        write_file(os.path.join(self.remote, "dcim", "img_1.jpg"), b"lower 2", mtime=T0 + 998)
        r = self.pull("--state-dir", state, "--json", dst=dst, expect=0)
        copied = sorted(e["path"] for e in r.json() if e["event"] == "file")
        self.assertEqual(len(copied), 2, copied)
        self.assertEqual(copied[1], "dcim/p007.jpg")
        self.assertTrue(copied[0].startswith("dcim/img_1"), copied)
        # (This folder keeps its names in lower case.)
        now = files(dst)
        self.assertEqual(sorted(now.values()).count(b"upper"), 1)
        self.assertEqual(sorted(now.values()).count(b"lower 2"), 1)
        self.assertNotIn(b"lower", now.values())
        self.assertEqual(now["dcim/p007.jpg"], b"changed")
        self.assertEqual(len(now), 302)

if __name__ == "__main__":
    unittest.main()
