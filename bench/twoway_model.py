#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The two-way model test run long (issue 26; not in CI): tests/lib/twoway_model.py's seeded
rounds of edits, creates, deletes, moves and conflicting edits on both sides, each followed
by `phsync sync` against a loopback sshd (tests/lib/harness.py), the outcome compared with the
model after every round.  Stops at the first disagreement, naming the seed and the round (run
again with that seed to see it again; --keep leaves the folders).

    bench/twoway_model.py [--seed N] [--rounds N] [--phsync PATH] [--keep]
"""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))

import harness  # noqa: E402
import twoway_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--phsync", default=os.path.join(HERE, "..", "build", "phsync"))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.environ["PHSYNC_BIN"] = os.path.abspath(a.phsync)
    tmp = tempfile.mkdtemp(prefix="phsync-twoway-")
    local, remote = os.path.join(tmp, "laptop"), os.path.join(tmp, "phone")
    os.makedirs(local)
    os.makedirs(remote)
    srv, _ = harness.start_bench_server(os.path.join(tmp, "sshd"))
    code = 0
    try:
        m = twoway_model.Model(a.seed, local, remote)
        m.first_contact()
        for rnd in range(a.rounds):
            if rnd > 0:
                m.round()
            expected, conflicts = m.expect()
            r = srv.run(["sync", "-F", srv.config, "--helper", "never", "--max-delete-percent", "100",
                         "phone:" + remote, local])
            wrong = m.check(expected, conflicts)
            if r.code != (5 if conflicts else 0):
                wrong.append("exit %d, the model says %d" % (r.code, 5 if conflicts else 0))
            if wrong:
                print("seed %d round %d: %s\n%r" % (a.seed, rnd, "\n".join(wrong), r))
                code = 1
                break
            if rnd % 50 == 0:
                print("seed %d: round %d ok (%d files)" % (a.seed, rnd, len(expected)), flush=True)
        else:
            print("seed %d: %d rounds ok" % (a.seed, a.rounds))
    finally:
        srv.stop()
        if a.keep or code:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
