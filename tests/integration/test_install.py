# SPDX-License-Identifier: ISC
"""Installing like any tool (issue 11): `cmake --install` into a staging prefix puts the command,
the man pages, the bash/zsh/fish completions, libphsync with its headers and phsync.pc in the
GNUInstallDirs places; examples/minipull.c builds against the installed pkg-config file alone and
pulls from a real sshd; `cpack -G DEB` makes a .deb whose Depends are Debian's library packages,
with every man page of docs/ and the completions in it.  (test_cli.py compares each command's
--help with its man page and the completions.)  The install follows the prefix given at install
time, not the configured one (issue 25, item 2): the systemd user unit names PREFIX/bin/phsync and
`systemd-analyze verify` accepts it, and the installed phsync brings its static helper from
PREFIX/libexec/phsync to a phone without phsync."""

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from harness import REPO, SshServer, Unavailable, phsync_bin, sanitizer_env, skip_or_fail, write_file


def build_dir():
    return os.path.dirname(phsync_bin())


def cache_value(name):
    with open(os.path.join(build_dir(), "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def man_pages():
    """Where every page of docs/ goes under the prefix."""
    return sorted("share/man/man%s/%s.gz" % (f.rsplit(".", 1)[1], f) for f in os.listdir(os.path.join(REPO, "docs"))
                  if re.match(r"phsync.*\.[15]$", f))


def run(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=300, **kw)
    if p.returncode != 0:
        raise AssertionError("%r failed (%d):\n%s" % (argv, p.returncode, p.stdout.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


class InstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(build_dir(), "CMakeCache.txt")):
            raise unittest.SkipTest("PHSYNC_BIN is not in a CMake build tree")
        cls.tmp = tempfile.mkdtemp(prefix="phsync-install-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.stage = os.path.join(cls.tmp, "stage")
        run(["cmake", "--install", build_dir(), "--prefix", cls.stage])
        cls.libdir = cache_value("CMAKE_INSTALL_LIBDIR") or "lib"

    def test_files_in_their_places(self):
        s = self.stage
        want = ["bin/phsync",
                "share/bash-completion/completions/phsync",
                "share/fish/vendor_completions.d/phsync.fish",
                "include/phsync/phsync.h", "include/phsync/error.h", "include/phsync/delta.h",
                "include/phsync/pair.h", "include/phsync/backup.h",
                "share/systemd/user/phsync.service",
                self.libdir + "/libphsync.a", self.libdir + "/pkgconfig/phsync.pc"]
        for rel in want + man_pages():
            self.assertTrue(os.path.isfile(os.path.join(s, rel)), rel)
        # launchd's plist is for macOS only.
        self.assertFalse(os.path.exists(os.path.join(s, "share/phsync/launchd")))
        # Every command's page is among them (test_cli compares them with --help).
        for cmd in ("pull", "push", "status", "daemon", "pair", "doctor", "backup", "restore",
                    "verify", "serve"):
            self.assertIn("share/man/man1/phsync-%s.1.gz" % cmd, man_pages())
        self.assertIn("share/man/man5/phsync.conf.5.gz", man_pages())
        # man finds them in the staged tree by name, as it will under /usr.
        p = subprocess.run(["man", "-M", os.path.join(s, "share/man"), "-w", "phsync-pull"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.stdout.decode().strip(), os.path.join(s, "share/man/man1/phsync-pull.1.gz"),
                         p.stderr)
        p = subprocess.run(["man", "-M", os.path.join(s, "share/man"), "-w", "5", "phsync.conf"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.stdout.decode().strip(), os.path.join(s, "share/man/man5/phsync.conf.5.gz"),
                         p.stderr)
        zsh = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(s, "share/zsh")) for f in fs]
        self.assertEqual([os.path.basename(z) for z in zsh], ["_phsync"])
        self.assertTrue(os.access(os.path.join(s, "bin/phsync"), os.X_OK))
        out = subprocess.run([os.path.join(s, "bin/phsync"), "--version"], stdout=subprocess.PIPE,
                             env=sanitizer_env({"PATH": "/usr/bin:/bin"})).stdout.decode()
        self.assertTrue(out.startswith("phsync "), out)
        # The bash completion is valid bash and completes the commands.
        out = run(["bash", "-c", "source %s; COMP_WORDS=(phsync pa); COMP_CWORD=1; _phsync; "
                   "echo ${COMPREPLY[@]}" % os.path.join(s, "share/bash-completion/completions/phsync")])
        self.assertEqual(out.split(), ["pair"])

    def test_unit_names_the_install_prefix(self):
        unit = os.path.join(self.stage, "share/systemd/user/phsync.service")
        with open(unit) as f:
            execs = [l.strip() for l in f if l.startswith("ExecStart=")]
        self.assertEqual(execs, ["ExecStart=%s daemon" % os.path.join(self.stage, "bin/phsync")])
        # systemd's own check: the program exists and is executable, the man pages named in
        # Documentation= are found (in the staged tree), the unit parses.
        p = subprocess.run(["systemd-analyze", "verify", unit], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT,
                           env=dict(os.environ, MANPATH=os.path.join(self.stage, "share/man")))
        self.assertEqual(p.returncode, 0, p.stdout.decode(errors="replace"))

    def test_installed_phsync_brings_its_helper_from_the_prefix(self):
        try:
            srv = SshServer(clean_home=True)
            self.addCleanup(srv.stop)
            srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))
        remote = os.path.join(self.tmp, "phone")
        local = os.path.join(self.tmp, "laptop-helper")
        write_file(os.path.join(remote, "DCIM/a.jpg"), b"x" * 100_000)
        env = srv.env()
        del env["PHSYNC_HELPER_DIR"]   # as a user runs it: found from the program's place
        p = subprocess.run([os.path.join(self.stage, "bin/phsync"), "pull", "-F", srv.config,
                            "--json", "--helper", "always", "--state-dir",
                            os.path.join(self.tmp, "state"), "phone:" + remote, local],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=srv.home,
                           stdin=subprocess.DEVNULL, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        summary = [json.loads(l) for l in p.stdout.decode().splitlines()
                   if '"summary"' in l][-1]
        self.assertEqual(summary["helper"], 1, summary)
        with open(os.path.join(local, "DCIM/a.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"x" * 100_000)
        cache = os.path.join(srv.login_home, ".cache", "phsync")
        self.assertEqual(len(os.listdir(cache)), 1, os.listdir(cache))

    def test_configure_as_a_packager(self):
        """Issue 25, item 6: CTest's BUILD_TESTING decides the tests, a configure without
        cmocka still works (and fails only when the tests are required), -Werror is off by
        default (tests/run.sh turns it on), and the phone helpers are an explicit choice."""
        def configure(name, *args, env=None):
            b = os.path.join(self.tmp, "cfg-" + name)
            p = subprocess.run(["cmake", "-S", REPO, "-B", b] + list(args), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, timeout=300)
            return p.returncode, p.stdout.decode(errors="replace"), b

        def cache(b, name):
            with open(os.path.join(b, "CMakeCache.txt")) as f:
                for line in f:
                    if line.startswith(name + ":"):
                        return line.split("=", 1)[1].strip()

        code, out, b = configure("plain")
        self.assertEqual(code, 0, out)
        self.assertEqual((cache(b, "PHSYNC_WERROR"), cache(b, "PHSYNC_HELPERS"), cache(b, "BUILD_TESTING")),
                         ("OFF", "native", "ON"))
        self.assertTrue(os.path.exists(os.path.join(b, "tests", "CTestTestfile.cmake")))
        code, out, b = configure("notests", "-DBUILD_TESTING=OFF")
        self.assertEqual(code, 0, out)
        self.assertFalse(os.path.exists(os.path.join(b, "tests")))
        code, out, b = configure("bad", "-DPHSYNC_HELPERS=some")
        self.assertNotEqual(code, 0, out)
        self.assertIn("PHSYNC_HELPERS is native, all or off", out)
        # Without cmocka (a pkg-config search path holding every .pc but cmocka's).
        pcdir = os.path.join(self.tmp, "pc-no-cmocka")
        os.makedirs(pcdir)
        path = subprocess.run(["pkg-config", "--variable", "pc_path", "pkg-config"],
                              stdout=subprocess.PIPE).stdout.decode().strip()
        for d in path.split(":"):
            for f in (os.listdir(d) if os.path.isdir(d) else []):
                if f.endswith(".pc") and f != "cmocka.pc" and not os.path.exists(os.path.join(pcdir, f)):
                    os.symlink(os.path.join(d, f), os.path.join(pcdir, f))
        env = dict(os.environ, PKG_CONFIG_LIBDIR=pcdir)
        code, out, b = configure("nocmocka", env=env)
        self.assertEqual(code, 0, out)
        self.assertIn("cmocka not found: the tests are not built", out)
        code, out, b = configure("nocmocka-required", "-DPHSYNC_TESTS_REQUIRED=ON", env=env)
        self.assertNotEqual(code, 0, out)
        self.assertIn("cmocka not found", out)

    def test_minipull_builds_against_installed_pkgconfig_and_pulls(self):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(self.stage, self.libdir, "pkgconfig"))
        env.pop("PKG_CONFIG_LIBDIR", None)
        flags = run(["pkg-config", "--cflags", "--libs", "phsync"], env=env).split()
        self.assertIn("-lphsync", flags)
        self.assertTrue(any(f.startswith("-I" + self.stage) or f.startswith("-I") and
                            os.path.realpath(f[2:]) == os.path.realpath(os.path.join(self.stage, "include"))
                            for f in flags), flags)
        # Only the installed tree: the example is copied away from the source tree.
        src = os.path.join(self.tmp, "minipull.c")
        shutil.copyfile(os.path.join(REPO, "examples", "minipull.c"), src)
        exe = os.path.join(self.tmp, "minipull")
        extra = []
        if (cache_value("PHSYNC_SANITIZE") or "").upper() in ("ON", "1", "TRUE", "YES"):
            extra = ["-fsanitize=address,undefined"]  # the installed library was built so
        run(["cc", "-std=c11", "-Wall", "-Werror", src, "-o", exe] + flags + extra, env=env)
        try:
            srv = SshServer()
            self.addCleanup(srv.stop)
            srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))
        remote = os.path.join(self.tmp, "phone")
        write_file(os.path.join(remote, "DCIM/IMG_1.jpg"), b"jpeg bytes", mtime=1700000000)
        local = os.path.join(self.tmp, "laptop")
        p = subprocess.run([exe, "-F", srv.config, "phone:" + remote, local], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120,
                           env=srv.env({"XDG_STATE_HOME": os.path.join(self.tmp, "state")}))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"new DCIM/IMG_1.jpg", p.stdout)
        with open(os.path.join(local, "DCIM/IMG_1.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"jpeg bytes")

    def test_every_public_call_links_from_installed_pkgconfig(self):
        # Not only what minipull uses: a program taking every header's calls (backup's too,
        # which need libarchive and libzstd) links with `pkg-config --libs phsync` alone.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(self.stage, self.libdir, "pkgconfig"))
        env.pop("PKG_CONFIG_LIBDIR", None)
        flags = run(["pkg-config", "--cflags", "--libs", "phsync"], env=env).split()
        calls = set()
        for h in os.listdir(os.path.join(self.stage, "include", "phsync")):
            with open(os.path.join(self.stage, "include", "phsync", h)) as f:
                calls.update(re.findall(r"^[a-z][\w *]*?\b(phsync_\w+)\(", f.read(), re.M))
        self.assertIn("phsync_backup", calls)
        self.assertIn("phsync_pair", calls)
        src = os.path.join(self.tmp, "allcalls.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n")
            for h in sorted(os.listdir(os.path.join(self.stage, "include", "phsync"))):
                f.write("#include <phsync/%s>\n" % h)
            f.write("int main(void)\n{\n\tvoid (*const fns[])(void) = {\n")
            for c in sorted(calls):
                f.write("\t\t(void (*)(void))%s,\n" % c)
            f.write("\t};\n\tprintf(\"%zu\\n\", sizeof(fns) / sizeof(fns[0]));\n"
                    "\treturn fns[0] == NULL;\n}\n")
        exe = os.path.join(self.tmp, "allcalls")
        extra = []
        if (cache_value("PHSYNC_SANITIZE") or "").upper() in ("ON", "1", "TRUE", "YES"):
            extra = ["-fsanitize=address,undefined"]
        run(["cc", "-std=c11", "-Wall", "-Werror", "-Wno-cast-function-type", src, "-o", exe] + flags + extra,
            env=env)
        out = subprocess.run([exe], stdout=subprocess.PIPE, env=sanitizer_env()).stdout.decode()
        self.assertEqual(out.strip(), str(len(calls)))

    def test_deb_depends_on_debian_library_packages(self):
        if shutil.which("dpkg-deb") is None or shutil.which("dpkg-shlibdeps") is None:
            self.skipTest("no dpkg-deb/dpkg-shlibdeps (not a Debian system)")
        out = os.path.join(self.tmp, "deb")
        os.makedirs(out)
        run(["cpack", "-G", "DEB", "--config", os.path.join(build_dir(), "CPackConfig.cmake"), "-B", out],
            cwd=out)
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, os.listdir(out))
        deb = os.path.join(out, debs[0])
        depends = run(["dpkg-deb", "-f", deb, "Depends"])
        for pkg in ("libssh-4", "libsqlite3-0", "libxxhash0", "libutf8proc2", "libc6", "libarchive13",
                    "libzstd1", "libuv1", "libinih1"):
            self.assertRegex(depends, r"(^|, )%s( |,|$)" % re.escape(pkg), depends)
        files = run(["dpkg-deb", "-c", deb])
        for rel in ["/bin/phsync", "/include/phsync/phsync.h", "/pkgconfig/phsync.pc", "/libphsync.a",
                    "/share/bash-completion/completions/phsync", "/share/fish/vendor_completions.d/phsync.fish",
                    "/_phsync", "/usr/lib/systemd/user/phsync.service", "/share/doc/phsync/copyright",
                    "/share/doc/phsync/LICENSE", "/share/doc/phsync/changelog.gz"] + ["/" + m for m in man_pages()]:
            self.assertIn(rel, files)
        self.assertNotIn("/share/systemd/user/", files)   # /usr's user units are in lib/
        self.assertNotIn("launchd", files)
        with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE) as p:
            with tarfile.open(fileobj=p.stdout, mode="r|") as t:
                for m in t:
                    if m.name.endswith("phsync.service"):
                        unit = t.extractfile(m).read().decode()
        self.assertIn("ExecStart=/usr/bin/phsync daemon", unit)
        self.assertIn("in step over SSH\n phsync copies", run(["dpkg-deb", "-f", deb, "Description"]))
        # Debian's own checker: no error (stripped, gzip'd pages, copyright, changelog, a
        # description and a maintainer; the phone helpers' static, other-CPU binaries are
        # declared in the package's lintian overrides).
        p = subprocess.run(["lintian", "--allow-root", deb], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        tags = p.stdout.decode(errors="replace")
        self.assertEqual([l for l in tags.splitlines() if l.startswith("E:")], [], tags)


if __name__ == "__main__":
    unittest.main()
