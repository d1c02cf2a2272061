# SPDX-License-Identifier: ISC
"""Clear errors and the right exit codes.

ErrorsTest      a missing remote folder -> exit 1, the message names it, LOCALDIR not created;
                a LOCALDIR that is a regular file -> exit 1, the file untouched; a missing local
                folder to push -> exit 1; a remote DIR that is a file -> exit 1.
UnreadableTest  the server's sftp-server runs as an unprivileged user (setpriv, when we are root;
                as root, chmod 000 would not stop it), so chmod 000 really denies: one
                unreadable file, or one unreadable folder, is reported, everything else is
                synced, exit 5, no temp left; a re-run after fixing the permission completes.
"""

import os
import unittest

from harness import SyncTestCase, leftovers, sample_tree, tree, write_file

T0 = 1700000000


class ErrorsTest(SyncTestCase):

    def test_missing_remote_folder(self):
        missing = os.path.join(self.remote, "no-such-folder")
        r = self.pull(src=missing, timeout=60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("no-such-folder", r.err, "the message should name the missing folder")
        self.assertFalse(os.path.lexists(self.local), "LOCALDIR created for a missing remote folder")

    def test_missing_remote_folder_json(self):
        r = self.pull("--json", src=os.path.join(self.remote, "nope"), timeout=60)
        self.assertEqual(r.code, 1, r)
        events = r.json()
        # A failed run still ends its JSON with the summary, whose "exit" is the exit code and
        # whose "error" names the missing folder; nothing is reported as done.
        self.assertTrue(events, "no JSON at all for a failed run: %r" % (r,))
        s = events[-1]
        self.assertEqual(s["event"], "summary", r)
        self.assertEqual(s["exit"], 1, r)
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), r)
        self.assertIn("nope", s.get("error", ""), r)
        self.assertFalse([e for e in events if e["event"] in ("file", "mkdir")], r)
        self.assertFalse(os.path.lexists(self.local), "LOCALDIR created for a missing remote folder")

    def test_local_destination_is_a_file(self):
        sample_tree(self.remote)
        write_file(self.local, b"I am a file", mtime=T0)
        r = self.pull(timeout=60)
        self.assertEqual(r.code, 1, r)
        with open(self.local, "rb") as f:
            self.assertEqual(f.read(), b"I am a file")
        self.assertNotEqual(r.err.strip(), "")

    def test_push_missing_local_folder(self):
        r = self.push(src=os.path.join(self.tmp, "no-such-local"), timeout=60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("no-such-local", r.err)
        self.assertEqual(os.listdir(self.remote), [])

    def test_push_to_remote_file(self):
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "a.jpg"), b"a", mtime=T0)
        target = write_file(os.path.join(self.remote, "afile"), b"file", mtime=T0)
        r = self.push(dst=target, timeout=60)
        self.assertEqual(r.code, 1, r)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"file")


class UnreadableTest(SyncTestCase):
    server_kwargs = {"sftp_user": "nobody"} if os.geteuid() == 0 else {}

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)
        # whatever the umask, the unprivileged sftp-server must be able to read the rest
        for dp, dn, fn in os.walk(self.remote):
            for n in dn:
                os.chmod(os.path.join(dp, n), 0o755)
            for n in fn:
                os.chmod(os.path.join(dp, n), 0o644)

    def test_one_unreadable_file(self):
        secret = write_file(os.path.join(self.remote, "DCIM/Camera/secret.jpg"), b"secret", mtime=T0)
        os.chmod(secret, 0)
        r = self.pull("--json", timeout=60)
        self.assertEqual(r.code, 5, r)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "DCIM/Camera/secret.jpg")))
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False, ignore=("DCIM/Camera/secret.jpg",))
        self.assertEqual(leftovers(self.local), [])
        events = r.json()
        failed = [e for e in events if e["event"] == "file" and e.get("status") == "failed"]
        self.assertEqual([e["path"] for e in failed], ["DCIM/Camera/secret.jpg"], r)
        self.assertTrue(failed[0].get("error"), "failed event without an error text")
        s = events[-1]
        self.assertEqual((s["event"], s["files_failed"], s["exit"]), ("summary", 1, 5), r)
        # Human output names the file on stderr.
        r = self.pull(timeout=60)
        self.assertEqual(r.code, 5, r)
        self.assertIn("secret.jpg", r.err)
        # Fixed on the phone: the next run completes.
        os.chmod(secret, 0o644)
        r = self.pull(timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)

    def test_one_unreadable_folder(self):
        locked = os.path.join(self.remote, "Locked")
        write_file(os.path.join(locked, "inside.jpg"), b"inside", mtime=T0)
        os.chmod(locked, 0)
        r = self.pull(timeout=60)
        self.assertEqual(r.code, 5, r)
        self.assertIn("Locked", r.err)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False, ignore=("Locked",))
        self.assertFalse(os.path.lexists(os.path.join(self.local, "Locked", "inside.jpg")))
        self.assertEqual(leftovers(self.local), [])


if __name__ == "__main__":
    unittest.main()
