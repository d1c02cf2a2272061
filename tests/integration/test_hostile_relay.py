# SPDX-License-Identifier: ISC
"""A real server that misbehaves: tests/lib/sftp_relay.py in front of OpenSSH's sftp-server.

One sshd per class; each test writes the relay's control file (self.srv.relay_set(...)) before
the run it means to disturb, and checks that the fault it arranged really fired
(self.srv.relay_fired()).  These are issue 6's promises:

DiesMidReplyTest     the server dies in the middle of the last DATA reply of a 3 MB file: a
                     non-zero exit that is neither 0 nor 5, nothing committed under the final
                     name (an older copy stays byte-identical), no temp, a clean re-run fixes it.
ListedSizeTest       the listing omits sizes (the file is read to EOF), claims more than the file
                     holds (the file fails, exit 5, nothing committed) or less (the file grew:
                     all of it arrives, or it fails; never a prefix).
PlainRenameTest      push to a server without posix-rename: a replace works, a refused RENAME
                     into place keeps the old remote file, a link that dies right after the old
                     file was moved aside leaves the old bytes on the server and a re-run ends
                     clean; no temp or aside copy left.
HangTest             a server that stops answering during a READ, a WRITE or the listing: the
                     run ends on its own within --timeout (exit 3); SIGINT stops it quickly
                     (exit 6), a second SIGINT at once; nothing partial under a final name.
ShrinkTest           the local file shrinks to 0 bytes while it is pushed: the run ends (exit 5),
                     no temp on the server, the remote file unchanged.
SetstatTest          a server that refuses SETSTAT/FSETSTAT: files still land (exit 0), one
                     warning per file.
ChannelsTest         a listing of many folders over plain SFTP spreads over a second SFTP
                     channel (its own sftp-server): every folder listed once, the copy exact;
                     that second server dying mid-listing ends the run (exit 1 or 3) with
                     nothing copied or deleted, and a re-run completes; hanging, the run ends
                     at --timeout (exit 3).
UnreachedTest        a run cut by --timeout, SIGINT or a dead link names each file it never got
                     to (JSON `not-reached`, stderr) and counts them: done + failed + not
                     reached = files_todo, the exit never 0 (issue 22, item 12).

Every wait is a bounded poll: a run that does not end in its bound is killed and the test fails.
"""

import glob
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import unittest

from harness import (EXIT_CONNECT, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_PARTIAL, Result,
                     SyncTestCase, check_sanitizers, folders_tree, leftovers, random_bytes, write_file)

T0 = 1700000000
T_OLD = 1600000000
LINK_LOST = (EXIT_ERROR, EXIT_CONNECT)  # a dead link: 3 (connection lost) or 1 (protocol error)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class RelayTestCase(SyncTestCase):
    server_kwargs = {"relay": True}

    # -- running -------------------------------------------------------------------------------
    # Every run here says --overwrite: these tests put an old version at the destination
    # without a sync of it on record, to test how a hostile server's faults leave a replace;
    # without --overwrite such a file is a first-contact conflict (test_rules.py).

    def pull_args(self, *opts):
        return ["pull", "-F", self.srv.config, "--overwrite"] + list(opts) + ["phone:" + self.remote, self.local]

    def push_args(self, *opts):
        return ["push", "-F", self.srv.config, "--overwrite"] + list(opts) + [self.local, "phone:" + self.remote]

    def pull(self, *opts, **kw):
        return super().pull("--overwrite", *opts, **kw)

    def push(self, *opts, **kw):
        return super().push("--overwrite", *opts, **kw)

    def run_bounded(self, args, bound):
        """Runs phsync ARGS in the background; fails the test (after killing it) if it has not
        ended within `bound` seconds.  Returns a Result; sanitizer reports fail the test."""
        p = self.srv.popen(args)
        try:
            out, err = p.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail("phsync %s did not end within %d s (killed); stderr tail:\n%s"
                      % (" ".join(map(str, args[:1] + args[3:])), bound,
                         err.decode("utf-8", "replace")[-2000:]))
        r = Result(p.returncode, out, err, args)
        check_sanitizers(r.code, r.err, args)
        return r

    def wait_for(self, cond, bound, what):
        deadline = time.monotonic() + bound
        while not cond():
            if time.monotonic() > deadline:
                self.fail("not within %d s: %s" % (bound, what))
            time.sleep(0.05)

    # -- checks ----------------------------------------------------------------------------------

    def assertFired(self, mode):
        fired = self.srv.relay_fired()
        self.assertTrue(any(f.split()[0] == mode for f in fired),
                        "the relay's %s fault never fired (fired: %r)" % (mode, fired))

    def assertNoSessionLeft(self):
        """The relay, sftp-server and the per-connection sshd all went away once phsync ended."""
        deadline = time.monotonic() + 30
        while self.srv.session_processes():
            if time.monotonic() > deadline:
                self.fail("server session processes still running 30 s after the client ended: %r"
                          % [open("/proc/%d/cmdline" % p, "rb").read() for p in self.srv.session_processes()])
            time.sleep(0.05)

    def failed_paths(self, r):
        return sorted(e["path"] for e in r.json() if e["event"] == "file" and e.get("status") == "failed")

    def ok_paths(self, r):
        return sorted(e["path"] for e in r.json() if e["event"] == "file" and e.get("status") == "ok")


