#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Runs unittest modules the way ctest needs them: `python3 -m unittest -v` exits 0 when every
test was skipped, so ctest would count a file whose server could not start as passed.

    python3 run_unittest.py MODULE [MODULE.Class[.test] ...]

Exit codes: 0 every test ran and passed; 1 a failure or error; 77 (SKIP_CODE) all that ran
passed but at least one test was skipped (tests/CMakeLists.txt sets SKIP_RETURN_CODE 77, so
ctest lists the file as "Skipped"/"Not Run" with its reasons in the output); 5 no tests found.
The skip reasons are repeated at the end of the output.  A skip that PHSYNC_REQUIRE forbids is
not a skip but a failure (harness.skip_or_fail).
"""

import os
import sys
import unittest

SKIP_CODE = 77


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    # As `python3 -m unittest` does: the test modules are found in the working directory.
    sys.path.insert(0, os.getcwd())
    suite = unittest.defaultTestLoader.loadTestsFromNames(argv)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0 and not result.skipped:
        sys.stderr.write("run_unittest: no tests found in %s\n" % " ".join(argv))
        return 5
    if result.skipped:
        sys.stderr.write("\nrun_unittest: SKIPPED %d (a class skipped in setUpClass counts once; %d ran):\n"
                         % (len(result.skipped), result.testsRun))
        for test, reason in result.skipped:
            sys.stderr.write("  %s: %s\n" % (test.id(), reason))
        return SKIP_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
