# SPDX-License-Identifier: ISC
"""The licence (issue 25, item 1): LICENSE is the ISC licence, and every source file the
project carries (C, headers, Python, shell, CMake) says so on one of its first lines with an
SPDX identifier, so a packager or a file copied alone knows its terms."""

import os
import subprocess
import unittest

from harness import REPO

TAG = "SPDX-License-Identifier: ISC"
CODE = (".c", ".h", ".py", ".sh", ".cmake")


def tracked():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
        return out.split("\n")
    except (OSError, subprocess.CalledProcessError):   # a tarball: no git
        return [os.path.relpath(os.path.join(d, f), REPO)
                for d, _, fs in os.walk(REPO) if "/." not in d and "/build" not in d for f in fs]


class LicenceTest(unittest.TestCase):

    def test_licence_file_is_isc(self):
        with open(os.path.join(REPO, "LICENSE")) as f:
            text = f.read()
        self.assertTrue(text.startswith("ISC License"), text[:40])
        self.assertIn("Permission to use, copy, modify, and distribute this software", text)

    def test_every_source_file_names_it(self):
        missing = []
        for rel in tracked():
            if not rel or rel.startswith("fuzz/corpus/"):
                continue
            if not (rel.endswith(CODE) or os.path.basename(rel) == "CMakeLists.txt"):
                continue
            path = os.path.join(REPO, rel)
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                head = [f.readline() for _ in range(3)]
            if not any(TAG in line for line in head):
                missing.append(rel)
        self.assertEqual(missing, [], "no '%s' in the first three lines" % TAG)


if __name__ == "__main__":
    unittest.main()
