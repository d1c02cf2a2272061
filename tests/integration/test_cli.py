# SPDX-License-Identifier: ISC
"""The command line as a person meets it (issue 6): options before or after the paths, short
usage errors, a missing -F file named as such, a ProxyJump that would inject an option refused
before anything runs, the summary counting what is in place, and Ctrl-C at a prompt.  DocsTest and CompletionTest (issue 11): every command's --help, its
man page, the README and the bash, zsh and fish completions name the same options, all read
from the built program and the files (tests/lib/clidocs.py)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import clidocs
from harness import REPO, SyncTestCase, sample_tree, tree, write_file
from ptyrun import run_on_pty

T0 = 1700000000


class CliTest(SyncTestCase):

    def test_options_after_the_paths(self):
        sample_tree(self.remote)
        write_file(os.path.join(self.remote, "clip.mp4"), b"video", mtime=T0)
        r = self.srv.run(["pull", "phone:" + self.remote, self.local, "-F", self.srv.config,
                          "--exclude", "*.mp4", "--json"])
        self.assertEqual(r.code, 0, r)
        self.assertFalse(os.path.exists(os.path.join(self.local, "clip.mp4")))
        self.assertTrue(os.path.isfile(os.path.join(self.local, "top.txt")))
        self.assertEqual(r.json()[-1]["event"], "summary")
        # "--" ends the options: what follows is a path even if it looks like one.
        r = self.srv.run(["pull", "-F", self.srv.config, "-n", "--", "phone:" + self.remote,
                          "--weird-dir"])
        self.assertEqual(r.code, 0, r)

    def test_usage_errors_are_short(self):
        for args in (["pull", "phone:/x"], ["pull", "a", "b", "c"], ["push"],
                     ["pull", "--no-such-option", "phone:/x", "y"], ["frobnicate"],
                     ["pull", "notremote", "dir"], ["delta", "patch", "a"]):
            with self.subTest(args=args):
                r = self.srv.run(args)
                self.assertEqual(r.code, 2, r)
                lines = r.err.strip().splitlines()
                self.assertLessEqual(len(lines), 2, r.err)
                self.assertIn("--help", lines[-1], r.err)
                self.assertTrue(all(l.startswith(("phsync", "Try")) for l in lines), r.err)

    def test_missing_config_file_is_named(self):
        r = self.srv.run(["pull", "-F", "/nonexistent/ssh_config", "phone:" + self.remote,
                          self.local])
        self.assertEqual(r.code, 2, r)
        self.assertIn("/nonexistent/ssh_config", r.err)
        self.assertIn("No such file", r.err)
        self.assertFalse(os.path.exists(self.local))

    def test_proxyjump_option_injection_refused(self):
        marker = os.path.join(self.tmp, "pwned")
        for jump in ("-oProxyCommand=touch%%20%s" % marker, "ok,-oLocalCommand=x",
                     "a'b", "a;touch %s" % marker, "host$(id)"):
            with self.subTest(jump=jump):
                cfg = self.srv.write_config(extra=["ProxyJump %s" % jump])
                for with_f in (True, False):
                    args = ["pull", "phone:" + self.remote, self.local]
                    if with_f:
                        args[1:1] = ["-F", cfg]
                    else:
                        os.makedirs(os.path.join(self.srv.home, ".ssh"), exist_ok=True)
                        with open(cfg) as src, open(os.path.join(self.srv.home, ".ssh", "config"), "w") as dst:
                            dst.write(src.read())
                    r = self.srv.run(args)
                    self.assertEqual(r.code, 2, r)
                    self.assertIn("ProxyJump", r.err)
                    self.assertFalse(os.path.exists(marker))
        os.unlink(os.path.join(self.srv.home, ".ssh", "config"))

    def test_summary_counts_what_is_in_place(self):
        sizes = {"a.jpg": 1000, "b.jpg": 250_000, "c/d.jpg": 3}
        for n, size in sizes.items():
            write_file(os.path.join(self.remote, n), os.urandom(size), mtime=T0)
        r = self.pull("--json", expect=0)
        s = r.json()[-1]
        self.assertEqual(s["bytes_committed"], sum(sizes.values()))
        self.assertEqual(s["files_done"], 3)
        r = self.pull("-v", expect=0)
        self.assertIn("0 of 3 files copied (0.0 MB)", r.err)

    def test_gallery_leftovers_skipped_by_default(self):
        names = ["DCIM/Camera/IMG_1.jpg", "DCIM/.thumbnails/1001.jpg",
                 "DCIM/.thumbnails/.thumbdata4--1967290299", "DCIM/Camera/.trashed-1700000000-IMG_0.jpg",
                 "DCIM/Camera/.pending-1700000100-VID_2.mp4", "Pictures/.thumbdata3-1763508120"]
        for n in names:
            write_file(os.path.join(self.remote, n), n.encode(), mtime=T0)
        self.pull(expect=0)
        got = sorted(k for k, e in tree(self.local).items() if e.type == "f")
        self.assertEqual(got, ["DCIM/Camera/IMG_1.jpg"])
        r = self.pull("--include", ".trashed-*", "--json", expect=0)
        self.assertTrue(os.path.isfile(os.path.join(self.local, "DCIM/Camera/.trashed-1700000000-IMG_0.jpg")))
        self.pull("--no-default-excludes", expect=0)
        got = sorted(k for k, e in tree(self.local).items() if e.type == "f")
        self.assertEqual(got, sorted(names))
        # The same rule on push: the laptop's copy of a phone's leftovers stays home.
        dst = os.path.join(self.tmp, "other")
        os.makedirs(dst)
        self.push(src=self.local, dst=dst, expect=0)
        got = sorted(k for k, e in tree(dst).items() if e.type == "f")
        self.assertEqual(got, ["DCIM/Camera/IMG_1.jpg"])

    def test_min_age_leaves_files_being_written(self):
        write_file(os.path.join(self.remote, "IMG_old.jpg"), b"old photo", mtime=T0)
        write_file(os.path.join(self.remote, "VID_recording.mp4"), b"growing", mtime=None)  # now
        r = self.pull("--min-age", "3600", "--json", expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["IMG_old.jpg"])
        skips = [e for e in r.json() if e.get("event") == "skip"]
        self.assertEqual([(e["path"], e["reason"]) for e in skips], [("VID_recording.mp4", "too new")])
        self.pull(expect=0)
        self.assertEqual(sorted(os.listdir(self.local)), ["IMG_old.jpg", "VID_recording.mp4"])
        r = self.srv.run(["pull", "--min-age", "x", "phone:" + self.remote, self.local])
        self.assertEqual(r.code, 2, r)

    def test_modify_window(self):
        # A FAT phone keeps even seconds: the copy made earlier is 1 s off.
        write_file(os.path.join(self.remote, "IMG.jpg"), b"photo", mtime=T0 + 1)
        write_file(os.path.join(self.local, "IMG.jpg"), b"photo", mtime=T0)
        # Without the window the 1 s is a difference (a dry run: nothing recorded)...
        r = self.pull("-n", "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 1, r)
        # ...with it, the same file; and once recorded as in sync, it stays so.
        r = self.pull("--modify-window", "2", "--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        r = self.pull("--json", expect=0)
        self.assertEqual(r.json()[-1]["files_done"], 0, r)
        self.assertEqual(os.stat(os.path.join(self.local, "IMG.jpg")).st_mtime, T0)

    def test_ctrl_c_at_a_prompt(self):
        # An unknown host key is asked about on the terminal; Ctrl-C there ends the run as
        # interrupted (exit 6), nothing recorded, nothing made.
        cfg = self.srv.write_config(known_hosts="none", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        before = open(kh).read()
        argv = self.srv.argv(["pull", "-F", cfg, "phone:" + self.remote, self.local])
        r = run_on_pty(argv, self.srv.env(), [
            (rb"\(yes/no\)", lambda pid, fd, m: os.kill(pid, signal.SIGINT))], cwd=self.srv.home)
        code, text, signalled = r.code, r.text, len(r.matches) == 1
        self.assertTrue(signalled, "no host key question was shown:\n" + text)
        self.assertEqual(code, 6, text)
        self.assertIn("interrupted", text)
        self.assertEqual(open(kh).read(), before, "known_hosts changed")
        self.assertFalse(os.path.exists(self.local))


class DocsTest(unittest.TestCase):
    """--help, man pages and README agree; nothing is missing on either side.  Options of a
    branch not merged yet (clidocs.PENDING) are excused only while phsync refuses them."""

    def test_every_command_has_a_man_page_and_help(self):
        cmds = clidocs.commands()
        for cmd in ("pull", "push", "status", "daemon", "pair", "doctor", "backup", "restore",
                    "verify", "serve", "delta"):
            self.assertIn(cmd, cmds)
        for cmd in cmds:
            with self.subTest(cmd=cmd):
                self.assertTrue(os.path.isfile(os.path.join(clidocs.DOCS, "phsync-%s.1" % cmd)),
                                "no docs/phsync-%s.1" % cmd)
                known, text = clidocs.command_help(cmd)
                if not known:
                    self.assertIn(cmd, clidocs.PENDING, "phsync has no command %r: %s" % (cmd, text))
                    self.assertIsNone(clidocs.PENDING[cmd])
                    continue
                self.assertIn("usage: phsync %s" % cmd, text)
                # The page is well-formed roff: man renders it without a warning.
                p = subprocess.run(["man", "--warnings", "-l", os.path.join(clidocs.DOCS, "phsync-%s.1" % cmd)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr.decode(), "")
                self.assertIn("PHSYNC-%s(1)" % cmd.upper(), p.stdout.decode())
        # phsync(1) points to every page, and every page back to it.
        overview = clidocs.man_text("phsync.1")
        for cmd in cmds:
            self.assertTrue(".BR phsync\\-%s (1)" % cmd in overview, "phsync(1) does not name phsync-%s(1)" % cmd)
            self.assertIn(".BR phsync (1)", clidocs.man_text("phsync-%s.1" % cmd))

    def test_help_and_man_page_name_the_same_options(self):
        for cmd in clidocs.commands():
            known, text = clidocs.command_help(cmd)
            if not known:
                continue
            with self.subTest(cmd=cmd):
                helped = clidocs.options(text)
                man = clidocs.man_options(cmd)
                self.assertGreaterEqual(len(helped), 2, text)
                self.assertEqual(sorted(helped - man), [], "in phsync %s --help, not in phsync-%s(1)" % (cmd, cmd))
                self.assertEqual(clidocs.unexcused(cmd, man - helped), [],
                                 "in phsync-%s(1), not in phsync %s --help" % (cmd, cmd))

    def test_help_and_man_page_give_the_same_defaults(self):
        # Not only the names: a default --help states ("default 60") is the page's too.
        checked = 0
        for cmd in clidocs.commands():
            known, text = clidocs.command_help(cmd)
            if not known:
                continue
            man = clidocs.man_entries("phsync-%s.1" % cmd)
            for opt, desc in clidocs.help_entries(text).items():
                for default in re.findall(r"default:? ([0-9]+)\b", desc):
                    with self.subTest(cmd=cmd, opt=opt):
                        self.assertIn(opt, man)
                        self.assertRegex(man[opt], r"default:? %s\b" % default,
                                         "phsync %s --help says %s defaults to %s" % (cmd, opt, default))
                        checked += 1
        self.assertGreaterEqual(checked, 6)

    def test_pull_and_push_pages_have_the_helper_options(self):
        for cmd in ("pull", "push"):
            man = clidocs.man_options(cmd)
            self.assertIn("--helper", man)
            self.assertIn("--helper-path", man)
            text = clidocs.man_sections("phsync-%s.1" % cmd, ("OPTIONS",))
            for word in ("auto", "never", "always", "falls back to plain SFTP quietly", "PATH"):
                self.assertIn(word, text)

    def test_overview_help_and_phsync_1(self):
        helped = clidocs.options(clidocs.overview_help(), short=False)
        man = clidocs.options(clidocs.roff_plain(clidocs.man_text("phsync.1")), short=False)
        self.assertGreater(len(helped), 20)
        self.assertEqual(sorted(helped - man), [], "in --help, not in phsync(1)")
        self.assertEqual(clidocs.unexcused("", man - helped), [], "in phsync(1), not in --help")

    def test_readme_names_every_option(self):
        with open(os.path.join(REPO, "README.md")) as f:
            text = f.read()
        readme = clidocs.options(text, short=False)
        every = clidocs.options(clidocs.overview_help(), short=False)
        for cmd in clidocs.commands():
            known, help_text = clidocs.command_help(cmd)
            if known:
                missing = sorted(clidocs.options(help_text, short=False) - readme)
                self.assertEqual(missing, [], "in phsync %s --help, not in README.md" % cmd)
                every |= clidocs.options(help_text, short=False)
        # The README's list of options (the paragraph "Options (before or after the paths...")
        # names none that phsync does not have.
        m = re.search(r"^Options \(before or after the paths.*?(?=\n\n)", text, re.M | re.S)
        self.assertIsNotNone(m, "README.md has no list of options")
        listed = clidocs.options(m.group(0), short=False)
        self.assertGreater(len(listed), 20)
        self.assertEqual(clidocs.unexcused("pull", listed - every), [], "in README.md's option list, in no --help")

    def test_phsync_conf_5_names_every_setting(self):
        # The settings the daemon accepts are conf.c's table; the page lists each as a term.
        with open(os.path.join(REPO, "src", "watch", "conf.c")) as f:
            src = f.read()
        table = re.search(r"keys\[\] = \{(.*?)NULL", src, re.S).group(1)
        keys = set(re.findall(r'"([a-z-]+)"', table))
        self.assertGreater(len(keys), 15)
        page = clidocs.roff_plain(clidocs.man_text("phsync.conf.5"))
        parts = re.split(r"^\.SH ", page, flags=re.M)
        settings = "".join(p for p in parts if p.startswith("SETTINGS"))
        terms = set()
        for m in re.finditer(r"^\.TP\n(.*)$", settings, re.M):
            terms.update(re.findall(r"(?<![\w-])([a-z][a-z-]*[a-z])(?= *(?:\\f.)?\\?\"? *=|\b)", m.group(1)))
        named = {k for k in keys if re.search(r"(?m)^\.TP\n.*(?<![\w-])%s(?![\w-])" % re.escape(k), settings)}
        self.assertEqual(sorted(keys - named), [], "settings conf.c accepts, not in phsync.conf(5)")
        # And the page names no setting conf.c does not know: each '.BI key " = ...' / '.BR key'.
        documented = set()
        for m in re.finditer(r"^\.TP\n\.B[IR]? (.*)$", settings, re.M):
            line = re.sub(r'"[^"]*"', " ", m.group(1))
            documented.update(w for w in re.findall(r"[a-z][a-z-]*", line) if w not in ("pull", "push", "both", "yes", "no"))
        self.assertEqual(sorted(documented - keys), [], "in phsync.conf(5), unknown to conf.c")


class CompletionTest(unittest.TestCase):
    """The bash, zsh and fish completions are valid for their shells and offer every command
    and every option of each command's --help, and nothing else."""

    @classmethod
    def setUpClass(cls):
        cls.cmds = clidocs.commands()
        cls.helped = {}
        for cmd in cls.cmds:
            known, text = clidocs.command_help(cmd)
            cls.helped[cmd] = clidocs.options(text) if known else None
        cls.tmp = tempfile.mkdtemp(prefix="phsync-compl-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    def shell(self, argv):
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": self.tmp, "TERM": "dumb",
                                            "XDG_CONFIG_HOME": self.tmp, "XDG_DATA_HOME": self.tmp})
        self.assertEqual(p.returncode, 0, "%r: %s" % (argv, p.stderr.decode(errors="replace")))
        self.assertEqual(p.stderr.decode(errors="replace").strip(), "", argv)
        return p.stdout.decode()

    def need(self, prog):
        if shutil.which(prog) is None:
            if os.environ.get("PHSYNC_REQUIRE"):
                self.fail("%s is not installed (scripts/install-deps.sh installs it)" % prog)
            self.skipTest("%s is not installed (scripts/install-deps.sh installs it)" % prog)

    def check(self, shell, offered_of):
        """offered_of(words) -> the set a completion offers after 'phsync WORDS'."""
        top = offered_of("") | offered_of("-")
        self.assertEqual(sorted(set(self.cmds) - top), [], "%s: commands not offered" % shell)
        self.assertTrue({"--help", "--version"} <= top, top)
        for cmd in self.cmds:
            with self.subTest(shell=shell, cmd=cmd):
                got = {o for o in offered_of(cmd + " -") if o.startswith("-")}
                helped = self.helped[cmd]
                if helped is None:  # a command of a branch not merged yet: at least --help
                    self.assertIn("--help", got)
                    continue
                allowed = set(helped)
                if cmd == "status":  # status with a pair takes pull's and push's options
                    allowed |= self.helped["pull"] | self.helped["push"]
                self.assertEqual(sorted(helped - got), [], "%s: %s --help options not offered" % (shell, cmd))
                self.assertEqual(clidocs.unexcused("pull" if cmd == "status" else cmd, got - allowed), [],
                                 "%s offers for %s options --help does not have" % (shell, cmd))

    def test_bash(self):
        self.need("bash")
        f = os.path.join(clidocs.COMPLETIONS, "phsync.bash")
        self.shell(["bash", "-n", f])

        def offered(words):
            ws = ["phsync"] + words.split() + ([""] if not words.endswith("-") else [])
            script = ("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _phsync; printf '%%s\\n' \"${COMPREPLY[@]}\""
                      % (f, " ".join("'%s'" % w for w in ws), len(ws) - 1))
            return set(self.shell(["bash", "-c", script]).split())
        self.check("bash", offered)
        # --helper's values.
        self.assertEqual(set(self.shell(["bash", "-c", "source %s; COMP_WORDS=(phsync pull --helper a); "
                                         "COMP_CWORD=3; _phsync; echo ${COMPREPLY[@]}" % f]).split()),
                         {"auto", "always"})

    def test_zsh(self):
        self.need("zsh")
        f = os.path.join(clidocs.COMPLETIONS, "_phsync")
        self.shell(["zsh", "-n", f])
        # The completion function runs in a real zsh; zsh's completion builtins are replaced by
        # functions printing what they were given (the option specs and the command list).
        probe = os.path.join(self.tmp, "probe.zsh")
        with open(probe, "w") as p:
            p.write("_arguments() { print -rl -- \"$@\" }\n"
                    "_describe() { print -rl -- \"${(@P)2}\" }\n"
                    "compadd() { : }\n_files() { : }\n_hosts() { : }\n_alternative() { : }\n"
                    "source $1\n"
                    "words=(phsync ${(s: :)2} '')\nCURRENT=${#words}\n_phsync\n")

        def offered(words):
            words = words.rstrip("-").strip()
            out = self.shell(["zsh", "-f", probe, f, words])
            got = set()
            for spec in out.splitlines():
                if re.fullmatch(r"-[a-zA-Z]", spec):
                    continue  # a flag of _arguments itself (-s), not an option spec
                spec = re.sub(r"^\([^)]*\)", "", spec).lstrip("*")
                m = re.match(r"(-{1,2}[A-Za-z][\w-]*)", spec)
                if m:
                    got.add(m.group(1))
                elif re.match(r"[a-z]+:", spec):
                    got.add(spec.split(":", 1)[0])  # _describe's command:description
            return got
        self.check("zsh", offered)

    def test_fish(self):
        self.need("fish")
        f = os.path.join(clidocs.COMPLETIONS, "phsync.fish")
        self.shell(["fish", "--no-execute", f])

        def offered(words):
            line = "phsync " + words
            out = self.shell(["fish", "--no-config", "-c", "source %s; complete -C'%s'" % (f, line)])
            return {l.split("\t", 1)[0] for l in out.splitlines() if l}
        self.check("fish", offered)
        # A real query as a user types it: "phsync pu" offers pull and push, nothing else.
        out = self.shell(["fish", "--no-config", "-c", "source %s; complete -C'phsync pu'" % f])
        self.assertEqual(sorted(l.split("\t")[0] for l in out.splitlines()), ["pull", "push"])
        out = self.shell(["fish", "--no-config", "-c", "source %s; complete -C'phsync pull --helper '" % f])
        self.assertEqual(sorted(l.split("\t")[0] for l in out.splitlines()), ["always", "auto", "never"])


if __name__ == "__main__":
    unittest.main()
