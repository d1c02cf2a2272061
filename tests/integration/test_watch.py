# SPDX-License-Identifier: ISC
"""pull --watch and push --watch (issue 9) against a real sshd on 127.0.0.1, with real inotify and
libuv: a file made after the start arrives with its bytes and time; a new folder tree made after
the start (its files written before its watch can exist) arrives; a file written slowly over 3 s
never shows on the server under its name before it is whole, while other files go meanwhile; a
rename within the tree (with --delete) moves it; a pull polls the phone, listing only the
folders whose time moved (a 300-photo folder is stat'ed, not listed); the phone going away
and coming back is one message and a quiet retry that then syncs what changed; a changed host
key stops the watch (exit 4) without retries; SIGTERM during a transfer exits 0 and leaves no
temp file. sync --watch (two-way, issue 26): a local file goes up, the phone's files and
deletes come down by the poll, what a run wrote here starts no run and is not sent back, a file
still open for writing never shows on the phone half written.

Every wait is on a condition (the file's bytes, a line on stderr) with a deadline of 60 s; no
assertion depends on how fast anything runs.
"""

import os
import re
import signal
import threading
import time

from harness import SyncTestCase, leftovers, random_bytes, tree, write_file
from watcher import Bg, arrived, read_or_none, wait_for

T0 = 1700000000
WATCHING = r": watching "

PORTABLE = os.environ.get("PHSYNC_PORTABLE") == "1"


def write_slowly(path, rpath, final, meanwhile):
    """Writes final to path in ten 64 KiB pieces over about 3 s, calling meanwhile() after the
    first, and waits for the whole file at rpath (the phone's copy). Returns the sizes rpath
    showed under its name while not whole (a thread reads it every 10 ms): [] when never."""
    seen_partial = []
    done = threading.Event()

    def watch_phone():
        while not done.is_set():
            got = read_or_none(rpath)
            if got is not None and got != final:
                seen_partial.append(len(got))
            time.sleep(0.01)

    t = threading.Thread(target=watch_phone, daemon=True)
    t.start()
    try:
        with open(path, "wb") as f:
            f.write(final[:65536])
            f.flush()
            meanwhile()
            for i in range(1, 10):  # the rest over about 3 s
                time.sleep(0.3)
                f.write(final[i * 65536:(i + 1) * 65536])
                f.flush()
        wait_for(lambda: arrived(rpath, final), what="the whole video on the phone")
    finally:
        done.set()
        t.join()
    return seen_partial


