# SPDX-License-Identifier: ISC
"""An archive from elsewhere is input (issue 22 item 2): what restore deletes and what verify says.

Real archives are made by `phsync backup` of a local folder (.tar, so Python's tarfile can rewrite
them); hostile ones are those archives with their manifests edited (deletion lines added, the kind
changed, a head dropped), so every hash in them stays true. Proves: a full archive carrying
deletions is refused by verify and restore (exit 1, nothing written); restore deletes only what it
put in place itself earlier in the same run, never a file that was in DIR before (an honest chain
into a folder holding the user's file where a deleted folder was, and an incremental naming the
user's files); deletion names are checked as entry names ('..', absolute, control characters, not
normal); the head and the whole manifest must agree; verify lists the deletions an archive would
apply (human and --json) and fails on an entry a restore would refuse; restore orders a chain by its manifests and checks the whole chain
before writing anything.
"""

import io
import os
import shutil
import tarfile
import unittest

from harness import SyncTestCase, tree, write_file

T0 = 1700000000
MANIFEST = ".phsync-manifest"


def rewrite(src, dst, edit_head=None, edit_whole=None, drop_head=False, extra=()):
    """Copies the tar archive src to dst member by member, the manifests' text passed through
    edit_head / edit_whole (str -> str), the TarInfo members of extra added before the whole
    manifest."""
    with tarfile.open(src) as a, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as b:
        members = a.getmembers()
        for i, m in enumerate(members):
            data = a.extractfile(m).read() if m.isfile() else None
            if m.name == MANIFEST:
                head = i == 0
                if head and drop_head:
                    continue
                if not head:
                    for x in extra:
                        b.addfile(x)
                edit = edit_head if head else edit_whole
                if edit is not None:
                    data = edit(data.decode()).encode()
                m.size = len(data)
            b.addfile(m, io.BytesIO(data) if data is not None else None)


def add_deletions(*paths):
    """A manifest edit: deletion lines added before its end line, the end's count kept true."""
    def edit(text):
        lines = text.splitlines()
        end = lines.pop()
        assert end.startswith("end "), end
        words = end.split()
        words[3] = str(int(words[3]) + len(paths))
        return "\n".join(lines + ["x " + p for p in paths] + [" ".join(words)]) + "\n"
    return edit


def set_kind(kind, base):
    def edit(text):
        out = []
        for line in text.splitlines():
            if line.startswith("kind "):
                line = "kind " + kind
            elif line.startswith("base "):
                line = "base %d" % base
            out.append(line)
        return "\n".join(out) + "\n"
    return edit


class RestoreTrustTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        self.arch = os.path.join(self.tmp, "backups")
        os.makedirs(self.arch)
        self.state = os.path.join(self.tmp, "state")

    def backup(self, *opts):
        """One archive of the series (a local folder, one name template); its path."""
        r = self.srv.run(["backup", "--state-dir", self.state, "--json"] + list(opts)
                         + [self.remote, os.path.join(self.arch, "b.tar")])
        self.assertEqual(r.code, 0, r)
        return [e for e in r.json() if e["event"] == "summary"][-1]["archive"]

    def run_cmd(self, *args):
        return self.srv.run(list(args))

    def user_folder(self, name, files):
        d = os.path.join(self.tmp, name)
        for k, v in files.items():
            write_file(os.path.join(d, k), v, mtime=T0 - 1000)
        return d

    def assertHolds(self, d, files):
        got = {}
        for k, e in tree(d).items():
            if e.type == "f":
                with open(os.path.join(d, k), "rb") as f:
                    got[k] = f.read()
        for k, v in files.items():
            self.assertEqual(got.get(k), v, "%s/%s lost or changed" % (d, k))

    # -- a full archive carries no deletions --------------------------------------------------

    def test_full_archive_with_deletions_is_refused(self):
        write_file(os.path.join(self.remote, "DCIM/new.jpg"), b"archive bytes", mtime=T0)
        full = self.backup()
        bad = os.path.join(self.tmp, "bad-full.tar")
        rewrite(full, bad, edit_whole=add_deletions("mine.txt", "Photos/keep.jpg"))
        v = self.run_cmd("verify", bad)
        self.assertEqual(v.code, 1, v)
        self.assertIn("full archive", v.err)
        self.assertIn("deletion", v.err)
        v = self.run_cmd("verify", "--json", bad)
        self.assertEqual(v.code, 1, v)
        self.assertIn("full archive", v.json()[-1]["error"])
        # restore: refused, the user's files there with their bytes, nothing written.
        user = {"mine.txt": b"my own file\n", "Photos/keep.jpg": b"my photo"}
        dst = self.user_folder("dst", user)
        before = tree(dst)
        r = self.run_cmd("restore", bad, dst)
        self.assertEqual(r.code, 1, r)
        self.assertIn("full archive", r.err)
        self.assertHolds(dst, user)
        self.assertEqual(sorted(tree(dst)), sorted(before), "restore wrote into DIR")
        # Into a new folder: not even the folder is left.
        new = os.path.join(self.tmp, "new")
        r = self.run_cmd("restore", bad, new)
        self.assertEqual(r.code, 1, r)
        self.assertFalse(os.path.exists(new), tree(new) if os.path.isdir(new) else new)
        self.assertOutsideUntouched()

    def test_manifests_that_disagree_or_lack_a_head_are_refused(self):
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        full = self.backup()
        os.unlink(os.path.join(self.remote, "a.txt"))
        inc = self.backup("--incremental")
        user = {"mine.txt": b"mine\n"}
        cases = {
            # head says full (so it may come first), the whole says incremental with deletions
            "disagree": dict(edit_head=None, edit_whole=add_deletions("mine.txt")),
            # no head at all: read as a plain archive before, its deletions applied
            "nohead": dict(drop_head=True, edit_whole=add_deletions("mine.txt")),
        }
        for what, kw in cases.items():
            with self.subTest(what):
                bad = os.path.join(self.tmp, what + ".tar")
                if what == "disagree":
                    rewrite(inc, bad, edit_head=set_kind("full", 0),
                            edit_whole=add_deletions("mine.txt"))
                else:
                    rewrite(full, bad, **kw)
                v = self.run_cmd("verify", bad)
                self.assertEqual(v.code, 1, v)
                dst = self.user_folder("dst-" + what, user)
                r = self.run_cmd("restore", bad, dst)
                self.assertEqual(r.code, 1, r)
                self.assertHolds(dst, user)
                self.assertEqual(sorted(tree(dst)), ["mine.txt"])

    # -- restore deletes only what it put in place in this run ---------------------------------

    def test_hostile_incremental_cannot_delete_the_users_files(self):
        write_file(os.path.join(self.remote, "keep.txt"), b"keep", mtime=T0)
        write_file(os.path.join(self.remote, "gone.txt"), b"gone", mtime=T0)
        full = self.backup()
        os.unlink(os.path.join(self.remote, "gone.txt"))
        inc = self.backup("--incremental")
        bad = os.path.join(self.tmp, "bad-inc.tar")
        rewrite(inc, bad, edit_whole=add_deletions("mine.txt", "Photos/IMG_1.jpg", "Photos"))
        user = {"mine.txt": b"my own file\n", "Photos/IMG_1.jpg": b"\xff\xd8 my photo"}
        dst = self.user_folder("dst", user)
        r = self.run_cmd("restore", "--json", full, bad, dst)
        self.assertEqual(r.code, 0, r)
        self.assertHolds(dst, user)
        self.assertHolds(dst, {"keep.txt": b"keep"})
        # What the chain itself put in place and then deleted is gone.
        self.assertFalse(os.path.exists(os.path.join(dst, "gone.txt")))
        deleted = sorted(e["path"] for e in r.json() if e["event"] == "delete")
        self.assertEqual(deleted, ["gone.txt"])
        warned = sorted(e["path"] for e in r.json() if e["event"] == "warning")
        self.assertEqual(warned, ["Photos", "Photos/IMG_1.jpg", "mine.txt"])

    def test_honest_chain_into_a_folder_holding_the_users_file(self):
        # The chain holds a folder Old/ and deletes it later; DIR holds the user's *file* Old
        # (the folder cannot be made: refused, the rest restored).
        write_file(os.path.join(self.remote, "keep.txt"), b"keep", mtime=T0)
        os.makedirs(os.path.join(self.remote, "Old"))
        full = self.backup()
        os.rmdir(os.path.join(self.remote, "Old"))
        inc = self.backup("--incremental")
        user = {"Old": b"the user's own file named Old\n"}
        dst = self.user_folder("dst", user)
        r = self.run_cmd("restore", "--json", full, inc, dst)
        self.assertEqual(r.code, 5, r)  # the folder Old could not be made
        self.assertHolds(dst, user)
        self.assertHolds(dst, {"keep.txt": b"keep"})
        self.assertEqual([e for e in r.json() if e["event"] == "delete"], [])
        warned = [e["path"] for e in r.json() if e["event"] == "warning"]
        self.assertEqual(warned, ["Old"])

    # -- deletion names are checked like entry names -------------------------------------------

    def test_unsafe_deletion_names_are_refused(self):
        write_file(os.path.join(self.remote, "sub/a.txt"), b"a", mtime=T0)
        write_file(os.path.join(self.remote, "b.txt"), b"b", mtime=T0)
        full = self.backup()
        os.unlink(os.path.join(self.remote, "b.txt"))
        inc = self.backup("--incremental")
        names = {
            "climb": "sub/../mine.txt",
            "out": "../outside/sentinel.txt",
            "abs": os.path.join(self.tmp, "dst-abs", "mine.txt"),
            "control": "mine%01.txt",
            "notnormal": "./mine.txt",
            "root": ".",
        }
        for what, name in names.items():
            with self.subTest(what):
                bad = os.path.join(self.tmp, what + ".tar")
                rewrite(inc, bad, edit_whole=add_deletions(name))
                v = self.run_cmd("verify", bad)
                self.assertEqual(v.code, 1, v)
                self.assertIn("deletion", v.err)
                user = {"mine.txt": b"mine\n", "mine\x01.txt": b"odd name\n"}
                dst = self.user_folder("dst-" + what, user)
                r = self.run_cmd("restore", full, bad, dst)
                self.assertEqual(r.code, 1, r)
                self.assertHolds(dst, user)
                # The full archive went in; the hostile incremental applied nothing.
                self.assertHolds(dst, {"sub/a.txt": b"a", "b.txt": b"b"})
        self.assertOutsideUntouched()

    # -- verify lists the deletions ------------------------------------------------------------

    def test_verify_lists_the_deletions(self):
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        write_file(os.path.join(self.remote, "Old/b.txt"), b"b", mtime=T0)
        full = self.backup()
        shutil.rmtree(os.path.join(self.remote, "Old"))
        os.unlink(os.path.join(self.remote, "a.txt"))
        write_file(os.path.join(self.remote, "c.txt"), b"c", mtime=T0)
        inc = self.backup("--incremental")
        v = self.run_cmd("verify", "--json", full, inc)
        self.assertEqual(v.code, 0, v)
        dels = [(e["archive"], e["path"], e["action"]) for e in v.json() if e["event"] == "delete"]
        self.assertEqual(sorted(dels), [(inc, "Old", "would delete"), (inc, "Old/b.txt", "would delete"),
                                        (inc, "a.txt", "would delete")])
        self.assertEqual(v.json()[-1]["files_deleted"], 3)
        h = self.run_cmd("verify", full, inc)
        self.assertEqual(h.code, 0, h)
        for p in ("Old", "Old/b.txt", "a.txt"):
            self.assertIn("%s: would delete %s\n" % (inc, p), h.out)
        self.assertIn("3 deletion(s)", h.err)
        h = self.run_cmd("verify", full)
        self.assertNotIn("would delete", h.out + h.err)

    def test_verify_names_entries_a_restore_would_refuse(self):
        write_file(os.path.join(self.remote, "a.txt"), b"a", mtime=T0)
        full = self.backup()
        link = tarfile.TarInfo("link")
        link.type, link.linkname, link.mtime = tarfile.SYMTYPE, "/etc", T0
        bad = os.path.join(self.tmp, "link.tar")
        rewrite(full, bad, extra=[link])
        v = self.run_cmd("verify", "--json", bad)
        self.assertEqual(v.code, 1, v)
        failed = [e["path"] for e in v.json() if e["event"] == "file" and e["status"] == "failed"]
        self.assertEqual(failed, ["link"])
        # restore: the same entry refused (exit 5), the rest restored.
        dst = os.path.join(self.tmp, "dst")
        r = self.run_cmd("restore", bad, dst)
        self.assertEqual(r.code, 5, r)
        self.assertEqual(sorted(tree(dst)), ["a.txt"])

    # -- the chain: ordered by its manifests, checked whole before anything is written ----------

    def test_chain_in_any_order_and_checked_before_writing(self):
        write_file(os.path.join(self.remote, "a.txt"), b"a1", mtime=T0)
        write_file(os.path.join(self.remote, "b.txt"), b"b", mtime=T0)
        a1 = self.backup()
        write_file(os.path.join(self.remote, "a.txt"), b"a2", mtime=T0 + 10)
        os.unlink(os.path.join(self.remote, "b.txt"))
        a2 = self.backup("--incremental")
        write_file(os.path.join(self.remote, "c.txt"), b"c", mtime=T0 + 20)
        a3 = self.backup("--incremental")
        dst = os.path.join(self.tmp, "r")
        r = self.run_cmd("restore", a3, a1, a2, dst)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, dst, dir_mtimes=False)
        # A gap, or a second chain's full archive: refused before a byte is written.
        for args in ([a1, a3], [a3, a2]):
            with self.subTest(args=args):
                d = os.path.join(self.tmp, "gap")
                r = self.run_cmd("restore", *args, d)
                self.assertEqual(r.code, 2, r)
                self.assertFalse(os.path.exists(d))
        # The last archive of the chain damaged at its head: nothing of the first is written.
        bad = os.path.join(self.tmp, "bad3.tar")
        rewrite(a3, bad, edit_head=set_kind("incremental", 7))
        d = os.path.join(self.tmp, "damaged")
        r = self.run_cmd("restore", a1, a2, bad, d)
        self.assertNotIn(r.code, (0, 5), r)
        self.assertFalse(os.path.exists(d))


if __name__ == "__main__":
    unittest.main()
