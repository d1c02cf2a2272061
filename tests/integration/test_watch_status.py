# SPDX-License-Identifier: ISC
"""The watcher's live state in `phsync status` (issue 9), its kept connections (keepalives while
a link is held, closed after a long idle) and the inotify queue overflow, against a real sshd.

- status: each watched pair's record (watching, syncing, waiting for the host with the next
  try, the last sync's result and time) in human and --json output; a record left by a killed
  watcher shows as gone, never as watching; a watcher that stops cleanly removes it.
- keepalives: a push pair holding its connection proves it alive on its timer (the count grows
  in the record); after `idle-close` the connection is closed (the TCP connection to sshd is
  gone) and the next change connects again; a phone that vanished is found by the keepalive.
- overflow: with fs.inotify.max_queued_events lowered (root: the sysctl is written for the
  instant the daemon creates its inotify instance, and put back in a finally block), files made
  while the daemon is stopped (SIGSTOP) overflow its queue: the warning names the sysctl and
  every file still arrives through the full rescan.

Waits are conditions with generous bounds (watcher.wait_for); nothing asserts a duration.
"""

import json
import os
import signal
import subprocess
import sys

from harness import SyncTestCase, skip_or_fail, write_file
from watcher import Bg, arrived, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from linkproxy import LinkProxy  # noqa: E402

T0 = 1700000000
QUEUE_SYSCTL = "/proc/sys/fs/inotify/max_queued_events"


class WatchStatusTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def conf(self, pairs, ssh_config=None, extra=""):
        text = ("[defaults]\nssh-config = %s\nstate-dir = %s\ninterval = 1\nsettle-ms = 100\n%s\n"
                % (ssh_config or self.srv.config, self.state, extra))
        for name, direction, remote, local, more in pairs:
            text += ("[%s]\ndirection = %s\nremote = phone:%s\nlocal = %s\n%s\n"
                     % (name, direction, remote, local, more))
        path = os.path.join(self.tmp, "phsync.conf")
        with open(path, "w") as f:
            f.write(text)
        return path

    def daemon(self, conf, *opts, prefix=()):
        d = Bg(self.srv, ["daemon", "-c", conf] + list(opts), prefix=prefix)
        self.addCleanup(d.kill)
        return d

    def status(self):
        r = self.srv.run(["status", "--json", "--state-dir", self.state])
        self.assertEqual(r.code, 0, r)
        return {e["name"]: e for e in r.json() if e["event"] == "watch"}

    def status_text(self):
        r = self.srv.run(["status", "--state-dir", self.state])
        self.assertEqual(r.code, 0, r)
        return r.out if isinstance(r.out, str) else r.out.decode()

    def wait_status(self, name, cond, what):
        def check():
            w = self.status().get(name)
            return w if w is not None and cond(w) else None
        return wait_for(check, what="%s: %s" % (name, what))

    def test_status_shows_each_pairs_state(self):
        up_local, down_local = os.path.join(self.tmp, "up"), os.path.join(self.tmp, "down")
        up_remote, down_remote = os.path.join(self.remote, "Up"), os.path.join(self.remote, "DCIM")
        os.makedirs(up_local)
        os.makedirs(down_remote)
        write_file(os.path.join(down_remote, "a.jpg"), b"photo a", mtime=T0)
        conf = self.conf([("up", "push", up_remote, up_local, ""),
                          ("down", "pull", down_remote, down_local, "")])
        d = self.daemon(conf)
        d.wait_line(r"^phsync: up: watching ")
        d.wait_line(r"^phsync: down: watching ")
        down = self.wait_status("down", lambda w: w["state"] == "watching" and w["last_end"] > 0,
                                "watching after its first sync")
        self.assertTrue(down["live"])
        self.assertEqual(down["pid"], d.p.pid)
        self.assertEqual(down["direction"], "pull")
        self.assertEqual(down["remote"], "phone:" + down_remote)
        self.assertEqual(down["local"], os.path.realpath(down_local))
        self.assertEqual(down["config"], conf)
        self.assertEqual((down["last_result"], down["last_exit"], down["files_done"]), ("success", 0, 1))
        self.assertTrue(down["connected"])
        self.assertEqual(down["error"], "")
        up = self.wait_status("up", lambda w: w["state"] == "watching", "watching")
        self.assertEqual(up["local"], os.path.realpath(up_local))
        # A local change: its sync's result and time land in the record.
        before = up["last_end"]
        write_file(os.path.join(up_local, "b.txt"), b"to the phone", mtime=T0)
        wait_for(lambda: arrived(os.path.join(up_remote, "b.txt"), b"to the phone", T0), what="b.txt")
        up = self.wait_status("up", lambda w: w["files_done"] == 1 and w["last_end"] >= before,
                              "the sync of b.txt recorded")
        self.assertEqual((up["state"], up["last_result"]), ("watching", "success"))
        self.assertGreaterEqual(up["last_end"], up["last_start"])
        text = self.status_text()
        self.assertIn("watched pairs:\n", text)
        self.assertIn("down: pull phone:%s -> %s\n" % (down_remote, os.path.realpath(down_local)), text)
        self.assertIn("up: push %s -> phone:%s\n" % (os.path.realpath(up_local), up_remote), text)
        self.assertRegex(text, r"  watching since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(pid %d, connected\)"
                         % d.p.pid)
        self.assertRegex(text, r"  last sync \d{4}-.*: ok, 1 copied, 0 failed")
        # The phone leaves: the pull pair waits for the host, with its next try and why.
        self.srv.pause()
        try:
            down = self.wait_status("down", lambda w: w["state"] == "waiting", "waiting for the host")
            self.assertGreater(down["retry_at"], 0)
            self.assertNotEqual(down["error"], "")
            self.assertFalse(down["connected"])
            self.assertIn("waiting for the host since", self.status_text())
        finally:
            self.srv.resume()
        write_file(os.path.join(down_remote, "c.jpg"), b"photo c", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(down_local, "c.jpg"), b"photo c", T0 + 1), what="c.jpg")
        self.wait_status("down", lambda w: w["state"] == "watching" and w["error"] == "",
                         "watching again")
        # The pair's own status (`status HOST:DIR LOCALDIR`) names its watcher too.
        r = self.srv.run(["status", "-F", self.srv.config, "--state-dir", self.state,
                          "phone:" + down_remote, down_local])
        self.assertEqual(r.code, 0, r)
        self.assertIn("watcher:\n  watching since", r.out)
        # A clean stop removes the records: nothing is watched any more.
        self.assertEqual(d.stop(), 0, d.text())
        self.assertEqual(self.status(), {})
        self.assertNotIn("watched pairs:", self.status_text())

    def test_killed_watcher_is_not_shown_as_watching(self):
        os.makedirs(self.local)
        conf = self.conf([("music", "push", self.remote, self.local, "")])
        d = self.daemon(conf)
        d.wait_line(r"^phsync: music: watching ")
        self.wait_status("music", lambda w: w["state"] == "watching" and w["live"], "watching")
        os.killpg(d.p.pid, signal.SIGKILL)
        d.p.wait()
        w = self.status()["music"]
        self.assertFalse(w["live"])
        self.assertEqual(w["state"], "gone")
        self.assertEqual(w["recorded_state"], "watching")
        self.assertFalse(w["connected"])
        text = self.status_text()
        self.assertIn("not watched: its watcher (pid %d) ended without a word" % d.p.pid, text)
        self.assertNotIn("watching since", text)
        # The next watcher of the pair takes the record over.
        d2 = self.daemon(conf)
        d2.wait_line(r"^phsync: music: watching ")
        w = self.wait_status("music", lambda w: w["live"], "the new watcher's record")
        self.assertEqual((w["pid"], w["state"]), (d2.p.pid, "watching"))
        self.assertEqual(d2.stop(), 0, d2.text())

    def test_watch_mode_keeps_a_record_and_shows_syncing(self):
        # A slow link (1 MB/s) so the sync of a 4 MB file lasts long enough to be seen.
        proxy = LinkProxy(self.srv.port, rtt_ms=2, mbit=8)
        proxy.start()
        self.addCleanup(proxy.sock.close)
        cfg = self.srv.write_config(port=proxy.port)
        os.makedirs(self.local)
        bg = Bg(self.srv, ["push", "--watch", "-F", cfg, "--state-dir", self.state,
                           self.local, "phone:" + self.remote])
        self.addCleanup(bg.kill)
        bg.wait_line(r"watching ")
        name = "phone:" + self.remote  # --watch names its pair by the remote
        w = self.wait_status(name, lambda w: w["state"] == "watching", "watching")
        self.assertEqual((w["direction"], w["config"], w["pid"]), ("push", "", bg.p.pid))
        write_file(os.path.join(self.local, "big.mov"), os.urandom(4 << 20), mtime=T0)
        self.wait_status(name, lambda w: w["state"] == "syncing", "syncing")
        self.wait_status(name, lambda w: w["state"] == "watching" and w["files_done"] == 1,
                         "the big file synced")
        self.assertEqual(bg.stop(), 0, bg.text())
        self.assertEqual(self.status(), {})

    @staticmethod
    def fd_targets(pid):
        out = []
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:  # closed meanwhile
                pass
        return out

    def established_to(self, pid, port):
        """TCP connections of process pid to 127.0.0.1:port (from /proc: no ss needed)."""
        inodes = set()
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if t.startswith("socket:["):
                inodes.add(t[8:-1])
        n = 0
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                rport = int(parts[2].split(":")[1], 16)
                if parts[3] == "01" and rport == port and parts[9] in inodes:
                    n += 1
        return n

    def test_keepalives_while_held_and_close_after_idle(self):
        os.makedirs(self.local)
        conf = self.conf([("music", "push", self.remote, self.local, "keepalive = 1\nidle-close = 10\n")])
        d = self.daemon(conf, "-v")
        d.wait_line(r"^phsync: music: watching ")
        self.assertEqual(self.established_to(d.p.pid, self.srv.port), 1)
        # Held and unused: proved alive on the timer.
        self.wait_status("music", lambda w: w["keepalives"] >= 2 and w["connected"], "keepalives")
        # Idle long enough: closed, and no connection left to sshd.
        d.wait_line(r"^phsync: music: idle for 10 s: connection closed")
        w = self.wait_status("music", lambda w: not w["connected"], "the link closed")
        wait_for(lambda: self.established_to(d.p.pid, self.srv.port) == 0, what="the TCP link closed")
        self.assertEqual(w["state"], "watching")
        # The next change connects again, and keepalives resume on the new link.
        write_file(os.path.join(self.local, "x.ogg"), b"after the idle close", mtime=T0)
        wait_for(lambda: arrived(os.path.join(self.remote, "x.ogg"), b"after the idle close", T0),
                 what="x.ogg")
        n = w["keepalives"]
        self.wait_status("music", lambda w: w["connected"] and w["keepalives"] >= n + 1,
                         "keepalives on the new link")
        # The phone vanishes: the keepalive finds the link dead and lets it go, quietly
        # (nothing to sync: no retries, no backoff).
        self.srv.pause()
        try:
            d.wait_line(r"^phsync: music: the kept connection is gone")
            w = self.wait_status("music", lambda w: not w["connected"], "the dead link dropped")
            self.assertEqual(w["state"], "watching")
        finally:
            self.srv.resume()
        write_file(os.path.join(self.local, "y.ogg"), b"phone is back", mtime=T0)
        wait_for(lambda: arrived(os.path.join(self.remote, "y.ogg"), b"phone is back", T0), what="y.ogg")
        self.assertEqual(d.stop(), 0, d.text())

    def test_pull_polling_less_often_than_idle_close_lets_the_link_go(self):
        os.makedirs(self.remote, exist_ok=True)
        conf = self.conf([("photos", "pull", self.remote, self.local,
                           "interval = 8\nkeepalive = 1\nidle-close = 3\n")])
        d = self.daemon(conf, "-v")
        d.wait_line(r"^phsync: photos: watching ")
        # Kept (and proved alive) for a while after the poll, then let go until the next one.
        self.wait_status("photos", lambda w: w["keepalives"] >= 1, "a keepalive")
        d.wait_line(r"^phsync: photos: idle for 3 s: connection closed")
        self.wait_status("photos", lambda w: not w["connected"], "the link closed")
        wait_for(lambda: self.established_to(d.p.pid, self.srv.port) == 0, what="the TCP link closed")
        # The next poll connects again and sees what the phone got meanwhile.
        write_file(os.path.join(self.remote, "new.jpg"), b"taken while idle", mtime=T0)
        wait_for(lambda: arrived(os.path.join(self.local, "new.jpg"), b"taken while idle", T0),
                 what="new.jpg pulled by the next poll")
        self.assertEqual(d.stop(), 0, d.text())

    def test_queue_overflow_rescans_everything(self):
        if os.environ.get("PHSYNC_PORTABLE") == "1":
            self.skipTest("PHSYNC_PORTABLE: no inotify fd of phsync's own, and libuv drops "
                          "IN_Q_OVERFLOW (docs/ARCHITECTURE.md, the watcher)")
        if os.geteuid() != 0:
            skip_or_fail("root", "lowering fs.inotify.max_queued_events needs root")
        try:
            with open(QUEUE_SYSCTL) as f:
                saved = f.read().strip()
        except OSError as e:
            skip_or_fail("root", "cannot read %s: %s" % (QUEUE_SYSCTL, e))
        os.makedirs(os.path.join(self.local, "sub"))
        conf = self.conf([("pics", "push", self.remote, self.local, "")])
        # The queue size is taken when an inotify instance is made: lower it only until the
        # daemon has made its own, then put it back (other programs' watchers are unaffected
        # unless they start in that instant).
        try:
            with open(QUEUE_SYSCTL, "w") as f:
                f.write("8")
        except OSError as e:  # a read-only /proc/sys (a container)
            skip_or_fail("root", "cannot write %s: %s" % (QUEUE_SYSCTL, e))
        try:
            d = self.daemon(conf)
            wait_for(lambda: "anon_inode:inotify" in self.fd_targets(d.p.pid),
                     what="the daemon's inotify instance")
        finally:
            with open(QUEUE_SYSCTL, "w") as f:
                f.write(saved)
        with open(QUEUE_SYSCTL) as f:
            self.assertEqual(f.read().strip(), saved)
        d.wait_line(r"^phsync: pics: watching ")
        # Stopped, the daemon reads nothing: 40 files (3 events each) overflow its queue of 8.
        os.kill(d.p.pid, signal.SIGSTOP)
        try:
            for i in range(40):
                write_file(os.path.join(self.local, "sub" if i % 2 else "", "p%02d.jpg" % i),
                           b"photo %d" % i, mtime=T0 + i)
        finally:
            os.kill(d.p.pid, signal.SIGCONT)
        warn = d.wait_line(r"warning: the inotify event queue overflowed")[0]
        self.assertIn("fs.inotify.max_queued_events", warn)
        self.assertIn("rescanning", warn)
        for i in range(40):
            path = os.path.join(self.remote, "sub" if i % 2 else "", "p%02d.jpg" % i)
            wait_for(lambda: arrived(path, b"photo %d" % i, T0 + i), what="p%02d.jpg" % i)
        w = self.status()["pics"]
        self.assertIn("fs.inotify.max_queued_events", w["note"])
        self.assertEqual(d.stop(), 0, d.text())
