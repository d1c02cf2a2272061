# SPDX-License-Identifier: ISC
"""What phsync runs on a phone without phsync (issue 22 item 6, DESIGN rule 11, docs/PROTOCOL.md
"Bootstrap"): exactly the bytes it checked, owned by the login user, reached through no folder
another user can write.

The test sshd runs every command through tests/lib/phone_shell.py (ForceCommand), which can play
the other user on the phone: it replaces the cached helper by a planted program (a rename over
it, as anyone who can write the folder can) at the last moment before the helper is executed,
after phsync checked it. The planted program writes a marker file and then runs the real helper,
so a pull through it exits 0 as if nothing happened: the marker is the proof that it ran.
Proves:
- the race: the cached copy replaced after the check and before the exec (a copy left by an
  earlier run, and one uploaded in the same run): the replaced bytes never run (no marker),
  the pull goes through the checked helper; the next run replaces the planted copy;
- folders: ~, ~/.cache or ~/.cache/phsync writable by group or others, ~/.cache/phsync owned by
  another user, ~/.cache/phsync or ~/.cache a symlink: --helper always exits 3 naming the
  folder and what is wrong, --helper auto syncs over plain SFTP; either way nothing is run (no
  marker, the swap never fired) and nothing in the folder changed;
- a cached file owned by another user, or a symlink, is replaced by the user's own copy;
- a phone whose /proc cannot be read: no helper (always: exit 3 saying so; auto: plain SFTP);
- after one full byte check the open file's identity (stat: device, inode, size, mode, owner,
  ctime, mtime) is remembered in the brought memo and the next runs read nothing back (bytes
  counted at a TCP proxy); a copy changed in place (same size, its mtime put back: the ctime
  moved) is read back, found different and replaced; a remembered identity that no longer holds
  means the full check again, and the memo then says the true one;
- Android's shell and tools (mksh + toybox) and busybox's run the start-up script: the helper
  starts, deltas flow, and the race is lost there too.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import (CuttingProxy, SyncTestCase, folders_tree, phsync_bin, random_bytes, skip_or_fail,
                     write_file)

T0 = 1700000000
HERE = os.path.dirname(os.path.abspath(__file__))
PHONE_SHELL = os.path.abspath(os.path.join(HERE, "..", "lib", "phone_shell.py"))
NOBODY = 65534
# A python the sshd's sessions can run (not a user's pyenv under /root).
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def summary(r):
    for line in r.out.splitlines():
        ev = json.loads(line)
        if ev.get("event") == "summary":
            return ev
    raise AssertionError("no summary in %r" % (r,))


def infos(r):
    return [json.loads(l).get("message") for l in r.out.splitlines()
            if json.loads(l).get("event") == "info"]


def helpers_dir():
    return os.path.join(os.path.dirname(phsync_bin()), "helpers")


def host_arch():
    m = os.uname().machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def version():
    out = subprocess.run([phsync_bin(), "--version"], stdout=subprocess.PIPE, check=True).stdout
    return out.decode().split()[1]


def listing(d):
    """name -> (inode, mode, uid, size) of what d holds (not following symlinks)."""
    out = {}
    for n in os.listdir(d):
        st = os.lstat(os.path.join(d, n))
        out[n] = (st.st_ino, st.st_mode, st.st_uid, st.st_size)
    return out


class BootstrapTrustTest(SyncTestCase):
    @classmethod
    def setUpClass(cls):
        cls.ctl_dir = tempfile.mkdtemp(prefix="phsync-phone-shell-")
        cls.addClassCleanup(shutil.rmtree, cls.ctl_dir, True)
        os.chmod(cls.ctl_dir, 0o755)
        cls.control = os.path.join(cls.ctl_dir, "control.json")
        cls.server_kwargs = {"clean_home": True, "extra_sshd_config": [
            "ForceCommand %s %s %s" % (PY, PHONE_SHELL, cls.control)]}
        super().setUpClass()

    def setUp(self):
        super().setUp()
        self.set_control()
        home = self.srv.login_home
        os.chmod(home, 0o755)
        self.addCleanup(os.chmod, home, 0o755)
        self.clear_cache()
        self.env = {"PHSYNC_HELPER_DIR": helpers_dir()}
        self.local_helper = os.path.join(helpers_dir(), "phsync-helper-" + host_arch())
        with open(self.local_helper, "rb") as f:
            self.helper_bytes = f.read()
        # What the other user plants: it leaves a marker, then runs the real helper.
        self.marker = os.path.join(self.tmp, "planted-code-ran")
        self.planted = os.path.join(self.tmp, "planted.sh")
        with open(self.planted, "w") as f:
            f.write('#!/bin/sh\necho "$0 $*" >> %s\nexec %s "$@"\n' % (self.marker, self.local_helper))

    def clear_cache(self):
        home = self.srv.login_home
        for p in (os.path.join(home, ".cache", "phsync"), os.path.join(home, ".cache")):
            if os.path.islink(p):
                os.unlink(p)
        shutil.rmtree(os.path.join(home, ".cache"), ignore_errors=True)
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        if os.path.isdir(sdir):
            for n in os.listdir(sdir):
                if n.startswith(("nohelper-", "brought-")):
                    os.unlink(os.path.join(sdir, n))

    def set_control(self, **modes):
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            json.dump(modes, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.control)
        with open(self.control + ".log", "w"):
            pass

    def ran(self):
        """The first line of each command the phone was asked to run, in order."""
        with open(self.control + ".log") as f:
            return [l[4:].rstrip("\n") for l in f if l.startswith("RAN ")]

    def fired(self):
        with open(self.control + ".log") as f:
            return [l.split(None, 1)[1].rstrip("\n") for l in f if l.startswith("FIRED ")]

    def cache_dir(self):
        return os.path.join(self.srv.login_home, ".cache", "phsync")

    def cached(self):
        return os.path.join(self.cache_dir(), "phsync-helper-%s-%s" % (version(), host_arch()))

    def seed(self):
        """A good cached copy, as an earlier run left it."""
        os.makedirs(self.cache_dir(), mode=0o700)
        os.chmod(os.path.dirname(self.cache_dir()), 0o700)
        shutil.copyfile(self.local_helper, self.cached())
        os.chmod(self.cached(), 0o700)

    def arm_swap(self, **extra):
        self.set_control(swap={"file": self.cached(), "planted": self.planted}, **extra)

    def assertNothingPlantedRan(self):
        self.assertFalse(os.path.exists(self.marker), "the planted program ran: %s"
                         % (open(self.marker).read() if os.path.exists(self.marker) else ""))

    def photos(self, n=2, size=200_000):
        datas = {}
        for i in range(n):
            rel = "DCIM/Camera/IMG_%d.jpg" % i
            datas[rel] = random_bytes(size + i * 7, 300 + i)
            write_file(os.path.join(self.remote, rel), datas[rel], mtime=T0)
        return datas

    # -- the race ----------------------------------------------------------------------------

    def test_copy_replaced_after_the_check_never_runs(self):
        self.photos()
        for how in ("left by an earlier run", "uploaded in this run"):
            with self.subTest(how):
                self.clear_cache()
                shutil.rmtree(self.local, ignore_errors=True)
                if how == "left by an earlier run":
                    self.seed()
                self.arm_swap()
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                # The swap happened, after the check ...
                self.assertEqual(self.fired(), ["swap " + self.cached()], r)
                with open(self.cached(), "rb") as f:
                    self.assertNotEqual(f.read(), self.helper_bytes)
                # ... and what ran is what was checked, never what lies at the name now.
                self.assertNothingPlantedRan()
                self.assertEqual(summary(r)["helper"], 1, r)
                self.assertTreesEqual(self.remote, self.local)
                # The next run finds the planted copy, replaces it and runs only its own.
                self.set_control()
                write_file(os.path.join(self.remote, "new.txt"), b"new\n", mtime=T0)
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                self.assertNothingPlantedRan()
                with open(self.cached(), "rb") as f:
                    self.assertEqual(f.read(), self.helper_bytes)
                self.assertEqual(sorted(os.listdir(self.cache_dir())), [os.path.basename(self.cached())])
                self.assertTreesEqual(self.remote, self.local)
                os.unlink(os.path.join(self.remote, "new.txt"))

    def test_second_helper_of_a_long_listing_checked_as_the_first(self):
        """Issue 24: a listing of more than 64 folders starts a second copy of the brought
        helper (the phone's other cores) by the same checked start-up, never an upload; a copy
        replaced after the first start's check is refused for the second: the planted bytes
        never run and the run goes on, exact, with its one helper."""
        folders_tree(self.remote, 90, 1, T0)
        self.seed()
        r = self.pull("--json", "--helper", "always", env=self.env, expect=0, timeout=120)
        self.assertIn("listing over 2 helpers", infos(r), r)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)
        ran = self.ran()
        self.assertEqual(len(ran), 2, ran)
        self.assertIn("command -v phsync", ran[0])  # first contact
        # ... then the known copy's checked start (its folders and open file listed)
        self.assertTrue(ran[1].startswith("sh -c ") and "ls -lnd . .cache .cache/phsync" in ran[1]
                        and "uname -m" not in ran[1], ran)
        self.assertNothingPlantedRan()
        # Swapped after the first start's check: the second start finds other bytes.
        shutil.rmtree(self.local)
        self.arm_swap()
        r = self.pull("--json", "--helper", "always", env=self.env, expect=0, timeout=120)
        self.assertEqual(self.fired(), ["swap " + self.cached()], r)
        self.assertIn("one helper: another could not start: the helper's copy on the phone is "
                      "no longer the one this run started", infos(r), r)
        self.assertNotIn("listing over 2 helpers", infos(r), r)
        self.assertEqual(len(self.ran()), 2, self.ran())
        self.assertNothingPlantedRan()
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertTreesEqual(self.remote, self.local)

    # -- folders another user can write ------------------------------------------------------

    def test_unsafe_folders_refused_and_nothing_run(self):
        self.photos(n=1, size=50_000)
        home = self.srv.login_home
        dotcache = os.path.join(home, ".cache")
        evil = os.path.join(self.tmp, "evil")

        def link_cache():  # ~/.cache/phsync -> a folder of another user's, a good copy in it
            os.makedirs(evil)
            shutil.copy2(self.cached(), os.path.join(evil, os.path.basename(self.cached())))
            os.chown(evil, NOBODY, NOBODY)
            os.chmod(evil, 0o777)
            shutil.rmtree(self.cache_dir())
            os.symlink(evil, self.cache_dir())

        def link_dotcache():  # ~/.cache -> elsewhere (the same folders below it)
            shutil.rmtree(evil, ignore_errors=True)
            os.rename(dotcache, evil)
            os.symlink(evil, dotcache)

        cases = (
            ("~/.cache/phsync writable by others", lambda: os.chmod(self.cache_dir(), 0o777),
             "~/.cache/phsync on the phone is writable by other users (drwxrwxrwx)"),
            ("~/.cache/phsync writable by its group", lambda: os.chmod(self.cache_dir(), 0o770),
             "~/.cache/phsync on the phone is writable by other users (drwxrwx---)"),
            ("~/.cache writable by its group", lambda: os.chmod(dotcache, 0o775),
             "~/.cache on the phone is writable by other users"),
            ("~ writable by others", lambda: os.chmod(home, 0o757),
             "~ on the phone is writable by other users"),
            ("~/.cache/phsync owned by another user",
             lambda: os.chown(self.cache_dir(), NOBODY, NOBODY),
             "~/.cache/phsync on the phone belongs to uid %d, not to the login user (uid %d)"
             % (NOBODY, os.geteuid())),
            ("~/.cache/phsync a symlink", link_cache, "~/.cache/phsync on the phone is a symlink"),
            ("~/.cache a symlink", link_dotcache, "~/.cache on the phone is a symlink"),
        )
        for i, (name, make, says) in enumerate(cases):
            with self.subTest(name):
                self.clear_cache()
                shutil.rmtree(evil, ignore_errors=True)
                os.chmod(home, 0o755)
                self.seed()
                make()
                self.arm_swap()
                before = listing(self.cache_dir())
                dst = os.path.join(self.tmp, "x%d" % i)
                r = self.pull("--helper", "always", dst=dst, env=self.env, expect=3)
                self.assertIn(says, r.err)
                self.assertFalse(os.path.exists(dst))
                self.assertEqual(self.fired(), [])
                self.assertNothingPlantedRan()
                self.assertEqual(listing(self.cache_dir()), before)
                # auto: plain SFTP, quietly; still nothing run or written there.
                r = self.pull("--json", "--helper", "auto", dst=dst, env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 0, r)
                self.assertTreesEqual(self.remote, dst)
                self.assertEqual(self.fired(), [])
                self.assertNothingPlantedRan()
                self.assertEqual(listing(self.cache_dir()), before)

    def test_foreign_or_symlinked_cached_file_replaced(self):
        self.photos(n=1, size=50_000)
        other = os.path.join(self.tmp, "other-copy")
        for name in ("owned by another user", "a symlink"):
            with self.subTest(name):
                self.clear_cache()
                shutil.rmtree(self.local, ignore_errors=True)
                self.seed()
                if name == "a symlink":
                    shutil.copy2(self.cached(), other)
                    os.unlink(self.cached())
                    os.symlink(other, self.cached())
                else:
                    os.chown(self.cached(), NOBODY, NOBODY)
                old = os.lstat(self.cached())
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                st = os.lstat(self.cached())
                self.assertNotEqual(st.st_ino, old.st_ino)
                self.assertEqual((st.st_uid, st.st_mode & 0o7777, os.path.islink(self.cached())),
                                 (os.geteuid(), 0o700, False))
                with open(self.cached(), "rb") as f:
                    self.assertEqual(f.read(), self.helper_bytes)
                self.assertTreesEqual(self.remote, self.local)

    def test_brought_helper_started_at_once_next_time(self):
        """A phone that ran the helper phsync brought: the next run starts that one at once
        (no `phsync serve` tried on its PATH, no `uname -m`), still checked as the first was;
        a memo that no longer holds (no helper of that kind here) is dropped and the run goes
        the whole way."""
        self.photos(n=2, size=50_000)
        r = self.pull("--json", "--helper", "auto", env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        # First contact (issue 24): one command tries the phone's own phsync and names its
        # machine (no `phsync serve` nor `uname -m` of their own); then the upload's SFTP and
        # the checked start of the new copy.
        first = self.ran()
        self.assertEqual(len(first), 3, first)
        self.assertTrue(first[0].startswith("sh -c ") and "command -v phsync" in first[0]
                        and "uname -m" in first[0], first)
        self.assertFalse(any(c.startswith("phsync serve") or c == "uname -m" for c in first),
                         first)
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        (memo,) = [n for n in os.listdir(sdir) if n.startswith("brought-")]
        with open(os.path.join(sdir, memo)) as f:
            self.assertEqual(f.read().splitlines()[2], host_arch())
        # The next run: one command, the checked start-up of the cached copy.
        self.set_control()
        shutil.rmtree(self.local)
        r = self.pull("--json", "--helper", "auto", env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        again = self.ran()
        self.assertFalse(any(c.startswith("phsync serve") or c == "uname -m" for c in again),
                         again)
        self.assertEqual(len(again), 1, again)
        self.assertTreesEqual(self.remote, self.local)
        # A memo naming a machine this phsync has no helper for: dropped, the whole way.
        with open(os.path.join(sdir, memo)) as f:
            lines = f.read().splitlines()
        with open(os.path.join(sdir, memo), "w") as f:
            f.write("\n".join(lines[:2] + ["mips"]) + "\n")
        self.set_control()
        shutil.rmtree(self.local)
        r = self.pull("--json", "--helper", "auto", env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertIn("uname -m", self.ran()[0])
        with open(os.path.join(sdir, memo)) as f:
            self.assertEqual(f.read().splitlines()[2], host_arch())
        self.assertTreesEqual(self.remote, self.local)
        self.assertNothingPlantedRan()

    def memo_lines(self):
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        (memo,) = [n for n in os.listdir(sdir) if n.startswith("brought-")]
        path = os.path.join(sdir, memo)
        with open(path) as f:
            return path, f.read().splitlines()

    def test_unchanged_cached_helper_not_read_back(self):
        """The second run through the cached helper reads no helper bytes back: the open file's
        identity is the one remembered after the last full check."""
        self.photos(n=2, size=50_000)
        proxy = CuttingProxy(self.srv.port)
        self.addCleanup(proxy.close)
        cfg = self.srv.write_config(port=proxy.port)
        helper = len(self.helper_bytes)

        def run(what):
            self.set_control()
            r = self.pull("--json", "--helper", "auto", config=cfg, env=self.env, expect=0)
            self.assertEqual(summary(r)["helper"], 1, r)
            self.assertTreesEqual(self.remote, self.local)
            self.assertNothingPlantedRan()
            with open(self.cached(), "rb") as f:
                self.assertEqual(f.read(), self.helper_bytes, what)
            return proxy.down

        def remembered_inode():
            _, lines = self.memo_lines()
            self.assertEqual(lines[2], host_arch())
            return int(lines[3].split()[2])  # "BUILD DEV INODE SIZE MODE UID CTIME MTIME"

        # The first run brings the helper and reads it back once, in full.
        self.assertGreater(run("first"), helper)
        self.assertEqual(remembered_inode(), os.stat(self.cached()).st_ino)
        # The next: one command, and nothing of the helper read back.
        down = run("second")
        self.assertEqual(len(self.ran()), 1, self.ran())
        self.assertLess(down, helper // 4)
        # A remembered identity that no longer holds (another inode): the full check again,
        # and the memo says the true identity afterwards.
        path, lines = self.memo_lines()
        f = lines[3].split(" ")
        f[2] = str(int(f[2]) + 1)
        with open(path, "w") as out:
            out.write("\n".join(lines[:3] + [" ".join(f)]) + "\n")
        self.assertGreater(run("stale identity"), helper)
        self.assertEqual(remembered_inode(), os.stat(self.cached()).st_ino)
        self.assertLess(run("after the stale identity"), helper // 4)
        # The cached copy changed in place: same size, other bytes, its mtime put back (its
        # ctime moved): read back, found different, replaced by a new copy.
        before = os.stat(self.cached())
        with open(self.cached(), "r+b") as out:
            out.seek(len(self.helper_bytes) // 2)
            out.write(bytes([self.helper_bytes[len(self.helper_bytes) // 2] ^ 0xFF]))
        os.utime(self.cached(), ns=(before.st_atime_ns, before.st_mtime_ns))
        self.assertEqual(os.stat(self.cached()).st_size, before.st_size)
        self.assertGreater(run("changed in place"), helper)
        self.assertNotEqual(os.stat(self.cached()).st_ino, before.st_ino)
        self.assertEqual(remembered_inode(), os.stat(self.cached()).st_ino)
        self.assertLess(run("after the replacement"), helper // 4)

    def test_ls_quoting_style_of_the_user(self):
        """A user whose QUOTING_STYLE makes GNU ls quote every name: the start-up script's
        one ls still names the folders and the file as phsync matches them."""
        self.photos(n=1, size=50_000)
        for state in ("none cached", "cached"):
            with self.subTest(state):
                self.set_control(env={"QUOTING_STYLE": "shell-always"})
                shutil.rmtree(self.local, ignore_errors=True)
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                self.assertTreesEqual(self.remote, self.local)

    def test_no_proc_no_helper(self):
        """A phone whose /proc cannot be read: the open file cannot be shown nor executed
        through its descriptor, so no helper runs; said clearly, plain SFTP with auto."""
        self.photos(n=1, size=50_000)
        self.seed()
        self.arm_swap(noproc=True)
        before = listing(self.cache_dir())
        dst = os.path.join(self.tmp, "x")
        r = self.pull("--helper", "always", dst=dst, env=self.env, expect=3)
        self.assertIn("the phone cannot show the helper it opened (/proc/PID/fd)", r.err)
        self.assertFalse(os.path.exists(dst))
        r = self.pull("--json", "--helper", "auto", dst=dst, env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 0, r)
        self.assertTreesEqual(self.remote, dst)
        self.assertEqual(self.fired(), [])
        self.assertNothingPlantedRan()
        self.assertEqual(listing(self.cache_dir()), before)

    # -- first contact in one exec channel (issue 24) ------------------------------------------

    def fresh_state(self):
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        if os.path.isdir(sdir):
            for n in os.listdir(sdir):
                if n.startswith(("nohelper-", "brought-")):
                    os.unlink(os.path.join(sdir, n))

    def test_first_contact_opens_one_exec(self):
        """A laptop that never reached this phone, whose cached helper is sound (another laptop
        left it, or the memo expired): one command, where three ran before (`phsync serve`,
        `uname -m`, the checked start), through every login shell; the copy is read back in
        full once and the next run, with the memo, is one command that reads nothing back."""
        self.photos(n=2, size=50_000)
        shells = [("sh", None)] + [(os.path.basename(p), [p]) for p in
                                   (shutil.which("dash"), shutil.which("bash"),
                                    shutil.which("zsh"), shutil.which("fish"),
                                    shutil.which("mksh")) if p]
        for name, shell in shells:
            with self.subTest(name):
                self.clear_cache()
                self.seed()
                shutil.rmtree(self.local, ignore_errors=True)
                before = os.stat(self.cached())
                self.arm_swap(**({"shell": shell} if shell else {}))
                r = self.pull("--json", "--helper", "auto", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                ran = self.ran()
                self.assertEqual(len(ran), 1, ran)
                self.assertIn("command -v phsync", ran[0])
                # The race is lost here too: what ran is the open file that was checked.
                self.assertEqual(self.fired(), ["swap " + self.cached()])
                self.assertNothingPlantedRan()
                self.assertTreesEqual(self.remote, self.local)
                # Not uploaded (the sound copy was used), then replaced by the next run,
                # which finds the planted one: the memo's start, then SFTP and a new check.
                self.assertNotEqual(os.stat(self.cached()).st_ino, before.st_ino)
                self.set_control(**({"shell": shell} if shell else {}))
                shutil.rmtree(self.local)
                r = self.pull("--json", "--helper", "auto", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                self.assertEqual(len(self.ran()), 3, self.ran())
                self.assertNothingPlantedRan()
                with open(self.cached(), "rb") as f:
                    self.assertEqual(f.read(), self.helper_bytes)

    def test_phones_own_phsync_in_the_same_exec(self):
        """A phone with phsync on its PATH: the first-contact script starts it in the same
        exec (one command; nothing cached, no memo of a brought helper). One that speaks no
        helper protocol (plain SFTP behind the name): a second script without it names the
        machine and the brought helper runs (four commands with the upload, five before)."""
        self.photos(n=2, size=50_000)
        bindir = os.path.join(self.tmp, "phone-bin")
        os.makedirs(bindir)
        os.chmod(bindir, 0o755)
        own = os.path.join(bindir, "phsync")
        os.symlink(phsync_bin(), own)
        self.set_control(path=[bindir])
        r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        self.assertEqual(len(self.ran()), 1, self.ran())
        self.assertFalse(os.path.exists(os.path.join(self.srv.login_home, ".cache")))
        sdir = os.path.join(self.srv.home, ".local", "state", "phsync")
        self.assertFalse(any(n.startswith("brought-") for n in os.listdir(sdir)))
        self.assertTreesEqual(self.remote, self.local)
        # A phsync that answers plain SFTP only.
        os.unlink(own)
        fake = os.path.join(HERE, "..", "lib", "fake_helper.py")
        write_file(own, '#!/bin/sh\nexec %s %s plain %s "$@"\n'
                   % (PY, os.path.abspath(fake), phsync_bin()))
        os.chmod(own, 0o755)
        self.set_control(path=[bindir])
        shutil.rmtree(self.local)
        r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
        self.assertEqual(summary(r)["helper"], 1, r)
        ran = self.ran()
        self.assertEqual(len(ran), 4, ran)
        self.assertIn("command -v phsync", ran[0])
        self.assertNotIn("command -v phsync", ran[1])
        self.assertIn("uname -m", ran[1])
        with open(self.cached(), "rb") as f:
            self.assertEqual(f.read(), self.helper_bytes)
        self.assertTreesEqual(self.remote, self.local)

    HOSTILE = r"""import os, sys
mode, cmd = sys.argv[1], sys.argv[3]
if "command -v phsync" not in cmd:
    os.execv("/bin/sh", ["/bin/sh", "-c", cmd])
out = sys.stdout.buffer
arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(os.uname().machine, os.uname().machine)
out.write(b"Welcome!\n")
if mode != "junk":
    out.write(b"phsync-boot %d\n" % os.geteuid())
if mode == "arch":
    out.write(b"arch sparc\n")
elif mode == "machine":
    out.write(b"machine %s\n" % arch.encode())
elif mode == "own":
    out.write(b"own\n\x00\x00\x00\x05\x02\x00\x00\x00\x03")
elif mode == "ls":
    out.write(b"arch %s\ndrwx------ 3 0 0 4096 Nov 25 19:54 .\n; reboot\n" % arch.encode())
elif mode == "endless":
    try:
        for _ in range(4096):
            out.write(b"y" * 16384)
            out.flush()
    except OSError:
        pass
elif mode == "junk":
    out.write(b"junk\n" * 100)
out.flush()
sys.stdin.read()
"""

    def test_hostile_answers_refused(self):
        """A shell that lies where the first-contact script names the phone's machine, prints
        an `ls` line of something else, garbage after "own", a line without end or only
        junk: refused with a message, nothing written or run on the phone; --helper always
        exits 3, auto goes on over plain SFTP."""
        self.photos(n=1, size=50_000)
        hostile = os.path.join(self.tmp, "hostile.py")
        write_file(hostile, self.HOSTILE)
        os.chmod(hostile, 0o755)
        cases = (("arch", "answered 'arch sparc' where phsync's start-up script names"),
                 ("machine", "answered 'machine "),
                 ("own", "printed more after starting its phsync"),
                 ("ls", "cannot read the phone's `ls -lnd` line '; reboot'"),
                 ("endless", "printed a line longer than"),
                 ("junk", "did not run phsync's start-up script"))
        for i, (mode, says) in enumerate(cases):
            with self.subTest(mode):
                self.clear_cache()
                shell = [PY, hostile, mode]
                self.set_control(shell=shell)
                dst = os.path.join(self.tmp, "h%d" % i)
                r = self.pull("--helper", "always", dst=dst, env=self.env, expect=3)
                self.assertIn(says, r.err)
                self.assertEqual(len(self.ran()), 1, self.ran())
                self.assertFalse(os.path.exists(dst))
                self.set_control(shell=shell)
                r = self.pull("--json", "--helper", "auto", dst=dst, env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 0, r)
                self.assertTreesEqual(self.remote, dst)
                self.assertFalse(os.path.exists(os.path.join(self.srv.login_home, ".cache")))
                self.assertNothingPlantedRan()

    # -- a phone's own shell and tools -----------------------------------------------------------

    def test_android_and_busybox_shells_run_it_checked(self):
        datas = self.photos(n=2, size=300_000)
        toybox, mksh, busybox = shutil.which("toybox"), shutil.which("mksh"), shutil.which("busybox")
        if not (toybox and mksh and busybox):
            skip_or_fail("phone-shells", "mksh, toybox or busybox missing (apt-get install mksh "
                         "toybox busybox; scripts/install-deps.sh does)")
        for name, shell, tool in (("mksh + toybox (Android)", [mksh], toybox),
                                  ("busybox sh + applets", [busybox, "sh"], busybox)):
            with self.subTest(name):
                self.clear_cache()
                shutil.rmtree(self.local, ignore_errors=True)
                bindir = os.path.join(self.tmp, "bin-" + os.path.basename(tool))
                os.makedirs(bindir)
                os.chmod(bindir, 0o755)
                for t in ("ls", "cat", "id", "uname", "stat"):
                    os.symlink(tool, os.path.join(bindir, t))
                os.symlink(shell[0] if len(shell) == 1 else busybox, os.path.join(bindir, "sh"))
                self.set_control(shell=shell, path=[bindir])
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                self.assertEqual(summary(r)["helper"], 1, r)
                with open(self.cached(), "rb") as f:
                    self.assertEqual(f.read(), self.helper_bytes)
                # Reused, and the race lost here too; an edit travels as a delta.
                rel = "DCIM/Camera/IMG_0.jpg"
                data = datas[rel][:1000] + b"edited" + datas[rel][1000:]
                write_file(os.path.join(self.remote, rel), data, mtime=T0 + 10)
                self.arm_swap(shell=shell, path=[bindir])
                r = self.pull("--json", "--helper", "always", env=self.env, expect=0)
                s = summary(r)
                self.assertEqual((s["helper"], s["files_done"]), (1, 1), r)
                self.assertGreater(s["bytes_matched"], 250_000, s)
                self.assertEqual(self.fired(), ["swap " + self.cached()])
                self.assertNothingPlantedRan()
                self.assertTreesEqual(self.remote, self.local)
                write_file(os.path.join(self.remote, rel), datas[rel], mtime=T0)
