# SPDX-License-Identifier: ISC
"""Which phone a pair is, and the state's rows as input (issue 22, items 8 and 3, and the minor
item).

A pair is the phone (its SSH host key, as known_hosts checked it), the login user and the two
folders, not the address: a phone that DHCP or its app moved to another address or port finds
its pair (an edit on the phone is an update, not a conflict copy; --delete deletes), and says so
once; another host key at the old address is another pair. A state an older phsync named by the
address is adopted unless it names another host key. Every name a state row holds is checked
before use: a `partial` row whose temp name climbs out, or a file row that does, never reaches
outside the folders. Another program's SQLite file given as the state is a one-line error."""

import glob
import os
import sqlite3
import subprocess
import time

from harness import SshServer, SyncTestCase, Unavailable, skip_or_fail, write_file

T0 = 1700000000


def conflicts(root):
    return sorted(os.path.join(dp, f) for dp, _dn, fn in os.walk(root) for f in fn
                  if ".phsync-conflict-" in f)


def xxh3_64(data):
    """XXH3-64 as 16 hex digits, by xxhsum (package xxhash, scripts/install-deps.sh)."""
    out = subprocess.run(["xxhsum", "-H3", "-"], input=data, stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return out.split("=")[-1].strip() if "=" in out else out.split()[0]


def xxh32(data, seed):
    """XXH32 (tempname.c's check value), for making a temp name phsync would take as its own."""
    p1, p2, p3, p4, p5, m = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1, 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    def u32(i):
        return int.from_bytes(data[i:i + 4], "little")

    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for k in range(4):
                v[k] = rotl((v[k] + u32(i) * p2) & m, 13) * p1 & m
                i += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = rotl((h + u32(i) * p3) & m, 17) * p4 & m
        i += 4
    while i < n:
        h = rotl((h + data[i] * p5) & m, 11) * p1 & m
        i += 1
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


def partial_temp_name(final):
    """A kept download's temp name for final, as src/scan/tempname.c makes it."""
    head = ".%s.phsync-p.%08x%08x.%06x%02x." % (final, 0x1234, 99999, (int(time.time()) // 60) & 0xFFFFFF, 7)
    return head + "%08x" % xxh32(head.encode(), 0x70687379)


class PairIdTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "state")

    def own_server(self, name, **kw):
        """A server of the test's own whose keys live in tmp/NAME, so that stopping and
        starting it again keeps its host key (on a new port)."""
        srv = SshServer(statedir=os.path.join(self.tmp, name), **kw)
        self.addCleanup(srv.stop)
        try:
            srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))
        return srv

    def dbs(self):
        return sorted(glob.glob(os.path.join(self.state, "*.db")))

    def sync_pull(self, srv, *opts, env=None):
        r = srv.pull(self.remote, self.local, "--state-dir", self.state, *opts, env=env)
        self._no_temps_after_success(r, self.local)
        return r

    def phone_files(self):
        write_file(os.path.join(self.remote, "a.jpg"), b"A" * 5000, mtime=T0)
        write_file(os.path.join(self.remote, "b.jpg"), b"B" * 3000, mtime=T0)
        write_file(os.path.join(self.remote, "sub", "c.jpg"), b"C" * 2000, mtime=T0)

    @staticmethod
    def notes(r):
        return [e for e in r.json() if e.get("event") == "warning" and
                " now at " in (e.get("message") or "")]

    # -- item 8 -----------------------------------------------------------------------------

    def test_same_host_key_at_a_new_port_is_the_same_pair(self):
        self.moved_phone("openssh")

    def test_same_host_key_at_a_new_port_is_the_same_pair_dropbear(self):
        # As SimpleSSHD runs it (Dropbear with OpenSSH's sftp-server); needs root.
        self.moved_phone("dropbear")

    def moved_phone(self, kind):
        srv = self.own_server("phone", kind=kind)
        self.phone_files()
        # --helper auto with none to bring: the phone is remembered as one without a helper.
        # (Not on Dropbear: its helper sessions are issue 22's item 10.)
        nohelpers = os.path.join(self.tmp, "no-helpers")
        os.makedirs(nohelpers)
        helper = ["--helper", "auto"] if kind == "openssh" else ["--helper", "never"]
        r = self.sync_pull(srv, "--json", *helper, env={"PHSYNC_HELPER_DIR": nohelpers})
        self.assertEqual(r.code, 0, r)
        memos = glob.glob(os.path.join(self.state, "nohelper-*"))
        self.assertEqual(len(memos), 1 if kind == "openssh" else 0)
        old_port = srv.port
        # The phone comes back elsewhere (its server restarted on another port) with the same
        # host key; known_hosts has it under the new name (accepted as new, or HostKeyAlias).
        srv.stop()
        srv.start()
        self.assertNotEqual(srv.port, old_port)
        edited = b"edited on the phone " * 300
        write_file(os.path.join(self.remote, "a.jpg"), edited, mtime=T0 + 100)
        os.unlink(os.path.join(self.remote, "b.jpg"))
        r = self.sync_pull(srv, "--delete", "--json", *helper, env={"PHSYNC_HELPER_DIR": nohelpers})
        self.assertEqual(r.code, 0, r)
        # The same phone: the same memo (none written for the new address).
        self.assertEqual(glob.glob(os.path.join(self.state, "nohelper-*")), memos)
        with open(os.path.join(self.local, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), edited)
        self.assertEqual(os.stat(os.path.join(self.local, "a.jpg")).st_mtime, T0 + 100)
        self.assertFalse(os.path.exists(os.path.join(self.local, "b.jpg")), "--delete deleted nothing")
        self.assertEqual(conflicts(self.local), [])
        notes = self.notes(r)
        self.assertEqual(len(notes), 1, r)
        self.assertIn("now at 127.0.0.1:%d (was 127.0.0.1:%d)" % (srv.port, old_port),
                      notes[0]["message"])
        self.assertEqual(len(self.dbs()), 1)
        # Said once.
        r = self.sync_pull(srv, "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.notes(r), [])
        r = self.sync_pull(srv)
        self.assertNotIn("now at", r.err)
        # `phsync status`: one pair, where the phone was last seen, and which phone it is.
        r = srv.run(["status", "--json", "--state-dir", self.state])
        self.assertEqual(r.code, 0, r)
        pairs = r.json()
        self.assertEqual(len(pairs), 1, r)
        self.assertTrue(pairs[0]["remote"].endswith(":%d:%s" % (srv.port, self.remote)), pairs)
        self.assertEqual(pairs[0]["host_key"], "ssh-ed25519 " + srv.host_fingerprint)
        self.assertOutsideUntouched()
        return srv

    def test_another_host_key_at_the_old_address_is_another_pair(self):
        a = self.own_server("phoneA")
        self.phone_files()
        self.assertEqual(self.sync_pull(a).code, 0)
        port = a.port
        a.stop()
        # Another phone (another host key) at the very address and port the first one had.
        b = self.own_server("phoneB", port=port)
        self.assertEqual(b.port, port)
        self.assertNotEqual(b.host_pub, a.host_pub)
        write_file(os.path.join(self.remote, "a.jpg"), b"other phone's a.jpg", mtime=T0 + 50)
        r = self.sync_pull(b, "--json")
        # A first contact: the local a.jpg (from phone A) is not overwritten but kept, the
        # incoming one put beside it.
        self.assertEqual(r.code, 5, r)
        self.assertEqual(self.notes(r), [])
        with open(os.path.join(self.local, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"A" * 5000)
        self.assertEqual(len(conflicts(self.local)), 1)
        self.assertEqual(len(self.dbs()), 2)
        # Phone A's pair is intact: back (at another port), it finds it.
        b.stop()
        a.start()
        r = self.sync_pull(a, "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.notes(r)), 1, r)
        with open(os.path.join(self.local, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"other phone's a.jpg")

    def legacy_state(self, hostkey=None):
        """Turns the pair's state into one as an older phsync left it: named by
        user@host:port, no host key in it (or the one given)."""
        (db,) = self.dbs()
        with sqlite3.connect(db) as h:
            meta = dict(h.execute("SELECT k, v FROM meta"))
            h.execute("DELETE FROM meta WHERE k IN ('hostkey', 'addr')")
            if hostkey is not None:
                h.execute("INSERT INTO meta (k, v) VALUES ('hostkey', ?)", (hostkey,))
        h.close()
        for side in ("-wal", "-shm"):
            if os.path.exists(db + side):
                os.unlink(db + side)
        legacy = os.path.join(self.state, xxh3_64(
            (meta["remote"] + "\n" + meta["local"]).encode()) + ".db")
        os.rename(db, legacy)
        return db, legacy

    def test_state_an_older_phsync_keyed_by_address_is_adopted(self):
        self.phone_files()
        self.pull("--state-dir", self.state, expect=0)
        db, legacy = self.legacy_state()
        write_file(os.path.join(self.remote, "a.jpg"), b"newer", mtime=T0 + 100)
        self.pull("--state-dir", self.state, expect=0)
        with open(os.path.join(self.local, "a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"newer")
        self.assertEqual(conflicts(self.local), [])
        self.assertEqual(self.dbs(), [db])
        with sqlite3.connect(db) as h:
            self.assertEqual(h.execute("SELECT v FROM meta WHERE k = 'hostkey'").fetchone()[0],
                             "ssh-ed25519 " + self.srv.host_fingerprint)
        h.close()

    def test_state_keyed_by_address_of_another_host_key_is_never_used(self):
        self.phone_files()
        self.pull("--state-dir", self.state, expect=0)
        _db, legacy = self.legacy_state("ssh-ed25519 SHA256:" + "x" * 43)
        with open(legacy, "rb") as f:
            before = f.read()
        write_file(os.path.join(self.remote, "a.jpg"), b"newer", mtime=T0 + 100)
        self.pull("--state-dir", self.state, expect=5)
        self.assertEqual(len(conflicts(self.local)), 1)
        with open(legacy, "rb") as f:
            self.assertEqual(f.read(), before)

    # -- item 3 -----------------------------------------------------------------------------

    def test_hostile_state_rows_never_reach_outside_a_pull(self):
        self.phone_files()
        self.pull("--state-dir", self.state, expect=0)
        (db,) = self.dbs()
        more = bytes(range(256)) * 80
        write_file(os.path.join(self.remote, "more.jpg"), more, mtime=T0 + 5)
        victims = {}
        for name in ("victim.txt", "victim2.txt", "victim3.txt"):
            p = os.path.join(self.tmp, name)
            write_file(p, name.encode() * 500, mtime=T0 - 1000)
            victims[p] = (name.encode() * 500, os.stat(p).st_ino)
        with sqlite3.connect(db) as h:
            h.executemany("INSERT INTO partial (path, tmp, size, mtime, have) VALUES (?, ?, ?, ?, ?)", [
                # a kept download whose file is gone: its temp would be removed
                ("gone.jpg", "../victim.txt", 5000, T0, 100),
                # one to resume: its temp would be truncated, filled and renamed into the tree
                ("more.jpg", "../victim2.txt", len(more), T0 + 5, 100),
                # a path that climbs out, with an honest-looking temp name
                ("../victim3.txt", ".victim3.txt.phsync-p.00000000.00000000.00000000", 10, T0, 1),
            ])
            # file rows: a path climbing out (key: '/' as char(1)), and a key with a real '/'
            h.execute("INSERT INTO files (k, lsize, lmtime, rsize, rmtime) VALUES "
                      "('..' || char(1) || 'victim3.txt', 1, 1, 1, 1), ('sub/c.jpg', 1, 1, 1, 1)")
        h.close()
        r = self.pull("--state-dir", self.state, "--delete", "--json")
        self.assertEqual(r.code, 0, r)
        for p, (data, ino) in victims.items():
            self.assertTrue(os.path.exists(p), "%s was removed" % p)
            with open(p, "rb") as f:
                self.assertEqual(f.read(), data, p)
            self.assertEqual(os.stat(p).st_ino, ino, p)
            self.assertEqual(os.stat(p).st_mtime, T0 - 1000, p)
        with open(os.path.join(self.local, "more.jpg"), "rb") as f:
            self.assertEqual(f.read(), more)
        self.assertOutsideUntouched()
        warned = [e for e in r.json() if e.get("event") == "warning" and
                  "never writes" in (e.get("message") or "")]
        self.assertEqual(len(warned), 5, r)
        # The bad rows are gone; the honest ones stay.
        with sqlite3.connect(db) as h:
            self.assertEqual(h.execute("SELECT COUNT(*) FROM partial").fetchone()[0], 0)
            keys = [k for (k,) in h.execute("SELECT k FROM files")]
        h.close()
        self.assertNotIn("sub/c.jpg", keys)
        self.assertNotIn("..\x01victim3.txt", keys)
        self.assertIn("sub\x01c.jpg", keys)

    def test_kept_download_that_is_a_hard_link_is_never_resumed(self):
        # A partial row and temp name exactly as phsync makes them, but the temp in the folder
        # is a hard link to a file elsewhere: resuming would truncate that file, fill it with
        # the phone's bytes and move it into the tree.
        self.phone_files()
        self.pull("--state-dir", self.state, expect=0)
        (db,) = self.dbs()
        data = bytes(range(256)) * 40
        write_file(os.path.join(self.remote, "big.jpg"), data, mtime=T0 + 7)
        victim = os.path.join(self.tmp, "victim.bin")
        write_file(victim, b"v" * 20000, mtime=T0 - 1000)
        ino = os.stat(victim).st_ino
        tmp = partial_temp_name("big.jpg")
        os.link(victim, os.path.join(self.local, tmp))
        with sqlite3.connect(db) as h:
            h.execute("INSERT INTO partial (path, tmp, size, mtime, have) VALUES (?, ?, ?, ?, ?)",
                      ("big.jpg", tmp, len(data), T0 + 7, 1000))
        h.close()
        r = self.pull("--state-dir", self.state)
        self.assertIn(r.code, (0, 5), r)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"v" * 20000)
        self.assertEqual((os.stat(victim).st_ino, os.stat(victim).st_mtime), (ino, T0 - 1000))
        if os.path.exists(os.path.join(self.local, "big.jpg")):
            self.assertNotEqual(os.stat(os.path.join(self.local, "big.jpg")).st_ino, ino)
        # The next run copies it whole.
        self.pull("--state-dir", self.state, expect=0)
        with open(os.path.join(self.local, "big.jpg"), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertNotEqual(os.stat(os.path.join(self.local, "big.jpg")).st_ino, ino)

    def test_hostile_partial_row_never_reaches_outside_a_push(self):
        write_file(os.path.join(self.local, "x.jpg"), b"x" * 4000, mtime=T0)
        self.push("--state-dir", self.state, expect=0)
        (db,) = self.dbs()
        victim = os.path.join(self.tmp, "rvictim.txt")
        write_file(victim, b"on the phone, outside the folder\n", mtime=T0 - 1000)
        with sqlite3.connect(db) as h:
            h.execute("INSERT INTO partial (path, tmp, size, mtime, have) VALUES (?, ?, ?, ?, ?)",
                      ("gone.jpg", "../rvictim.txt", 20 << 20, T0, 1 << 20))
        h.close()
        r = self.push("--state-dir", self.state, "--json")
        self.assertEqual(r.code, 0, r)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"on the phone, outside the folder\n")
        self.assertOutsideUntouched()
        with sqlite3.connect(db) as h:
            self.assertEqual(h.execute("SELECT COUNT(*) FROM partial").fetchone()[0], 0)
        h.close()

    def test_hostile_backup_rows_never_reach_outside(self):
        arch = os.path.join(self.tmp, "backups")
        os.makedirs(arch)
        self.phone_files()

        def backup(*opts):
            r = self.srv.run(["backup", "-F", self.srv.config, "--state-dir", self.state, "--json"]
                             + list(opts) + ["phone:" + self.remote, os.path.join(arch, "k.tar")])
            self.assertEqual(r.code, 0, r)
            return r

        backup("--full")
        (db,) = self.dbs()
        victim = os.path.join(self.tmp, "victim.tar")
        write_file(victim, b"not an archive of this series\n", mtime=T0 - 1000)
        with sqlite3.connect(db) as h:
            # an "archive" outside the series' folder, older than the real one: --keep 1
            # would remove it as the oldest chain
            h.execute("INSERT INTO backup_archives (seq, name, kind, base, created, files, "
                      "bytes, deleted) VALUES (0, ?, 'full', NULL, 1, 1, 1, 0)", (victim,))
            # a path the series "held" outside the source: it would become a deletion line
            h.execute("INSERT INTO backup_files (k, type, size, mtime, nsec, mode, hash, seq) "
                      "VALUES ('..' || char(1) || 'outside' || char(1) || 'sentinel.txt', "
                      "1, 13, 1600000000, 0, 420, NULL, 1)")
        h.close()
        r = backup("--incremental", "--keep", "1")
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"not an archive of this series\n")
        self.assertOutsideUntouched()
        warned = [e for e in r.json() if e.get("event") == "warning" and
                  "never writes" in (e.get("message") or "") or
                  "outside its folder" in (e.get("message") or "")]
        self.assertEqual(len(warned), 2, r)
        archive = [e for e in r.json() if e["event"] == "summary"][-1]["archive"]
        manifest = subprocess.run(["tar", "-xOf", archive, ".phsync-manifest"],
                                  stdout=subprocess.PIPE, check=True).stdout
        self.assertNotIn(b"sentinel", manifest)

    # -- minor ------------------------------------------------------------------------------

    def test_another_programs_sqlite_file_is_a_one_line_error(self):
        self.phone_files()
        self.pull("--state-dir", self.state, expect=0)
        (db,) = self.dbs()
        for f in glob.glob(db + "*"):
            os.unlink(f)
        with sqlite3.connect(db) as h:
            h.executescript("CREATE TABLE contacts (name TEXT, number TEXT);"
                            "CREATE TABLE meta (key TEXT, value TEXT);"
                            "CREATE INDEX by_name ON contacts (name);")
        h.close()
        r = self.pull("--state-dir", self.state)
        self.assertEqual(r.code, 1, r)
        lines = [l for l in r.err.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, r.err)
        self.assertIn("is not a phsync state file", lines[0])
        self.assertNotIn("CREATE", r.err)
        self.pull("--state-dir", self.state, "--reset-state", expect=0)


if __name__ == "__main__":
    import unittest
    unittest.main()
