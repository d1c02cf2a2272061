"""phsync doctor (issue 11): one line per check, human and --json, against OpenSSH's sshd,
Dropbear, sshd + gesftpserver and a phone-like relay (FAT times, a folder that ignores case);
what fails (closed port, unknown host key, a key that does not log in, a missing folder) gives
its exit code and skips the checks after it; nothing is left in the folder checked."""

import os

from harness import GESFTPSERVER, SyncTestCase, free_port, tree, write_file

CHECKS = ["reachable", "host_key", "key_login", "sftp", "extensions", "exec", "folder", "times",
          "case", "free_space"]


class DoctorMixin:

    def doctor(self, *args, config=None, target=None, expect=0):
        r = self.srv.run(["doctor", "-F", config or self.srv.config, "--json"] + list(args)
                         + [target or "phone:" + self.remote])
        self.assertEqual(r.code, expect, r)
        events = r.json()
        self.assertEqual([e["check"] for e in events[:-1]], CHECKS, r)
        self.assertEqual(events[-1]["event"], "doctor")
        self.assertEqual(events[-1]["exit"], expect)
        for e in events[:-1]:
            self.assertEqual(e["event"], "check")
            self.assertIn(e["status"], ("ok", "warn", "fail", "skip"))
            self.assertTrue(e["detail"], e)
        return {e["check"]: e for e in events[:-1]}

    def assertNothingLeft(self, before):
        self.assertEqual(sorted(tree(self.remote)), sorted(before))


class DoctorOpenSSHTest(DoctorMixin, SyncTestCase):

    def test_everything_works(self):
        write_file(os.path.join(self.remote, "IMG_1.jpg"), b"photo", mtime=1700000000)
        before = tree(self.remote)
        c = self.doctor()
        for name in CHECKS:
            self.assertEqual(c[name]["status"], "ok", c[name])
        self.assertIn("OpenSSH", c["reachable"]["detail"])
        self.assertEqual(c["host_key"]["value"], self.srv.host_fingerprint)
        self.assertEqual(c["key_login"]["value"], self.srv.user)
        self.assertEqual(c["extensions"]["value"].split(","),
                         ["posix-rename", "fsync", "copy-data", "limits", "statvfs", "hardlink"])
        self.assertIn("261120", c["extensions"]["detail"])  # limits@openssh.com's request size
        self.assertEqual(c["exec"]["status"], "ok")
        self.assertEqual(c["times"]["value"], "exact")
        self.assertEqual(c["case"]["value"], "sensitive")
        st = os.statvfs(self.remote)
        self.assertAlmostEqual(int(c["free_space"]["value"]), st.f_bavail * st.f_frsize,
                               delta=256 << 20)
        self.assertNothingLeft(before)
        # The human form: one line per check, status first.
        r = self.srv.run(["doctor", "-F", self.srv.config, "phone:" + self.remote])
        self.assertEqual(r.code, 0, r)
        lines = r.out.splitlines()
        self.assertEqual([l.split()[:2] for l in lines[:10]], [["ok", n] for n in CHECKS])
        self.assertEqual(lines[10], "A sync can run.")

    def test_login_folder_by_default(self):
        c = self.doctor(target="phone")
        self.assertEqual(c["folder"]["value"], ".")
        self.assertEqual(c["times"]["status"], "ok")

    def test_closed_port(self):
        cfg = self.srv.write_config(port=free_port())
        c = self.doctor(config=cfg, expect=3)
        self.assertEqual(c["reachable"]["status"], "fail")
        self.assertEqual({c[n]["status"] for n in CHECKS[1:]}, {"skip"})

    def test_unknown_host_key_is_not_accepted(self):
        cfg = self.srv.write_config(known_hosts="none", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        c = self.doctor(config=cfg, expect=4)
        self.assertEqual(c["reachable"]["status"], "ok")
        self.assertEqual(c["host_key"]["status"], "fail")
        self.assertEqual(c["host_key"]["value"], self.srv.host_fingerprint)
        self.assertEqual({c[n]["status"] for n in CHECKS[2:]}, {"skip"})
        with open(kh) as f:
            self.assertEqual(f.read(), "")

    def test_changed_host_key(self):
        c = self.doctor(config=self.srv.write_config(known_hosts="wrong"), expect=4)
        self.assertIn("MISMATCH", c["host_key"]["detail"])

    def test_key_that_does_not_log_in(self):
        c = self.doctor(config=self.srv.write_config(identity="wrong"), expect=3)
        self.assertEqual([c[n]["status"] for n in CHECKS[:3]], ["ok", "ok", "fail"])
        self.assertIn("phsync pair", c["key_login"]["detail"])

    def test_missing_folder(self):
        c = self.doctor(target="phone:" + os.path.join(self.remote, "nope"), expect=1)
        self.assertEqual(c["folder"]["status"], "fail")
        self.assertEqual([c[n]["status"] for n in ("times", "case", "free_space")], ["skip"] * 3)
        self.assertFalse(os.path.exists(os.path.join(self.remote, "nope")))


class DoctorDropbearTest(DoctorMixin, SyncTestCase):
    server_kwargs = {"kind": "dropbear"}

    def test_report(self):
        before = tree(self.remote)
        c = self.doctor()
        self.assertIn("dropbear", c["reachable"]["detail"])
        self.assertEqual({c[n]["status"] for n in CHECKS}, {"ok"})
        self.assertIn("posix-rename", c["extensions"]["value"].split(","))
        self.assertEqual(c["times"]["value"], "exact")
        self.assertNothingLeft(before)


class DoctorGesftpserverTest(DoctorMixin, SyncTestCase):
    server_kwargs = {"sftp_server": GESFTPSERVER}

    def test_report(self):
        before = tree(self.remote)
        c = self.doctor()
        exts = c["extensions"]["value"].split(",")
        # Green End's server: posix-rename, fsync, statvfs, but no copy-data and no limits.
        self.assertIn("posix-rename", exts)
        self.assertNotIn("copy-data", exts)
        self.assertNotIn("limits", exts)
        self.assertEqual(c["extensions"]["status"], "warn")
        self.assertIn("missing: copy-data", c["extensions"]["detail"])
        self.assertEqual({c[n]["status"] for n in CHECKS if n != "extensions"}, {"ok"})
        self.assertEqual(c["times"]["value"], "exact")
        self.assertNothingLeft(before)


class DoctorPhoneLikeTest(DoctorMixin, SyncTestCase):
    """A phone's shared storage: FAT times (2 s steps) and names that ignore case."""
    server_kwargs = {"relay": True}

    def test_fat_times_and_no_case(self):
        self.srv.relay_set(mtime_step=2, nocase=True)
        before = tree(self.remote)
        c = self.doctor()
        self.assertEqual(c["times"]["value"], "2s", c["times"])
        self.assertEqual(c["times"]["status"], "warn")
        self.assertIn("--modify-window 2", c["times"]["detail"])
        self.assertEqual(c["case"]["value"], "insensitive", c["case"])
        self.assertNothingLeft(before)
