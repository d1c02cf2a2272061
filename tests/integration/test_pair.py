# SPDX-License-Identifier: ISC
"""phsync pair (issue 11) against a real sshd that accepts a password, like a fresh phone: the
first run shows the host key, logs in with the password typed on the terminal, makes the key,
installs it in the phone's ~/.ssh/authorized_keys (700/600, existing lines kept), checks the key
login and adds the Host block; a second run changes nothing; a wrong password or a refused host
key leaves nothing behind; a pull by the new name just works, and so does OpenSSH's ssh."""

import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

from harness import (REPO, SshServer, Unavailable, phsync_bin, sanitizer_env,
                     sample_tree, skip_or_fail, start_ssh_agent, tree, write_file)
from ptyrun import run_on_pty

PASSWORD = "correct horse 42"


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class PairTest(unittest.TestCase):
    srv = None

    @classmethod
    def setUpClass(cls):
        try:
            cls.srv = SshServer(password=PASSWORD)
            cls.addClassCleanup(cls.srv.stop)
            cls.srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))

    def setUp(self):
        # Every test starts from a fresh phone (no ~/.ssh) and an empty laptop home.
        import shutil
        self.phone_ssh = os.path.join(self.srv.login_home, ".ssh")
        shutil.rmtree(self.phone_ssh, ignore_errors=True)
        self.home = os.path.join(self.srv.dir, "pair-home-%s" % self._testMethodName)
        shutil.rmtree(self.home, ignore_errors=True)
        os.makedirs(self.home)
        self.addCleanup(shutil.rmtree, self.home, True)
        self.kh = os.path.join(self.home, "known_hosts")
        self.key = os.path.join(self.home, "keys", "phsync_ed25519")
        # The laptop's config: the user's own lines, which pairing must keep as they are.
        self.cfg = os.path.join(self.home, "config")
        self.cfg_before = ("# my settings\n"
                           "UserKnownHostsFile %s\n"
                           "GlobalKnownHostsFile /dev/null\n"
                           "\n"
                           "Host laptop-nas\n"
                           "  HostName nas.example\n"
                           "  Port 2200" % self.kh)  # no newline at the end, on purpose
        write_file(self.cfg, self.cfg_before)

    def pair(self, answers, name="phone2", address=None, extra=(), timeout=60, key=True, env=None,
             config=True):
        """Runs phsync pair on a pty; answers is a list of (text seen, what to type): each is
        typed once, in order, when its text appears.  Returns (code, terminal output)."""
        address = address or "127.0.0.1:%d" % self.srv.port
        argv = ([phsync_bin(), "pair"] + (["-F", self.cfg] if config else []) +
                (["--key", self.key] if key else []) + list(extra) + [name, address])
        env = self.srv.env(env)
        env["HOME"] = self.home
        steps = [(re.escape(seen.encode()), typed.encode() + b"\n") for seen, typed in answers]
        r = run_on_pty(argv, env, steps, timeout=timeout, cwd=self.home)
        return r.code, r.text

    def snapshot(self):
        """Every file pairing may touch, laptop and phone, with its bytes and mode."""
        paths = [self.cfg, self.kh, self.key, self.key + ".pub",
                 os.path.join(self.phone_ssh, "authorized_keys")]
        snap = {}
        for p in paths:
            try:
                st = os.lstat(p)
                snap[p] = (read(p), stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_ino)
            except FileNotFoundError:
                snap[p] = None
        snap["phone .ssh"] = sorted(os.listdir(self.phone_ssh)) if os.path.isdir(self.phone_ssh) else None
        return snap

    def first_pair(self):
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)])
        self.assertEqual(code, 0, out)
        return out

    def test_first_pair_installs_key_and_host_block(self):
        # The phone already trusts another key: that line must stay.
        os.makedirs(self.phone_ssh, mode=0o755)
        ak = os.path.join(self.phone_ssh, "authorized_keys")
        write_file(ak, self.srv.wrong_host_pub + " someone-else")  # no final newline
        os.chmod(ak, 0o644)
        out = self.first_pair()
        self.assertIn(self.srv.host_fingerprint, out)          # shown before the question
        self.assertNotIn(PASSWORD, out)                         # never echoed
        # The key: made, ed25519, private 0600; OpenSSH can read it.
        self.assertEqual(stat.S_IMODE(os.stat(self.key).st_mode), 0o600)
        pub = read(self.key + ".pub").decode().split()
        self.assertEqual(pub[0], "ssh-ed25519")
        derived = subprocess.run(["ssh-keygen", "-y", "-f", self.key], check=True,
                                 stdout=subprocess.PIPE).stdout.decode().split()
        self.assertEqual(derived[:2], pub[:2])
        # The phone: the old line kept, ours added once, modes 700/600, no temp left.
        lines = read(ak).decode().splitlines()
        self.assertEqual(lines[0], self.srv.wrong_host_pub + " someone-else")
        self.assertEqual([l.split()[:2] for l in lines[1:]], [pub[:2]])
        self.assertEqual(stat.S_IMODE(os.stat(ak).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(self.phone_ssh).st_mode) & 0o022, 0)
        self.assertEqual(os.listdir(self.phone_ssh), ["authorized_keys"])
        # known_hosts has the server's key; the config kept its lines and gained the block.
        self.assertIn(self.srv.host_pub.split()[1], read(self.kh).decode())
        cfg = read(self.cfg).decode()
        self.assertTrue(cfg.startswith(self.cfg_before + "\n"), cfg)
        block = cfg[len(self.cfg_before):]
        self.assertIn("Host phone2\n", block)
        self.assertIn("  HostName 127.0.0.1\n", block)
        self.assertIn("  Port %d\n" % self.srv.port, block)
        self.assertIn("  IdentityFile %s\n" % self.key, block)
        self.assertIn("  HostKeyAlias phone2\n", block)
        self.assertEqual(cfg.count("Host phone2"), 1)
        # The key under the address (pairing again goes by it) and under the name.
        kh = sorted(l.split()[:3] for l in read(self.kh).decode().splitlines())
        self.assertEqual(kh, sorted([["[127.0.0.1]:%d" % self.srv.port] + self.srv.host_pub.split()[:2],
                                     ["phone2"] + self.srv.host_pub.split()[:2]]))
        # Now a pull by name just works (no terminal, no password)...
        remote = os.path.join(self.srv.dir, "photos-%s" % self._testMethodName)
        write_file(os.path.join(remote, "DCIM/Camera/IMG_1.jpg"), b"photo", mtime=1700000000)
        local = os.path.join(self.home, "Pictures")
        env = {"HOME": self.home, "XDG_STATE_HOME": os.path.join(self.home, "state")}
        r = self.srv.run(["pull", "-F", self.cfg, "phone2:" + remote, local], env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(os.path.join(local, "DCIM/Camera/IMG_1.jpg")), b"photo")
        # ...and so does OpenSSH's ssh with the name, by key alone.
        p = subprocess.run(["ssh", "-F", self.cfg, "-o", "BatchMode=yes", "phone2", "echo", "ok"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, env=self.srv.env({"HOME": self.home}))
        self.assertEqual((p.returncode, p.stdout), (0, b"ok\n"), p.stderr)
        # ...and scp and rsync (over that ssh) with the name.
        sshenv = self.srv.env({"HOME": self.home})
        got = os.path.join(self.home, "by-scp.jpg")
        p = subprocess.run(["scp", "-F", self.cfg, "-o", "BatchMode=yes",
                            "phone2:" + os.path.join(remote, "DCIM/Camera/IMG_1.jpg"), got],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60, env=sshenv)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(got), b"photo")
        if shutil.which("rsync"):
            dst = os.path.join(self.home, "by-rsync")
            p = subprocess.run(["rsync", "-a", "-e", "ssh -F %s -o BatchMode=yes" % self.cfg,
                                "phone2:%s/" % remote, dst + "/"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60, env=sshenv)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(read(os.path.join(dst, "DCIM/Camera/IMG_1.jpg")), b"photo")
        # The phone at an address known_hosts does not name (DHCP moved it): without the
        # address's entry, the name alone is enough, for phsync and ssh, and nothing is asked.
        with open(self.kh, "w") as f:
            f.write("phone2 %s\n" % self.srv.host_pub)
        write_file(os.path.join(remote, "DCIM/Camera/IMG_2.jpg"), b"photo 2", mtime=1700000000)
        r = self.srv.run(["pull", "-F", self.cfg, "phone2:" + remote, local], env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(os.path.join(local, "DCIM/Camera/IMG_2.jpg")), b"photo 2")
        self.assertEqual(read(self.kh).decode(), "phone2 %s\n" % self.srv.host_pub)
        p = subprocess.run(["ssh", "-F", self.cfg, "-o", "BatchMode=yes", "phone2", "echo", "ok"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60, env=sshenv)
        self.assertEqual((p.returncode, p.stdout), (0, b"ok\n"), p.stderr)

    def start_agent(self, *keys):
        """A real ssh-agent of this test's own, holding new keys of the given types; returns
        {"SSH_AUTH_SOCK": its socket} and {type: public line}."""
        sock, d = start_ssh_agent(self, "phsync-pair-agent-")
        pubs = {}
        for kt in keys:
            k = os.path.join(d, "key_" + kt)
            subprocess.run(["ssh-keygen", "-q", "-t", kt, "-N", "", "-C", "agent-%s@test" % kt, "-f", k],
                           check=True, stdin=subprocess.DEVNULL, capture_output=True)
            subprocess.run(["ssh-add", "-q", k], env=dict(os.environ, SSH_AUTH_SOCK=sock), check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)
            pubs[kt] = read(k + ".pub").decode().strip()
            os.unlink(k)  # the agent has it; no file is left anywhere
        return {"SSH_AUTH_SOCK": sock}, pubs

    def test_agent_key_used_when_no_key_file(self):
        # The user has no key file, but the agent holds an RSA and an ed25519 key: pairing
        # installs the ed25519 one, makes no key, and the Host block names no IdentityFile.
        env, pubs = self.start_agent("rsa", "ed25519")
        os.makedirs(os.path.join(self.home, ".ssh"))
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)], key=False, env=env)
        self.assertEqual(code, 0, out)
        self.assertIn("ssh agent", out)
        self.assertEqual(os.listdir(os.path.join(self.home, ".ssh")), [])  # no key made
        ak = read(os.path.join(self.phone_ssh, "authorized_keys")).decode().splitlines()
        self.assertEqual([l.split()[:2] for l in ak], [pubs["ed25519"].split()[:2]])
        cfg = read(self.cfg).decode()
        block = cfg[len(self.cfg_before):]
        self.assertIn("Host phone2\n", block)
        self.assertNotIn("IdentityFile", block)
        self.assertIn("ssh agent (ssh-ed25519 agent-ed25519@test)", block)
        self.assertIn(self.srv.host_pub.split()[1], read(self.kh).decode())
        # A pull by the name logs in with the agent's key, asking nothing; so does ssh.
        remote = os.path.join(self.srv.dir, "photos-%s" % self._testMethodName)
        write_file(os.path.join(remote, "IMG_1.jpg"), b"photo", mtime=1700000000)
        local = os.path.join(self.home, "Pictures")
        r = self.srv.run(["pull", "-F", self.cfg, "phone2:" + remote, local],
                         env=dict(env, HOME=self.home, XDG_STATE_HOME=os.path.join(self.home, "state")))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(read(os.path.join(local, "IMG_1.jpg")), b"photo")
        p = subprocess.run(["ssh", "-F", self.cfg, "-o", "BatchMode=yes", "phone2", "echo", "ok"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, env=self.srv.env(dict(env, HOME=self.home)))
        self.assertEqual((p.returncode, p.stdout), (0, b"ok\n"), p.stderr)
        # Again: the agent's key logs in, nothing is asked and nothing changes.
        before = self.snapshot()
        code, out = self.pair([], key=False, env=env)
        self.assertEqual(code, 0, out)
        self.assertIn("already paired", out)
        self.assertNotIn("password", out)
        self.assertEqual(self.snapshot(), before)

    def test_key_file_wins_over_the_agent(self):
        # A user with a key file keeps using it even when an agent holds other keys.
        env, pubs = self.start_agent("ed25519")
        k = os.path.join(self.home, ".ssh", "id_ed25519")
        os.makedirs(os.path.dirname(k))
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "file@test", "-f", k],
                       check=True, stdin=subprocess.DEVNULL, capture_output=True)
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)], key=False, env=env)
        self.assertEqual(code, 0, out)
        ak = read(os.path.join(self.phone_ssh, "authorized_keys")).decode().splitlines()
        self.assertEqual([l.split()[:2] for l in ak], [read(k + ".pub").decode().split()[:2]])
        self.assertIn("IdentityFile ~/.ssh/id_ed25519" if os.path.realpath(self.home) == os.path.expanduser("~")
                      else "IdentityFile %s" % k, read(self.cfg).decode())

    def test_no_agent_no_key_makes_one(self):
        # An agent that holds nothing: the ed25519 key is made as before.
        env, _ = self.start_agent()
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)], key=False, env=env)
        self.assertEqual(code, 0, out)
        k = os.path.join(self.home, ".ssh", "id_ed25519")
        self.assertEqual(stat.S_IMODE(os.stat(k).st_mode), 0o600)
        ak = read(os.path.join(self.phone_ssh, "authorized_keys")).decode().splitlines()
        self.assertEqual([l.split()[:2] for l in ak], [read(k + ".pub").decode().split()[:2]])

    def account_known_hosts(self):
        """The known_hosts of the account's home (the password database's), with its bytes:
        what libssh would use when it ignores $HOME.  Restored after the test."""
        import pwd
        path = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".ssh", "known_hosts")
        before = read(path)
        made_dir = not os.path.isdir(os.path.dirname(path))

        def restore():
            if before is None:
                if os.path.exists(path):
                    os.unlink(path)
                if made_dir and os.path.isdir(os.path.dirname(path)) and not os.listdir(os.path.dirname(path)):
                    os.rmdir(os.path.dirname(path))
            else:
                with open(path, "wb") as f:
                    f.write(before)
        self.addCleanup(restore)
        return path, before

    def home_not_account(self):
        import pwd
        if os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir) == os.path.realpath(self.home):
            self.skipTest("$HOME is the account's home here")

    def test_home_config_and_its_known_hosts_without_f(self):
        # No -F, and $HOME is not the account's home (sudo -E, a test, a container): pair and
        # doctor read $HOME/.ssh/config -- where the Host block goes -- and so use the
        # UserKnownHostsFile it names. (libssh alone reads the account's home's config.)
        self.home_not_account()
        acct, acct_before = self.account_known_hosts()
        ssh_dir = os.path.join(self.home, ".ssh")
        os.makedirs(ssh_dir)
        kh = os.path.join(ssh_dir, "phones_known_hosts")
        cfg = os.path.join(ssh_dir, "config")
        write_file(cfg, "UserKnownHostsFile %s\nGlobalKnownHostsFile /dev/null\n" % kh)
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)], config=False)
        self.assertEqual(code, 0, out)
        self.assertIn("Add it to %s " % kh, out)  # the question names the file it goes to
        self.assertIn(self.srv.host_pub.split()[1], (read(kh) or b"").decode())
        self.assertEqual(read(acct), acct_before, "the account's known_hosts was written")
        self.assertIn("Host phone2\n", read(cfg).decode())
        # doctor, also without -F, finds the name and the key in the same files.
        r = self.srv.run(["doctor", "--json", "phone2"], env={"HOME": self.home})
        checks = {c["check"]: c["status"] for c in r.json() if c.get("event") == "check"}
        self.assertEqual((checks.get("host_key"), checks.get("key_login")), ("ok", "ok"), r)
        # ssh reads the account's home, not $HOME: given the file, it agrees.
        p = subprocess.run(["ssh", "-F", cfg, "-o", "BatchMode=yes", "phone2", "echo", "ok"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, env=self.srv.env({"HOME": self.home}))
        self.assertEqual((p.returncode, p.stdout), (0, b"ok\n"), p.stderr)

    def test_default_known_hosts_under_home_without_f(self):
        # No -F and no UserKnownHostsFile: the host key goes to $HOME/.ssh/known_hosts, beside
        # the $HOME/.ssh/config the Host block goes to, not to the account's home (libssh's
        # default, which src/transport/ssh.c overrides with SSH_OPTIONS_SSH_DIR from $HOME).
        self.home_not_account()
        acct, acct_before = self.account_known_hosts()
        ssh_dir = os.path.join(self.home, ".ssh")
        os.makedirs(ssh_dir)
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)], config=False)
        self.assertEqual(code, 0, out)
        self.assertEqual(read(acct), acct_before, "the account's known_hosts was written")
        self.assertIn(self.srv.host_pub.split()[1], (read(os.path.join(ssh_dir, "known_hosts")) or b"").decode())
        r = self.srv.run(["doctor", "--json", "phone2"], env={"HOME": self.home})
        checks = {c["check"]: c["status"] for c in r.json() if c.get("event") == "check"}
        self.assertEqual((checks.get("host_key"), checks.get("key_login")), ("ok", "ok"), r)

    def test_second_run_changes_nothing(self):
        self.first_pair()
        before = self.snapshot()
        # No question and no password this time: the key logs in, everything is in place.
        code, out = self.pair([])
        self.assertEqual(code, 0, out)
        self.assertIn("already paired", out)
        self.assertNotIn("password", out)
        self.assertEqual(self.snapshot(), before)
        # Without the port, the block's own port is used (nothing to probe).
        code, out = self.pair([], address="127.0.0.1")
        self.assertEqual(code, 0, out)
        self.assertIn("already paired", out)
        self.assertEqual(self.snapshot(), before)

    def test_wrong_password_writes_nothing(self):
        before = self.snapshot()
        code, out = self.pair([("(yes/no)", "yes")] + [("password:", "wrong")] * 3)
        self.assertEqual(code, 3, out)
        self.assertIn("Password refused", out)
        self.assertEqual(self.snapshot(), before)
        self.assertFalse(os.path.exists(os.path.join(self.home, "keys")))

    def test_refused_host_key_writes_nothing(self):
        before = self.snapshot()
        code, out = self.pair([("(yes/no)", "no")])
        self.assertEqual(code, 4, out)
        self.assertIn(self.srv.host_fingerprint, out)
        self.assertNotIn("password:", out)
        self.assertEqual(self.snapshot(), before)

    def refused_by_known_hosts(self, line, *said):
        """known_hosts gains line; pairing exits 4 after the login saying each of said, with
        nothing written, not even on the phone."""
        with open(self.kh, "a") as f:
            f.write(line + "\n")
        before = self.snapshot()
        code, out = self.pair([("(yes/no)", "yes"), ("password:", PASSWORD)])
        self.assertEqual(code, 4, out)
        for text in said:
            self.assertIn(text, out)
        self.assertEqual(self.snapshot(), before)

    def test_name_known_with_another_key_is_refused(self):
        # known_hosts already names another machine's key 'phone2': the block's HostKeyAlias
        # would make ssh and phsync refuse this phone (or take the other); the message says
        # how to go on.
        self.refused_by_known_hosts("phone2 %s" % self.srv.wrong_host_pub,
                                    "another host key under the name 'phone2'", "ssh-keygen -R phone2")

    def test_key_revoked_for_the_name_is_refused(self):
        # The same with this phone's own key marked @revoked for the name.
        self.refused_by_known_hosts("@revoked phone2 %s" % self.srv.host_pub,
                                    "@revoked for the name 'phone2'")

    def test_name_taken_by_another_host_is_refused(self):
        before = self.snapshot()
        code, out = self.pair([], name="laptop-nas")
        self.assertEqual(code, 1, out)
        self.assertIn("already has a 'Host laptop-nas'", out)
        self.assertEqual(self.snapshot(), before)

    def test_block_goes_before_an_overriding_wildcard(self):
        # ssh takes the first value it finds: a 'Host *' with a Port before our block would
        # win, so the block goes before the first Host line instead (the rest byte for byte).
        write_file(self.cfg, "UserKnownHostsFile %s\nGlobalKnownHostsFile /dev/null\n"
                             "Host *\n  Port 1\n" % self.kh)
        before = read(self.cfg).decode()
        self.first_pair()
        cfg = read(self.cfg).decode()
        head = "UserKnownHostsFile %s\nGlobalKnownHostsFile /dev/null\n" % self.kh
        self.assertTrue(cfg.startswith(head), cfg)
        self.assertTrue(cfg.endswith("\nHost *\n  Port 1\n"), cfg)
        self.assertEqual(len(cfg.replace(cfg[len(head):cfg.index("Host *")], "")), len(before))
        r = self.srv.run(["doctor", "-F", self.cfg, "phone2"], env={"HOME": self.home})
        self.assertEqual(r.code, 0, r)

    def test_closed_port_says_what_to_do(self):
        from harness import free_port
        before = self.snapshot()
        code, out = self.pair([], address="127.0.0.1:%d" % free_port())
        self.assertEqual(code, 3, out)
        self.assertIn("sshd", out)  # the advice names what to start on the phone
        self.assertEqual(self.snapshot(), before)
        # Without a port the phone servers' usual ports are tried and named.
        code, out = self.pair([], address="127.0.0.9")
        self.assertEqual(code, 3, out)
        self.assertIn("8022, 2222 and 22", out)

    def test_no_terminal_is_a_usage_error(self):
        r = self.srv.run(["pair", "-F", self.cfg, "phone2", "127.0.0.1:%d" % self.srv.port])
        self.assertEqual(r.code, 2, r)
        self.assertIn("terminal", r.err)