class PushWatchTest(SyncTestCase):

    def start_push(self, *opts):
        os.makedirs(self.local, exist_ok=True)
        w = Bg(self.srv, ["push", "--watch", "-v", "-F", self.srv.config] + list(opts) +
               [self.local, "phone:" + self.remote])
        self.addCleanup(w.kill)
        w.wait_line(WATCHING)
        return w

    def test_new_file_arrives_with_bytes_and_mtime(self):
        write_file(os.path.join(self.local, "old.jpg"), b"before the start", mtime=T0)
        w = self.start_push()
        # The first run sent what was there.
        self.assertTrue(arrived(os.path.join(self.remote, "old.jpg"), b"before the start", T0))
        # A photo saved the way cameras and cp -p do: written, closed, its time set after.
        data = random_bytes(3_000_000, 7)
        p = write_file(os.path.join(self.local, "IMG_1.jpg"), data)
        os.utime(p, (T0 + 60, T0 + 60))
        # And one moved in from elsewhere (a download finished).
        other = write_file(os.path.join(self.tmp, "dl.pdf"), b"%PDF-1.4 downloaded", mtime=T0 + 120)
        os.rename(other, os.path.join(self.local, "dl.pdf"))
        wait_for(lambda: arrived(os.path.join(self.remote, "IMG_1.jpg"), data, T0 + 60),
                 what="IMG_1.jpg on the server with its bytes and time")
        wait_for(lambda: arrived(os.path.join(self.remote, "dl.pdf"), b"%PDF-1.4 downloaded", T0 + 120),
                 what="dl.pdf on the server")
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()
        self.assertOutsideUntouched()

    def test_new_folder_tree_after_start(self):
        w = self.start_push()
        # Made faster than any watch can be added: the files are written before the
        # watcher even hears of the folder, so only the scan of the new folder finds them.
        deep = os.path.join(self.local, "Trip", "Day 1", "raw")
        os.makedirs(deep)
        files = {"Trip/a.jpg": b"a" * 1000, "Trip/Day 1/b.jpg": b"b" * 2000,
                 "Trip/Day 1/raw/c.dng": random_bytes(500_000, 3)}
        for rel, data in files.items():
            write_file(os.path.join(self.local, rel), data, mtime=T0)
        for rel, data in files.items():
            wait_for(lambda: arrived(os.path.join(self.remote, rel), data, T0), what=rel)
        # And the new folders are watched: a later file in the deepest arrives too.
        write_file(os.path.join(deep, "d.dng"), b"later", mtime=T0 + 5)
        wait_for(lambda: arrived(os.path.join(self.remote, "Trip/Day 1/raw/d.dng"), b"later", T0 + 5),
                 what="a file in a folder made after the start")
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()

    def test_file_written_slowly_never_half_on_server(self):
        if os.environ.get("PHSYNC_PORTABLE") == "1":
            self.skipTest("PHSYNC_PORTABLE: libuv's file events have no close-after-write "
                          "(inotify's IN_CLOSE_WRITE), so a file written slowly is sent at "
                          "each pause and again when it rests (docs/MACOS.md)")
        w = self.start_push()
        final = random_bytes(10 * 65536, 11)
        rpath = os.path.join(self.remote, "VID_slow.mp4")

        def meanwhile():
            # While it is open, another file changes: its run must leave VID_slow.mp4 alone.
            write_file(os.path.join(self.local, "note.txt"), b"meanwhile", mtime=T0)
            wait_for(lambda: arrived(os.path.join(self.remote, "note.txt"), b"meanwhile"),
                     what="note.txt, sent while the video is still being written")
            self.assertIsNone(read_or_none(rpath), "a file still open for writing was sent")
        seen_partial = write_slowly(os.path.join(self.local, "VID_slow.mp4"), rpath, final,
                                    meanwhile)
        self.assertEqual(seen_partial, [], "the server showed a partial file under its name")
        w.wait_line(r"skip VID_slow\.mp4 \(too new\)")
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()

    def test_rename_within_tree_with_delete(self):
        write_file(os.path.join(self.local, "a.jpg"), b"photo a", mtime=T0)
        os.makedirs(os.path.join(self.local, "album"))
        w = self.start_push("--delete")
        self.assertTrue(arrived(os.path.join(self.remote, "a.jpg"), b"photo a", T0))
        ino = os.stat(os.path.join(self.remote, "a.jpg")).st_ino
        os.rename(os.path.join(self.local, "a.jpg"), os.path.join(self.local, "album", "a2.jpg"))
        wait_for(lambda: arrived(os.path.join(self.remote, "album/a2.jpg"), b"photo a", T0)
                 and not os.path.exists(os.path.join(self.remote, "a.jpg")),
                 what="the rename carried out on the server")
        # Moved there (confirmed by content), not uploaded again.
        self.assertEqual(os.stat(os.path.join(self.remote, "album/a2.jpg")).st_ino, ino)
        self.assertEqual(w.stop(), 0, w.text())

    def test_missing_local_folder_is_an_error(self):
        r = self.srv.run(["push", "--watch", "-F", self.srv.config, os.path.join(self.tmp, "nope"),
                          "phone:" + self.remote], timeout=60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("nope", r.err)
        r = self.srv.run(["pull", "--interval", "5", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)
        self.assertIn("--watch", r.err)


class PullWatchTest(SyncTestCase):

    def start_pull(self, *opts, config=None):
        w = Bg(self.srv, ["pull", "--watch", "--interval", "1", "-v", "-F", config or self.srv.config]
               + list(opts) + ["phone:" + self.remote, self.local])
        self.addCleanup(w.kill)
        w.wait_line(WATCHING)
        return w

    def test_pull_polls_the_phone(self):
        write_file(os.path.join(self.remote, "DCIM/IMG_0.jpg"), b"first", mtime=T0)
        w = self.start_pull()
        self.assertTrue(arrived(os.path.join(self.local, "DCIM/IMG_0.jpg"), b"first", T0))
        data = random_bytes(300_000, 5)
        write_file(os.path.join(self.remote, "DCIM/IMG_1.jpg"), data, mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(self.local, "DCIM/IMG_1.jpg"), data, T0 + 1),
                 what="a new photo on the phone pulled by the poll")
        # A new folder (with a folder in it) on the phone.
        write_file(os.path.join(self.remote, "DCIM/Trip/Day1/IMG_2.jpg"), b"trip", mtime=T0 + 2)
        wait_for(lambda: arrived(os.path.join(self.local, "DCIM/Trip/Day1/IMG_2.jpg"), b"trip", T0 + 2),
                 what="a photo in a new folder on the phone")
        # And a photo in that new folder, once it is known.
        write_file(os.path.join(self.remote, "DCIM/Trip/Day1/IMG_3.jpg"), b"trip 3", mtime=T0 + 3)
        wait_for(lambda: arrived(os.path.join(self.local, "DCIM/Trip/Day1/IMG_3.jpg"), b"trip 3", T0 + 3),
                 what="the next photo in the new folder")
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()
        self.assertOutsideUntouched()

    def test_phone_goes_away_and_comes_back(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"a", mtime=T0)
        w = self.start_pull()
        self.srv.pause()
        try:
            w.wait_line(r"retrying \(backing off")
            write_file(os.path.join(self.remote, "while-away.jpg"), b"taken offline", mtime=T0 + 9)
        finally:
            self.srv.resume()
        wait_for(lambda: arrived(os.path.join(self.local, "while-away.jpg"), b"taken offline", T0 + 9),
                 what="what changed while away, synced once back")
        w.wait_line(r"reachable again")
        # Unreachable is said once, not at every retry.
        self.assertEqual(len(w.matching(r"retrying \(backing off")), 1, w.text())
        self.assertEqual(w.stop(), 0, w.text())

    def test_host_key_change_stops_without_retry(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"a", mtime=T0)
        cfg = self.srv.write_config()
        kh = self.srv.known_hosts_of(cfg)
        w = self.start_pull(config=cfg)
        # The phone now shows another key (the link drops, the reconnect meets the change).
        with open(kh) as f:
            good = f.read()
        with open(kh, "w") as f:
            f.write(good.split()[0] + " " + self.srv.wrong_host_pub + "\n")
        self.srv.pause()
        self.srv.resume()
        write_file(os.path.join(self.remote, "b.jpg"), b"b", mtime=T0)
        self.assertEqual(w.wait(), 4, w.text())
        self.assertTrue(w.matching(r"STOPPED: .*not retried"), w.text())
        self.assertFalse(w.matching(r"retrying"), w.text())
        self.assertFalse(os.path.exists(os.path.join(self.local, "b.jpg")))


class PollCostTest(SyncTestCase):
    """A poll is cheap for the phone: a stat per known folder, a listing only of those whose
    time moved (the relay's trace shows every OPENDIR, STAT and LSTAT phsync sends)."""

    server_kwargs = {"relay": True}

    def test_a_poll_lists_only_the_folders_that_changed(self):
        camera, other = os.path.join(self.remote, "Camera"), os.path.join(self.remote, "Other")
        # 300 photos: three READDIRs of OpenSSH's 100 names each, were the folder listed.
        for i in range(300):
            write_file(os.path.join(camera, "IMG_%04d.jpg" % i), b"photo %d" % i, mtime=T0)
        write_file(os.path.join(other, "a.jpg"), b"a", mtime=T0)
        for d in (camera, other, self.remote):
            os.utime(d, (T0, T0))  # not "just changed": no folder is listed again for that
        self.srv.relay_set(trace=True)
        conf = os.path.join(self.tmp, "phsync.conf")
        with open(conf, "w") as f:
            f.write("[p]\ndirection = pull\nremote = phone:%s\nlocal = %s\nssh-config = %s\n"
                    "interval = 1\nfull-every = 100000\n" % (self.remote, self.local, self.srv.config))
        d = Bg(self.srv, ["daemon", "-c", conf])
        self.addCleanup(d.kill)
        d.wait_line(WATCHING)
        self.assertTrue(arrived(os.path.join(self.local, "Camera/IMG_0299.jpg"), b"photo 299", T0))
        start = len(self.srv.relay_fired())

        def since_start():
            return self.srv.relay_fired()[start:]

        def stats_of(path, lines):
            return [l for l in lines if l in ("trace STAT " + path, "trace LSTAT " + path)]

        # Three polls with nothing changed: Camera is stat'ed each time, never listed.
        wait_for(lambda: len(stats_of(camera, since_start())) >= 3, what="three polls")
        quiet = since_start()
        self.assertEqual([l for l in quiet if l.startswith("trace OPENDIR")], [], quiet)
        self.assertGreaterEqual(len(stats_of(other, quiet)), 3, quiet)
        # A photo added to Other: the poll lists Other (its time moved), not Camera; the run
        # that follows is a whole sync (it lists everything).
        start = len(self.srv.relay_fired())
        write_file(os.path.join(other, "b.jpg"), b"b", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(self.local, "Other/b.jpg"), b"b", T0 + 1), what="b.jpg")
        opendirs = [l for l in since_start() if l.startswith("trace OPENDIR")]
        self.assertEqual(opendirs[0], "trace OPENDIR " + other, opendirs)
        self.assertEqual(d.stop(), 0, d.text())