class ChannelsTest(RelayTestCase):
    """The listing's second channel (src/scan/remote.c, ph_login_more): more folders than
    remote.c's MORE_AFTER (64) are waiting once the top folder is listed."""

    FOLDERS = 90

    def make_tree(self):
        folders_tree(self.remote, self.FOLDERS, 3, T0)

    def opendirs(self):
        """(path, relay pid) of every OPENDIR the relays traced."""
        out = []
        for f in self.srv.relay_fired():
            w = f.split()
            if w[0] == "trace" and w[1] == "OPENDIR":
                out.append((w[2], w[3]))
        return out

    def test_every_folder_listed_once_over_two_channels(self):
        self.make_tree()
        self.srv.relay_set(trace=True, trace_pid=True)
        r = self.pull("--json", expect=EXIT_OK)
        self.assertIn("listing over 2 SFTP channels",
                      [e.get("message") for e in r.json() if e["event"] == "info"])
        self.assertTreesEqual(self.remote, self.local)
        seen = self.opendirs()
        paths = [os.path.basename(p) for p, _ in seen]
        self.assertEqual(sorted(paths), sorted(["d%03d" % i for i in range(self.FOLDERS)]
                                               + [os.path.basename(self.remote)]),
                         "every folder listed exactly once")
        self.assertEqual(len({pid for _, pid in seen}), 2, "the folders were listed on two channels")
        # Both servers went away with the run; a re-run changes nothing.
        self.assertNoSessionLeft()
        r = self.pull("--json", expect=EXIT_OK)
        self.assertEqual(self.ok_paths(r), [])

    def test_second_channel_dies_mid_listing(self):
        self.make_tree()
        keep = write_file(os.path.join(self.local, "only_here.txt"), b"local\n", mtime=T_OLD)
        # The second session (the listing's second channel) dies once it is asked to open a
        # folder late in the tree; the run's own channel is untouched.
        self.srv.relay_set(die_on={"type": "OPENDIR", "name": ["d%03d" % i for i in range(60, 90)],
                                   "session": 2})
        r = self.run_bounded(self.pull_args("--json", "--delete"), 120)
        self.assertFired("die_on")
        self.assertIn(r.code, LINK_LOST, "a listing cut by a dead channel must fail the run: %r" % (r,))
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertIn("the second SFTP channel a long listing started beside the first: ",
                      summary.get("error", ""), r)
        self.assertEqual(self.ok_paths(r), [], "files were copied after a listing that failed")
        self.assertEqual(read(keep), b"local\n", "a file was deleted on a listing cut short")
        self.assertEqual(sorted(os.listdir(self.local)), ["only_here.txt"])
        self.assertNoSessionLeft()
        self.srv.relay_set()
        self.pull("--json", expect=EXIT_OK)
        os.unlink(keep)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)


    def test_second_channel_hangs_mid_listing(self):
        # The second channel's server stops answering: its own silence clock ends the run at
        # --timeout, though the first channel keeps answering.
        self.make_tree()
        self.srv.relay_set(hang={"type": "OPENDIR", "name": ["d%03d" % i for i in range(60, 90)],
                                 "session": 2})
        r = self.run_bounded(self.pull_args("--json", "--timeout", "3"), 45)
        self.assertFired("hang")
        self.assertEqual(r.code, EXIT_CONNECT, r)
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertIn("sent nothing", summary.get("error", ""), r)
        self.assertIn("the second SFTP channel a long listing started", summary["error"], r)
        self.assertEqual(self.ok_paths(r), [])
        self.assertFalse(os.path.exists(self.local) and os.listdir(self.local))
        self.assertNoSessionLeft()


