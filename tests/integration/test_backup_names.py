# SPDX-License-Identifier: ISC
"""Archive names beyond ASCII (issue 25, item 5): a backup of a phone folder whose names are
NFC and NFD accents (both in one folder), CJK, emoji and spaces is read back by GNU tar and bsdtar with every name
as it was and without a word on stderr (libarchive wrote `hdrcharset=BINARY` records, which GNU
tar warns about, when phsync ran in the C locale); verify and restore take it back too.
"""

import os
import subprocess
import unicodedata
import unittest

from harness import SyncTestCase, write_file

T0 = 1700000000

NAMES = [
    "DCIM/Camera/caf\u00e9 \u00e9t\u00e9.jpg",          # NFC
    "DCIM/Camera/cafe\u0301 e\u0301te\u0301.jpg",       # NFD
    "DCIM/\u5199\u771f/\u732b.png",                     # CJK folder and file
    "Documents/\U0001f4f7 notes \u00fc\u00df.txt",      # emoji
    "Music/\u0416\u0443\u043a/\u00c5ngstr\u00f6m.mp3",  # Cyrillic folder
]


class BackupNamesTest(SyncTestCase):

    def test_non_ascii_names_read_back_without_warnings(self):
        for i, n in enumerate(NAMES):
            write_file(os.path.join(self.remote, n), ("file %d\n" % i).encode() * 100, mtime=T0 + i)
        arch = os.path.join(self.tmp, "backups")
        os.makedirs(arch)
        env = {"LC_ALL": "C", "LANG": "C"}   # the locale cron and systemd give
        tenv = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")   # a terminal reading it back
        for ext, flag in ((".tar", None), (".tar.zst", "--zstd"), (".tar.gz", "-z")):
            with self.subTest(ext=ext):
                a = os.path.join(arch, "names" + ext)
                r = self.srv.run(["backup", "-F", self.srv.config, "--state-dir",
                                  os.path.join(self.tmp, "state" + ext), "phone:" + self.remote, a],
                                 env=env)
                self.assertEqual(r.code, 0, r)
                for argv in (["tar"] + ([flag] if flag else []) + ["-tf", a], ["bsdtar", "-tf", a]):
                    p = subprocess.run(argv, capture_output=True, env=tenv)
                    self.assertEqual(p.returncode, 0, p)
                    self.assertEqual(p.stderr, b"", (argv, p.stderr))
                    listed = set(p.stdout.decode("utf-8").splitlines())
                    for n in NAMES:
                        # bsdtar shows names in NFC (libarchive normalizes what it converts
                        # to the locale); GNU tar and phsync restore keep the bytes.
                        self.assertIn(unicodedata.normalize("NFC", n) if argv[0] == "bsdtar"
                                      else n, listed, argv)
                out = os.path.join(self.tmp, "x" + ext)
                os.makedirs(out)
                p = subprocess.run(["tar"] + ([flag] if flag else []) + ["-xf", a, "-C", out],
                                   capture_output=True, env=tenv)
                self.assertEqual((p.returncode, p.stderr), (0, b""), p)
                for n in NAMES:
                    with open(os.path.join(out, n), "rb") as f, \
                            open(os.path.join(self.remote, n), "rb") as g:
                        self.assertEqual(f.read(), g.read(), n)
                v = self.srv.run(["verify", a], env=env)
                self.assertEqual(v.code, 0, v)
                dst = os.path.join(self.tmp, "restored" + ext)
                r = self.srv.run(["restore", a, dst], env=env)
                self.assertEqual(r.code, 0, r)
                self.assertTreesEqual(self.remote, dst)


if __name__ == "__main__":
    unittest.main()
