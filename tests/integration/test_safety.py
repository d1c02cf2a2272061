# SPDX-License-Identifier: ISC
"""Safety promises (DESIGN.md, "Safety rules"), proved against real and hostile servers.

KillTest        kill -9 mid-pull (new file, and replacing an old version) and mid-push never
                leaves a partial file under a final name; the re-run completes and leaves no
                `.NAME.phsync-XXXXXX` temp; SIGTERM/SIGINT exit with code 6.
SymlinkTest     server symlinks are skipped and never created or followed; a local symlink
                (to a file or a folder) at a destination path is never written through;
                FIFOs on either side neither hang the run nor get created.
HostileServerTest  evil_sftp.py as the server: listings naming "..", "../x", "a/b", "/abs",
                "", "back\\slash", terminal escapes and NUL are refused and reported, nothing is
                created outside the destination, the good files beside them still arrive, the
                escape bytes never reach the terminal; forged lengths/counts/ids, over-long READ
                replies and absurd sizes fail cleanly (no crash, no sanitizer report, no hang);
                a denied open and a failing read give exit 5 with the rest synced.
ConnectionCutTest  the TCP connection cut (RST) during the handshake, early in and deep into a
                transfer, both ways: a non-zero exit (1, 3 or 5), no partial file under a final
                name, and the next run completes with nothing left over.
EnospcTest      a full local disk: the file fails, the old version stays intact, no temp left.
"""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

from harness import (EVIL_SFTP, CuttingProxy, SyncTestCase, leftovers, random_bytes, read_at, sample_tree,
                     tree, write_file, TEMP_RE)

T0 = 1700000000
BIG = 300 * 1024 * 1024