class DiesMidReplyTest(RelayTestCase):
    """sftp-server killed while sending the last DATA reply of a 3 MB video."""

    SIZE = 3 * 1000 * 1000

    def _fault_then_clean_rerun(self, old):
        video = write_file(os.path.join(self.remote, "VID_1.mp4"), random_bytes(self.SIZE, 1), mtime=T0)
        write_file(os.path.join(self.remote, "a.txt"), b"small\n", mtime=T0)
        dst = os.path.join(self.local, "VID_1.mp4")
        if old is not None:
            write_file(dst, old, mtime=T_OLD)
        self.srv.relay_set(die_mid_data={"name": "VID_1.mp4"})
        r = self.run_bounded(self.pull_args("--json"), 120)
        self.assertFired("die_mid_data")
        self.assertIn(r.code, LINK_LOST, "a server that died mid-reply must not give 0 or 5: %r" % (r,))
        if old is None:
            self.assertFalse(os.path.lexists(dst), "a file whose last reply was cut was committed")
        else:
            self.assertEqual(read(dst), old, "the old local copy was changed by a cut transfer")
        self.assertNotIn("VID_1.mp4", self.ok_paths(r))
        self.assertEqual(leftovers(self.local) if os.path.isdir(self.local) else [], [])
        self.assertNoSessionLeft()

        self.srv.relay_set()
        r = self.pull("--json", expect=EXIT_OK)
        self.assertEqual(read(dst), read(video))
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)
        self.assertNoLeftovers()

    def test_new_file(self):
        self._fault_then_clean_rerun(None)

    def test_old_copy_kept(self):
        self._fault_then_clean_rerun(random_bytes(self.SIZE - 77, 2))


class ListedSizeTest(RelayTestCase):

    def _sizes_unknown(self, attrs):
        files = {"IMG_4000.jpg": 4000, "empty.dat": 0, "one.txt": 1, "VID_big.mp4": (1 << 20) + 12345}
        for i, (n, size) in enumerate(sorted(files.items())):
            write_file(os.path.join(self.remote, n), random_bytes(size, 10 + i), mtime=T0 + i)
        # an existing local copy with other content (and size) and another mtime
        write_file(os.path.join(self.local, "IMG_4000.jpg"), random_bytes(3000, 99), mtime=T_OLD)
        self.srv.relay_set(no_size={"names": ["*"], "attrs": attrs})
        r = self.pull("--json")
        self.assertFired("no_size")
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)
        self.assertNoLeftovers()

    def test_listing_without_sizes(self):
        self._sizes_unknown(attrs=False)

    def test_listing_and_stat_without_sizes(self):
        self._sizes_unknown(attrs=True)

    def test_listed_size_larger_than_file(self):
        """EOF before the listed size: the file fails (exit 5) and is not committed."""
        write_file(os.path.join(self.remote, "new.jpg"), random_bytes(200_000, 3), mtime=T0)
        write_file(os.path.join(self.remote, "old.jpg"), random_bytes(300_000, 4), mtime=T0)
        good = write_file(os.path.join(self.remote, "good.jpg"), random_bytes(5000, 5), mtime=T0)
        old = random_bytes(1234, 6)
        write_file(os.path.join(self.local, "old.jpg"), old, mtime=T_OLD)
        self.srv.relay_set(size_lie={"new.jpg": 1000, "old.jpg": 70_000})
        r = self.pull("--json")
        self.assertFired("size_lie")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual(self.failed_paths(r), ["new.jpg", "old.jpg"], r)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "new.jpg")),
                         "a file shorter than its listed size was committed")
        self.assertEqual(read(os.path.join(self.local, "old.jpg")), old, "the old copy was replaced")
        self.assertEqual(read(os.path.join(self.local, "good.jpg")), read(good))
        self.assertNoLeftovers()

    def test_listed_size_smaller_than_file(self):
        """The file grew after it was listed: all of it arrives, or it fails; never a prefix."""
        real = {"grew.jpg": random_bytes(500_000, 7), "grew_small.txt": random_bytes(3000, 8)}
        for n, data in real.items():
            write_file(os.path.join(self.remote, n), data, mtime=T0)
        self.srv.relay_set(size_lie={"grew.jpg": -100_000, "grew_small.txt": -2999})
        r = self.pull("--json")
        self.assertFired("size_lie")
        self.assertIn(r.code, (EXIT_OK, EXIT_PARTIAL), r)
        failed = self.failed_paths(r)
        for n, data in real.items():
            dst = os.path.join(self.local, n)
            if os.path.lexists(dst):
                self.assertEqual(len(read(dst)), len(data), "%s committed cut (a prefix): %r" % (n, r))
                self.assertEqual(read(dst), data, n)
                self.assertNotIn(n, failed)
            else:
                self.assertIn(n, failed, "%s neither synced nor reported failed: %r" % (n, r))
                self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertNoLeftovers()


