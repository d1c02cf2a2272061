#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Runs test_ssh_loop (test_ssh_loop.exe under Wine, or the native program)
against a real OpenSSH sshd on 127.0.0.1.

    python3 ssh_loop.py [EMULATOR...] TEST_PROGRAM

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


def main(argv):
    if len(argv) < 1:
        sys.stderr.write(__doc__)
        return 2
    with harness.SshServer() as srv:
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
        code = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL).returncode
        if code != 0:
            sys.stderr.write("ssh_loop: %s exited %d; the server's log:\n%s\n"
                             % (argv[-1], code, srv.log_text()[-4000:]))
        return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