def make_big(path, size=BIG, seed=0, mtime=T0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    chunk = random_bytes(8 << 20, seed)
    with open(path, "wb") as f:
        left, i = size, 0
        while left > 0:
            n = min(left, len(chunk))
            # vary each chunk so no two blocks are equal
            f.write(i.to_bytes(8, "little") + chunk[8:n] if n >= 8 else chunk[:n])
            left -= n
            i += 1
    os.utime(path, (mtime, mtime))


def same_file(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def temps_in(d):
    try:
        return [n for n in os.listdir(d) if TEMP_RE.match(n)]
    except FileNotFoundError:
        return []


class KillTest(SyncTestCase):

    def _interrupt_when_temp_appears(self, args, watch_dir, sig=signal.SIGKILL, min_bytes=4 << 20):
        """Starts phsync ARGS, waits until a temp file in watch_dir holds min_bytes more than
        when it started (a partial download an earlier cut left is resumed: it starts big),
        sends sig. Returns (returncode, stdout, stderr, temp names seen)."""
        before = {}
        for n in temps_in(watch_dir):
            try:
                before[n] = os.path.getsize(os.path.join(watch_dir, n))
            except OSError:
                pass
        p = self.srv.popen(args)
        seen = set()
        deadline = time.monotonic() + 120
        try:
            big_enough = False
            while not big_enough and p.poll() is None and time.monotonic() < deadline:
                for n in temps_in(watch_dir):
                    seen.add(n)
                    try:
                        if os.path.getsize(os.path.join(watch_dir, n)) >= before.get(n, 0) + min_bytes:
                            big_enough = True
                    except OSError:
                        pass
                time.sleep(0.001)
            if p.poll() is not None:
                out, err = p.communicate()
                self.fail("phsync exited (code %s) before a .NAME.phsync-XXXXXX temp of %d bytes appeared "
                          "in %s (temps seen: %r)\nstderr: %s" % (p.returncode, min_bytes, watch_dir,
                                                                 sorted(seen), err.decode(errors="replace")))
            p.send_signal(sig)
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return p.returncode, out, err, sorted(seen)

    def test_kill9_mid_pull_new_file(self):
        src = os.path.join(self.remote, "DCIM/VID_big.mp4")
        make_big(src)
        write_file(os.path.join(self.remote, "DCIM/small.jpg"), b"small", mtime=T0)
        dst_dir = os.path.join(self.local, "DCIM")
        args = ["pull", "-F", self.srv.config, "phone:" + self.remote, self.local]
        code, _, _, seen = self._interrupt_when_temp_appears(args, dst_dir)
        self.assertEqual(code, -signal.SIGKILL)
        self.assertTrue(any(n.startswith(".VID_big.mp4.phsync-") for n in seen), seen)
        final = os.path.join(dst_dir, "VID_big.mp4")
        if os.path.lexists(final):  # only if the rename raced the kill; then it must be whole
            self.assertTrue(same_file(src, final), "partial file under its final name")
        r = self.pull(expect=0)
        self.assertTrue(same_file(src, final))
        self.assertEqual(int(os.stat(final).st_mtime), T0)
        self.assertEqual(leftovers(self.local), [], "temp files left after the re-run")
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)
        self.assertOutsideUntouched()

    def test_kill9_mid_pull_keeps_old_version_intact(self):
        src = os.path.join(self.remote, "VID_big.mp4")
        make_big(src, seed=1, mtime=T0 + 100)
        final = os.path.join(self.local, "VID_big.mp4")
        old = random_bytes(1_000_001, 2)
        write_file(final, old, mtime=T0)
        # --overwrite: no sync of the old version is recorded (else a conflict copy).
        args = ["pull", "-F", self.srv.config, "--overwrite", "phone:" + self.remote, self.local]
        code, _, _, _ = self._interrupt_when_temp_appears(args, self.local)
        self.assertEqual(code, -signal.SIGKILL)
        with open(final, "rb") as f:
            got = f.read()
        if got != old:
            self.assertTrue(same_file(src, final), "old version damaged: neither old nor new content")
        self.pull("--overwrite", expect=0)
        self.assertTrue(same_file(src, final))
        self.assertEqual(leftovers(self.local), [])

    def test_kill9_mid_push(self):
        os.makedirs(self.local)
        src = os.path.join(self.local, "Movies/VID_big.mp4")
        make_big(src, seed=3)
        args = ["push", "-F", self.srv.config, self.local, "phone:" + self.remote]
        code, _, _, seen = self._interrupt_when_temp_appears(args, os.path.join(self.remote, "Movies"))
        self.assertEqual(code, -signal.SIGKILL)
        final = os.path.join(self.remote, "Movies/VID_big.mp4")
        if os.path.lexists(final):
            self.assertTrue(same_file(src, final), "partial file under its final name on the server")
        self.push(expect=0)
        self.assertTrue(same_file(src, final))
        self.assertEqual(leftovers(self.remote), [], "temp files left on the server after the re-run")

    def test_sigterm_and_sigint_exit_6(self):
        src = os.path.join(self.remote, "VID_big.mp4")
        make_big(src, seed=4)
        final = os.path.join(self.local, "VID_big.mp4")
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                args = ["pull", "-F", self.srv.config, "phone:" + self.remote, self.local]
                code, out, err, _ = self._interrupt_when_temp_appears(args, self.local, sig=sig)
                self.assertEqual(code, 6, "exit code after %s\nstderr: %s" % (sig.name, err.decode(errors="replace")))
                if os.path.lexists(final):
                    self.assertTrue(same_file(src, final))
        self.pull(expect=0)
        self.assertTrue(same_file(src, final))
        self.assertEqual(leftovers(self.local), [])


class SymlinkTest(SyncTestCase):

    def test_remote_symlinks_skipped_not_created(self):
        sample_tree(self.remote)
        links = {"link-to-file": "top.txt", "link-to-dir": "DCIM", "dangling": "/nonexistent/x",
                 "abs-link": "/etc/passwd", "escape-link": "../outside/sentinel.txt",
                 "DCIM/Camera/inner-link.jpg": "IMG_20231114_100000.jpg"}
        for n, t in links.items():
            os.symlink(t, os.path.join(self.remote, n))
        r = self.pull("--json", expect=0)
        for n in links:
            self.assertFalse(os.path.lexists(os.path.join(self.local, n)), "%s created locally" % n)
        self.assertTreesEqual(self.remote, self.local, dir_mtimes=False)
        skips = {e["path"]: e.get("reason") for e in r.json() if e["event"] == "skip"}
        self.assertEqual(skips, {n: "symlink" for n in links}, r)
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertEqual(summary["files_skipped"], len(links))
        rv = self.pull("-v", expect=0)
        for n in links:
            self.assertIn("skip %s (symlink)" % n, rv.out.splitlines(), rv)
        self.assertOutsideUntouched()

    def test_local_symlink_to_file_not_written_through(self):
        write_file(os.path.join(self.remote, "photo.jpg"), b"from the phone", mtime=T0)
        os.makedirs(self.local)
        os.symlink(os.path.join(self.outside, "sentinel.txt"), os.path.join(self.local, "photo.jpg"))
        r = self.pull(timeout=60)
        self.assertIn(r.code, (0, 5), r)
        self.assertOutsideUntouched()
        p = os.path.join(self.local, "photo.jpg")
        if not os.path.islink(p):
            with open(p, "rb") as f:
                self.assertEqual(f.read(), b"from the phone")
        self.assertNoLeftovers()

    def test_local_symlink_to_folder_not_followed(self):
        write_file(os.path.join(self.remote, "DCIM/a.jpg"), b"a", mtime=T0)
        write_file(os.path.join(self.remote, "DCIM/Sub/b.jpg"), b"b", mtime=T0)
        os.makedirs(self.local)
        os.symlink(self.outside, os.path.join(self.local, "DCIM"))
        r = self.pull(timeout=60)
        self.assertIn(r.code, (0, 5), r)
        self.assertOutsideUntouched()
        self.assertFalse(os.path.exists(os.path.join(self.outside, "a.jpg")))
        self.assertFalse(os.path.exists(os.path.join(self.outside, "Sub")))

    def test_remote_fifo_skipped(self):
        write_file(os.path.join(self.remote, "ok.jpg"), b"ok", mtime=T0)
        os.mkfifo(os.path.join(self.remote, "a-fifo"))
        r = self.pull("--json", expect=0, timeout=60)
        self.assertFalse(os.path.lexists(os.path.join(self.local, "a-fifo")))
        skips = {e["path"]: e.get("reason") for e in r.json() if e["event"] == "skip"}
        self.assertEqual(skips, {"a-fifo": "special"}, r)
        self.assertTrue(os.path.isfile(os.path.join(self.local, "ok.jpg")))

    def test_local_fifo_at_destination_does_not_hang(self):
        write_file(os.path.join(self.remote, "p.jpg"), b"picture", mtime=T0)
        os.makedirs(self.local)
        os.mkfifo(os.path.join(self.local, "p.jpg"))
        r = self.pull(timeout=60)
        self.assertIn(r.code, (0, 5), r)
        p = os.path.join(self.local, "p.jpg")
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                self.assertEqual(f.read(), b"picture")
        self.assertNoLeftovers()


class HostileServerTest(SyncTestCase):
    server_kwargs = {"subsystem": "/usr/bin/python3 %s" % EVIL_SFTP if os.path.exists("/usr/bin/python3")
                     else "%s %s" % (sys.executable, EVIL_SFTP)}

    def control(self, d, **rules):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, ".evil-sftp.json"), "w") as f:
            json.dump(rules, f)

    def assertNothingEscaped(self):
        self.assertOutsideUntouched()
        self.assertEqual(sorted(os.listdir(self.tmp)), ["laptop", "outside", "phone"],
                         "something was created next to the destination")
        self.assertFalse(os.path.lexists(os.path.join(self.remote, "escape.jpg")))

    def test_sanity_plain_server_pull_and_push(self):
        # The script is a working server when it is not told to misbehave.
        sample_tree(self.remote)
        self.pull(expect=0)
        self.assertTreesEqual(self.remote, self.local)
        back = os.path.join(self.remote, "pushed")
        self.push(dst=back, expect=0)
        self.assertTreesEqual(self.local, back)

    def test_hostile_names_refused_good_files_synced(self):
        abs_target = "/tmp/abs.jpg"
        abs_existed = os.path.lexists(abs_target)
        write_file(os.path.join(self.remote, "good1.jpg"), b"good one", mtime=T0)
        write_file(os.path.join(self.remote, "DCIM/good2.jpg"), b"good two", mtime=T0)
        write_file(os.path.join(self.remote, "DCIM/Sub/good3.jpg"), b"good three", mtime=T0)
        self.control(self.remote, inject_names=True)
        self.control(os.path.join(self.remote, "DCIM/Sub"), inject_names=True)
        r = self.pull("--json", timeout=60)
        self.assertIn(r.code, (1, 5), r)
        self.assertNothingEscaped()
        if not abs_existed:
            self.assertFalse(os.path.lexists(abs_target), "wrote the absolute path the server named")
        got = {k: v for k, v in tree(self.local).items()}
        self.assertEqual(sorted(k for k, v in got.items() if v.type == "f"),
                         ["DCIM/Sub/good3.jpg", "DCIM/good2.jpg", "good1.jpg"],
                         "local tree holds something besides the good files")
        self.assertEqual(sorted(k for k, v in got.items() if v.type == "d"), ["DCIM", "DCIM/Sub"])
        for bad in (b"\x1b[31m", b"\x1b"):
            self.assertNotIn(bad, r.out_bytes, "raw terminal escape printed on stdout")
            self.assertNotIn(bad, r.err_bytes, "raw terminal escape printed on stderr")
        events = r.json()
        # Reported either as {"event":"skip","reason":"unsafe name"} (the CLI spec's example) or
        # as a failed file whose error says so; either way every hostile entry is named.
        unsafe = [e for e in events if (e["event"] == "skip" and e.get("reason") == "unsafe name") or
                  (e["event"] == "file" and e.get("status") == "failed" and "unsafe" in e.get("error", ""))]
        self.assertGreaterEqual(len(unsafe), 10, r)  # at least 5 unmistakable ones in each of 2 folders
        summary = [e for e in events if e["event"] == "summary"][-1]
        self.assertEqual(summary["exit"], r.code)
        # Without --json the refusals are reported on stderr.
        r2 = self.pull(timeout=60)
        self.assertIn(r2.code, (1, 5), r2)
        self.assertNotEqual(r2.err.strip(), "", "refused names not reported")
        self.assertNotIn(b"\x1b", r2.err_bytes + r2.out_bytes)
        self.assertNothingEscaped()

    def test_forged_lengths_counts_and_ids_fail_cleanly(self):
        for mode in ["huge_packet", "bad_string", "huge_count", "short_attrs", "wrong_id", "zero_packet"]:
            with self.subTest(forge=mode):
                src = os.path.join(self.remote, mode)
                write_file(os.path.join(src, "ok.jpg"), b"ok", mtime=T0)
                self.control(os.path.join(src, "Evil"), forge=mode)
                dst = os.path.join(self.local, mode)
                # A malformed reply must end the run by itself: with --timeout 600 the silence
                # clock cannot, so a run still going at the 120 s bound fails the test.
                try:
                    r = self.pull("--timeout", "600", src=src, dst=dst, timeout=120)
                except subprocess.TimeoutExpired:
                    self.fail("phsync did not give up on a forged reply (%s)" % mode)
                self.assertIn(r.code, (1, 5), r)
                self.assertNotEqual(r.err.strip(), "", "no error message")
                if os.path.isdir(dst):
                    self.assertEqual(leftovers(dst), [])
                    for k, v in tree(dst).items():
                        self.assertIn(k, ("ok.jpg", "Evil"), "unexpected %s" % k)
        self.assertNothingEscaped()

    def test_read_reply_longer_than_asked(self):
        make_big(os.path.join(self.remote, "long.bin"), size=3 << 20, seed=5)
        write_file(os.path.join(self.remote, "good.jpg"), b"good", mtime=T0)
        self.control(self.remote, long_data=["long.bin"])
        r = self.pull(timeout=60)
        self.assertIn(r.code, (1, 5), r)
        p = os.path.join(self.local, "long.bin")
        if os.path.lexists(p):
            self.assertTrue(same_file(os.path.join(self.remote, "long.bin"), p), "accepted excess data")
        if os.path.isdir(self.local):
            self.assertEqual(leftovers(self.local), [])
        self.assertNothingEscaped()

    def test_absurd_size_attribute(self):
        write_file(os.path.join(self.remote, "huge.bin"), b"abc", mtime=T0)
        write_file(os.path.join(self.remote, "good.jpg"), b"good", mtime=T0)
        self.control(self.remote, huge_size=["huge.bin"])
        r = self.pull(timeout=60)
        self.assertIn(r.code, (0, 1, 5), r)
        if os.path.isdir(self.local):
            self.assertEqual(leftovers(self.local), [])
            p = os.path.join(self.local, "huge.bin")
            if os.path.lexists(p):
                self.assertLessEqual(os.path.getsize(p), 3)
                self.assertLess(os.stat(p).st_blocks * 512, 1 << 20)
        self.assertNothingEscaped()

    def test_denied_open_and_failing_read_give_partial(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"a", mtime=T0)
        write_file(os.path.join(self.remote, "secret.jpg"), b"secret", mtime=T0)
        make_big(os.path.join(self.remote, "broken.mp4"), size=2 << 20, seed=6)
        write_file(os.path.join(self.remote, "z/z.jpg"), b"z", mtime=T0)
        self.control(self.remote, deny_open=["secret.jpg"], fail_read=["broken.mp4"])
        r = self.pull("--json", timeout=60)
        self.assertEqual(r.code, 5, r)
        for ok in ("a.jpg", "z/z.jpg"):
            self.assertTrue(os.path.isfile(os.path.join(self.local, ok)), ok)
        for bad in ("secret.jpg", "broken.mp4"):
            self.assertFalse(os.path.lexists(os.path.join(self.local, bad)), "%s written despite failing" % bad)
        self.assertEqual(leftovers(self.local), [], "temp of the failed file left behind")
        failed = sorted(e["path"] for e in r.json() if e["event"] == "file" and e.get("status") == "failed")
        self.assertEqual(failed, ["broken.mp4", "secret.jpg"], r)
        summary = [e for e in r.json() if e["event"] == "summary"][-1]
        self.assertEqual((summary["files_failed"], summary["exit"]), (2, 5), r)