class PlainRenameTest(RelayTestCase):
    """Push onto a server without posix-rename@openssh.com; OpenSSH's sftp-server then refuses
    a plain RENAME onto an existing target, so a replace needs more than one step."""

    NOPOSIX = ["posix-rename@openssh.com"]

    def setUp(self):
        super().setUp()
        self.old = random_bytes(40_000, 20)
        self.new = random_bytes(50_000, 21)
        self.rfile = write_file(os.path.join(self.remote, "IMG_1.jpg"), self.old, mtime=T_OLD)
        write_file(os.path.join(self.local, "IMG_1.jpg"), self.new, mtime=T0)
        write_file(os.path.join(self.local, "IMG_2.jpg"), b"second\n", mtime=T0)

    def test_replace_without_posix_rename(self):
        self.srv.relay_set(hide_extensions=self.NOPOSIX)
        r = self.push("--json")
        self.assertFired("hide_extensions")
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertEqual(read(self.rfile), self.new)
        self.assertEqual(leftovers(self.remote), [], "aside or temp copies left on the server")
        self.assertTreesEqual(self.local, self.remote, dir_mtimes=False)

    def test_refused_rename_keeps_old_remote_file(self):
        # Every rename onto IMG_1.jpg is refused, except from the aside copy of the old file
        # (putting it back must stay possible).
        self.srv.relay_set(hide_extensions=self.NOPOSIX,
                           refuse_rename_to={"names": ["IMG_1.jpg"], "unless_from": ".IMG_1.jpg.phsync-o."})
        r = self.push("--json")
        self.assertFired("refuse_rename_to")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual(self.failed_paths(r), ["IMG_1.jpg"], r)
        self.assertTrue(os.path.isfile(self.rfile), "the remote file is gone after a refused rename")
        self.assertEqual(read(self.rfile), self.old, "the remote file lost its old bytes")
        self.assertEqual(read(os.path.join(self.remote, "IMG_2.jpg")), b"second\n")
        self.assertEqual(leftovers(self.remote), [], "aside or temp copies left on the server")

    def test_link_dies_after_old_file_moved_aside(self):
        self.srv.relay_set(hide_extensions=self.NOPOSIX, die_after_rename_from=["IMG_1.jpg"])
        r = self.run_bounded(self.push_args("--json"), 120)
        self.assertFired("die_after_rename_from")
        self.assertIn(r.code, LINK_LOST, r)
        # The old content exists on the server: under its name, or as the aside copy.
        asides = [n for n in os.listdir(self.remote) if n.startswith(".IMG_1.jpg.phsync-o.")]
        holders = [n for n in ["IMG_1.jpg"] + asides
                   if os.path.isfile(os.path.join(self.remote, n))
                   and read(os.path.join(self.remote, n)) == self.old]
        self.assertTrue(holders, "the old bytes exist nowhere on the server: %r" % sorted(os.listdir(self.remote)))

        self.srv.relay_set(hide_extensions=self.NOPOSIX)
        r = self.push("--json", expect=EXIT_OK)
        self.assertEqual(read(self.rfile), self.new)
        self.assertEqual(leftovers(self.remote), [], "aside or temp copies left after the clean re-run")
        self.assertTreesEqual(self.local, self.remote, dir_mtimes=False)


class HangTest(RelayTestCase):
    """The server stops answering (the connection stays open)."""

    BOUND = 45  # --timeout 3 must end the run long before this, and before the 60 s default

    def setUp(self):
        super().setUp()
        self.data = random_bytes(8 << 20, 30)
        self.rfile = write_file(os.path.join(self.remote, "VID_1.mp4"), self.data, mtime=T0)
        self.old = random_bytes(1000, 31)
        self.lfile = write_file(os.path.join(self.local, "VID_1.mp4"), self.old, mtime=T_OLD)

    def _hung_run(self, args, hang, remote_temp_possible=False):
        self.srv.relay_set(hang=hang)
        r = self.run_bounded(args, self.BOUND)
        self.assertFired("hang")
        self.assertEqual(r.code, EXIT_CONNECT, r)
        if remote_temp_possible:
            # A push's temp file on a server that stopped answering cannot be removed by
            # the run that made it; the next run removes it (its owner is gone).
            self.assertNoLeftovers(self.local)
        else:
            self.assertNoLeftovers()
        self.assertNoSessionLeft()
        return r

    def test_timeout_during_read(self):
        self._hung_run(self.pull_args("--timeout", "3"), {"type": "READ", "name": "VID_1.mp4"})
        self.assertEqual(read(self.lfile), self.old, "the old local copy changed")

    def test_timeout_during_listing(self):
        self._hung_run(self.pull_args("--timeout", "3"), {"type": "READDIR", "name": "*"})
        self.assertEqual(read(self.lfile), self.old, "the old local copy changed")

    def test_timeout_during_write(self):
        new = random_bytes(8 << 20, 32)
        write_file(self.lfile, new, mtime=T0 + 60)
        self._hung_run(self.push_args("--timeout", "3"), {"type": "WRITE", "name": "*"},
                       remote_temp_possible=True)
        self.assertEqual(read(self.rfile), self.data, "the remote file changed")
        self.assertEqual(read(self.lfile), new)
        # The server answers again: the next push finishes and clears the hung run's temp.
        self.srv.relay_set()
        r = self.run_bounded(self.push_args(), self.BOUND)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(self.rfile), new)
        self.assertNoLeftovers()

    def _start_hung_pull(self):
        self.srv.relay_set(hang={"type": "READ", "name": "VID_1.mp4"})
        p = self.srv.popen(self.pull_args("--timeout", "600"))
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        self.wait_for(lambda: "hang" in [f.split()[0] for f in self.srv.relay_fired()] or p.poll() is not None,
                      120, "the pull reached the hanging READ")
        if p.poll() is not None:
            self.fail("phsync ended (exit %d) before the signal: %r" % (p.returncode, p.communicate()))
        return p

    def _after_signal(self, p, bound):
        try:
            out, err = p.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail("phsync did not stop within %d s of SIGINT (--timeout 600); stderr:\n%s"
                      % (bound, err.decode("utf-8", "replace")[-2000:]))
        check_sanitizers(p.returncode, err.decode("utf-8", "replace"), p.args)
        return p.returncode, err

    def test_sigint_while_hung(self):
        p = self._start_hung_pull()
        p.send_signal(signal.SIGINT)
        code, err = self._after_signal(p, 30)
        self.assertEqual(code, EXIT_INTERRUPTED, err)
        self.assertEqual(read(self.lfile), self.old, "partial file under the final name")
        self.assertNoLeftovers()
        self.assertNoSessionLeft()

    def test_second_sigint_exits_at_once(self):
        p = self._start_hung_pull()
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGINT)
        code, err = self._after_signal(p, 10)
        self.assertIn(code, (EXIT_INTERRUPTED, -signal.SIGINT), err)
        self.assertEqual(read(self.lfile), self.old, "partial file under the final name")
        self.assertNoSessionLeft()


