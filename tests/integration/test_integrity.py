# SPDX-License-Identifier: ISC
"""Issue 6's promises about what phsync leaves and removes: only its own temp files of dead
runs are removed (never a user's file that looks alike, never a live run's), a push that was
cut between the two renames of a replace is repaired by the next push, local names on push
follow the same rules as remote ones, and a remote tree nested too deep is refused."""

import json
import os
import socket
import struct
import subprocess
import time
import unittest

from harness import SyncTestCase, write_file

T0 = 1700000000
# src/scan/tempname.c: the check value's seed.
CHECK_SEED = 0x70687379
P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
M = 0xffffffff


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M


def xxh32(data, seed=0):
    """XXH32 (the xxHash spec), to make names the way phsync makes them."""
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed & M, (seed - P1) & M]
        while i + 16 <= n:
            for k in range(4):
                lane = struct.unpack_from("<I", data, i + 4 * k)[0]
                v[k] = (_rotl((v[k] + lane * P2) & M, 13) * P1) & M
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 4 <= n:
        h = (_rotl((h + struct.unpack_from("<I", data, i)[0] * P3) & M, 17) * P4) & M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * P5) & M, 11) * P1) & M
        i += 1
    h ^= h >> 15
    h = (h * P2) & M
    h ^= h >> 13
    h = (h * P3) & M
    h ^= h >> 16
    return h


