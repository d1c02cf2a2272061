# SPDX-License-Identifier: ISC
"""phsync doctor (issues 11, 25): one line per check, human and --json, against OpenSSH's
sshd, Dropbear, ProFTPD (mod_sftp), sshd + gesftpserver, a phone-like relay (FAT times, a
folder that ignores case) and a paramiko-style phone app (SFTP only: no commands, no
extensions); what fails (closed port, unknown host key, a key that does not log in, a missing
folder) gives its exit code and skips the checks after it; nothing is left in the folder
checked.

Issue 25: what doctor says about the helper, the deltas of a pull and of a push, and the
channel window is checked against the same server: a real pull of an edited file and a real
push of an edited file (--helper auto, as a sync runs by default) must use the helper and move
deltas exactly where doctor said they would (assertClaimsHold)."""

import os

from harness import (EVIL_SFTP, GESFTPSERVER, SyncTestCase, free_port, phsync_bin, random_bytes,
                     tree, write_file)

CHECKS = ["reachable", "host_key", "key_login", "sftp", "window", "exec", "helper", "extensions",
          "folder", "times", "case", "free_space", "pull_deltas", "push_deltas"]
T0 = 1700000000
PY = "/usr/bin/python3"
# The static helpers this build made (PHSYNC_HELPERS=all makes the x86_64 one).
HELPERS = {"PHSYNC_HELPER_DIR": os.path.join(os.path.dirname(phsync_bin()), "helpers")}
# A phone app that serves SFTP and nothing else (paramiko's ServerInterface refuses exec by
# default): every command but the SFTP server fails.
SFTP_ONLY = ('ForceCommand case "$SSH_ORIGINAL_COMMAND" in *evil_sftp.py*) exec '
             '$SSH_ORIGINAL_COMMAND;; *) echo "this phone serves SFTP only" >&2; exit 1;; esac')


class DoctorMixin:
    env = None   # the environment of doctor and of the syncs that check its claims

    def doctor(self, *args, config=None, target=None, expect=0):
        r = self.srv.run(["doctor", "-F", config or self.srv.config, "--json"] + list(args)
                         + [target or "phone:" + self.remote], env=self.env)
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

    def summary(self, r):
        self.assertEqual(r.code, 0, r)
        return [e for e in r.json() if e["event"] == "summary"][-1]

    def assertClaimsHold(self, c):
        """A pull of an edited file and a push of an edited file, as a sync runs them by
        default (--helper auto), do what doctor's helper, pull_deltas and push_deltas said."""
        helper = c["helper"]["value"] != "none"
        pull_delta = c["pull_deltas"]["value"] != "whole"
        push_delta = c["push_deltas"]["value"] != "whole"
        rel = "DCIM/IMG_9.jpg"
        old = random_bytes(700_000, 91)
        new = old[:300_000] + b"an edit" + old[300_000:]
        write_file(os.path.join(self.remote, rel), old, mtime=T0)
        args = ("--json", "--helper", "auto")
        self.summary(self.pull(*args, env=self.env))
        write_file(os.path.join(self.remote, rel), new, mtime=T0 + 60)
        s = self.summary(self.pull(*args, env=self.env))
        self.assertEqual(s["files_done"], 1, s)
        self.assertEqual(s["helper"] > 0, helper, (s, c["helper"]))
        self.assertEqual(s["bytes_matched"] > 0, pull_delta, (s, c["pull_deltas"]))
        with open(os.path.join(self.local, rel), "rb") as f:
            self.assertEqual(f.read(), new)
        # A push (into another folder) of the file, edited here, pushed again.
        back = os.path.join(self.remote, "back")
        self.summary(self.push(*args, dst=back, env=self.env))
        newer = new[:100_000] + b"another edit" + new[100_000:]
        write_file(os.path.join(self.local, rel), newer, mtime=T0 + 120)
        s = self.summary(self.push(*args, dst=back, env=self.env))
        self.assertEqual(s["files_done"], 1, s)
        self.assertEqual(s["helper"] > 0, helper, (s, c["helper"]))
        self.assertEqual(s["bytes_matched"] > 0, push_delta, (s, c["push_deltas"]))
        with open(os.path.join(back, rel), "rb") as f:
            self.assertEqual(f.read(), newer)

    def nohelper_memos(self):
        """The no-helper memos runs with --helper auto left (state.h) in the client's home."""
        return [os.path.join(dp, f) for dp, _, fs in os.walk(self.srv.home) for f in fs
                if f.startswith("nohelper-")]

    def forget_nohelper(self):
        for p in self.nohelper_memos():
            os.unlink(p)

    def assertNoHelperAdvice(self, c):
        # phsync brings its own helper: doctor never tells anyone to install phsync.
        for e in c.values():
            self.assertNotIn("install", e["detail"], e)


