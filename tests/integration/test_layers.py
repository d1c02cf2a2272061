# SPDX-License-Identifier: ISC
"""The layering (issue 23): which part of src/ may use which is written once, in CMakeLists.txt
(PH_PARTS, in an order where each part comes after every part it uses, and PH_USES_<part>), and
the build compiles each part seeing only those parts' headers.  This test reads the same table
and every #include of the tree, and names any edge the table does not allow (the compiler would
only say "no such file"), any circle, and any include that reaches around the table by a
relative path.  The command (src/cli) and the watcher (src/watch) use libphsync only through
include/phsync/ (and cli uses watch, which is part of the same program).
"""

import os
import re
import unittest

from harness import REPO

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def table():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        text = f.read()
    parts = re.search(r"^set\(PH_PARTS ([a-z ]+)\)", text, re.M).group(1).split()
    uses = {}
    for p in parts:
        m = re.search(r"^set\(PH_USES_%s( [a-z ]+)?\)" % p, text, re.M)
        uses[p] = (m.group(1) or "").split() if m else None
    return parts, uses


def headers():
    """header file name -> the folder (part) that holds it"""
    owner = {}
    for d in os.listdir(os.path.join(REPO, "src")):
        full = os.path.join(REPO, "src", d)
        if os.path.isdir(full):
            for f in os.listdir(full):
                if f.endswith(".h"):
                    owner.setdefault(f, set()).add(d)
    for f in os.listdir(os.path.join(REPO, "platform")):
        if f.endswith(".h"):
            owner.setdefault(f, set()).add("platform")
    return owner


def sources(part):
    d = os.path.join(REPO, "src", part)
    for f in sorted(os.listdir(d)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                yield f, fh.read()


class LayersTest(unittest.TestCase):

    def test_table_has_every_part_once_and_no_circle(self):
        parts, uses = table()
        self.assertEqual(len(parts), len(set(parts)))
        for i, p in enumerate(parts):
            self.assertIsNotNone(uses[p], "no PH_USES_%s in CMakeLists.txt" % p)
            for u in uses[p]:
                self.assertIn(u, parts[:i], "%s uses %s, which is not before it" % (p, u))
        lib = {d for d in os.listdir(os.path.join(REPO, "src"))
               if os.path.isdir(os.path.join(REPO, "src", d))} - {"cli", "watch"}
        self.assertEqual(sorted(lib), sorted(parts), "a folder of src/ outside the table")

    def test_every_include_is_an_allowed_edge(self):
        parts, uses = table()
        owner = headers()
        bad = []
        for p in parts + ["cli", "watch"]:
            allowed = {p, "platform"} | set(uses.get(p) or [])
            if p == "cli":
                allowed = {"cli", "watch"}
            if p == "watch":
                allowed = {"watch"}
            for f, text in sources(p):
                for inc in INCLUDE.findall(text):
                    if inc.startswith("phsync/") or inc in ("ph_config.h",):
                        continue
                    if "/" in inc:
                        bad.append("src/%s/%s includes \"%s\" by a path" % (p, f, inc))
                        continue
                    where = owner.get(inc)
                    if where is None:
                        continue   # a generated or standalone header (checked by the build)
                    if not where & allowed:
                        bad.append("src/%s/%s includes %s (part %s): not in PH_USES_%s"
                                   % (p, f, inc, "/".join(sorted(where)), p))
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
