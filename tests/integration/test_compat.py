"""Other server implementations phones run: the same pull, push and no-change re-run against

DropbearTest          Dropbear (SimpleSSHD and many phone apps) with OpenSSH's sftp-server
GesftpserverTest      OpenSSH sshd with Green End's gesftpserver (a different sftp-server)
DropbearGesftpTest    Dropbear with gesftpserver
PlainV3Test           OpenSSH sshd with evil_sftp.py in its faithful mode: a bare SFTP v3
                      server with no extensions (no limits@, posix-rename@, fsync@), and reads
                      capped at 256 KiB, so phsync's fall-backs are used
Dropbear needs root here (its authorized_keys path is fixed, so the harness runs it in a private
mount namespace); the classes skip with the reason when a server is unavailable.
"""

import os
import sys
import unittest

from harness import (EVIL_SFTP, GESFTPSERVER, SyncTestCase, leftovers, sample_tree, tree, write_file,
                     random_bytes)

T0 = 1700000000
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


class _Compat:

    def test_pull_push_rerun(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.remote, "DCIM/Camera/VID_big.mp4"), random_bytes(9_000_001, 4), mtime=T0)
        self.pull(expect=0, timeout=120)
        self.assertTreesEqual(self.remote, self.local)
        before = tree(self.local, hashes=False)
        self.pull(expect=0)
        after = tree(self.local, hashes=False)
        for k, b in before.items():
            if b.type == "f":
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), k)
        dst = os.path.join(self.remote, "back")
        self.push(dst=dst, expect=0, timeout=120)
        self.assertTreesEqual(self.local, dst)
        before = tree(dst, hashes=False)
        self.push(dst=dst, expect=0)
        after = tree(dst, hashes=False)
        for k, b in before.items():
            if b.type == "f":
                self.assertEqual((after[k].ino, after[k].ctime_ns), (b.ino, b.ctime_ns), k)
        self.assertEqual(leftovers(self.local) + leftovers(self.remote), [])

    def test_update_over_existing_file(self):
        # Without posix-rename a plain SFTP v3 rename fails when the target exists. The
        # file is synced first, so the second push replaces it (a file met on first
        # contact with other content is never overwritten: test_rules.py).
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "a.jpg"), b"one", mtime=T0)
        self.push(expect=0)
        write_file(os.path.join(self.local, "a.jpg"), b"two!", mtime=T0 + 1)
        self.push(expect=0)
        with open(os.path.join(self.remote, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"two!")
        self.assertEqual(leftovers(self.remote), [])


class DropbearTest(_Compat, SyncTestCase):
    server_kwargs = {"kind": "dropbear"}


class GesftpserverTest(_Compat, SyncTestCase):
    server_kwargs = {"sftp_server": GESFTPSERVER}


class DropbearGesftpTest(_Compat, SyncTestCase):
    server_kwargs = {"kind": "dropbear", "sftp_server": GESFTPSERVER}


class PlainV3Test(_Compat, SyncTestCase):
    server_kwargs = {"subsystem": "%s %s" % (PY, EVIL_SFTP)}


if __name__ == "__main__":
    unittest.main()
