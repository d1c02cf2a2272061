# SPDX-License-Identifier: ISC
"""phsync daemon (issue 9) against a real sshd on 127.0.0.1: a config of two pairs (a pull and a
push) keeps both in step; a second daemon on the same config (also reached through a symlink)
says so and exits 1; SIGHUP re-reads the config (an unchanged pair goes on, a new one starts, a
broken file keeps the running pairs); files a pull writes into a folder a push watches are not
sent back; a file closed after writing goes without waiting for the settle period (60 s in
that test), one still open for writing stays back; with the inotify watch limit reached (lowered in a user namespace of the test's own,
so the machine's sysctl is untouched) the warning names fs.inotify.max_user_watches and files
in unwatched folders still arrive by the rescan; config errors name the file and line; a
`direction = both` pair sends a local file and a local delete up, brings the phone's file down,
and does not send that file back.

IN_Q_OVERFLOW is provoked for real in test_watch_status.py (as root, lowering
fs.inotify.max_queued_events for an instant: it has no per-namespace value).
"""

import os
import shutil
import signal
import subprocess

from harness import SyncTestCase, skip_or_fail, write_file
from watcher import Bg, arrived, wait_for

T0 = 1700000000


class DaemonTest(SyncTestCase):

    def conf(self, text, name="phsync.conf"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def pair(self, name, direction, remote, local, extra=""):
        return ("[%s]\ndirection = %s\nremote = phone:%s\nlocal = %s\n%s\n"
                % (name, direction, remote, local, extra))

    def defaults(self):
        return "[defaults]\nssh-config = %s\ninterval = 1\nsettle-ms = 100\n\n" % self.srv.config

    def start(self, conf, *opts):
        d = Bg(self.srv, ["daemon", "-c", conf] + list(opts))
        self.addCleanup(d.kill)
        return d

    def test_two_pairs(self):
        phone_dcim, phone_music = os.path.join(self.remote, "DCIM"), os.path.join(self.remote, "Music")
        pics, music = os.path.join(self.tmp, "pics"), os.path.join(self.tmp, "music")
        os.makedirs(phone_dcim)
        os.makedirs(music)
        write_file(os.path.join(phone_dcim, "IMG_0.jpg"), b"photo 0", mtime=T0)
        write_file(os.path.join(music, "song0.ogg"), b"song 0", mtime=T0)
        conf = self.conf(self.defaults() + self.pair("photos", "pull", phone_dcim, pics) +
                         self.pair("music", "push", phone_music, music, "exclude = *.tmp\n"))
        d = self.start(conf)
        d.wait_line(r"^phsync: photos: watching ")
        d.wait_line(r"^phsync: music: watching ")
        self.assertTrue(arrived(os.path.join(pics, "IMG_0.jpg"), b"photo 0", T0))
        self.assertTrue(arrived(os.path.join(phone_music, "song0.ogg"), b"song 0", T0))
        write_file(os.path.join(phone_dcim, "IMG_1.jpg"), b"photo 1", mtime=T0 + 1)
        write_file(os.path.join(music, "song1.ogg"), b"song 1", mtime=T0 + 1)
        write_file(os.path.join(music, "junk.tmp"), b"excluded", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(pics, "IMG_1.jpg"), b"photo 1", T0 + 1), what="pulled")
        wait_for(lambda: arrived(os.path.join(phone_music, "song1.ogg"), b"song 1", T0 + 1), what="pushed")
        self.assertEqual(d.stop(), 0, d.text())
        self.assertFalse(os.path.exists(os.path.join(phone_music, "junk.tmp")))
        self.assertNoLeftovers(pics, phone_music)

    def test_helper_keys(self):
        # helper = always with a helper-path the phone lacks: the pair says why it cannot
        # connect (the CLI's exit 3 reason) and copies nothing; the other pair, helper = never,
        # syncs over plain SFTP.
        good, bad = os.path.join(self.tmp, "good"), os.path.join(self.tmp, "bad")
        os.makedirs(os.path.join(self.remote, "G"))
        os.makedirs(os.path.join(self.remote, "B"))
        write_file(os.path.join(self.remote, "G", "a.jpg"), b"via sftp", mtime=T0)
        write_file(os.path.join(self.remote, "B", "b.jpg"), b"never", mtime=T0)
        conf = self.conf(self.defaults() +
                         self.pair("good", "pull", os.path.join(self.remote, "G"), good, "helper = never\n") +
                         self.pair("bad", "pull", os.path.join(self.remote, "B"), bad,
                                   "helper = always\nhelper-path = /nonexistent/phsync\n"))
        d = self.start(conf)
        d.wait_line(r"^phsync: bad: .*cannot start the helper `/nonexistent/phsync")
        wait_for(lambda: arrived(os.path.join(good, "a.jpg"), b"via sftp", T0), what="a.jpg")
        self.assertEqual(d.stop(), 0, d.text())
        self.assertFalse(os.path.exists(os.path.join(bad, "b.jpg")))

    def test_second_daemon_on_the_same_config(self):
        local = os.path.join(self.tmp, "music")
        os.makedirs(local)
        conf = self.conf(self.defaults() + self.pair("music", "push", self.remote, local))
        d = self.start(conf)
        d.wait_line(r"watching ")
        link = os.path.join(self.tmp, "link.conf")
        os.symlink(conf, link)
        for path in (conf, link):
            r = self.srv.run(["daemon", "-c", path], timeout=60)
            self.assertEqual(r.code, 1, r)
            self.assertIn("another phsync daemon already runs on %s (pid %d)"
                          % (os.path.realpath(conf), d.p.pid), r.err)
        # The first one is unaffected.
        write_file(os.path.join(local, "a.ogg"), b"still running", mtime=T0)
        wait_for(lambda: arrived(os.path.join(self.remote, "a.ogg"), b"still running", T0), what="a.ogg")
        self.assertEqual(d.stop(signal.SIGINT), 0, d.text())
        # Once it is gone, the config is free again.
        d2 = self.start(conf)
        d2.wait_line(r"watching ")
        self.assertEqual(d2.stop(), 0, d2.text())

    def test_sighup_rereads_the_config(self):
        a, b = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        ra, rb = os.path.join(self.remote, "A"), os.path.join(self.remote, "B")
        os.makedirs(a)
        os.makedirs(b)
        one = self.defaults() + self.pair("a", "push", ra, a)
        conf = self.conf(one)
        d = self.start(conf)
        d.wait_line(r"^phsync: a: watching ")
        # Pair b added, pair a unchanged: a goes on, b starts.
        self.conf(one + self.pair("b", "push", rb, b))
        d.p.send_signal(signal.SIGHUP)
        d.wait_line(r"re-read .*: 1 pair\(s\) kept, 1 started, 0 stopped")
        d.wait_line(r"^phsync: b: watching ")
        self.assertEqual(len(d.matching(r"^phsync: a: watching ")), 1, "pair a was restarted")
        write_file(os.path.join(a, "x.txt"), b"to A", mtime=T0)
        write_file(os.path.join(b, "y.txt"), b"to B", mtime=T0)
        wait_for(lambda: arrived(os.path.join(ra, "x.txt"), b"to A", T0), what="x.txt via pair a")
        wait_for(lambda: arrived(os.path.join(rb, "y.txt"), b"to B", T0), what="y.txt via pair b")
        # A broken file: said, and the running pairs go on as they were.
        self.conf(one + "[b]\ndirection = sideways\n")
        d.p.send_signal(signal.SIGHUP)
        d.wait_line(r"direction = sideways: not a valid value \(the running pairs go on")
        write_file(os.path.join(b, "z.txt"), b"still B", mtime=T0)
        wait_for(lambda: arrived(os.path.join(rb, "z.txt"), b"still B", T0), what="z.txt via pair b")
        # Pair a removed: it stops.
        self.conf(self.defaults() + self.pair("b", "push", rb, b))
        d.p.send_signal(signal.SIGHUP)
        d.wait_line(r"re-read .*: 1 pair\(s\) kept, 0 started, 1 stopped")
        self.assertEqual(d.stop(), 0, d.text())

    def test_pulled_files_are_not_sent_back(self):
        # Two-way: a pull and a push between the same two folders.
        local = os.path.join(self.tmp, "pics")
        write_file(os.path.join(self.remote, "old.jpg"), b"old", mtime=T0)
        conf = self.conf(self.defaults() + self.pair("down", "pull", self.remote, local) +
                         self.pair("up", "push", self.remote, local))
        d = self.start(conf, "-v")
        d.wait_line(r"^phsync: down: watching ")
        d.wait_line(r"^phsync: up: watching ")
        write_file(os.path.join(self.remote, "DCIM/new.jpg"), b"from the phone", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(local, "DCIM/new.jpg"), b"from the phone", T0 + 1),
                 what="new.jpg pulled")
        ino = os.stat(os.path.join(self.remote, "DCIM/new.jpg")).st_ino
        # A file made here afterwards goes up; by the time it is there, the push pair has
        # seen the events of the pulled file (they came first) and judged them.
        write_file(os.path.join(local, "sentinel.txt"), b"from here", mtime=T0 + 2)
        wait_for(lambda: arrived(os.path.join(self.remote, "sentinel.txt"), b"from here", T0 + 2),
                 what="sentinel.txt pushed")
        d.wait_line(r"^phsync: up: not sent back \(a pull wrote it\): DCIM/new\.jpg")
        self.assertEqual([l for l in d.matching(r"^phsync: up: .*change\(s\)") if "new.jpg" in l], [],
                         d.text())
        self.assertEqual(os.stat(os.path.join(self.remote, "DCIM/new.jpg")).st_ino, ino)
        self.assertEqual(d.stop(), 0, d.text())

    def test_direction_both(self):
        # One two-way pair (issue 26): a local file goes up, the phone's comes down by the
        # poll, and the file the run wrote here is not sent back.
        local = os.path.join(self.tmp, "notes")
        os.makedirs(local)
        conf = self.conf(self.defaults() + self.pair("notes", "both", self.remote, local))
        d = self.start(conf, "-v")
        d.wait_line(r"^phsync: notes: watching .* changes on either side go to the other")
        write_file(os.path.join(local, "here.txt"), b"made here", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(self.remote, "here.txt"), b"made here", T0 + 1),
                 what="here.txt sent to the phone")
        write_file(os.path.join(self.remote, "phone.txt"), b"made on the phone", mtime=T0 + 2)
        wait_for(lambda: arrived(os.path.join(local, "phone.txt"), b"made on the phone", T0 + 2),
                 what="phone.txt brought here")
        d.wait_line(r"^phsync: notes: not sent back \(a pull wrote it\): phone\.txt$")
        write_file(os.path.join(self.remote, "marker.txt"), b"marker", mtime=T0 + 3)
        wait_for(lambda: arrived(os.path.join(local, "marker.txt"), b"marker", T0 + 3),
                 what="marker.txt brought here")
        self.assertEqual(len(d.matching(r"^phsync: notes: .* phone\.txt \(pull\)$")), 1, d.text())
        self.assertEqual(d.matching(r" phone\.txt \(push\)$"), [], d.text())
        self.assertEqual(len(d.matching(r" here\.txt \((pull|push)\)$")), 1, d.text())
        self.assertEqual([l for l in d.matching(r"change\(s\)") if "phone.txt" in l], [], d.text())
        # A local delete goes too (a two-way run sends deletes, with its guards).
        os.remove(os.path.join(local, "here.txt"))
        wait_for(lambda: not os.path.exists(os.path.join(self.remote, "here.txt")),
                 what="here.txt deleted on the phone")
        self.assertTrue(arrived(os.path.join(self.remote, "phone.txt"), b"made on the phone", T0 + 2))
        self.assertEqual(d.stop(), 0, d.text())
        self.assertNoLeftovers(local, self.remote)

    def test_closed_file_goes_without_the_settle_period(self):
        # settle-ms at its largest (60 s): a file closed after writing goes at once all the
        # same (the deadline, 30 s, is half the settle period), with its bytes; a file still
        # open for writing meanwhile is left alone (held back, "too new").
        if os.environ.get("PHSYNC_PORTABLE") == "1":
            self.skipTest("PHSYNC_PORTABLE: libuv's file events have no close-after-write "
                          "event, so the settle period alone says a file rests")
        music = os.path.join(self.tmp, "music")
        phone = os.path.join(self.remote, "Music")
        os.makedirs(music)
        conf = self.conf("[defaults]\nssh-config = %s\nsettle-ms = 60000\n\n" % self.srv.config +
                         self.pair("music", "push", phone, music))
        d = self.start(conf, "-v")
        d.wait_line(r"^phsync: music: watching ")
        with open(os.path.join(music, "open.ogg"), "wb") as f:
            f.write(b"half a song")
            f.flush()
            write_file(os.path.join(music, "song.ogg"), b"a whole song")
            wait_for(lambda: arrived(os.path.join(phone, "song.ogg"), b"a whole song"), timeout=30,
                     what="song.ogg, closed, before the settle period ended")
            self.assertFalse(os.path.exists(os.path.join(phone, "open.ogg")), d.text())
        d.wait_line(r"^phsync: music: skip open\.ogg \(too new\)")
        self.assertEqual(d.stop(), 0, d.text())

    def test_watch_limit_falls_back_to_rescans(self):
        if not shutil.which("unshare"):
            skip_or_fail("namespace", "unshare is not installed")
        probe = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c",
                                "echo 3 > /proc/sys/user/max_inotify_watches"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if probe.returncode != 0:
            skip_or_fail("namespace", "no user namespace with its own inotify limit here: %s"
                         % probe.stdout.decode(errors="replace").strip())
        local = os.path.join(self.tmp, "pics")
        folders = ["a", "b", "c", "d", "e", "f/g"]
        for f in folders:
            os.makedirs(os.path.join(local, f))
        conf = self.conf(self.defaults() + self.pair("pics", "push", self.remote, local))
        # phsync in a user namespace whose watch limit is 3 (root, a, and one more).
        d = Bg(self.srv, ["daemon", "-c", conf],
               prefix=["unshare", "--user", "--map-root-user", "sh", "-c",
                       'echo 3 > /proc/sys/user/max_inotify_watches && exec "$0" "$@"'])
        self.addCleanup(d.kill)
        warn = d.wait_line(r"warning: cannot watch more folders")[0]
        self.assertIn("fs.inotify.max_user_watches", warn)
        d.wait_line(r"^phsync: pics: watching ")
        for i, f in enumerate(folders):
            write_file(os.path.join(local, f, "p%d.jpg" % i), b"photo %d" % i, mtime=T0 + i)
        for i, f in enumerate(folders):
            wait_for(lambda: arrived(os.path.join(self.remote, f, "p%d.jpg" % i), b"photo %d" % i, T0 + i),
                     what="%s/p%d.jpg (watched or not)" % (f, i))
        # `phsync status` shows the standing warning with the pair's state.
        r = self.srv.run(["status", "--json"])
        self.assertEqual(r.code, 0, r)
        w = [e for e in r.json() if e["event"] == "watch" and e["name"] == "pics" and e["live"]]
        self.assertEqual(len(w), 1, r.out)
        self.assertIn("fs.inotify.max_user_watches", w[0]["note"])
        self.assertIn(w[0]["state"], ("watching", "syncing"))  # it rescans every second
        self.assertIn("warning: cannot watch more folders", self.srv.run(["status"]).out)
        self.assertEqual(d.stop(), 0, d.text())

    def test_config_errors(self):
        cases = {
            "[x]\ndirection = pull\nremote = phone:/a\nlocal = /tmp/x\ncolour = blue\n": ":5: unknown setting 'colour'",
            "[x]\ndirection = pull\nremote = phone:/a\n": "[x] needs direction (pull, push or both), remote",
            "[x]\ndirection = pull\nremote = /a\nlocal = /b\n": "[x] remote = /a: not a valid value",
            "[defaults]\ninterval = 0\n[x]\ndirection=push\nremote=phone:/a\nlocal=/b\n": "interval = 0: not a valid value",
            "; nothing\n": "no sync pair",
            "[x]\ndirection = pull\nremote = phone:/a\nlocal = /b\nhelper = sometimes\n": "[x] helper = sometimes: not a valid value",
        }
        for i, (text, msg) in enumerate(sorted(cases.items())):
            with self.subTest(msg=msg):
                conf = self.conf(text, "bad%d.conf" % i)
                r = self.srv.run(["daemon", "-c", conf], timeout=60)
                self.assertEqual(r.code, 1, r)
                self.assertIn(msg, r.err)
                self.assertIn(conf, r.err)
        r = self.srv.run(["daemon", "-c", os.path.join(self.tmp, "missing.conf")], timeout=60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("missing.conf", r.err)
        r = self.srv.run(["daemon", "extra"])
        self.assertEqual(r.code, 2, r)
        # The default place: $XDG_CONFIG_HOME/phsync/phsync.conf.
        r = self.srv.run(["daemon"], env={"XDG_CONFIG_HOME": os.path.join(self.tmp, "xdg")})
        self.assertEqual(r.code, 1, r)
        self.assertIn(os.path.join(self.tmp, "xdg", "phsync", "phsync.conf"), r.err)