class PairPortsTest(unittest.TestCase):
    """Without a port, pair tries the phone servers' usual ports in order: Termux's 8022,
    SimpleSSHD's (and other Dropbear apps') 2222, then 22; a listener that is not an SSH
    server is passed over."""

    def test_finds_the_server_on_2222_past_a_non_ssh_8022(self):
        import socket
        import threading
        for port in (8022, 2222):
            with socket.socket() as t:
                t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    self.skipTest("port %d is taken on this machine" % port)
        # Something that is not an SSH server on 8022 (a web server, say).
        other = socket.socket()
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", 8022))
        other.listen(8)
        self.addCleanup(other.close)
        stop = threading.Event()

        def answer():
            other.settimeout(0.2)
            while not stop.is_set():
                try:
                    c, _ = other.accept()
                except OSError:
                    continue
                with c:
                    c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        th = threading.Thread(target=answer, daemon=True)
        th.start()
        self.addCleanup(th.join)
        self.addCleanup(stop.set)
        try:
            srv = SshServer(password=PASSWORD)
            self.addCleanup(srv.stop)
            srv.start()
            srv.pause()
            srv.port = 2222
            srv.resume()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))
        home = os.path.join(srv.dir, "home-ports")
        os.makedirs(home)
        cfg = os.path.join(home, "config")
        write_file(cfg, "UserKnownHostsFile %s/kh\nGlobalKnownHostsFile /dev/null\n" % home)
        argv = [phsync_bin(), "pair", "-F", cfg, "--key", os.path.join(home, "k"), "p", "127.0.0.1"]
        env = srv.env()
        env["HOME"] = home
        r = run_on_pty(argv, env, [(rb"\(yes/no\)", b"yes\n"),
                                   (rb"password:", PASSWORD.encode() + b"\n")])
        code, text = r.code, r.text
        self.assertEqual(code, 0, text)
        self.assertIn("on port 2222", text)
        self.assertIn("  Port 2222\n", read(cfg).decode())


