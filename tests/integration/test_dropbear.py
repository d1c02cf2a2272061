# SPDX-License-Identifier: ISC
"""Dropbear (dropbear-bin), as SimpleSSHD runs it on phones, with OpenSSH's sftp-server (issue 22,
items 10 and 11; test_compat.py has the plain pull and push, bench/bench_dropbear.py item 9's
speed).

HelperTest      20 pulls in a row through the helper brought by the bootstrap (phsync is not on
                the server's PATH: the first run opens three channels one after another, the
                first-contact script, the upload's SFTP, the checked start of the new copy; the
                others one, the first-contact script with the remembered identity), and 20 by
                --helper-path: every one exits 0 through the helper.  A session dropped while the helper starts (a
                `phsync` on the PATH that kills its Dropbear session) fails with exit 3, says
                what happened and writes no no-helper memo; "command not found" (exit 127), a
                definite answer, does write it.
InterruptTest   SIGINT once a push's first bytes are on the server (a temp file there holding
                data), and once a pull's are on the laptop: the run exits 6 within a bound (10 s;
                README: "Ctrl-C stops within a second or two"), every file under a final name is
                whole, no temp file is left, not every file was sent (plain SFTP, and the push
                through the helper).  On Dropbear, on Dropbear
                through a 4 Mbit/s link (bench/linkproxy.py: the writes queued behind the one
                being sent must not be sent first), on OpenSSH's sshd, and on sshd through a
                8 Mbit/s link (what its 2 MiB window would take is paced).
Dropbear needs root here (harness: a private mount namespace); the classes skip with the reason
when it is unavailable (CI requires it).
"""

import json
import os
import signal
import sys
import time
import unittest

from harness import SyncTestCase, TEMP_RE, leftovers, phsync_bin, random_bytes, write_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from linkproxy import LinkProxy  # noqa: E402

T0 = 1700000000
STOP_BOUND = 10.0  # s from SIGINT to exit: a bound, not a measure (the promise is ~2 s)


def summary(r):
    for ev in r.json():
        if ev.get("event") == "summary":
            return ev
    raise AssertionError("no summary in %r" % (r,))


def helpers_dir():
    return os.path.join(os.path.dirname(phsync_bin()), "helpers")


def state_dir(srv):
    return os.path.join(srv.home, ".local", "state", "phsync")


def memos(srv):
    d = state_dir(srv)
    return sorted(n for n in os.listdir(d) if n.startswith("nohelper-")) if os.path.isdir(d) else []


# A `phsync` that drops the whole Dropbear session it runs in (kill -9 of the session's
# process): a transient failure, not an answer.
DROPPER = r"""#!/bin/sh
p=$$
while [ "$p" -gt 1 ]; do
    if [ "$(cat /proc/$p/comm 2>/dev/null)" = dropbear ]; then kill -9 "$p"; exit 1; fi
    p=$(awk '{print $4}' /proc/$p/stat)
done
exit 1
"""