class StopDuringTransferTest(SyncTestCase):
    server_kwargs = {"relay": True}

    def test_sigterm_during_a_transfer(self):
        write_file(os.path.join(self.remote, "small.jpg"), b"small", mtime=T0)
        # The relay reads its orders when a session starts, and the watcher keeps one session:
        # the transfer of big.mp4, made later, will hang (the server stops answering its READs).
        self.srv.relay_set(hang={"type": "READ", "name": "big.mp4"})
        w = Bg(self.srv, ["pull", "--watch", "--interval", "1", "-F", self.srv.config,
                          "phone:" + self.remote, self.local])
        self.addCleanup(w.kill)
        w.wait_line(WATCHING)
        write_file(os.path.join(self.remote, "big.mp4"), random_bytes(4_000_000, 9), mtime=T0)
        wait_for(lambda: any("hang" in f for f in self.srv.relay_fired()),
                 what="the transfer of big.mp4 under way (the relay holding its READ)")
        self.assertEqual(w.stop(signal.SIGTERM), 0, w.text())
        self.assertFalse(os.path.exists(os.path.join(self.local, "big.mp4")))
        self.assertEqual(leftovers(self.local), [])
        self.assertEqual(sorted(k for k, e in tree(self.local).items() if e.type == "f"), ["small.jpg"])