class UnreachedTest(RelayTestCase):
    """Issue 22, item 12: a run cut short (--timeout, SIGINT, a dead link) names the files of
    its plan it never got to: each in a `not-reached` JSON event (and on stderr), counted in
    the summary (`files_not_reached`), so that done + failed + not reached = files_todo; the
    exit is never 0. Those files are absent (no partial file, no temp)."""

    N = 100  # more than the 64 files a pull opens at once: IMG_080 is reached only after
    BOUND = 45  # at least 17 files were read whole

    def setUp(self):
        super().setUp()
        self.datas = {}
        for i in range(self.N):
            rel = "DCIM/IMG_%03d.jpg" % i
            self.datas[rel] = random_bytes(20_000 + i, 300 + i)
            write_file(os.path.join(self.remote, rel), self.datas[rel], mtime=T0)

    def assertAccounted(self, r, code, src_root, dst_root, named_on=None):
        """Every file of the plan is done, failed or not reached, each once; the summary's
        counts say the same and add up to files_todo; not-reached files are absent."""
        self.assertEqual(r.code, code, r)
        evs = r.json()
        done = {e["path"] for e in evs if e["event"] == "file" and e.get("status") == "ok"}
        failed = {e["path"] for e in evs if e["event"] == "file" and e.get("status") == "failed"}
        unreached = [e["path"] for e in evs if e["event"] == "not-reached"]
        summ = [e for e in evs if e["event"] == "summary"][-1]
        self.assertEqual(len(unreached), len(set(unreached)), "a file named twice")
        self.assertEqual(done | failed | set(unreached), set(self.datas), r)
        self.assertEqual(len(done) + len(failed) + len(unreached), self.N, r)
        self.assertTrue(unreached, "the cut run reached every file? %r" % (r,))
        self.assertEqual((summ["files_done"], summ["files_failed"], summ["files_not_reached"],
                          summ["files_todo"]), (len(done), len(failed), len(unreached), self.N), r)
        self.assertEqual(summ["exit"], code)
        # Not-reached events come before the summary.
        self.assertEqual(evs[-1]["event"], "summary")
        for rel in unreached:
            self.assertFalse(os.path.lexists(os.path.join(dst_root, rel)), rel)
        for rel in done:
            self.assertEqual(read(os.path.join(dst_root, rel)), self.datas[rel], rel)
        self.assertEqual(leftovers(self.local), [])
        return unreached

    def test_pull_timeout_names_unreached_files(self):
        self.srv.relay_set(hang={"type": "READ", "name": "IMG_080.jpg"})
        r = self.run_bounded(self.pull_args("--json", "--timeout", "3"), self.BOUND)
        self.assertFired("hang")
        unreached = self.assertAccounted(r, EXIT_CONNECT, self.remote, self.local)
        self.assertIn("DCIM/IMG_080.jpg", unreached)
        # What was read whole before the hang is in place and counted.
        self.assertGreater(r.json()[-1]["files_done"], 0, r)
        self.assertNoSessionLeft()

    def test_pull_timeout_human_summary(self):
        self.srv.relay_set(hang={"type": "READ", "name": "IMG_080.jpg"})
        r = self.run_bounded(self.pull_args("--progress", "--timeout", "3"), self.BOUND)
        self.assertFired("hang")
        self.assertEqual(r.code, EXIT_CONNECT, r)
        present = {rel for rel in self.datas if os.path.exists(os.path.join(self.local, rel))}
        missing = sorted(set(self.datas) - present)
        self.assertIn("DCIM/IMG_080.jpg", missing)
        named = [l for l in r.err.splitlines() if l.endswith(": not reached (the run ended first)")]
        # The first ten are named; the count says how many in all.
        self.assertEqual(len(named), min(10, len(missing)), r)
        self.assertIn("phsync: %d of %d files to copy not reached" % (len(missing), self.N), r.err)
        self.assertRegex(r.err, r"%d of %d files copied .* 0 failed, %d not reached"
                         % (len(present), self.N, len(missing)))

    def test_pull_sigint_names_unreached_files(self):
        self.srv.relay_set(hang={"type": "READ", "name": "IMG_080.jpg"})
        p = self.srv.popen(self.pull_args("--json", "--timeout", "600"))
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        self.wait_for(lambda: "hang" in [f.split()[0] for f in self.srv.relay_fired()] or p.poll() is not None,
                      120, "the pull reached the hanging READ")
        self.assertIsNone(p.poll(), "phsync ended before the signal")
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail("phsync did not stop within 30 s of SIGINT")
        r = Result(p.returncode, out, err, p.args)
        check_sanitizers(r.code, r.err, p.args)
        self.assertAccounted(r, EXIT_INTERRUPTED, self.remote, self.local)

    def test_pull_dead_link_names_unreached_files(self):
        self.srv.relay_set(die_mid_data={"name": "IMG_080.jpg"})
        r = self.run_bounded(self.pull_args("--json"), self.BOUND)
        self.assertFired("die_mid_data")
        self.assertIn(r.code, LINK_LOST, r)
        self.assertAccounted(r, r.code, self.remote, self.local)

    def test_push_timeout_names_unreached_files(self):
        # The same tree, pushed: from a local folder to an empty remote one.
        shutil.rmtree(self.local, ignore_errors=True)
        os.rename(self.remote, self.local)
        os.makedirs(self.remote)
        self.srv.relay_set(hang={"type": "WRITE", "name": "*"})
        r = self.run_bounded(self.push_args("--json", "--timeout", "3"), self.BOUND)
        self.assertFired("hang")
        evs = r.json()
        unreached = self.assertAccounted(r, EXIT_CONNECT, self.local, self.remote)
        self.assertEqual(len(unreached) + sum(1 for e in evs if e["event"] == "file"), self.N)


