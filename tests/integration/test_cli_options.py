# SPDX-License-Identifier: ISC
"""The options commands share, parsed by one table (src/cli/opts.c, issue 23): a shared option
says the same words in every command that takes it (with that command's "Try" line), an option a
command does not take is refused by it, a missing value is a usage error (never a crash), and an
unknown letter in a bundle is named as itself whatever the command.  No server is needed: each
command line here is refused before anything connects."""

import os
import subprocess
import tempfile
import unittest

from harness import check_sanitizers, phsync_bin, sanitizer_env


def run(*args):
    """phsync ARGS in a clean HOME and state folder, with the harness's sanitizer settings (a
    sanitizer report fails the test whatever the exit code)."""
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "XDG_STATE_HOME": os.path.join(home, "state"),
               "XDG_CONFIG_HOME": os.path.join(home, "config")}
        env.update(sanitizer_env())
        argv = [phsync_bin(), *args]
        r = subprocess.run(argv, capture_output=True, timeout=60, env=env,
                           stdin=subprocess.DEVNULL, start_new_session=True)
        err = r.stderr.decode("utf-8", "replace")
        check_sanitizers(r.returncode, err, argv)
        return r.returncode, r.stdout.decode("utf-8", "replace"), err


def try_line(cmd):
    return "Try 'phsync %s--help'.\n" % (cmd + " " if cmd else "")


class SharedOptionsTest(unittest.TestCase):

    def test_timeout_says_the_same_in_every_command(self):
        # (command line, the command its "Try" line names: pull's and push's is plain --help)
        for args, cmd in ((["pull", "--timeout", "0", "h:/x", "d"], ""),
                          (["push", "--timeout=0", "d", "h:/x"], ""),
                          (["status", "--timeout", "0", "h:/x", "d"], ""),
                          (["pair", "--timeout", "0", "n", "a"], "pair"),
                          (["doctor", "--timeout", "0", "h"], "doctor"),
                          (["backup", "--timeout", "0", "h:/x", "a.tar"], "backup")):
            with self.subTest(args=args):
                code, out, err = run(*args)
                self.assertEqual(code, 2)
                self.assertEqual(out, "")
                self.assertEqual(err, "phsync: --timeout takes 1 to 86400 seconds\n" +
                                 try_line(cmd))

    def test_an_option_a_command_does_not_take_is_refused(self):
        for args, word, cmd in ((["pair", "-q", "n", "a"], "-q", "pair"),
                                (["pair", "--json", "n", "a"], "--json", "pair"),
                                (["doctor", "-n", "h"], "-n", "doctor"),
                                (["daemon", "--json"], "--json", "daemon"),
                                (["status", "--delete"], "--delete", "status"),
                                (["backup", "--watch", "h:/x", "a.tar"], "--watch", "backup"),
                                (["verify", "-V", "a.tar"], "-V", "verify")):
            with self.subTest(args=args):
                code, out, err = run(*args)
                self.assertEqual(code, 2)
                self.assertEqual(err, "phsync: unknown option or missing argument: '%s'\n%s"
                                 % (word, try_line(cmd)))

    def test_a_missing_value_is_a_usage_error(self):
        # status read past the end of argv looking for its paths (--state-dir's value).
        for args, word, cmd in ((["status", "--state-dir"], "--state-dir", "status"),
                                (["status", "h:/x", "d", "--state-dir"], "--state-dir", ""),
                                (["pull", "h:/x", "d", "--exclude"], "--exclude", ""),
                                (["pull", "-F"], "-F", ""),
                                (["pair", "--key"], "--key", "pair"),
                                (["daemon", "--config"], "--config", "daemon"),
                                (["daemon", "-c"], "-c", "daemon"),
                                (["backup", "--keep"], "--keep", "backup")):
            with self.subTest(args=args):
                code, out, err = run(*args)
                self.assertEqual(code, 2)
                self.assertEqual(err, "phsync: unknown option or missing argument: '%s'\n%s"
                                 % (word, try_line(cmd)))

    def test_an_unknown_letter_in_a_bundle_is_named(self):
        # It named the bundle, or the word before it ('pair', 'backup').
        for args, cmd in ((["pull", "-vj", "h:/x", "d"], ""), (["pair", "-jv", "n", "a"], "pair"),
                          (["pair", "-vj", "n", "a"], "pair"), (["doctor", "-jv", "h"], "doctor"),
                          (["backup", "-jv", "a", "b"], "backup"), (["daemon", "-qj"], "daemon"),
                          (["status", "-jh"], "status")):
            with self.subTest(args=args):
                code, out, err = run(*args)
                self.assertEqual(code, 2)
                self.assertEqual(err, "phsync: unknown option or missing argument: '-j'\n" +
                                 try_line(cmd))

    def test_status_of_a_pair_reads_pull_options_values(self):
        # status with a pair takes every option of pull: the value of one taking it in the
        # next word is no path (--interval was missing from status's own list of them).
        code, out, err = run("status", "--interval", "5", "h:/x", "d")
        self.assertEqual(code, 2)
        self.assertEqual(err, "phsync: --interval works with --watch\n" + try_line(""))

    def test_help_is_every_command_s_own(self):
        for cmd in ("pull", "push", "status", "pair", "doctor", "backup", "restore", "verify",
                    "daemon"):
            with self.subTest(cmd=cmd):
                code, out, err = run(cmd, "--help")
                self.assertEqual(code, 0)
                self.assertEqual(err, "")
                self.assertTrue(out.startswith("usage: phsync %s " % cmd), out[:80])
                # -h is --help too, and --help comes before any complaint about the paths
                self.assertEqual(run(cmd, "-h")[1], out)
                self.assertEqual(run(cmd, "--help", "x")[1], out)
        # status with a pair prints status's --help, not pull's
        self.assertEqual(run("status", "h:/x", "d", "--help")[1], run("status", "--help")[1])


if __name__ == "__main__":
    unittest.main()