class TwoWayWatchTest(SyncTestCase):
    """sync --watch (issue 26): a local change goes up, the phone's comes down by the poll, and
    what a run wrote here is not taken for a local change (no run sends it back)."""

    def test_both_ways_and_no_echo(self):
        os.makedirs(self.local, exist_ok=True)
        write_file(os.path.join(self.local, "l0.txt"), b"here before", mtime=T0)
        write_file(os.path.join(self.remote, "r0.txt"), b"phone before", mtime=T0)
        w = Bg(self.srv, ["sync", "--watch", "--interval", "1", "-v", "-F", self.srv.config,
                          "phone:" + self.remote, self.local])
        self.addCleanup(w.kill)
        w.wait_line(WATCHING)
        # The first run made the union.
        self.assertTrue(arrived(os.path.join(self.remote, "l0.txt"), b"here before", T0))
        self.assertTrue(arrived(os.path.join(self.local, "r0.txt"), b"phone before", T0))
        write_file(os.path.join(self.local, "here.txt"), b"made here", mtime=T0 + 1)
        wait_for(lambda: arrived(os.path.join(self.remote, "here.txt"), b"made here", T0 + 1),
                 what="a local file sent to the phone")
        write_file(os.path.join(self.remote, "Notes/phone.txt"), b"made on the phone", mtime=T0 + 2)
        wait_for(lambda: arrived(os.path.join(self.local, "Notes/phone.txt"), b"made on the phone",
                                 T0 + 2), what="a phone file brought here by the poll")
        # The run's own write is seen by the watch and judged, not sent back.
        w.wait_line(r": not sent back \(a pull wrote it\): Notes/phone\.txt$")
        write_file(os.path.join(self.remote, "marker.txt"), b"marker", mtime=T0 + 3)
        wait_for(lambda: arrived(os.path.join(self.local, "marker.txt"), b"marker", T0 + 3),
                 what="the marker brought here")
        w.wait_line(r": not sent back \(a pull wrote it\): marker\.txt$")
        # The window: from the marker's arrival to the next phone file's. The marker's run
        # wrote nothing to the phone and its write here is not a change: the only run in it
        # is the poll's that brings last.txt (two if a poll met it half written).
        before = len(w.matching(r": two-way run "))
        write_file(os.path.join(self.remote, "last.txt"), b"last", mtime=T0 + 4)
        wait_for(lambda: arrived(os.path.join(self.local, "last.txt"), b"last", T0 + 4),
                 what="last.txt brought here")
        runs = w.matching(r": two-way run ")[before:]
        # The portable backend (libuv's per-folder events, as on macOS and the BSDs) also
        # reports the folder a pull wrote into as changed, which is not matched to the run's
        # own writes: one more run that moves nothing (the file checks below hold either way).
        if not PORTABLE:
            self.assertIn(len(runs), (1, 2), w.text())
            self.assertEqual([r for r in runs if "local changes" in r], [], w.text())
        # Each file went once, and the right way; no run was started by a file a run wrote.
        for name, way in (("here.txt", "push"), ("Notes/phone.txt", "pull"), ("marker.txt", "pull"),
                          ("l0.txt", "push"), ("r0.txt", "pull")):
            moved = w.matching(r" %s \((pull|push)\)$" % re.escape(name))
            self.assertEqual(len(moved), 1, w.text())
            self.assertTrue(moved[0].endswith("(%s)" % way), w.text())
        self.assertEqual([l for l in w.matching(r"change\(s\)")
                          if re.search(r"phone\.txt|marker\.txt|r0\.txt|last\.txt", l)], [], w.text())
        # A delete on the phone comes here by the poll.
        local_runs = len(w.matching(r": two-way run \(local changes\)"))
        os.remove(os.path.join(self.remote, "r0.txt"))
        wait_for(lambda: not os.path.exists(os.path.join(self.local, "r0.txt")),
                 what="r0.txt deleted here")
        # The run's own delete here is judged, and starts no run.
        w.wait_line(r": not sent back \(a run deleted it\): r0\.txt$")
        if not PORTABLE:
            self.assertEqual(len(w.matching(r": two-way run \(local changes\)")), local_runs,
                             w.text())
        self.assertTrue(arrived(os.path.join(self.local, "last.txt"), b"last", T0 + 4))
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()

    def test_file_written_slowly_never_half_on_phone(self):
        # As a push pair's (PushWatchTest): the files still open for writing are passed to the
        # two-way run, which leaves them (both ways) until they are closed.
        if PORTABLE:
            self.skipTest("PHSYNC_PORTABLE: libuv's file events have no close-after-write "
                          "(inotify's IN_CLOSE_WRITE), so a file written slowly is sent at "
                          "each pause and again when it rests (docs/MACOS.md)")
        os.makedirs(self.local, exist_ok=True)
        w = Bg(self.srv, ["sync", "--watch", "--interval", "1", "-v", "-F", self.srv.config,
                          "phone:" + self.remote, self.local])
        self.addCleanup(w.kill)
        w.wait_line(WATCHING)
        final = random_bytes(10 * 65536, 12)
        path = os.path.join(self.local, "VID_slow.mp4")
        rpath = os.path.join(self.remote, "VID_slow.mp4")

        def meanwhile():
            # While it is open, a local change and a phone change each start a run: both
            # leave VID_slow.mp4 alone.
            write_file(os.path.join(self.local, "note.txt"), b"meanwhile", mtime=T0)
            wait_for(lambda: arrived(os.path.join(self.remote, "note.txt"), b"meanwhile"),
                     what="note.txt, sent while the video is still being written")
            write_file(os.path.join(self.remote, "phone.txt"), b"from the phone", mtime=T0 + 1)
            wait_for(lambda: arrived(os.path.join(self.local, "phone.txt"), b"from the phone",
                                     T0 + 1), what="phone.txt, brought while the video is open")
            self.assertFalse(os.path.lexists(rpath), "a file still open for writing was sent")
        seen_partial = write_slowly(path, rpath, final, meanwhile)
        self.assertEqual(seen_partial, [], "the phone showed a partial file under its name")
        w.wait_line(r"skip VID_slow\.mp4 \(too new\)")
        self.assertEqual(read_or_none(path), final, "the file being written was changed here")
        self.assertEqual(w.stop(), 0, w.text())
        self.assertNoLeftovers()
