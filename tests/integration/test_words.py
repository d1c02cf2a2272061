"""What phsync says, word for word (issue 25, item 8), against a real sshd on 127.0.0.1.

Proves: `backup -v` names a file deleted since the last archive as such ("recorded as deleted
PATH"; it printed "recorded PATH").
"""

import json
import os
import unittest

from harness import SyncTestCase, write_file

T0 = 1700000000


class WordsTest(SyncTestCase):

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