class ShrinkTest(RelayTestCase):

    def test_file_shrinks_while_waiting_behind_a_big_one(self):
        """B shrinks to 0 bytes when its remote temp is opened, while A (opened just before it)
        holds the whole write window: B's first write is issued later, from the main loop,
        with nothing of B in flight.  The run must still end."""
        big = write_file(os.path.join(self.local, "A_big.mp4"), random_bytes(24 << 20, 42), mtime=T0)
        old = random_bytes(100_000, 43)
        rfile = write_file(os.path.join(self.remote, "B.jpg"), old, mtime=T_OLD)
        lfile = write_file(os.path.join(self.local, "B.jpg"), random_bytes(300_000, 44), mtime=T0)
        self.srv.relay_set(truncate_on_open={"name": "B.jpg", "path": lfile})
        r = self.run_bounded(self.push_args("--json"), 60)
        self.assertFired("truncate_on_open")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual(self.failed_paths(r), ["B.jpg"], r)
        self.assertEqual(read(rfile), old, "the remote file changed")
        self.assertEqual(read(os.path.join(self.remote, "A_big.mp4")), read(big))
        self.assertEqual(leftovers(self.remote), [], "temp files left on the server")

    def test_local_file_grows_during_push(self):
        """A video still being recorded on the laptop: bytes appended after phsync listed it.
        The remote must never get the listed prefix under the final name."""
        old = random_bytes(100_000, 45)
        rfile = write_file(os.path.join(self.remote, "VID_2.mp4"), old, mtime=T_OLD)
        lfile = write_file(os.path.join(self.local, "VID_2.mp4"), random_bytes(1 << 20, 46), mtime=T0)
        self.srv.relay_set(truncate_on_open={"name": "VID_2.mp4", "path": lfile, "append": 5000})
        r = self.run_bounded(self.push_args("--json"), 60)
        self.assertFired("truncate_on_open")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertEqual(self.failed_paths(r), ["VID_2.mp4"], r)
        self.assertEqual(read(rfile), old, "the remote file changed")
        self.assertEqual(leftovers(self.remote), [], "temp files left on the server")
        # Once it stops growing, the next run sends all of it.
        self.srv.relay_set()
        r = self.run_bounded(self.push_args(), 60)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(rfile), read(lfile))

    def test_local_file_shrinks_during_push(self):
        old = random_bytes(100_000, 40)
        rfile = write_file(os.path.join(self.remote, "VID_1.mp4"), old, mtime=T_OLD)
        lfile = write_file(os.path.join(self.local, "VID_1.mp4"), random_bytes(2 << 20, 41), mtime=T0)
        write_file(os.path.join(self.local, "b.txt"), b"bee\n", mtime=T0)
        self.srv.relay_set(truncate_on_open={"name": "VID_1.mp4", "path": lfile})
        r = self.run_bounded(self.push_args("--json"), 60)
        self.assertFired("truncate_on_open")
        self.assertEqual(r.code, EXIT_PARTIAL, r)
        self.assertIn("VID_1.mp4", self.failed_paths(r))
        self.assertEqual(read(rfile), old, "the remote file changed")
        self.assertEqual(leftovers(self.remote), [], "temp files left on the server")
        self.assertEqual(read(os.path.join(self.remote, "b.txt")), b"bee\n")