class DoctorOpenSSHTest(DoctorMixin, SyncTestCase):
    # A fresh login folder (clean_home): the helper this phsync brings goes there.
    server_kwargs = {"clean_home": True}
    env = HELPERS

    def test_everything_works(self):
        write_file(os.path.join(self.remote, "IMG_1.jpg"), b"photo", mtime=1700000000)
        before = tree(self.remote)
        c = self.doctor()
        for name in CHECKS:
            self.assertEqual(c[name]["status"], "ok", c[name])
        self.assertIn("OpenSSH", c["reachable"]["detail"])
        self.assertEqual(c["host_key"]["value"], self.srv.host_fingerprint)
        self.assertIn("by the phone's address", c["host_key"]["detail"])
        self.assertIn("HostKeyAlias NAME", c["host_key"]["detail"])
        self.assertEqual(c["key_login"]["value"], self.srv.user)
        self.assertEqual(int(c["window"]["value"]), 2 << 20)   # sshd's session window
        self.assertEqual(c["exec"]["status"], "ok")
        # No phsync on the server: this phsync brings its own helper, runs it, and the sync
        # then speaks to the helper, whose extensions are listed.
        self.assertEqual(c["helper"]["value"], "brought")
        self.assertTrue(c["extensions"]["detail"].startswith("the helper's: "), c["extensions"])
        self.assertEqual(c["extensions"]["value"].split(","),
                         ["posix-rename", "fsync", "copy-data", "limits", "statvfs"])
        self.assertIn("262144", c["extensions"]["detail"])  # the helper's request size
        self.assertEqual(c["times"]["value"], "exact")
        self.assertEqual(c["case"]["value"], "sensitive")
        st = os.statvfs(self.remote)
        self.assertAlmostEqual(int(c["free_space"]["value"]), st.f_bavail * st.f_frsize,
                               delta=256 << 20)
        self.assertEqual((c["pull_deltas"]["value"], c["push_deltas"]["value"]),
                         ("helper", "helper"))
        self.assertNoHelperAdvice(c)
        self.assertNothingLeft(before)
        # The human form: one line per check, status first.
        r = self.srv.run(["doctor", "-F", self.srv.config, "phone:" + self.remote], env=self.env)
        self.assertEqual(r.code, 0, r)
        lines = r.out.splitlines()
        self.assertEqual([l.split()[:2] for l in lines[:len(CHECKS)]], [["ok", n] for n in CHECKS])
        self.assertEqual(lines[len(CHECKS)], "A sync can run.")
        self.assertClaimsHold(c)

    def test_no_helper_to_bring(self):
        # This phsync has no static helpers (PHSYNC_HELPER_DIR empty) and the server no
        # phsync: plain SFTP, said so, with the server's own extensions.
        self.env = {"PHSYNC_HELPER_DIR": ""}
        self.addCleanup(self.forget_nohelper)
        c = self.doctor()
        self.assertEqual((c["helper"]["status"], c["helper"]["value"]), ("warn", "none"))
        self.assertIn("no static helpers", c["helper"]["detail"])
        self.assertEqual(c["extensions"]["value"].split(","),
                         ["posix-rename", "fsync", "copy-data", "limits", "statvfs", "hardlink"])
        self.assertIn("261120", c["extensions"]["detail"])  # limits@openssh.com's request size
        # sftp-server answers no check-file: pulls whole; pushes from the kept signatures.
        self.assertEqual((c["pull_deltas"]["status"], c["pull_deltas"]["value"]), ("warn", "whole"))
        self.assertIn("check-file", c["pull_deltas"]["detail"])
        self.assertEqual((c["push_deltas"]["status"], c["push_deltas"]["value"]), ("ok", "saved"))
        self.assertNoHelperAdvice(c)
        self.assertClaimsHold(c)

    def test_remembered_without_helper(self):
        # A sync with --helper auto that found no helper remembers it for a day: the next
        # syncs use plain SFTP even once a helper could run, and doctor says so.
        self.addCleanup(self.forget_nohelper)
        write_file(os.path.join(self.remote, "a.txt"), b"a\n", mtime=T0)
        self.summary(self.pull("--json", "--helper", "auto", env={"PHSYNC_HELPER_DIR": ""}))
        self.assertTrue(self.nohelper_memos())
        c = self.doctor()
        self.assertEqual((c["helper"]["status"], c["helper"]["value"]), ("warn", "none"))
        self.assertIn("remembers", c["helper"]["detail"])
        self.assertEqual(c["pull_deltas"]["value"], "whole")
        self.assertEqual(c["push_deltas"]["value"], "saved")
        self.assertClaimsHold(c)

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

    def test_host_key_under_its_alias(self):
        cfg = self.srv.write_config(known_hosts="none", extra=["HostKeyAlias myphone"])
        with open(self.srv.known_hosts_of(cfg), "w") as f:
            f.write("myphone %s\n" % self.srv.host_pub)
        c = self.doctor(config=cfg)
        self.assertEqual(c["host_key"]["status"], "ok", c["host_key"])
        self.assertIn("as 'myphone' (HostKeyAlias", c["host_key"]["detail"])

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
    env = HELPERS

    def test_report(self):
        before = tree(self.remote)
        c = self.doctor()
        self.assertIn("dropbear", c["reachable"]["detail"])
        # Dropbear grants a small channel window: said, neutrally; everything else works.
        self.assertEqual(c["window"]["status"], "warn")
        self.assertLess(int(c["window"]["value"]), 256 << 10)
        self.assertIn("window is small", c["window"]["detail"])
        self.assertEqual({c[n]["status"] for n in CHECKS if n != "window"}, {"ok"}, c)
        # phsync brings its own helper (no "install phsync there").
        self.assertEqual(c["helper"]["value"], "brought")
        self.assertIn("posix-rename", c["extensions"]["value"].split(","))
        self.assertEqual(c["times"]["value"], "exact")
        self.assertEqual((c["pull_deltas"]["value"], c["push_deltas"]["value"]),
                         ("helper", "helper"))
        self.assertNoHelperAdvice(c)
        self.assertNothingLeft(before)
        self.assertClaimsHold(c)