class ConnectionCutTest(SyncTestCase):
    CUTS = (3_000, 200_000, 3 << 20, 40 << 20)   # handshake, listing/first file, early, deep

    def _through_proxy(self, cut):
        proxy = CuttingProxy(self.srv.port, cut)
        self.addCleanup(proxy.close)
        return proxy, self.srv.write_config(port=proxy.port)

    def test_connection_cut_mid_pull(self):
        sample_tree(self.remote)
        big = os.path.join(self.remote, "DCIM/Camera/VID_long.mp4")
        make_big(big, size=64 << 20, seed=9)
        for cut in self.CUTS:
            with self.subTest(cut=cut):
                proxy, cfg = self._through_proxy(cut)
                r = self.pull(config=cfg, timeout=120)
                self.assertEqual(proxy.cuts, 1, "the proxy did not cut (finished first?)")
                self.assertIn(r.code, (1, 3, 5), r)
                self.assertNotEqual(r.err.strip(), "", "no message after a cut connection")
                final = os.path.join(self.local, "DCIM/Camera/VID_long.mp4")
                if os.path.lexists(final):
                    self.assertTrue(same_file(big, final), "partial file under its final name")
        self.pull(expect=0, timeout=120)
        self.assertTreesEqual(self.remote, self.local)
        self.assertEqual(leftovers(self.local), [])
        self.assertOutsideUntouched()

    def test_connection_cut_mid_push(self):
        os.makedirs(self.local)
        sample_tree(self.local)
        big = os.path.join(self.local, "Movies/VID_long.mp4")
        make_big(big, size=64 << 20, seed=10)
        for cut in self.CUTS:
            with self.subTest(cut=cut):
                proxy, cfg = self._through_proxy(cut)
                r = self.push(config=cfg, timeout=120)
                self.assertEqual(proxy.cuts, 1, "the proxy did not cut (finished first?)")
                self.assertIn(r.code, (1, 3, 5), r)
                final = os.path.join(self.remote, "Movies/VID_long.mp4")
                if os.path.lexists(final):
                    self.assertTrue(same_file(big, final), "partial file under its final name on the server")
        self.push(expect=0, timeout=120)
        self.assertTreesEqual(self.local, self.remote)
        self.assertEqual(leftovers(self.remote), [])


class EnospcTest(SyncTestCase):
    """The local destination lives on a 16 MiB tmpfs (needs root and mount permission)."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        os.makedirs(self.local)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "phsync-test", self.local],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            self.skipTest("cannot mount a tmpfs here: %s" % p.stdout.decode(errors="replace").strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.local])

    def test_full_disk_keeps_old_file_and_removes_temp(self):
        old = random_bytes(4 << 20, 7)
        write_file(os.path.join(self.local, "video.mp4"), old, mtime=T0)
        make_big(os.path.join(self.remote, "video.mp4"), size=40 << 20, seed=8, mtime=T0 + 10)
        write_file(os.path.join(self.remote, "note.txt"), b"small", mtime=T0)
        r = self.pull(timeout=120)
        self.assertIn(r.code, (1, 5), r)
        with open(os.path.join(self.local, "video.mp4"), "rb") as f:
            self.assertTrue(f.read() == old, "old file damaged by a failed update")
        self.assertEqual(leftovers(self.local), [], "temp left after ENOSPC")
        self.assertRegex(r.err, r"(?i)space", "the message should say the disk is full")


if __name__ == "__main__":
    unittest.main()
