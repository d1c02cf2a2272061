# SPDX-License-Identifier: ISC
"""What phsync says: --help, --version, usage errors, -q, -v, --json, --progress, and the
options that decide what moves: -n/--dry-run, --exclude/--include.

CliTest      --help lists pull/push and the exit codes 0-6 and exits 0; -V/--version; usage
             errors exit 2 with a message.
OutputTest   -q prints nothing on success; -v prints one "new/update/mkdir/skip" line per action
             and nothing else; --json prints only JSON objects (file events with sizes, mkdir
             events, a final summary whose counts and bytes match what is on disk and whose
             "exit" equals the exit code); no progress on a non-terminal unless --progress; a
             progress line when stderr is a terminal.
DryRunTest   -n changes nothing (every entry's inode, ctime, mtime, mode identical, LOCALDIR not
             even created), and names exactly the files that would move, for pull and push.
FilterTest   --exclude GLOB (basename at any depth, or an anchored relative path with '/'),
             excluded folders not created, --include before --exclude re-admits (first match
             wins), the same filters on push.
"""

import json
import os
import pty
import re
import select
import subprocess
import time
import unittest

from harness import (SyncTestCase, phsync_bin, random_bytes, sample_tree, set_dir_mtimes, tree,
                     write_file)

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "fake_helper.py")

T0 = 1700000000


def file_sizes(root):
    return {k: v.size for k, v in tree(root, hashes=False).items() if v.type == "f"}


def dirs_of(root):
    return {k for k, v in tree(root, hashes=False).items() if v.type == "d"}


class CliTest(SyncTestCase):

    def test_help_lists_commands_and_exit_codes(self):
        for flag in ("--help", "-h"):
            r = self.srv.run([flag])
            self.assertEqual(r.code, 0, r)
            text = r.out
            self.assertIn("pull", text)
            self.assertIn("push", text)
            m = re.search(r"(?i)exit", text)
            self.assertIsNotNone(m, "--help does not mention exit codes")
            tail = text[m.start():]
            for code in range(7):
                self.assertRegex(tail, r"(?m)(^|\s)%d(\s|[:=,.)-])" % code, "exit code %d not listed" % code)
            for opt in ("--dry-run", "--json", "--exclude", "--include", "-F"):
                self.assertIn(opt, text)

    def test_version(self):
        for flag in ("-V", "--version"):
            r = self.srv.run([flag])
            self.assertEqual(r.code, 0, r)
            self.assertRegex(r.out, r"phsync\D*\d+\.\d+")

    def test_usage_errors_exit_2(self):
        cases = [[], ["pull"], ["pull", "phone:/x"], ["push", "/tmp"], ["frobnicate", "a", "b"],
                 ["pull", "--no-such-option", "phone:/x", "/tmp/x"],
                 ["pull", "/tmp/local-only", "/tmp/also-local"],
                 ["pull", "phone:/x", "/tmp/y", "extra-arg"],
                 ["pull", "--exclude"]]
        for args in cases:
            with self.subTest(args=args):
                r = self.srv.run(args, timeout=30)
                self.assertEqual(r.code, 2, r)
                self.assertNotEqual(r.err.strip(), "", "usage error without a message")
                self.assertEqual(r.out.strip(), "", "usage error printed on stdout")


class OutputTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)

    def test_quiet_prints_nothing_on_success(self):
        r = self.pull("-q", expect=0)
        self.assertEqual((r.out, r.err), ("", ""))
        write_file(os.path.join(self.remote, "new.jpg"), b"n", mtime=T0)
        r = self.pull("--quiet", expect=0)
        self.assertEqual((r.out, r.err), ("", ""))

    def test_verbose_one_line_per_action(self):
        r = self.pull("-v", expect=0)
        new, mkdir = set(), set()
        for line in r.out.splitlines():
            m = re.match(r"^(new|update|mkdir|skip) (.+)$", line)
            self.assertIsNotNone(m, "unexpected -v line: %r" % line)
            {"new": new, "mkdir": mkdir}.get(m.group(1), set()).add(m.group(2))
        self.assertEqual(new, set(file_sizes(self.remote)), r)
        self.assertTrue(dirs_of(self.remote) <= mkdir, "missing mkdir lines: %r" % (dirs_of(self.remote) - mkdir))
        self.assertTrue(mkdir - dirs_of(self.remote) <= {".", "", "./"}, "extra mkdir lines: %r" % mkdir)
        # an edit is an update
        write_file(os.path.join(self.remote, "top.txt"), b"changed!", mtime=T0 + 1)
        r = self.pull("--verbose", expect=0)
        self.assertEqual(r.out.splitlines(), ["update top.txt"], r)

    def test_json_events_and_summary(self):
        r = self.pull("--json", expect=0)
        events = r.json()
        self.assertEqual(events[-1]["event"], "summary", "the summary comes last")
        self.assertEqual([e["event"] for e in events].count("summary"), 1)
        sizes = file_sizes(self.remote)
        fev = [e for e in events if e["event"] == "file"]
        self.assertEqual(sorted(e["path"] for e in fev), sorted(sizes), "one file event per file")
        for e in fev:
            self.assertEqual((e["action"], e["status"], e["size"]), ("new", "ok", sizes[e["path"]]), e)
        mk = {e["path"] for e in events if e["event"] == "mkdir"}
        self.assertTrue(dirs_of(self.remote) <= mk, dirs_of(self.remote) - mk)
        # Progress events come once a second whatever the speed of the run: how many there are
        # depends on timing, so only their shape and order are checked, never their number.
        self.assertProgressEvents(events, len(sizes), sum(sizes.values()))
        s = events[-1]
        self.assertEqual(s["files_total"], len(sizes))
        self.assertEqual(s["files_done"], len(sizes))
        self.assertEqual(s["files_failed"], 0)
        self.assertEqual(s["files_skipped"], 0)
        self.assertGreaterEqual(s["dirs_created"], len(dirs_of(self.remote)))
        self.assertEqual(s["bytes_done"], sum(sizes.values()))
        self.assertIs(s["dry_run"], False)
        self.assertEqual(s["exit"], 0)
        self.assertIsInstance(s["elapsed_ms"], int)
        self.assertGreaterEqual(s["elapsed_ms"], 0)
        self.assertEqual(r.err.strip(), "")

    def assertProgressEvents(self, events, files, nbytes):
        prog = [e for e in events if e["event"] == "progress"]
        keys = {"event", "files_done", "files_todo", "bytes_done", "bytes_todo", "elapsed_ms",
                "listing", "listed_remote", "listed_local"}
        last = None
        for e in prog:
            self.assertEqual(set(e) - {"file"}, keys, e)
            if "file" in e:   # the file whose bytes moved last
                self.assertIsInstance(e["file"], str, e)
            self.assertIsInstance(e["listing"], bool, e)
            for k in keys - {"event", "listing"}:
                self.assertIsInstance(e[k], int, e)
                self.assertGreaterEqual(e[k], 0, e)
            self.assertLessEqual(e["files_done"], e["files_todo"], e)
            self.assertLessEqual(e["files_todo"], files, e)
            self.assertLessEqual(e["bytes_done"], e["bytes_todo"], e)
            self.assertLessEqual(e["bytes_todo"], nbytes, e)
            if e["listing"]:   # before the plan: nothing to do is known yet
                self.assertEqual((e["files_todo"], e["bytes_todo"]), (0, 0), e)
            if last is not None:
                for k in ("files_done", "bytes_done", "elapsed_ms", "listed_remote", "listed_local"):
                    self.assertGreaterEqual(e[k], last[k], "progress went backwards: %r then %r" % (last, e))
                self.assertFalse(e["listing"] and not last["listing"], "listing again: %r" % e)
            last = e
        if prog:
            self.assertLess(events.index(prog[-1]), len(events) - 1, "progress after the summary")

    def test_json_push(self):
        local = os.path.join(self.tmp, "src")
        sample_tree(local, seed=3)
        dst = os.path.join(self.remote, "pushed")
        r = self.push("--json", src=local, dst=dst, expect=0)
        events = r.json()
        sizes = file_sizes(local)
        self.assertEqual(sorted(e["path"] for e in events if e["event"] == "file"), sorted(sizes))
        self.assertProgressEvents(events, len(sizes), sum(sizes.values()))
        self.assertEqual([e["event"] for e in events].count("summary"), 1)
        s = events[-1]
        self.assertEqual((s["event"], s["files_done"], s["bytes_done"], s["exit"]),
                         ("summary", len(sizes), sum(sizes.values()), 0))

    def test_no_progress_on_a_pipe_unless_forced(self):
        r = self.pull(expect=0)
        self.assertEqual(r.err, "", "stderr output on a pipe without --progress")
        local2 = os.path.join(self.tmp, "second")
        r = self.pull("--progress", dst=local2, expect=0)
        self.assertNotEqual(r.err.strip(), "", "--progress printed nothing")
        self.assertTrue(os.path.isfile(os.path.join(local2, "top.txt")))

    def test_progress_while_the_phone_is_listed(self):
        # The helper's listing is held at its first READDIR (fake_helper.py hold_list) until the
        # client has said, in a progress event, that it is listing and has walked every local
        # entry; then it goes on. Waits on what phsync prints, never on a time.
        write_file(os.path.join(self.remote, "a", "1.jpg"), b"one", mtime=1700000000)
        write_file(os.path.join(self.remote, "a", "2.jpg"), b"two", mtime=1700000000)
        write_file(os.path.join(self.remote, "b", "3.jpg"), b"three", mtime=1700000000)
        for rel in ("old/x.txt", "old/y.txt", "old/deep/z.txt", "w.txt"):
            write_file(os.path.join(self.local, rel), b"here", mtime=1700000000)
        walked = 6   # old, old/deep, the three files and w.txt
        release = os.path.join(self.tmp, "release")
        fake = "python3 %s hold_list=%s %s" % (FAKE, release, phsync_bin())
        p = self.srv.popen(["pull", "-F", self.srv.config, "--json", "--progress", "--helper",
                            "always", "--helper-path", fake, "phone:" + self.remote, self.local])
        events, seen = [], None
        deadline = time.monotonic() + 120   # (a hang's bound only)
        while seen is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            e = json.loads(line)
            events.append(e)
            if e["event"] == "progress" and e["listing"] and e["listed_local"] == walked:
                seen = e
        with open(release, "w"):
            pass
        out, err = p.communicate(timeout=120)
        events += [json.loads(x) for x in out.decode().splitlines()]
        self.assertEqual(p.returncode, 0, err.decode(errors="replace"))
        self.assertIsNotNone(seen, "no progress event while listing: %r" % events)
        self.assertEqual(seen["listed_remote"], 0, seen)   # the phone's first READDIR is held
        self.assertEqual((seen["files_todo"], seen["files_done"]), (0, 0), seen)
        sizes = file_sizes(self.remote)   # (setUp's sample tree and the three above)
        self.assertProgressEvents(events, len(sizes), sum(sizes.values()))
        whole = (len(sizes) + len(dirs_of(self.remote)), walked)
        after = [e for e in events if e["event"] == "progress" and not e["listing"]]
        for e in after:   # once listed: both sides' whole counts
            self.assertEqual((e["listed_remote"], e["listed_local"]), whole, e)
        s = events[-1]
        self.assertEqual((s["event"], s["files_done"]), ("summary", len(sizes)), s)
        self.assertEqual((s["listed_remote"], s["listed_local"]), whole, s)
        with open(os.path.join(self.local, "b", "3.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"three")

    def test_progress_on_a_terminal(self):
        master, slave = pty.openpty()
        p = self.srv.popen(["pull", "-F", self.srv.config, "phone:" + self.remote, self.local],
                           stderr=slave)
        os.close(slave)
        got = b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            rl, _, _ = select.select([master], [], [], 0.2)
            if rl:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                got += chunk
            elif p.poll() is not None:
                break
        os.close(master)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, got.decode(errors="replace"))
        self.assertNotEqual(got.strip(), b"", "no progress line on a terminal")
        self.assertTrue(os.path.isfile(os.path.join(self.local, "top.txt")))


class DryRunTest(SyncTestCase):

    def test_dry_run_pull_changes_nothing(self):
        sample_tree(self.remote)
        # LOCALDIR absent: not even created
        r = self.pull("-n", "-v", expect=0)
        self.assertFalse(os.path.lexists(self.local), "dry run created LOCALDIR")
        for f in file_sizes(self.remote):
            self.assertIn(f, r.out, "dry run does not name %s" % f)
        # A partial, older copy: only what differs is named, nothing changes.
        self.pull(expect=0)
        os.unlink(os.path.join(self.local, "top.txt"))
        write_file(os.path.join(self.remote, "DCIM/Camera/IMG_20231114_100000.jpg"), b"edited", mtime=T0 + 9)
        write_file(os.path.join(self.remote, "New/one.jpg"), b"one", mtime=T0)
        before = tree(self.local)
        r = self.pull("--dry-run", "-v", expect=0)
        after = tree(self.local)
        self.assertEqual(sorted(after), sorted(before), "dry run added or removed entries")
        for k, b in before.items():
            a = after[k]
            self.assertEqual((a.ino, a.ctime_ns, a.mtime_ns, a.mode, a.digest),
                             (b.ino, b.ctime_ns, b.mtime_ns, b.mode, b.digest), "dry run touched %s" % k)
        lines = r.out.splitlines()
        self.assertIn("new top.txt", lines, r)
        self.assertIn("new New/one.jpg", lines, r)
        self.assertIn("update DCIM/Camera/IMG_20231114_100000.jpg", lines, r)
        self.assertIn("mkdir New", lines, r)
        self.assertFalse([l for l in lines if l.startswith(("new ", "update ")) and
                          l.split(" ", 1)[1] not in ("top.txt", "New/one.jpg", "DCIM/Camera/IMG_20231114_100000.jpg")],
                         "dry run names files that would not move: %r" % lines)
        rj = self.pull("-n", "--json", expect=0)
        s = rj.json()[-1]
        self.assertEqual((s["event"], s["dry_run"]), ("summary", True), rj)
        self.assertEqual(sorted(after), sorted(tree(self.local)))

    def test_dry_run_push_changes_nothing(self):
        local = os.path.join(self.tmp, "src")
        sample_tree(local)
        write_file(os.path.join(self.remote, "existing.txt"), b"keep", mtime=T0)
        before = tree(self.remote)
        r = self.push("-n", "-v", src=local, expect=0)
        after = tree(self.remote)
        self.assertEqual(sorted(after), sorted(before))
        for k, b in before.items():
            self.assertEqual((after[k].ino, after[k].ctime_ns, after[k].mtime_ns), (b.ino, b.ctime_ns, b.mtime_ns))
        for f in file_sizes(local):
            self.assertIn("new " + f, r.out.splitlines(), r)
        r = self.push("-n", src=local, dst=os.path.join(self.remote, "not-yet"), expect=0)
        self.assertFalse(os.path.lexists(os.path.join(self.remote, "not-yet")), "dry run created the remote DIR")


class FilterTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        for rel, n in [("DCIM/Camera/a.jpg", 10), ("DCIM/Camera/b.mp4", 20), ("DCIM/Camera/keep.mp4", 30),
                       ("DCIM/.cache/t1.jpg", 5), ("DCIM/.cache/deeper/t2.jpg", 6),
                       ("Pictures/x.png", 7), ("Pictures/Camera/y.jpg", 8), ("c.mp4", 9)]:
            write_file(os.path.join(self.remote, rel), random_bytes(n, n), mtime=T0 + n)
        set_dir_mtimes(self.remote, T0 - 100)

    def got(self, root):
        return sorted(file_sizes(root))

    def test_exclude_basename_glob_at_any_depth(self):
        self.pull("--exclude", "*.mp4", expect=0)
        self.assertEqual(self.got(self.local), ["DCIM/.cache/deeper/t2.jpg", "DCIM/.cache/t1.jpg",
                                                "DCIM/Camera/a.jpg", "Pictures/Camera/y.jpg", "Pictures/x.png"])

    def test_excluded_folder_not_created(self):
        self.pull("--exclude", ".cache", expect=0)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "DCIM/.cache")))
        self.assertIn("DCIM/Camera/a.jpg", self.got(self.local))

    def test_exclude_path_with_slash_is_anchored(self):
        self.pull("--exclude", "DCIM/Camera/*.jpg", "--exclude", "Pictures/Camera", expect=0)
        got = self.got(self.local)
        self.assertNotIn("DCIM/Camera/a.jpg", got)
        self.assertNotIn("Pictures/Camera/y.jpg", got)
        self.assertIn("DCIM/Camera/b.mp4", got)
        self.assertIn("DCIM/.cache/t1.jpg", got)
        self.assertIn("Pictures/x.png", got)

    def test_include_before_exclude_readmits(self):
        self.pull("--include", "keep.mp4", "--exclude", "*.mp4", expect=0)
        got = self.got(self.local)
        self.assertIn("DCIM/Camera/keep.mp4", got)
        self.assertNotIn("DCIM/Camera/b.mp4", got)
        self.assertNotIn("c.mp4", got)
        self.assertIn("DCIM/Camera/a.jpg", got)

    def test_include_readmits_whatever_the_order(self):
        # --help: "--include GLOB  keep paths matching GLOB even if excluded"
        self.pull("--exclude", "*.mp4", "--include", "keep.mp4", expect=0)
        got = self.got(self.local)
        self.assertIn("DCIM/Camera/keep.mp4", got)
        self.assertNotIn("DCIM/Camera/b.mp4", got)

    def test_trailing_slash_matches_folders_only(self):
        # --help: "a trailing '/' matches folders only"
        write_file(os.path.join(self.remote, "Camera"), b"a file named like the folder", mtime=T0)
        self.pull("--exclude", "Camera/", expect=0)
        got = self.got(self.local)
        self.assertIn("Camera", got, "a file was excluded by a folders-only pattern")
        self.assertNotIn("DCIM/Camera/a.jpg", got)
        self.assertNotIn("Pictures/Camera/y.jpg", got)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "DCIM/Camera")))

    def test_double_star(self):
        # --help: "with '/' it matches the path from the top ('DCIM/.cache', 'a/**')"
        self.pull("--exclude", "DCIM/**", expect=0)
        got = self.got(self.local)
        self.assertFalse([g for g in got if g.startswith("DCIM/")], got)
        self.assertIn("Pictures/x.png", got)
        self.assertIn("c.mp4", got)

    def test_filters_on_push(self):
        src = os.path.join(self.tmp, "src")
        os.rename(self.remote, src)
        os.makedirs(self.remote)
        self.push("--exclude", "*.mp4", "--exclude", ".cache", src=src, expect=0)
        self.assertEqual(self.got(self.remote), ["DCIM/Camera/a.jpg", "Pictures/Camera/y.jpg", "Pictures/x.png"])
        self.assertFalse(os.path.lexists(os.path.join(self.remote, "DCIM/.cache")))

    def test_filters_with_json_and_rerun(self):
        r = self.pull("--json", "--exclude", "*.mp4", expect=0)
        s = r.json()[-1]
        self.assertEqual(s["files_done"], 5, r)
        r = self.pull("--json", "--exclude", "*.mp4", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)


if __name__ == "__main__":
    unittest.main()