class SetstatTest(RelayTestCase):

    def test_setstat_refused_files_land_with_warnings(self):
        files = {"IMG_1.jpg": random_bytes(70_000, 50), "sub/IMG_2.jpg": random_bytes(10, 51)}
        for n, data in files.items():
            write_file(os.path.join(self.local, n), data, mtime=T0)
        self.srv.relay_set(deny_setstat=["*"])
        r = self.push("--json")
        self.assertFired("deny_setstat")
        self.assertEqual(r.code, EXIT_OK, r)
        for n, data in files.items():
            self.assertEqual(read(os.path.join(self.remote, n)), data, n)
        warned = {e["path"] for e in r.json() if e["event"] == "warning"}
        self.assertLessEqual(set(files), warned, "a warning per file whose times could not be set: %r" % (r,))
        self.assertNoLeftovers()
        # issue 7: the state remembers the time the phone gave each file, so a re-push of
        # unchanged files sends nothing (no transfer loop), and an edited file still goes.
        r = self.push("--json")
        self.assertEqual(r.code, EXIT_OK, r)
        s = r.json()[-1]
        self.assertEqual((s["files_done"], s["bytes_done"]), (0, 0), r)
        write_file(os.path.join(self.local, "IMG_1.jpg"), b"edited", mtime=T0 + 60)
        r = self.push("--json")
        self.assertEqual(r.code, EXIT_OK, r)
        self.assertEqual(r.json()[-1]["files_done"], 1, r)
        self.assertEqual(read(os.path.join(self.remote, "IMG_1.jpg")), b"edited")
        r = self.push("--json")
        self.assertEqual(r.json()[-1]["files_done"], 0, r)


if __name__ == "__main__":
    unittest.main()