class DoctorProftpdTest(DoctorMixin, SyncTestCase):
    """ProFTPD's mod_sftp: no commands (so no helper, even with helpers to bring), check-file
    (pulls move deltas), no copy-data (pushes go whole)."""
    server_kwargs = {"kind": "proftpd"}
    env = HELPERS

    def test_report(self):
        before = tree(self.remote)
        c = self.doctor()
        self.assertIn("mod_sftp", c["reachable"]["detail"])
        self.assertEqual(c["window"]["status"], "ok")
        self.assertEqual(c["exec"]["status"], "warn")
        self.assertIn("runs no commands", c["exec"]["detail"])
        self.assertEqual((c["helper"]["status"], c["helper"]["value"]), ("warn", "none"))
        self.assertIn("runs no commands", c["helper"]["detail"])
        self.assertNotIn("copy-data", c["extensions"]["value"].split(","))
        self.assertEqual((c["pull_deltas"]["status"], c["pull_deltas"]["value"]),
                         ("ok", "check-file"))
        self.assertEqual((c["push_deltas"]["status"], c["push_deltas"]["value"]),
                         ("warn", "whole"))
        self.assertIn("no copy-data", c["push_deltas"]["detail"])
        self.assertEqual(c["times"]["value"], "exact")
        self.assertNoHelperAdvice(c)
        self.assertNothingLeft(before)
        self.assertClaimsHold(c)


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
        # No helper here (this run brings none): whole files both ways.
        self.assertEqual(c["helper"]["value"], "none")
        self.assertEqual((c["pull_deltas"]["value"], c["push_deltas"]["value"]), ("whole", "whole"))
        self.assertEqual({c[n]["status"] for n in CHECKS if n not in
                          ("extensions", "helper", "pull_deltas", "push_deltas")}, {"ok"})
        self.assertEqual(c["times"]["value"], "exact")
        self.assertNothingLeft(before)
        self.assertClaimsHold(c)


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
        self.assertEqual((c["pull_deltas"]["value"], c["push_deltas"]["value"]), ("whole", "saved"))
        self.assertNothingLeft(before)
        self.assertClaimsHold(c)


class DoctorSftpOnlyAppTest(DoctorMixin, SyncTestCase):
    """A paramiko-style phone app: SFTP v3 with no extensions (evil_sftp.py, faithful) and no
    commands. Doctor used to promise push deltas here; none can happen (no copy-data, no
    check-file, no helper)."""
    server_kwargs = {"subsystem": "%s %s" % (PY, EVIL_SFTP), "extra_sshd_config": [SFTP_ONLY],
                     "clean_home": True}
    env = HELPERS

    def test_report(self):
        before = tree(self.remote)
        c = self.doctor()
        self.assertEqual(c["exec"]["status"], "warn")
        self.assertEqual((c["helper"]["status"], c["helper"]["value"]), ("warn", "none"))
        self.assertEqual(c["extensions"]["value"], "")
        self.assertIn("posix-rename (replacing a file takes an aside copy)",
                      c["extensions"]["detail"])
        self.assertEqual((c["pull_deltas"]["status"], c["pull_deltas"]["value"]), ("warn", "whole"))
        self.assertEqual((c["push_deltas"]["status"], c["push_deltas"]["value"]), ("warn", "whole"))
        for e in c.values():
            self.assertNotIn("deltas only on push", e["detail"], e)
        self.assertNoHelperAdvice(c)
        self.assertNothingLeft(before)
        self.assertClaimsHold(c)
