"""The command line as a person meets it (issue 6): options before or after the paths, short
usage errors, a missing -F file named as such, a ProxyJump that would inject an option refused
before anything runs, the summary counting what is in place, and Ctrl-C at a prompt."""

import os
import pty
import re
import select
import signal
import time
import unittest

from harness import REPO, SyncTestCase, check_sanitizers, sample_tree, tree, write_file

T0 = 1700000000


class CliTest(SyncTestCase):

    def test_options_after_the_paths(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.remote, "clip.mp4"), b"video", mtime=T0)
        r = self.srv.run(["pull", "phone:" + self.remote, self.local, "-F", self.srv.config,
                          "--exclude", "*.mp4", "--json"])
        self.assertEqual(r.code, 0, r)
        self.assertFalse(os.path.exists(os.path.join(self.local, "clip.mp4")))
        self.assertTrue(os.path.isfile(os.path.join(self.local, "top.txt")))
        self.assertEqual(r.json()[-1]["event"], "summary")
        # "--" ends the options: what follows is a path even if it looks like one.
        r = self.srv.run(["pull", "-F", self.srv.config, "-n", "--", "phone:" + self.remote,
                          "--weird-dir"])
        self.assertEqual(r.code, 0, r)

    def test_help_man_page_and_readme_name_the_same_options(self):
        r = self.srv.run(["--help"])
        self.assertEqual(r.code, 0, r)
        helped = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", r.out))
        with open(os.path.join(REPO, "docs", "phsync.1")) as f:
            man = set(re.findall(r"(--[a-z][a-z-]*[a-z])", f.read().replace("\\-", "-")))
        with open(os.path.join(REPO, "README.md")) as f:
            readme = set(re.findall(r"(--[a-z][a-z-]*[a-z])", f.read()))
        self.assertGreater(len(helped), 20)
        self.assertEqual(sorted(helped - man), [], "in --help, not in the man page")
        self.assertEqual(sorted(helped - readme), [], "in --help, not in README.md")
        self.assertEqual(sorted(man - helped), [], "in the man page, not in --help")

    def test_usage_errors_are_short(self):
        for args in (["pull", "phone:/x"], ["pull", "a", "b", "c"], ["push"],
                     ["pull", "--no-such-option", "phone:/x", "y"], ["frobnicate"],
                     ["pull", "notremote", "dir"], ["delta", "patch", "a"]):
            with self.subTest(args=args):
                r = self.srv.run(args)
                self.assertEqual(r.code, 2, r)
                lines = r.err.strip().splitlines()
                self.assertLessEqual(len(lines), 2, r.err)
                self.assertIn("--help", lines[-1], r.err)
                self.assertTrue(all(l.startswith(("phsync", "Try")) for l in lines), r.err)

    def test_missing_config_file_is_named(self):
        r = self.srv.run(["pull", "-F", "/nonexistent/ssh_config", "phone:" + self.remote,
                          self.local])
        self.assertEqual(r.code, 2, r)
        self.assertIn("/nonexistent/ssh_config", r.err)
        self.assertIn("No such file", r.err)
        self.assertFalse(os.path.exists(self.local))

    def test_proxyjump_option_injection_refused(self):
        marker = os.path.join(self.tmp, "pwned")
        for jump in ("-oProxyCommand=touch%%20%s" % marker, "ok,-oLocalCommand=x",
                     "a'b", "a;touch %s" % marker, "host$(id)"):
            with self.subTest(jump=jump):
                cfg = self.srv.write_config(extra=["ProxyJump %s" % jump])
                for with_f in (True, False):
                    args = ["pull", "phone:" + self.remote, self.local]
                    if with_f:
                        args[1:1] = ["-F", cfg]
                    else:
                        os.makedirs(os.path.join(self.srv.home, ".ssh"), exist_ok=True)
                        with open(cfg) as src, open(os.path.join(self.srv.home, ".ssh", "config"), "w") as dst:
                            dst.write(src.read())
                    r = self.srv.run(args)
                    self.assertEqual(r.code, 2, r)
                    self.assertIn("ProxyJump", r.err)
                    self.assertFalse(os.path.exists(marker))
        os.unlink(os.path.join(self.srv.home, ".ssh", "config"))

    def test_summary_counts_what_is_in_place(self):
        sizes = {"a.jpg": 1000, "b.jpg": 250_000, "c/d.jpg": 3}
        for n, size in sizes.items():
            write_file(os.path.join(self.remote, n), os.urandom(size), mtime=T0)
        r = self.pull("--json", expect=0)
        s = r.json()[-1]
        self.assertEqual(s["bytes_committed"], sum(sizes.values()))
        self.assertEqual(s["files_done"], 3)
        r = self.pull("-v", expect=0)
        self.assertIn("0 of 3 files copied (0.0 MB)", r.err)

    def test_gallery_leftovers_skipped_by_default(self):
        names = ["DCIM/Camera/IMG_1.jpg", "DCIM/.thumbnails/1001.jpg",
                 "DCIM/.thumbnails/.thumbdata4--1967290299", "DCIM/Camera/.trashed-1700000000-IMG_0.jpg",
                 "DCIM/Camera/.pending-1700000100-VID_2.mp4", "Pictures/.thumbdata3-1763508120"]
        for n in names:
            write_file(os.path.join(self.remote, n), n.encode(), mtime=T0)
        self.pull(expect=0)
        got = sorted(k for k, e in tree(self.local).items() if e.type == "f")
        self.assertEqual(got, ["DCIM/Camera/IMG_1.jpg"])
        r = self.pull("--include", ".trashed-*", "--json", expect=0)
        self.assertTrue(os.path.isfile(os.path.join(self.local, "DCIM/Camera/.trashed-1700000000-IMG_0.jpg")))
        self.pull("--no-default-excludes", expect=0)
        got = sorted(k for k, e in tree(self.local).items() if e.type == "f")
        self.assertEqual(got, sorted(names))
        # The same rule on push: the laptop's copy of a phone's leftovers stays home.
        dst = os.path.join(self.tmp, "other")
        os.makedirs(dst)
        self.push(src=self.local, dst=dst, expect=0)
        got = sorted(k for k, e in tree(dst).items() if e.type == "f")
        self.assertEqual(got, ["DCIM/Camera/IMG_1.jpg"])

    def test_min_age_leaves_files_being_written(self):
        write_file(os.path.join(self.remote, "IMG_old.jpg"), b"old photo", mtime=T0)
        write_file(os.path.join(self.remote, "VID_recording.mp4"), b"growing", mtime=None)  # now
        r = self.pull("--min-age", "3600", "--json", expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["IMG_old.jpg"])
        skips = [e for e in r.json() if e.get("event") == "skip"]
        self.assertEqual([(e["path"], e["reason"]) for e in skips], [("VID_recording.mp4", "too new")])
        self.pull(expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["IMG_old.jpg", "VID_recording.mp4"])
        r = self.srv.run(["pull", "--min-age", "x", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)

    def test_modify_window(self):
        # A FAT phone keeps even seconds: the copy made earlier is 1 s off.
        write_file(os.path.join(self.remote, "IMG.jpg"), b"photo", mtime=T0 + 1)
        write_file(os.path.join(self.local, "IMG.jpg"), b"photo", mtime=T0)
        # Without the window the 1 s is a difference (a dry run: nothing recorded)...
        r = self.pull("-n", "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 1, r)
        # ...with it, the same file; and once recorded as in sync, it stays so.
        r = self.pull("--modify-window", "2", "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        r = self.pull("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertEqual(os.stat(os.path.join(self.local, "IMG.jpg")).st_mtime, T0)

    def test_ctrl_c_at_a_prompt(self):
        # An unknown host key is asked about on the terminal; Ctrl-C there ends the run as
        # interrupted (exit 6), nothing recorded, nothing made.
        cfg = self.srv.write_config(known_hosts="none", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        before = open(kh).read()
        argv = self.srv.argv(["pull", "-F", cfg, "phone:" + self.remote, self.local])
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.chdir(self.srv.home)
                os.execve(argv[0], argv, self.srv.env())
            finally:
                os._exit(127)
        out, status, signalled = b"", None, False
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:
                        chunk = b""
                    out += chunk
                if not signalled and b"(yes/no)" in out:
                    os.kill(pid, signal.SIGINT)
                    signalled = True
                wpid, st = os.waitpid(pid, os.WNOHANG)
                if wpid:
                    status = st
                    break
        finally:
            if status is None:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
            os.close(fd)
        text = out.decode("utf-8", "replace")
        code = os.waitstatus_to_exitcode(status)
        check_sanitizers(code, text, argv)
        self.assertTrue(signalled, "no host key question was shown:\n" + text)
        self.assertEqual(code, 6, text)
        self.assertIn("interrupted", text)
        self.assertEqual(open(kh).read(), before, "known_hosts changed")
        self.assertFalse(os.path.exists(self.local))


if __name__ == "__main__":
    unittest.main()
