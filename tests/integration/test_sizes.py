# SPDX-License-Identifier: ISC
"""Files a person can hold in their head (issue 23): no C source or header of the program
(src/, platform/, include/) over 1,000 lines, and no function in them over 120 lines.

Functions are found the way the code is written (STYLE.md, KNF as in openrsync): the name at
the start of a line, the body's opening brace alone on a line, its closing brace at the start
of a line. A function counts from its name's line to its closing brace. The test names every
file and function over its limit, so a new one cannot land beside the rule unseen.
"""

import os
import re
import unittest

from harness import REPO

FILE_LINES = 1000
FUNCTION_LINES = 120
TOPS = ("src", "platform", "include")
NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def sources():
    for top in TOPS:
        for d, _, files in os.walk(os.path.join(REPO, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def functions(lines):
    """(name, first line, line count) of every function body in a C file's lines."""
    start = None
    for i, line in enumerate(lines):
        if line == "{":
            j = i - 1
            while j > 0 and not NAME.match(lines[j]):
                j -= 1
            m = NAME.match(lines[j])
            start = (m.group(1) if m else "?", j)
        elif start is not None and line.startswith("}") and not line.startswith("};"):
            yield start[0], start[1] + 1, i - start[1] + 1
            start = None


class SizeTest(unittest.TestCase):
    def test_the_finder_sees_functions(self):
        # The rule only means something if the finder finds the code's functions: a known
        # one is found with its true length, and a real tree has hundreds.
        text = ["static int", "f(int a)", "{", "\tif (a) {", "\t\treturn 1;", "\t}",
                "\treturn 0;", "}", "struct s x = {", "};"]
        self.assertEqual(list(functions(text)), [("f", 2, 7)])
        n = sum(1 for p in sources() for _ in functions(open(p, errors="replace")
                                                         .read().split("\n")))
        self.assertGreater(n, 500)

    def test_no_file_or_function_too_long(self):
        over = []
        for p in sources():
            with open(p, errors="replace") as f:
                lines = f.read().split("\n")
            rel = os.path.relpath(p, REPO)
            if len(lines) - 1 > FILE_LINES:
                over.append("%s: %d lines (at most %d)" % (rel, len(lines) - 1, FILE_LINES))
            for name, at, n in functions(lines):
                if n > FUNCTION_LINES:
                    over.append("%s:%d: %s is %d lines (at most %d)"
                                % (rel, at, name, n, FUNCTION_LINES))
        self.assertEqual(over, [], "\n" + "\n".join(over))


if __name__ == "__main__":
    unittest.main()
