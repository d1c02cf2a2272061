# SPDX-License-Identifier: ISC
"""What phsync says, word for word (issue 25, item 8), against a real sshd on 127.0.0.1.

Proves: the summary line counts in words that agree ("1 of 1 file copied", "1 folder made",
a dry run's "would be made"; "not reached" only when some were); a run that ended before it
knew any file (no connection) prints only its error; the progress line and --json's progress
events name the file whose bytes are moving, not "0 of 0 files copied"; `backup -v` names a file deleted since the last archive as such ("recorded as deleted
PATH"; it printed "recorded PATH").
"""

import json
import os
import sys
import unittest

from harness import SyncTestCase, write_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from linkproxy import LinkProxy  # noqa: E402

T0 = 1700000000


class WordsTest(SyncTestCase):

    def test_summary_counts_in_agreeing_words(self):
        write_file(os.path.join(self.remote, "DCIM/a.jpg"), b"a" * 1000, mtime=T0)
        r = self.pull("-n", "-v", expect=0)
        self.assertRegex(r.err, r"dry run: 1 of 1 file would be copied \(0\.0 MB\), \d+ folders? "
                                r"would be made, 0 skipped, 0 failed, ")
        self.assertNotIn("not reached", r.err)
        r = self.pull("-v", expect=0)
        self.assertRegex(r.err, r"(^|\n)1 of 1 file copied \(0\.0 MB\), 1 folder made, 0 skipped, "
                                r"0 failed, [0-9.]+ s\n")
        write_file(os.path.join(self.remote, "DCIM/b.jpg"), b"b" * 1000, mtime=T0)
        os.makedirs(os.path.join(self.remote, "New"))
        r = self.pull("-v", expect=0)
        self.assertRegex(r.err, r"(^|\n)1 of 2 files copied \(0\.0 MB\), 1 folder made, ")
        r = self.srv.run(["status", "-F", self.srv.config, "phone:" + self.remote, self.local])
        self.assertIn("2 files known", r.out + r.err)

    def test_progress_names_the_file_in_flight(self):
        # A 1 MB/s link, so a 4 MB video takes seconds: progress events (every 250 ms with
        # --progress) come while its bytes move.
        write_file(os.path.join(self.remote, "DCIM/small.jpg"), b"s" * 1000, mtime=T0)
        write_file(os.path.join(self.remote, "DCIM/VID_0001.mp4"), os.urandom(4 << 20), mtime=T0)
        proxy = LinkProxy(self.srv.port, rtt_ms=2, mbit=8)
        proxy.start()
        self.addCleanup(proxy.sock.close)
        cfg = self.srv.write_config(port=proxy.port)
        r = self.pull("--json", "--progress", config=cfg, expect=0)
        prog = [e for e in r.json() if e["event"] == "progress"]
        named = [e["file"] for e in prog if "file" in e]
        self.assertIn("DCIM/VID_0001.mp4", named, prog)
        self.assertTrue(set(named) <= {"DCIM/VID_0001.mp4", "DCIM/small.jpg"}, named)
        # And a push.
        write_file(os.path.join(self.local, "DCIM/VID_0002.mp4"), os.urandom(4 << 20), mtime=T0)
        r = self.push("--json", "--progress", config=cfg, expect=0)
        named = [e["file"] for e in r.json() if e["event"] == "progress" and "file" in e]
        self.assertIn("DCIM/VID_0002.mp4", named)

    def test_verbose_says_why_there_is_no_helper(self):
        # --helper auto on a phone without phsync and nothing to bring (the harness gives no
        # static helpers): plain SFTP, quietly, but -v says why (issue 25, item 2).
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        state = ["--state-dir", os.path.join(self.tmp, "st")]
        r = self.pull("--helper", "auto", *state, expect=0)
        self.assertNotIn("helper", r.err)
        r = self.pull("--helper", "auto", "-v", "--reset-state", *state, expect=0)
        self.assertRegex(r.err, r"phsync: no helper, plain SFTP: an earlier run found no helper")
        os.unlink(os.path.join(self.local, "a.txt"))
        for f in os.listdir(os.path.join(self.tmp, "st")):
            if f.startswith("nohelper-"):
                os.unlink(os.path.join(self.tmp, "st", f))
        r = self.pull("--helper", "auto", "-v", "--json", *state, expect=0)
        infos = [e["message"] for e in r.json() if e["event"] == "info"]
        self.assertEqual(len(infos), 1, infos)
        self.assertIn("no helper, plain SFTP: ", infos[0])
        self.assertIn("no static helpers to upload", infos[0])

    def test_no_count_line_after_a_failed_connection(self):
        r = self.srv.run(["pull", "-v", "-F", self.srv.config, "nosuchhost.invalid:/x",
                          os.path.join(self.tmp, "x")])
        self.assertEqual(r.code, 3, r)
        self.assertIn("phsync: ", r.err)
        self.assertNotIn("0 of 0", r.err)

    def test_backup_names_a_recorded_deletion(self):
        write_file(os.path.join(self.remote, "DCIM/a.jpg"), b"a" * 1000, mtime=T0)
        write_file(os.path.join(self.remote, "DCIM/b.jpg"), b"b" * 1000, mtime=T0)
        arch = os.path.join(self.tmp, "backups")
        os.makedirs(arch)
        base = ["backup", "-F", self.srv.config, "--state-dir", os.path.join(self.tmp, "state")]
        r = self.srv.run(base + ["phone:" + self.remote, os.path.join(arch, "dcim.tar")])
        self.assertEqual(r.code, 0, r)
        os.unlink(os.path.join(self.remote, "DCIM/b.jpg"))
        r = self.srv.run(base + ["-v", "--incremental", "phone:" + self.remote,
                                 os.path.join(arch, "dcim.tar")])
        self.assertEqual(r.code, 0, r)
        self.assertIn("recorded as deleted DCIM/b.jpg\n", r.out)
        write_file(os.path.join(self.remote, "DCIM/c.jpg"), b"c" * 1000, mtime=T0)
        os.unlink(os.path.join(self.remote, "DCIM/a.jpg"))
        r = self.srv.run(base + ["--json", "--incremental", "phone:" + self.remote,
                                 os.path.join(arch, "dcim.tar")])
        self.assertEqual(r.code, 0, r)
        dels = [json.loads(l) for l in r.out.splitlines() if '"delete"' in l]
        self.assertEqual([(d["action"], d["path"]) for d in dels], [("recorded as deleted", "DCIM/a.jpg")])


if __name__ == "__main__":
    unittest.main()