class HelperTest(SyncTestCase):
    server_kwargs = {"kind": "dropbear"}

    def setUp(self):
        super().setUp()
        for n in memos(self.srv):
            os.unlink(os.path.join(state_dir(self.srv), n))
        self.addCleanup(self._no_fake_phsync)

    def _no_fake_phsync(self):
        for p in (os.path.join(self.srv.login_home, ".bashrc"),
                  os.path.join(self.srv.login_home, "bin", "phsync")):
            if os.path.exists(p):
                os.unlink(p)

    def test_20_helper_runs_in_a_row(self):
        for i in range(3):
            write_file(os.path.join(self.remote, "DCIM/IMG_%d.jpg" % i), random_bytes(200_000, i),
                       mtime=T0 + i)
        env = {"PHSYNC_HELPER_DIR": helpers_dir()}
        for run in range(20):
            dst = os.path.join(self.tmp, "laptop-%d" % run)
            r = self.pull("--json", "--helper", "always", dst=dst, env=env, timeout=120)
            self.assertEqual(r.code, 0, "run %d of 20: %r" % (run + 1, r))
            s = summary(r)
            self.assertEqual((s["helper"], s["files_done"]), (1, 3), "run %d: %r" % (run + 1, r))
            self.assertTreesEqual(self.remote, dst)
        self.assertEqual(memos(self.srv), [])

    def test_20_helper_runs_by_helper_path(self):
        write_file(os.path.join(self.remote, "a.jpg"), random_bytes(100_000, 9), mtime=T0)
        for run in range(20):
            dst = os.path.join(self.tmp, "laptop-%d" % run)
            r = self.pull("--json", "--helper", "always", "--helper-path", phsync_bin(), dst=dst,
                          timeout=120)
            self.assertEqual(r.code, 0, "run %d of 20: %r" % (run + 1, r))
            self.assertEqual(summary(r)["helper"], 1, r)
            self.assertTreesEqual(self.remote, dst)

    def test_dropped_session_writes_no_memo_command_not_found_does(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"photo", mtime=T0)
        fake = os.path.join(self.srv.login_home, "bin", "phsync")
        write_file(fake, DROPPER)
        os.chmod(fake, 0o755)
        # Debian's bash reads ~/.bashrc for a command run over ssh.
        write_file(os.path.join(self.srv.login_home, ".bashrc"), 'PATH="$HOME/bin:$PATH"\n')
        r = self.pull("--helper", "auto", timeout=120)
        self.assertEqual(r.code, 3, r)
        self.assertRegex(r.err, r"connection was lost|connection lost|closed the channel|dropped", r)
        self.assertEqual(memos(self.srv), [], "a dropped session is no answer: %r" % (r,))
        self.assertFalse(os.path.exists(os.path.join(self.local, "a.jpg")))
        # No phsync on the server (and none to bring): exit 127, the host's answer.
        self._no_fake_phsync()
        r = self.pull("--json", "--helper", "auto", expect=0)
        self.assertEqual(summary(r)["helper"], 0, r)
        self.assertEqual(len(memos(self.srv)), 1, r)
        with open(os.path.join(state_dir(self.srv), memos(self.srv)[0])) as f:
            self.assertIn("exit 127", f.read())
        with open(os.path.join(self.local, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"photo")


class _Interrupt:
    NFILES = 16
    SIZE = 6 << 20  # under 16 MiB: a cut file's temp is removed, not kept for resuming

    def make_files(self, root):
        os.makedirs(root, exist_ok=True)
        chunk = random_bytes(1 << 20, 7)
        for i in range(self.NFILES):
            with open(os.path.join(root, "VID_%02d.mp4" % i), "wb") as f:
                for k in range(self.SIZE >> 20):
                    f.write(bytes([i, k]) + chunk[2:])
            os.utime(os.path.join(root, "VID_%02d.mp4" % i), (T0 + i, T0 + i))

    def interrupt(self, args, watch):
        """Starts phsync ARGS; once a temp file in watch holds data, sends SIGINT; returns
        (exit code, stderr, seconds from the signal to the exit)."""
        p = self.srv.popen(args)
        try:
            deadline = time.monotonic() + 120
            started = False
            while not started and p.poll() is None and time.monotonic() < deadline:
                for n in os.listdir(watch) if os.path.isdir(watch) else []:
                    try:
                        if TEMP_RE.match(n) and os.path.getsize(os.path.join(watch, n)) > 0:
                            started = True
                    except OSError:
                        pass
                time.sleep(0.005)
            if not started:
                p.kill()
                out, err = p.communicate()
                self.fail("no temp file with data appeared in %s (exit %s): %s"
                          % (watch, p.returncode, err.decode(errors="replace")))
            p.send_signal(signal.SIGINT)
            t = time.monotonic()
            try:
                out, err = p.communicate(timeout=120)
            except Exception:
                p.kill()
                out, err = p.communicate()
            return p.returncode, err.decode(errors="replace"), time.monotonic() - t
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def check_stopped(self, src, dst, code, err, took):
        self.assertEqual(code, 6, "exit code after SIGINT; stderr: %s" % err)
        self.assertIn("interrupted", err)
        self.assertLess(took, STOP_BOUND, "SIGINT took %.1f s to stop the run; stderr: %s" % (took, err))
        self.assertEqual(leftovers(dst), [], "took %.1f s: %s" % (took, err))
        whole = 0
        for n in sorted(os.listdir(src)):
            d = os.path.join(dst, n)
            if os.path.exists(d):
                with open(os.path.join(src, n), "rb") as a, open(d, "rb") as b:
                    self.assertTrue(a.read() == b.read(), "%s is not whole under its final name" % n)
                whole += 1
        self.assertLess(whole, self.NFILES, "the run went on after SIGINT")

    def test_sigint_stops_a_push(self):
        self.make_files(self.local)
        args = ["push", "-F", self.config(), "--helper", "never", self.local, "phone:" + self.remote]
        code, err, took = self.interrupt(args, self.remote)
        self.check_stopped(self.local, self.remote, code, err, took)

    def test_sigint_stops_a_push_through_the_helper(self):
        self.make_files(self.local)
        args = ["push", "-F", self.config(), "--helper", "always", "--helper-path", phsync_bin(),
                self.local, "phone:" + self.remote]
        code, err, took = self.interrupt(args, self.remote)
        self.check_stopped(self.local, self.remote, code, err, took)

    def test_sigint_stops_a_pull(self):
        self.make_files(self.remote)
        args = ["pull", "-F", self.config(), "--helper", "never", "phone:" + self.remote, self.local]
        code, err, took = self.interrupt(args, self.local)
        self.check_stopped(self.remote, self.local, code, err, took)

    def config(self):
        return self.srv.config


class DropbearInterruptTest(_Interrupt, SyncTestCase):
    server_kwargs = {"kind": "dropbear"}


class DropbearSlowLinkInterruptTest(_Interrupt, SyncTestCase):
    """Through a 4 Mbit/s link: megabytes of queued writes would take seconds to send."""
    server_kwargs = {"kind": "dropbear"}
    NFILES = 6
    SIZE = 4 << 20
    MBIT = 4

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.proxy = LinkProxy(cls.srv.port, rtt_ms=4, mbit=cls.MBIT).start()
        cls.proxy_config = cls.srv.write_config(port=cls.proxy.port)

    def config(self):
        return self.proxy_config


class OpensshSlowLinkInterruptTest(DropbearSlowLinkInterruptTest):
    """sshd's 2 MiB window through an 8 Mbit/s link: what the channel took must drain before
    the temps' removal reaches the server (ssh.c paces it: PACE_CHUNK, PACE_UNSENT).  (At 4
    Mbit/s the link's own queues, the proxy's 256 KiB and the kernel's, take about the 2 s a
    stop waits for the removal; past it the temps stay for the next run.)"""
    server_kwargs = {}
    NFILES = 8
    SIZE = 8 << 20
    MBIT = 8


class OpensshInterruptTest(_Interrupt, SyncTestCase):
    pass


if __name__ == "__main__":
    unittest.main()
