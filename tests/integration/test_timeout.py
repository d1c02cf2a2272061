# SPDX-License-Identifier: ISC
"""A server that stops answering: --timeout gives up with a clear message and exit 3 (well
before the default limit) and writes nothing.  (A server that stops in the middle of a listing
or a transfer: test_hostile_relay.HangTest.)  The sftp subsystem here is a program that reads
and never answers."""

import os
import subprocess
import unittest

from harness import SyncTestCase, leftovers, write_file


class SilentServerTest(SyncTestCase):
    server_kwargs = {"subsystem": "/bin/sleep 600"}

    def test_timeout_on_silent_server(self):
        write_file(os.path.join(self.remote, "IMG_1.jpg"), b"x" * 1000, mtime=1700000000)
        # A bound, not a measurement: with --timeout 2 the run must end on its own well before
        # the default 60 s silence limit would end it.
        try:
            r = self.pull("--timeout", "2", timeout=45)
        except subprocess.TimeoutExpired:
            self.fail("--timeout 2 did not end the run within 45 s")
        self.assertEqual(r.code, 3, r)
        self.assertIn("no SFTP greeting", r.err)
        self.assertFalse(os.path.lexists(self.local), "LOCALDIR created for a silent server")

    def test_timeout_must_be_a_positive_number(self):
        for bad in ("0", "-1", "x", "", "86401"):
            r = self.pull("--timeout", bad, timeout=30)
            self.assertEqual(r.code, 2, (bad, r))
            self.assertIn("--timeout", r.err)


if __name__ == "__main__":
    unittest.main()