def our_name(final, kind, pid, host=None, made=None):
    """A temp ('t') or aside ('o') name as phsync writes it, owned by pid on host, made at
    unix time `made` (default now)."""
    if host is None:
        host = xxh32(socket.gethostname().encode(), CHECK_SEED)
    minute = int((time.time() if made is None else made) // 60) & 0xffffff
    head = ".%s.phsync-%s.%08x%08x.%06x%02x." % (final, kind, host, pid, minute, 0xcd)
    return head + "%08x" % xxh32(head.encode(), CHECK_SEED)


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def read(path):
    with open(path, "rb") as f:
        return f.read()


class IntegrityTest(SyncTestCase):

    def test_lookalike_user_files_are_never_removed(self):
        # Files a user may well have: phsync 0.1's temp pattern, and the new pattern with a
        # wrong check value. Both are ordinary files now, on either side.
        looks = [".photo.jpg.phsync-AbC123",
                 ".photo.jpg.phsync-t.0000000000000000.00000000.00000000",
                 our_name("photo.jpg", "t", dead_pid())[:-1] + "x"]
        for n in looks:
            write_file(os.path.join(self.local, n), b"mine " + n.encode(), mtime=T0)
        write_file(os.path.join(self.remote, "photo.jpg"), b"photo", mtime=T0)
        r = self.srv.pull(self.remote, self.local)
        self.assertEqual(r.code, 0, r)
        for n in looks:
            self.assertEqual(read(os.path.join(self.local, n)), b"mine " + n.encode(), n)
        os.makedirs(os.path.join(self.tmp, "src"))
        write_file(os.path.join(self.tmp, "src", "new.jpg"), b"new", mtime=T0)
        for n in looks:
            write_file(os.path.join(self.remote, n), b"theirs", mtime=T0)
        r = self.srv.push(os.path.join(self.tmp, "src"), self.remote)
        self.assertEqual(r.code, 0, r)
        for n in looks:
            self.assertEqual(read(os.path.join(self.remote, n)), b"theirs", n)

    def test_dead_runs_temps_removed_live_runs_kept(self):
        dead, live = dead_pid(), os.getpid()
        write_file(os.path.join(self.remote, "a.jpg"), b"a", mtime=T0)
        stale = our_name("a.jpg", "t", dead)
        busy = our_name("a.jpg", "t", live)
        # Another host's: judged by the minute in its name, not by its mtime (which a push
        # sets to the source's, years old, before the rename).
        foreign_new = our_name("a.jpg", "t", dead, host=0x0badf00d)
        foreign_old = our_name("b.jpg", "t", dead, host=0x0badf00d, made=time.time() - 2 * 86400)
        for n in (stale, busy, foreign_new, foreign_old):
            write_file(os.path.join(self.local, n), b"partial", mtime=T0)
        r = self.srv.pull(self.remote, self.local)
        self.assertEqual(r.code, 0, r)
        left = sorted(n for n in os.listdir(self.local) if ".phsync-" in n)
        self.assertEqual(left, sorted([busy, foreign_new]),
                         "a dead run's temp (this host) and a day-old one (another host) go; "
                         "a live run's and another host's recent one stay")
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"a")
        # The same on the server, by a push.
        for n in (stale, busy, foreign_new, foreign_old):
            write_file(os.path.join(self.remote, n), b"partial", mtime=T0)
        os.makedirs(os.path.join(self.tmp, "src"))
        r = self.srv.push(os.path.join(self.tmp, "src"), self.remote)
        self.assertEqual(r.code, 0, r)
        left = sorted(n for n in os.listdir(self.remote) if ".phsync-" in n)
        self.assertEqual(left, sorted([busy, foreign_new]))

    def test_dead_runs_temps_removed_only_once_the_folders_run_is_known(self):
        # The local walk starts before the login (it runs while the server answers), so it
        # only lists the leftovers it finds: they go once the run is known to be the
        # folder's, never on a refused login, and a pull of one file leaves the others'.
        dead = dead_pid()
        write_file(os.path.join(self.remote, "a.jpg"), b"a", mtime=T0)
        write_file(os.path.join(self.remote, "sub", "b.jpg"), b"b", mtime=T0)
        temps = {"a": our_name("a.jpg", "t", dead), "c": our_name("c.jpg", "t", dead),
                 "b": os.path.join("sub", our_name("b.jpg", "t", dead))}
        for n in temps.values():
            write_file(os.path.join(self.local, n), b"partial", mtime=T0)

        def left():
            return sorted(k for k, n in temps.items() if os.path.exists(os.path.join(self.local, n)))

        r = self.srv.pull(self.remote, self.local, config=self.srv.write_config(known_hosts="wrong"))
        self.assertEqual(r.code, 4, r)
        self.assertEqual(left(), ["a", "b", "c"], "a refused login removed a leftover")
        r = self.srv.pull(os.path.join(self.remote, "a.jpg"), self.local)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(os.path.join(self.local, "a.jpg")), b"a")
        self.assertEqual(left(), ["b", "c"], "a pull of a.jpg removes a.jpg's leftover alone")
        r = self.srv.pull(self.remote, self.local)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(left(), [], "the folder's pull removes every dead run's leftover")
        self.assertEqual(read(os.path.join(self.local, "sub", "b.jpg")), b"b")

    def test_push_puts_back_an_aside_copy_a_cut_run_left(self):
        # A push without posix-rename cut between "old file aside" and "new file in": the
        # final name is missing and the old content sits in the aside copy.
        dead = dead_pid()
        write_file(os.path.join(self.remote, "DCIM", our_name("kept.jpg", "o", dead)),
                   b"old version", mtime=T0)
        # Cut after the new one went in: the aside copy is the replaced old version.
        write_file(os.path.join(self.remote, "DCIM", "done.jpg"), b"new version", mtime=T0 + 5)
        write_file(os.path.join(self.remote, "DCIM", our_name("done.jpg", "o", dead)),
                   b"replaced", mtime=T0)
        os.makedirs(os.path.join(self.tmp, "src", "DCIM"))
        r = self.srv.push(os.path.join(self.tmp, "src"), self.remote, "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(os.path.join(self.remote, "DCIM", "kept.jpg")), b"old version")
        self.assertEqual(os.stat(os.path.join(self.remote, "DCIM", "kept.jpg")).st_mtime, T0)
        self.assertEqual(read(os.path.join(self.remote, "DCIM", "done.jpg")), b"new version")
        self.assertEqual(sorted(os.listdir(os.path.join(self.remote, "DCIM"))),
                         ["done.jpg", "kept.jpg"])
        warnings = [e for e in r.json() if e.get("event") == "warning"]
        self.assertTrue(any(e.get("path") == "DCIM/kept.jpg" for e in warnings), warnings)

    def test_push_refuses_unsafe_local_names(self):
        src = os.path.join(self.tmp, "src")
        write_file(os.path.join(src, "ok.jpg"), b"ok", mtime=T0)
        write_file(os.path.join(src, "back\\slash.jpg"), b"x", mtime=T0)
        write_file(os.path.join(src, "esc\x1b[31m.jpg"), b"x", mtime=T0)
        write_file(os.path.join(src, "sub", "new\nline.jpg"), b"x", mtime=T0)
        r = self.srv.push(src, self.remote, "--json")
        self.assertEqual(r.code, 5, r)
        self.assertEqual(sorted(os.listdir(self.remote)), ["ok.jpg", "sub"])
        self.assertEqual(os.listdir(os.path.join(self.remote, "sub")), [])
        skips = [e for e in r.json() if e.get("event") == "skip"]
        self.assertEqual(len(skips), 3, skips)
        for e in skips:
            self.assertEqual(e.get("reason"), "unsafe name", e)
            self.assertNotIn("\x1b", json.dumps(e, ensure_ascii=False))

    def test_remote_tree_nested_too_deep_is_refused(self):
        deep = self.remote
        for _ in range(300):
            deep = os.path.join(deep, "d")
        os.makedirs(deep)
        write_file(os.path.join(deep, "f.jpg"), b"f")
        r = self.srv.pull(self.remote, self.local)
        self.assertEqual(r.code, 1, r)
        self.assertIn("nested deeper than 256", r.err)
        self.assertFalse(os.path.exists(os.path.join(self.local, "d")), "nothing was made")
        self.assertOutsideUntouched()


if __name__ == "__main__":
    unittest.main()
