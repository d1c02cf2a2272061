# SPDX-License-Identifier: ISC
"""ssh_config handling beyond the basics every other test uses (Host alias, HostName, Port,
User, IdentityFile, UserKnownHostsFile, StrictHostKeyChecking).

ProxyJumpTest  `ProxyJump jump`, where `jump` is another Host in the same -F file (here the
               same sshd, reached directly): the pull goes through it and completes.
CipherTest     with no Ciphers line phsync negotiates aes128-gcm@openssh.com when the CPU has
               AES instructions (issue 2, performance); a Ciphers line in the config wins.
               Read from the server's own log (sshd at LogLevel DEBUG1).
"""

import os
import re
import unittest

from harness import SyncTestCase, sample_tree


def host_block(srv, name, extra=()):
    lines = ["Host %s" % name, "  HostName 127.0.0.1", "  Port %d" % srv.port, "  User %s" % srv.user,
             "  IdentityFile %s" % srv.user_key, "  IdentitiesOnly yes",
             "  UserKnownHostsFile %s" % srv.known_hosts, "  GlobalKnownHostsFile /dev/null",
             "  StrictHostKeyChecking yes"]
    return "\n".join(lines + ["  " + e for e in extra]) + "\n"


class ProxyJumpTest(SyncTestCase):

    def test_proxyjump_through_a_host_of_the_same_config(self):
        sample_tree(self.remote)
        cfg = os.path.join(self.tmp, "ssh_config.jump")
        with open(cfg, "w") as f:
            f.write(host_block(self.srv, "phone", ["ProxyJump jump"]) + host_block(self.srv, "jump"))
        start = len(self.srv.log_text())
        r = self.pull(config=cfg, timeout=90)
        self.assertEqual(r.code, 0, r)
        self.assertTreesEqual(self.remote, self.local)
        # Two logins: the jump host's and, through its forwarded channel, the target's.
        log = self.srv.log_text()[start:]
        self.assertGreaterEqual(len(re.findall(r"Accepted publickey", log)), 2, log[-3000:])


class CipherTest(SyncTestCase):
    server_kwargs = {"log_level": "DEBUG1"}

    def ciphers_used(self, cfg):
        start = len(self.srv.log_text())
        sample_tree(self.remote)
        r = self.pull(config=cfg, timeout=90)
        self.assertEqual(r.code, 0, r)
        return re.findall(r"kex: client->server cipher: (\S+)", self.srv.log_text()[start:])

    def test_aes_gcm_by_default(self):
        with open("/proc/cpuinfo") as f:
            has_aes = "aes" in f.read().split()
        if not has_aes:
            self.skipTest("this CPU has no AES instructions: no cipher preference to check")
        self.assertEqual(set(self.ciphers_used(self.srv.config)), {"aes128-gcm@openssh.com"})

    def test_config_cipher_wins(self):
        cfg = self.srv.write_config(extra=["Ciphers chacha20-poly1305@openssh.com"])
        self.assertEqual(set(self.ciphers_used(cfg)), {"chacha20-poly1305@openssh.com"})


if __name__ == "__main__":
    unittest.main()
