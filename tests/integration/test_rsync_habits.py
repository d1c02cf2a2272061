# SPDX-License-Identifier: ISC
"""rsync habits (issue 25, item 3), against a real sshd on 127.0.0.1.

Proves: the rsync flags that mean what phsync always does (-a -r -t -z -P -h, bundled as -avzP,
and --archive --partial --compress...) are taken, the pull works and copies bytes and mtimes,
-P turns the progress line on; the rsync flags phsync does not have are refused with exit 2,
naming the flag and phsync's way, and write nothing; a letter inside a bundle getopt does not
know is named as itself (it used to say "unknown option ... 'pull'"); phone:~/DIR is DIR in the
login's home, as for scp and sftp.
"""

import os
import shutil
import unittest

from harness import SyncTestCase, sample_tree


class RsyncHabitsTest(SyncTestCase):
    server_kwargs = {"clean_home": True}

    def test_rsync_flags_that_phsync_always_honours(self):
        sample_tree(self.remote)
        for flags in (["-avzP"], ["-a", "-v", "-z", "--partial", "-h"], ["-rth"],
                      ["--archive", "--compress", "--human-readable", "--times", "--recursive"]):
            with self.subTest(flags=flags):
                shutil.rmtree(self.local, ignore_errors=True)
                r = self.pull(*flags, "--state-dir", os.path.join(self.tmp, "st-" + flags[0]),
                              expect=0)
                self.assertTreesEqual(self.remote, self.local)
                if "-avzP" in flags:
                    self.assertIn("files copied", r.out + r.err)

    def test_rsync_flags_phsync_lacks_are_refused_with_its_way(self):
        sample_tree(self.remote)
        cases = {
            "-u": "--overwrite", "-avu": "--overwrite", "--delete-after": "--delete",
            "--del": "--delete", "-e": ".ssh/config", "--rsh=ssh -p 22": ".ssh/config",
            "--exclude-from=x": "--exclude", "--inplace": "temp file", "--bwlimit=100": "bandwidth",
            "-c": "--reset-state", "-H": "regular files",
        }
        for flag, hint in cases.items():
            with self.subTest(flag=flag):
                r = self.srv.run(["pull", "-F", self.srv.config, flag, "phone:" + self.remote,
                                  self.local])
                self.assertEqual(r.code, 2, r)
                self.assertIn("rsync's " + flag.split("=")[0].replace("-avu", "-u"), r.err)
                self.assertIn(hint, r.err)
                self.assertFalse(os.path.exists(self.local))

    def test_an_option_argument_is_never_taken_for_rsync_flags(self):
        sample_tree(self.remote)
        os.makedirs(os.path.join(self.remote, "-avz"), exist_ok=True)
        with open(os.path.join(self.remote, "-avz", "x.txt"), "w") as f:
            f.write("x")
        # "-avz" is --exclude's argument here, not rsync's -a -v -z.
        self.pull("--exclude", "-avz", "-a", expect=0)
        self.assertFalse(os.path.exists(os.path.join(self.local, "-avz")))
        self.assertTrue(os.path.exists(os.path.join(self.local, "top.txt")))

    def test_unknown_letter_in_a_bundle_is_named(self):
        r = self.srv.run(["pull", "-vk", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)
        self.assertIn("'-k'", r.err)
        self.assertNotIn("'pull'", r.err)
        self.assertFalse(os.path.exists(self.local))

    def test_tilde_is_the_login_home(self):
        home = self.srv.login_home
        src = os.path.join(home, "DCIM")
        self.addCleanup(shutil.rmtree, src, True)
        sample_tree(src)
        self.pull(src="~/DCIM", expect=0)
        self.assertTreesEqual(src, self.local)
        back = os.path.join(home, "Backup")
        self.addCleanup(shutil.rmtree, back, True)
        self.push(dst="~/Backup", expect=0)
        self.assertTreesEqual(self.local, back)


if __name__ == "__main__":
    unittest.main()