class PairRefusesPasswordsTest(unittest.TestCase):
    """A phone that takes keys only: the advice says how to get a password or copy the key."""

    def test_no_password_offered(self):
        try:
            srv = SshServer()
            self.addCleanup(srv.stop)
            srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))
        home = os.path.join(srv.dir, "home2")
        os.makedirs(home)
        cfg = os.path.join(home, "config")
        write_file(cfg, "UserKnownHostsFile %s/kh\nGlobalKnownHostsFile /dev/null\n" % home)
        argv = [phsync_bin(), "pair", "-F", cfg, "--key", os.path.join(home, "k"), "p",
                "127.0.0.1:%d" % srv.port]
        env = srv.env()
        env["HOME"] = home
        r = run_on_pty(argv, env, [(rb"\(yes/no\)", b"yes\n")])
        code, text = r.code, r.text
        self.assertEqual(code, 3, text)
        self.assertIn("accepts no password", text)
        self.assertIn("passwd", text)
        self.assertEqual(sorted(os.listdir(home)), ["config"])


def readme_walkthrough():
    """The shell block under README's "pairing walk-through" marker."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- pairing walk-through[^>]*-->\n```sh\n(.*?)```", text, re.S)
    assert m, "README.md has no pairing walk-through block"
    return m.group(1)


class ReadmeWalkthroughTest(unittest.TestCase):

    def setUp(self):
        if os.geteuid() != 0:
            skip_or_fail("password", "the sample phone's password logins need root")
        self.tmp = tempfile.mkdtemp(prefix="phsync-walk-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_readme_walkthrough(self):
        block = readme_walkthrough()
        self.assertIn("harness.py serve --password", block)
        self.assertIn("build/phsync pair", block)
        # The only change: the phsync under test for the demo's build/phsync.
        script = block.replace("build/phsync", phsync_bin())
        home = os.path.join(self.tmp, "home")
        os.makedirs(home)
        env = sanitizer_env({"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
                             "TMPDIR": self.tmp, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                             "TERM": "dumb", "USER": "root", "LOGNAME": "root"})
        argv = ["/bin/bash", "-e", "-c", script]
        # The harness's line with the sample phone's password, the host key question, then
        # pair's password prompt after that line: the password it printed, typed once.
        password = []
        r = run_on_pty(argv, env, [
            (rb"a fresh phone at \S+, password: (\S+)\r?\n",
             lambda pid, fd, m: password.append(m.group(1))),
            (rb"\(yes/no\)", b"yes\n"),
            (rb"[Pp]assword: *$", lambda pid, fd, m: os.write(fd, password[0] + b"\n")),
        ], timeout=240, cwd=REPO)
        code, text, out = r.code, r.text, r.out
        said_yes = typed = len(r.matches) == 3
        seen = r.matches[0].end() if r.matches else 0
        password = password[0] if password else None
        self.assertEqual(code, 0, text)
        self.assertIsNotNone(password, text)
        self.assertTrue(said_yes and typed, text)
        # Typed the moment the prompt showed: echo was already off (it used to be turned off,
        # and what was typed flushed, after the prompt: the password showed and pair hung).
        self.assertNotIn(password, out[seen:], text)
        (t,) = [os.path.join(self.tmp, n) for n in os.listdir(self.tmp) if n.startswith("tmp.")]
        # Paired: the Host block and the key made in $t; doctor passed (bash -e).
        with open(os.path.join(t, "ssh_config")) as f:
            cfg = f.read()
        self.assertIn("Host myphone", cfg)
        self.assertIn(os.path.join(t, "key"), cfg)
        self.assertTrue(os.path.exists(os.path.join(t, "known_hosts")))
        self.assertNotIn(".ssh", os.listdir(home))   # the user's ~/.ssh is left alone
        # The pull after pairing, by key alone (the password was typed once, for pair):
        # the sample phone's DCIM, every byte and time.
        want = sample_tree(os.path.join(self.tmp, "want"))
        got = tree(os.path.join(t, "Pictures"))
        exp = tree(os.path.join(want, "DCIM"))
        self.assertEqual(sorted(got), sorted(exp))
        for k, e in exp.items():
            self.assertEqual((got[k].type, got[k].digest, got[k].mtime),
                             (e.type, e.digest, e.mtime), k)
        self.assertEqual(text.count("a fresh phone at"), 1)


if __name__ == "__main__":
    unittest.main()
