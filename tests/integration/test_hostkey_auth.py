# SPDX-License-Identifier: ISC
"""Host key verification and authentication.

HostKeyTest  a changed host key is refused with exit 4, a message naming the host and the
             server key's SHA256 fingerprint, nothing written on either side and known_hosts
             untouched (also with accept-new, and on push); an unknown key is refused without
             a terminal (exit 4; with `StrictHostKeyChecking yes`, with the default "ask", and
             with no known_hosts file at all); `accept-new` accepts it, adds exactly one line
             (creating the file if needed) and the next run recognises it.
TerminalPromptTest  on a terminal an unknown key is asked about, showing its SHA256
             fingerprint: "yes" accepts it (known_hosts gains it, the pull runs), "no" refuses
             it (exit 4, nothing written); a changed key is refused without asking.
AuthTest     a key the server does not accept -> exit 3; a missing key file -> exit 3; no
             password prompt without a terminal (the run ends, it does not hang); a closed port
             and an unresolvable host -> exit 3; the agent's key is used when the config names
             no identity file.
"""

import os
import re
import subprocess
import unittest

from harness import SyncTestCase, free_port, sample_tree, start_ssh_agent, tree, write_file
from ptyrun import run_on_pty

T0 = 1700000000


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


class HostKeyTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)
        self.remote_before = tree(self.remote)

    def assertNothingWritten(self):
        self.assertFalse(os.path.lexists(self.local), "LOCALDIR created although the host was refused")
        after = tree(self.remote)
        self.assertEqual(sorted(after), sorted(self.remote_before))
        self.assertOutsideUntouched()

    def test_changed_host_key_refused(self):
        cfg = self.srv.write_config(known_hosts="wrong")
        kh = self.srv.known_hosts_of(cfg)
        kh_before = read(kh)
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertIn(self.srv.host_fingerprint, r.err, "message must show the server's SHA256 fingerprint")
        self.assertTrue("127.0.0.1" in r.err or "phone" in r.err, "message must name the host")
        self.assertEqual(read(kh), kh_before, "known_hosts changed")
        self.assertNothingWritten()

    def test_changed_host_key_refused_on_push(self):
        cfg = self.srv.write_config(known_hosts="wrong")
        os.makedirs(self.local)
        write_file(os.path.join(self.local, "new.jpg"), b"n", mtime=T0)
        r = self.push(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertEqual(sorted(tree(self.remote)), sorted(self.remote_before), "server written")

    def test_changed_host_key_refused_even_with_accept_new(self):
        cfg = self.srv.write_config(known_hosts="wrong", strict="accept-new")
        kh = self.srv.known_hosts_of(cfg)
        kh_before = read(kh)
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertEqual(read(kh), kh_before)
        self.assertNothingWritten()

    def test_unknown_host_refused_without_terminal(self):
        for label, kw in [("strict yes", dict(known_hosts="none", strict="yes")),
                          ("default (ask)", dict(known_hosts="none", strict=None)),
                          ("no known_hosts file", dict(known_hosts="missing", strict=None))]:
            with self.subTest(label):
                cfg = self.srv.write_config(**kw)
                kh = self.srv.known_hosts_of(cfg)
                r = self.pull(config=cfg, timeout=60)
                self.assertEqual(r.code, 4, r)
                self.assertNotEqual(r.err.strip(), "", "no message for a refused unknown host")
                self.assertNotIn(self.srv.host_pub.split()[1], read(kh) or "", "key added without consent")
                self.assertNothingWritten()

    def test_accept_new_adds_key_once(self):
        cfg = self.srv.write_config(known_hosts="none", strict="accept-new")
        kh = self.srv.known_hosts_of(cfg)
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)
        lines = [l for l in read(kh).splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(self.srv.host_pub.split()[1], lines[0])
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len([l for l in read(kh).splitlines() if l.strip()]), 1, "key added twice")
        # The line is usable by OpenSSH itself.
        p = subprocess.run(["ssh", "-F", cfg, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "phone", "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_accept_new_creates_missing_known_hosts(self):
        cfg = self.srv.write_config(known_hosts="missing", strict="accept-new")
        kh = self.srv.known_hosts_of(cfg)
        self.assertFalse(os.path.exists(kh))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertIn(self.srv.host_pub.split()[1], read(kh) or "")


class TerminalPromptTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)

    def run_on_tty(self, cfg, answer, timeout=60):
        """Runs a pull with a pty as controlling terminal and stdin/stdout/stderr; once the
        server key's fingerprint has been shown, types `answer` (None: never types anything;
        typed ahead of the question, it waits in the terminal until the question reads it).
        Returns (exit code, all terminal output, whether it typed); a run still going after
        `timeout` seconds is killed (exit -9)."""
        argv = self.srv.argv(["pull", "-F", cfg, "phone:" + self.remote, self.local])
        env = self.srv.env()
        steps = [] if answer is None else \
            [(re.escape(self.srv.host_fingerprint.encode()), answer + b"\n")]
        r = run_on_pty(argv, env, steps, timeout=timeout, cwd=self.srv.home)
        code, text, answered = r.code, r.text, len(r.matches) == 1
        return code, text, answered

    def test_unknown_key_yes_on_terminal(self):
        cfg = self.srv.write_config(known_hosts="none", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        code, out, answered = self.run_on_tty(cfg, b"yes")
        self.assertTrue(answered, "no prompt showing the SHA256 fingerprint:\n" + out)
        self.assertEqual(code, 0, out)
        self.assertIn(self.srv.host_pub.split()[1], read(kh) or "")
        self.assertTreesEqual(self.remote, self.local)

    def test_unknown_key_no_on_terminal(self):
        cfg = self.srv.write_config(known_hosts="none", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        code, out, answered = self.run_on_tty(cfg, b"no")
        self.assertTrue(answered, "no prompt showing the SHA256 fingerprint:\n" + out)
        self.assertEqual(code, 4, out)
        self.assertNotIn(self.srv.host_pub.split()[1], read(kh) or "")
        self.assertFalse(os.path.lexists(self.local))

    def assertNotAsked(self, out):
        for q in ("yes/no", "continue connecting", "can't be established"):
            self.assertNotIn(q, out, "a changed host key was asked about on the terminal:\n" + out)

    def test_changed_key_not_asked_on_terminal(self):
        cfg = self.srv.write_config(known_hosts="wrong", strict=None)
        kh = self.srv.known_hosts_of(cfg)
        before = read(kh)
        # Nobody types anything: a program that asks would wait for the answer until it is
        # killed (exit -9); the changed key must be refused on its own, with no question shown.
        code, out, answered = self.run_on_tty(cfg, None, timeout=60)
        self.assertFalse(answered)
        self.assertEqual(code, 4, "a changed key must end the run (exit 4) without asking:\n" + out)
        self.assertIn("MISMATCH", out)
        self.assertNotAsked(out)
        self.assertFalse(os.path.lexists(self.local))
        # "yes" typed anyway (once the fingerprint shows) changes nothing either.
        code, out, answered = self.run_on_tty(cfg, b"yes", timeout=60)
        self.assertEqual(code, 4, out)
        self.assertNotAsked(out)
        self.assertFalse(os.path.lexists(self.local))
        self.assertEqual(read(kh), before, "known_hosts changed")


class AuthTest(SyncTestCase):

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)

    def _refused(self, cfg, code=3, max_s=60):
        # A bound, not a measurement: a refused login must end on its own well before it.
        try:
            r = self.pull(config=cfg, timeout=max_s)
        except subprocess.TimeoutExpired:
            self.fail("a refused login did not end within %d s" % max_s)
        self.assertEqual(r.code, code, r)
        self.assertNotEqual(r.err.strip(), "", "no error message")
        self.assertFalse(os.path.lexists(self.local), "LOCALDIR created although nothing could be pulled")
        return r

    def test_wrong_user_key(self):
        self._refused(self.srv.write_config(identity="wrong"))

    def test_missing_key_file(self):
        self._refused(self.srv.write_config(identity="none"))

    def test_closed_port(self):
        self._refused(self.srv.write_config(port=free_port()))

    def test_unresolvable_host(self):
        self._refused(self.srv.write_config(hostname="no-such-host.invalid", known_hosts="none"), max_s=120)

    def test_agent_key_used(self):
        sock, _ = start_ssh_agent(self)
        env = dict(os.environ, SSH_AUTH_SOCK=sock)
        subprocess.run(["ssh-add", "-q", self.srv.user_key], env=env, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        cfg = self.srv.write_config(identity="agent")
        r = self.srv.run(["pull", "-F", cfg, "phone:" + self.remote, self.local],
                         env={"SSH_AUTH_SOCK": sock}, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)
        # ... and without the agent the same config cannot log in.
        r = self.srv.run(["pull", "-F", cfg, "phone:" + self.remote, self.local + "2"], timeout=60)
        self.assertEqual(r.code, 3, r)


if __name__ == "__main__":
    unittest.main()
