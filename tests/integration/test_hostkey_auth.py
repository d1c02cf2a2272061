# SPDX-License-Identifier: ISC
"""Host key verification and authentication.

HostKeyTest  a changed host key is refused with exit 4, a message naming the host and the
             server key's SHA256 fingerprint, nothing written on either side and known_hosts
             untouched (also with accept-new, and on push); an unknown key is refused without
             a terminal (exit 4; with `StrictHostKeyChecking yes`, with the default "ask", and
             with no known_hosts file at all); `accept-new` accepts it, adds exactly one line
             (creating the file if needed) and the next run recognises it.
HostKeyAliasTest  HostKeyAlias as ssh reads it (and checked against ssh on the same files): a
             key under the alias is accepted at an address known_hosts does not name (also
             hashed); another key under the alias is refused (exit 4) though the address's entry
             holds the right one; an address entry alone is unknown; accept-new records the alias,
             never the address, after a last line without its newline; an alias that cannot name
             an entry (a comma) is refused.
RevokedKeyTest  @revoked as ssh reads it (checked against ssh): a key revoked for a pattern the
             server's name matches is refused (exit 4, "REVOKED", nothing written) beside an
             accepting line, with accept-new, and under a HostKeyAlias; one revoked for another
             name, or another key revoked, is no matter.
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


class HostKeyAliasTest(SyncTestCase):
    """HostKeyAlias as ssh reads it: the key is looked up and recorded under the alias, never
    under the address; each case is checked against OpenSSH's own client on the same files."""

    ALIAS = "myphone"

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)

    def config(self, lines, strict="yes", alias=ALIAS):
        cfg = self.srv.write_config(known_hosts="none", strict=strict,
                                    extra=["HostKeyAlias %s" % alias])
        kh = self.srv.known_hosts_of(cfg)
        with open(kh, "w") as f:
            f.write("".join(l + "\n" for l in lines))
        return cfg, kh

    def ssh_ok(self, cfg):
        p = subprocess.run(["ssh", "-F", cfg, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "phone", "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return p.returncode == 0

    def addr(self):
        return "[127.0.0.1]:%d" % self.srv.port

    def test_key_under_alias_accepted(self):
        # Only the alias names the key: the address has no entry (a phone at a new address).
        cfg, kh = self.config(["# a comment", "@revoked * " + self.srv.wrong_host_pub,
                               "other " + self.srv.wrong_host_pub, self.ALIAS + " " + self.srv.host_pub])
        self.assertTrue(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)
        self.assertEqual(len(read(kh).splitlines()), 4, "known_hosts changed")

    def test_hashed_alias_entry_accepted(self):
        cfg, kh = self.config([self.ALIAS + " " + self.srv.host_pub])
        subprocess.run(["ssh-keygen", "-H", "-f", kh], check=True, capture_output=True)
        self.assertNotIn(self.ALIAS, read(kh))
        self.assertTrue(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)

    def test_other_key_under_alias_refused(self):
        # The address's entry holds the right key, the alias's another: ssh goes by the alias.
        cfg, kh = self.config([self.addr() + " " + self.srv.host_pub,
                               self.ALIAS + " " + self.srv.wrong_host_pub])
        before = read(kh)
        self.assertFalse(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertIn("MISMATCH", r.err)
        self.assertIn("ssh-keygen -R %s" % self.ALIAS, r.err)
        self.assertFalse(os.path.lexists(self.local))
        self.assertEqual(read(kh), before)

    def test_address_entry_alone_is_unknown(self):
        cfg, kh = self.config([self.addr() + " " + self.srv.host_pub])
        self.assertFalse(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertIn("unknown host key", r.err)
        self.assertFalse(os.path.lexists(self.local))

    def test_accept_new_records_the_alias(self):
        cfg, kh = self.config(["other " + self.srv.wrong_host_pub.strip()], strict="accept-new")
        # A last line without its newline is not run into.
        with open(kh, "w") as f:
            f.write("other " + self.srv.wrong_host_pub.strip())
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        lines = read(kh).splitlines()
        self.assertEqual(len(lines), 2, lines)
        self.assertEqual(lines[1].split()[:2], [self.ALIAS, self.srv.host_pub.split()[0]])
        self.assertEqual(lines[1].split()[2], self.srv.host_pub.split()[1])
        self.assertNotIn("127.0.0.1", read(kh))
        self.assertTrue(self.ssh_ok(cfg))
        cfg2, _ = self.config(lines, strict="yes")
        r = self.pull(config=cfg2, timeout=60)
        self.assertEqual(r.code, 0, r)

    def test_alias_that_cannot_name_an_entry(self):
        cfg, kh = self.config([self.ALIAS + " " + self.srv.host_pub], strict="accept-new",
                              alias="a,b")
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertIn("HostKeyAlias 'a,b'", r.err)
        self.assertFalse(os.path.lexists(self.local))
        self.assertEqual(len(read(kh).splitlines()), 1)


class RevokedKeyTest(SyncTestCase):
    """known_hosts' @revoked lines, which libssh skips, as ssh reads them: a key revoked for a
    pattern the server's name matches is refused (exit 4) beside a line that accepts it, with
    accept-new, and under a HostKeyAlias; one revoked for another name is no matter. Each case
    is checked against ssh on the same files."""

    def setUp(self):
        super().setUp()
        sample_tree(self.remote)

    def config(self, lines, strict="yes", extra=()):
        cfg = self.srv.write_config(known_hosts="none", strict=strict, extra=list(extra))
        kh = self.srv.known_hosts_of(cfg)
        with open(kh, "w") as f:
            f.write("".join(l + "\n" for l in lines))
        return cfg, kh

    def ssh_ok(self, cfg):
        p = subprocess.run(["ssh", "-F", cfg, "-o", "BatchMode=yes", "phone", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return p.returncode == 0

    def refused(self, cfg, kh):
        before = read(kh)
        self.assertFalse(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 4, r)
        self.assertIn("REVOKED", r.err)
        self.assertIn(self.srv.host_fingerprint, r.err)
        self.assertFalse(os.path.lexists(self.local))
        self.assertEqual(read(kh), before)

    def addr(self):
        return "[127.0.0.1]:%d" % self.srv.port

    def test_revoked_beside_an_accepting_line(self):
        self.refused(*self.config([self.addr() + " " + self.srv.host_pub,
                                   "@revoked * " + self.srv.host_pub]))

    def test_revoked_is_never_accepted_new(self):
        self.refused(*self.config(["@revoked 127.0.0.1,%s %s" % (self.addr(), self.srv.host_pub)],
                                  strict="accept-new"))

    def test_revoked_under_the_alias(self):
        self.refused(*self.config(["myphone " + self.srv.host_pub, "@revoked myphone " + self.srv.host_pub],
                                  extra=["HostKeyAlias myphone"]))

    def test_revoked_for_another_name_or_key_is_no_matter(self):
        cfg, kh = self.config(["@revoked other.host " + self.srv.host_pub,
                               "@revoked * " + self.srv.wrong_host_pub,
                               self.addr() + " " + self.srv.host_pub])
        self.assertTrue(self.ssh_ok(cfg))
        r = self.pull(config=cfg, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)


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
