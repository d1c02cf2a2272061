#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Runs test_ssh_loop or test_login_loop (the .exe under Wine, or the native
program) against a real OpenSSH sshd on 127.0.0.1.

    python3 ssh_loop.py [--password] [EMULATOR...] TEST_PROGRAM

With --password (test_pair_loop; OpenSSH run as root) the server also takes a
password login, as a fresh phone does, and the login user's home is an empty
folder; the program gets a laptop folder to pair from, and afterwards the
phone's authorized_keys must hold the key it made, once.

Starts a throwaway sshd (tests/lib/harness.py: its own host key, a user key in
authorized_keys, waiting until the server answers with its banner), fills a
folder with the files test_ssh_loop.c expects (the same bytes by the same rule:
content() here and there), writes three ssh_config files (the good
one, one with a key the server does not know, one whose known_hosts holds
another host key), runs the exe with their paths in its environment, stops the
server and exits with the exe's code. The server and the files go when it ends.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402

PASSWORD = "correct horse 42"
CRLF = b"one\r\ntwo\nthree\r\n"
FILES = [("crlf.txt", 16), ("big.bin", 300001), ("été 日本.txt", 1000), ("empty", 0)]


def content(name, size):
    """The bytes of a file, as test_ssh_loop.c's content() makes them."""
    if name == "crlf.txt":
        return CRLF[:size]
    seed = 0
    for b in name.encode("utf-8"):
        seed = (seed * 31 + b) & 0xFFFFFFFF
    return bytes((((i * 131 + seed) & 0xFFFFFFFF) >> 3) & 0xFF for i in range(size))


def pair_env(srv, env):
    """For test_pair_loop: the laptop's folder (a config naming its own known_hosts)."""
    laptop = os.path.join(srv.dir, "laptop")
    os.makedirs(laptop)
    with open(os.path.join(laptop, "config"), "w") as f:
        f.write("UserKnownHostsFile %s/known_hosts\nGlobalKnownHostsFile %s/global_known_hosts\n"
                % (laptop, laptop))
    env["PH_TEST_PAIR_DIR"] = laptop
    env["PH_TEST_SSH_PORT"] = str(srv.port)
    env["PH_TEST_SSH_USER"] = srv.user
    env["PH_TEST_SSH_PASSWORD"] = PASSWORD


def pair_check(srv):
    """After test_pair_loop: the phone's authorized_keys holds the laptop's new key once."""
    with open(os.path.join(srv.dir, "laptop", "keys", "phsync_ed25519.pub")) as f:
        pub = f.read().split()[:2]
    with open(os.path.join(srv.login_home, ".ssh", "authorized_keys")) as f:
        lines = [l.split()[:2] for l in f.read().splitlines()]
    if lines.count(pub) != 1:
        sys.stderr.write("ssh_loop: the key is in authorized_keys %d times\n" % lines.count(pub))
        return 1
    return 0


def main(argv):
    password = len(argv) > 0 and argv[0] == "--password"
    if password:
        argv = argv[1:]
    if len(argv) < 1:
        sys.stderr.write(__doc__)
        return 2
    with harness.SshServer(password=PASSWORD if password else None) as srv:
        phone = os.path.join(srv.dir, "phone")
        os.makedirs(os.path.join(phone, "sub"))
        for name, size in FILES:
            with open(os.path.join(phone, name), "wb") as f:
                f.write(content(name, size))
        env = dict(os.environ)
        env["PH_TEST_SSH_CONFIG"] = srv.config
        env["PH_TEST_SSH_CONFIG_BADKEY"] = srv.write_config(identity="wrong")
        env["PH_TEST_SSH_CONFIG_BADHOST"] = srv.write_config(known_hosts="wrong")
        env["PH_TEST_SSH_DIR"] = phone
        env.setdefault("WINEDEBUG", "-all")
        if password:
            pair_env(srv, env)
        code = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL).returncode
        if code == 0 and password:
            code = pair_check(srv)
        if code != 0:
            sys.stderr.write("ssh_loop: %s exited %d; the server's log:\n%s\n"
                             % (argv[-1], code, srv.log_text()[-4000:]))
        return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