class ResumeTest(RelayTestCase):
    """A large download cut by a dying link keeps its good prefix; the next run fetches only
    the rest, and starts over if the source changed meanwhile (issue 7: resume)."""

    SIZE = 24 << 20

    def _cut(self):
        self.video = write_file(os.path.join(self.remote, "VID.mp4"), random_bytes(self.SIZE, 7),
                                mtime=T0)
        self.state = os.path.join(self.tmp, "state")
        self.srv.relay_set(die_mid_data={"name": "VID.mp4", "at": 20 << 20})
        r = self.run_bounded(self.pull_args("--state-dir", self.state), 120)
        self.assertFired("die_mid_data")
        self.assertIn(r.code, LINK_LOST, r)
        self.srv.relay_set()
        self.assertFalse(os.path.exists(os.path.join(self.local, "VID.mp4")))
        (part,) = [n for n in os.listdir(self.local) if n.startswith(".VID.mp4.phsync-p.")]
        part = os.path.join(self.local, part)
        have = os.path.getsize(part)
        self.assertGreaterEqual(have, 1 << 20)
        self.assertLessEqual(have, 20 << 20)
        self.assertEqual(read(part), read(self.video)[:have], "the kept prefix is not the source's")
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            self.assertEqual(list(c.execute("SELECT path, have FROM partial")), [("VID.mp4", have)])
        return have, db

    def test_cut_download_resumes_from_its_good_prefix(self):
        have, db = self._cut()
        r = self.pull("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE - have, "more than the rest was read")
        # Said as a resume, not as a whole new copy (issue 25, item 8).
        self.assertEqual([(e["action"], e["path"]) for e in r.json() if e["event"] == "file"],
                         [("resume", "VID.mp4")])
        self.assertEqual(read(os.path.join(self.local, "VID.mp4")), read(self.video))
        self.assertEqual(leftovers(self.local), [])
        with sqlite3.connect(db) as c:
            self.assertEqual(list(c.execute("SELECT path FROM partial")), [])
            (h,) = c.execute("SELECT hex(hash) FROM files WHERE path = 'VID.mp4'").fetchone()
        self.assertIsNotNone(h, "no content hash recorded for a resumed file")

    def test_changed_source_starts_over(self):
        self._cut()
        write_file(self.video, random_bytes(self.SIZE, 8), mtime=T0 + 60)
        r = self.pull("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE)
        self.assertEqual(read(os.path.join(self.local, "VID.mp4")), read(self.video))
        self.assertEqual(leftovers(self.local), [])


class PushResumeTest(RelayTestCase):
    """A large upload cut by a dying link keeps its temp file on the phone and the prefix the
    server acknowledged in the state; the next push sends only the rest, and starts over when
    the local file changed meanwhile or the kept bytes are not the file's (issue 7: resume)."""

    SIZE = 24 << 20

    def _cut(self):
        self.video = write_file(os.path.join(self.local, "VID.mp4"), random_bytes(self.SIZE, 9),
                                mtime=T0)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.remote, exist_ok=True)
        self.srv.relay_set(die_after_write={"name": "VID.mp4", "bytes": 12 << 20})
        r = self.run_bounded(self.push_args("--state-dir", self.state), 120)
        self.assertFired("die_after_write")
        self.assertIn(r.code, LINK_LOST, r)
        self.srv.relay_set()
        self.assertFalse(os.path.exists(os.path.join(self.remote, "VID.mp4")))
        (tmp,) = [n for n in os.listdir(self.remote) if n.startswith(".VID.mp4.phsync-t.")]
        (db,) = glob.glob(os.path.join(self.state, "*.db"))
        with sqlite3.connect(db) as c:
            ((path, name, have),) = list(c.execute("SELECT path, tmp, have FROM partial"))
        self.assertEqual((path, name), ("VID.mp4", tmp))
        self.assertGreaterEqual(have, 1 << 20)
        # The relay dies after the reply to the write that reaches 12 MiB (up to one more
        # write's worth, 255 KiB on OpenSSH) arrived.
        self.assertLessEqual(have, (12 << 20) + (256 << 10))
        tmp = os.path.join(self.remote, tmp)
        self.assertGreaterEqual(os.path.getsize(tmp), have)
        self.assertEqual(read(tmp)[:have], read(self.video)[:have], "the kept prefix is not the file's")
        return have, tmp, db

    def test_cut_upload_resumes_from_the_acknowledged_prefix(self):
        have, tmp, db = self._cut()
        r = self.push("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE - have, "more than the rest was sent")
        self.assertEqual([(e["action"], e["path"]) for e in r.json() if e["event"] == "file"],
                         [("resume", "VID.mp4")])
        self.assertEqual(read(os.path.join(self.remote, "VID.mp4")), read(self.video))
        self.assertEqual(os.stat(os.path.join(self.remote, "VID.mp4")).st_mtime, T0)
        self.assertEqual(leftovers(self.remote), [])
        with sqlite3.connect(db) as c:
            self.assertEqual(list(c.execute("SELECT path FROM partial")), [])
            (h,) = c.execute("SELECT lower(hex(hash)) FROM files WHERE path = 'VID.mp4'").fetchone()
        # The hash covers the whole file, the kept prefix included (hashed from here).
        x = subprocess.run(["xxhsum", "-H2", self.video], capture_output=True, text=True)
        if x.returncode == 0:
            self.assertEqual(h, x.stdout.split()[0].split("_")[-1])
        # Settled: nothing moves.
        r = self.push("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], 0)

    def test_changed_local_file_starts_over(self):
        have, tmp, db = self._cut()
        write_file(self.video, random_bytes(self.SIZE, 10), mtime=T0 + 60)
        r = self.push("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE)
        self.assertEqual(read(os.path.join(self.remote, "VID.mp4")), read(self.video))
        self.assertEqual(leftovers(self.remote), [])

    def test_kept_bytes_that_differ_start_over(self):
        # The phone's copy of the prefix is not what was sent (a phone that rebooted, a temp
        # edited by someone): checked before it is trusted, then the whole file goes.
        have, tmp, db = self._cut()
        with open(tmp, "r+b") as f:
            f.seek(have - 100)
            f.write(b"\0" * 100)
        r = self.push("--state-dir", self.state, "--json", expect=EXIT_OK)
        self.assertEqual(r.json()[-1]["bytes_done"], self.SIZE)
        self.assertEqual(read(os.path.join(self.remote, "VID.mp4")), read(self.video))
        self.assertEqual(leftovers(self.remote), [])
