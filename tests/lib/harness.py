#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Throwaway SSH servers on 127.0.0.1 for phsync's integration tests, demo and benchmark.

Python 3 standard library only.  What it gives:

    SshServer(...)          a real OpenSSH sshd (or Dropbear) on a free loopback port with
                            throwaway ed25519 host and user keys in a temp dir; .start(), .stop()
    server.config           an ssh_config whose `Host phone` reaches it (known_hosts pre-filled,
                            StrictHostKeyChecking yes, IdentitiesOnly yes)
    server.write_config()   variants: no known_hosts entry, a wrong host key, accept-new, a wrong
                            or missing user key, a closed port, an unresolvable host name
    server.run([...])       runs phsync ($PHSYNC_BIN) with a clean environment (HOME = a temp
                            dir, no SSH_AUTH_SOCK, stdin /dev/null, no controlling terminal),
                            returns Result(code, out, err); sanitizer reports fail the test
    SshServer(relay=True)   the sftp subsystem is tests/lib/sftp_relay.py in front of the real
                            sftp-server, misbehaving as server.relay_set(...) says;
                            server.relay_fired() tells which faults fired
    SyncTestCase            unittest base class: one server per class, fresh dirs per test
    skip_or_fail(need, why) a skip, unless PHSYNC_REQUIRE names `need` (CI): then a failure
    tree(), leftovers(), ...   helpers to snapshot and compare directory trees

Command line (used by scripts/demo.sh and bench/):

    python3 tests/lib/harness.py serve [--dropbear] [--sftp-server PATH] [--password] STATEDIR

starts a server whose keys and ssh_config live in STATEDIR, prints the ssh_config path on
stdout once the port accepts connections, and keeps the server running until SIGTERM/SIGINT.
With --password (OpenSSH, root) it is a fresh phone to pair with (README, "Pairing"): it also
takes a password login ($HARNESS_PASSWORD, else a throwaway one), printed on stderr;
the login folder is an empty temp folder holding a sample phone tree (DCIM/...), and
STATEDIR/address holds USER@127.0.0.1:PORT for `phsync pair`.

Servers are stopped on stop(), at interpreter exit, on SIGTERM, and (through PR_SET_PDEATHSIG)
when the Python process dies without cleaning up.
"""

import atexit
import ctypes
import errno
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest

SSHD = "/usr/sbin/sshd"
DROPBEAR = "/usr/sbin/dropbear"
SSH_KEYGEN = "/usr/bin/ssh-keygen"
DROPBEARKEY = "/usr/bin/dropbearkey"
OPENSSH_SFTP_SERVER = "/usr/lib/openssh/sftp-server"
GESFTPSERVER = "/usr/libexec/gesftpserver"
# Dropbear runs the compiled-in SFTPSERVER_PATH; Debian builds it as /usr/lib/sftp-server.
DROPBEAR_SFTP_PATH = "/usr/lib/sftp-server"
# ProFTPD with mod_sftp, unpacked (not installed as a service) by scripts/install-deps.sh.
PROFTPD_ROOT = os.environ.get("PHSYNC_PROFTPD_ROOT", "/opt/phsync-test/proftpd")
PROFTPD = os.path.join(PROFTPD_ROOT, "usr/sbin/proftpd")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EVIL_SFTP = os.path.join(HERE, "evil_sftp.py")
SFTP_RELAY = os.path.join(HERE, "sftp_relay.py")

# A temp file phsync leaves while writing: `.NAME.phsync-XXXXXX`, and the newer
# `.NAME.phsync-t.HHHHHHHH.PPPPPPPP.CCCCCCCC` temps and `.NAME.phsync-o.…` replace-aside copies.
TEMP_RE = re.compile(r"^\..*\.phsync-[^/]*$")
SANITIZER_RE = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer")
SAN_EXIT_ASAN, SAN_EXIT_UBSAN = 86, 87

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CONNECT, EXIT_HOSTKEY, EXIT_PARTIAL, EXIT_INTERRUPTED = range(7)

_live_servers = set()
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


class Unavailable(Exception):
    """The requested server variant cannot run here (missing binary, not root, ...).
    .need names what is missing, as PHSYNC_REQUIRE spells it (see skip_or_fail)."""

    def __init__(self, msg, need=None):
        super().__init__(msg)
        self.need = need


# What a run must have: PHSYNC_REQUIRE=sshd,dropbear,... (CI sets it).  A test that would skip
# for want of one of these fails instead.  Names: sshd, sftp-server (OpenSSH's), dropbear,
# gesftpserver, root (tests that need root: sftp_user, clean_home, tmpfs mounts), namespace
# (a private mount namespace), ssh-agent, password (sshd with password logins: root and a
# private mount namespace), qemu (qemu-user-static and the cross-built aarch64 and armv7 helpers),
# proftpd (ProFTPD's mod_sftp, run as root), phone-shells (mksh, toybox and busybox: a phone's
# shell and tools, for the bootstrap's start-up script), ntfs-3g (an NTFS folder as Windows
# names it, mounted through FUSE: mkntfs, ntfs-3g, /dev/fuse); "all" means every one of them.
REQUIRABLE = ("sshd", "sftp-server", "dropbear", "gesftpserver", "root", "namespace", "ssh-agent",
              "password", "qemu", "proftpd", "phone-shells", "ntfs-3g")


def required():
    req = {w.strip() for w in os.environ.get("PHSYNC_REQUIRE", "").split(",") if w.strip()}
    if "all" in req:
        req = set(REQUIRABLE)
    return req


class RequiredButUnavailable(AssertionError):
    pass


def skip_or_fail(need, reason):
    """Skips the test (or class) for `reason`, unless PHSYNC_REQUIRE names `need`: then fails."""
    if need in required():
        raise RequiredButUnavailable("PHSYNC_REQUIRE has %s, but: %s" % (need, reason))
    raise unittest.SkipTest("%s [needs %s]" % (reason, need) if need else reason)


def _die_with_parent():
    # Runs in the child between fork and exec: the server gets SIGTERM when we die,
    # even if we are SIGKILLed (e.g. by a ctest timeout) and atexit never runs.
    if _libc is not None:
        _libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop_all():
    for s in list(_live_servers):
        try:
            s.stop()
        except Exception:
            pass


atexit.register(_stop_all)


def _on_sigterm(signum, frame):
    _stop_all()
    sys.exit(128 + signum)


if hasattr(signal, "SIGTERM"):
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        pass


def free_port():
    """Returns a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid):
    """All live descendants of pid (children first seen through /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                data = f.read()
            ppid = int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _kill(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:
            pass


def _run_quiet(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, **kw)


def fingerprint(pub_line):
    """SHA256:... fingerprint of an OpenSSH public key line, as ssh-keygen -l prints it."""
    import base64
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _absolute_bin(b):
    """PHSYNC_BIN as an absolute path, resolved now (from the directory the tests were started
    in): phsync runs with another cwd and HOME, where a relative path would mean something
    else.  A bare name is looked up in PATH."""
    if "/" not in b:
        return shutil.which(b) or b
    return os.path.abspath(b)


if os.environ.get("PHSYNC_BIN"):
    os.environ["PHSYNC_BIN"] = _absolute_bin(os.environ["PHSYNC_BIN"])


def phsync_bin():
    """The phsync binary under test: $PHSYNC_BIN (made absolute when this module was
    imported), else the usual build dirs."""
    b = os.environ.get("PHSYNC_BIN")
    if b:
        return _absolute_bin(b)
    for d in ("build-test", "build-tests", "build"):
        p = os.path.join(REPO, d, "phsync")
        if os.access(p, os.X_OK):
            return p
    raise RuntimeError("PHSYNC_BIN is not set and no built phsync was found")


class Result(tuple):
    """(code, out, err) with out/err as str (UTF-8, surrogateescape); raw bytes in
    .out_bytes/.err_bytes, the argv in .argv."""

    def __new__(cls, code, out_b, err_b, argv):
        r = tuple.__new__(cls, (code, out_b.decode("utf-8", "surrogateescape"),
                                err_b.decode("utf-8", "surrogateescape")))
        r.out_bytes, r.err_bytes, r.argv = out_b, err_b, argv
        return r

    code = property(lambda self: self[0])
    out = property(lambda self: self[1])
    err = property(lambda self: self[2])

    def json(self):
        """stdout parsed as JSON lines; raises AssertionError on any non-JSON line."""
        events = []
        for i, line in enumerate(self.out.splitlines()):
            try:
                ev = json.loads(line)
            except ValueError as e:
                raise AssertionError("stdout line %d is not JSON (%s): %r" % (i + 1, e, line))
            if not isinstance(ev, dict) or "event" not in ev:
                raise AssertionError("stdout line %d is not an event object: %r" % (i + 1, line))
            events.append(ev)
        return events

    def __repr__(self):
        return "Result(code=%d, argv=%r,\n--- stdout ---\n%s\n--- stderr ---\n%s)" % (
            self.code, self.argv, self.out[-4000:], self.err[-4000:])


def sanitizer_env(extra=None):
    """The sanitizer settings every phsync run gets: ASan and UBSan exit with their own codes
    (SAN_EXIT_ASAN, SAN_EXIT_UBSAN) and UBSan stops at the first report, so that
    check_sanitizers() sees them whatever the program's own exit code would have been."""
    env = {
        "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "exitcode=%d:detect_leaks=1" % SAN_EXIT_ASAN),
        "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS",
                                        "print_stacktrace=1:halt_on_error=1:exitcode=%d" % SAN_EXIT_UBSAN),
    }
    if "LSAN_OPTIONS" in os.environ:
        env["LSAN_OPTIONS"] = os.environ["LSAN_OPTIONS"]
    env.update(extra or {})
    return env


class SanitizerError(AssertionError):
    pass


def check_sanitizers(code, err_text, argv):
    if SANITIZER_RE.search(err_text) or code in (SAN_EXIT_ASAN, SAN_EXIT_UBSAN):
        raise SanitizerError("sanitizer report from %r (exit %d):\n%s" % (argv, code, err_text[-8000:]))


class SshServer:
    """A throwaway SSH server on 127.0.0.1.

    kind         "openssh" (sshd) or "dropbear" (needs root: it reads the login user's real
                 ~/.ssh/authorized_keys, so it runs in a private mount namespace with a temp
                 home bind-mounted over the user's home) or "proftpd" (ProFTPD's own SSH and
                 SFTP server, mod_sftp, which hashes blocks on request (check-file); needs root,
                 no subsystem, relay or sftp_user)
    sftp_server  path of the sftp-server binary (OpenSSH's by default; GESFTPSERVER works too)
    subsystem    full `Subsystem sftp` command line, overriding sftp_server (evil_sftp.py)
    sftp_user    run the sftp server as this user (through setpriv; only when we are root),
                 so that file permissions bind it as they would an ordinary phone user
    relay        run tests/lib/sftp_relay.py in front of sftp_server: a relay that misbehaves
                 as its control file says (server.relay_set(), server.relay_fired())
    clean_home   (root only) run the server in a private mount namespace with an empty temp
                 folder bind-mounted over the login user's home, so the user's shell start-up
                 files (~/.bashrc, which Debian's bash reads for ssh commands) neither slow down
                 nor disturb the sessions; always on for Dropbear
    port         listen on this port rather than a free one (a phone back at its old address
                 with another host key: test_pairid.py)
    password     (OpenSSH, root only) also accept this password for the login user, like a
                 phone's server before pairing: sshd runs in a private mount namespace where a
                 copy of /etc/shadow giving the user this password is bind-mounted over the real
                 one (the system's files and users are never changed), the login user's home is
                 the empty folder self.login_home (no .ssh: a fresh phone) and keys are read
                 from ~/.ssh/authorized_keys there, as on a phone
    """

    def __init__(self, kind="openssh", sftp_server=None, subsystem=None, sftp_user=None,
                 statedir=None, extra_sshd_config=(), log_level="VERBOSE", clean_home=False, relay=False,
                 password=None, port=None):
        if kind not in ("openssh", "dropbear", "proftpd"):
            raise ValueError(kind)
        if kind == "proftpd" and (sftp_server or subsystem or sftp_user or relay or password):
            raise ValueError("ProFTPD serves SFTP itself")
        self.kind = kind
        self.sftp_server = sftp_server or OPENSSH_SFTP_SERVER
        self.subsystem = subsystem
        self.relay = relay
        self.sftp_user = sftp_user
        self.extra_sshd_config = list(extra_sshd_config)
        self.log_level = log_level
        self.password = password
        self.clean_home = clean_home or kind == "dropbear" or password is not None
        self._own_dir = statedir is None
        self.dir = statedir
        self.proc = None
        self.port = None
        self.fixed_port = port
        self.user = pwd.getpwuid(os.geteuid()).pw_name
        self._variant_n = 0

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        if self.kind == "openssh" and not os.access(SSHD, os.X_OK):
            raise Unavailable("%s not installed (apt-get install openssh-server)" % SSHD, "sshd")
        if self.kind == "dropbear":
            if not os.access(DROPBEAR, os.X_OK):
                raise Unavailable("dropbear not installed (apt-get install dropbear-bin)", "dropbear")
            if os.geteuid() != 0:
                raise Unavailable("the Dropbear harness needs root (private mount namespace)", "dropbear")
        if self.kind == "proftpd":
            if not os.access(PROFTPD, os.X_OK):
                raise Unavailable("%s missing (scripts/install-deps.sh unpacks ProFTPD there)"
                                  % PROFTPD, "proftpd")
            if os.geteuid() != 0:
                raise Unavailable("the ProFTPD harness needs root (it logs the user in itself)",
                                  "proftpd")
        if self.password is not None and (self.kind != "openssh" or os.geteuid() != 0):
            raise Unavailable("password logins need OpenSSH's sshd run as root (it reads the "
                              "password from a private copy of /etc/shadow)", "password")
        if self.clean_home and os.geteuid() != 0:
            raise Unavailable("clean_home needs root (private mount namespace)", "root")
        if self.sftp_user and os.geteuid() != 0:
            raise Unavailable("running the sftp server as another user needs root", "root")
        if self.kind != "proftpd" and not self.subsystem and not os.access(self.sftp_server, os.X_OK):
            raise Unavailable("sftp server %s not installed" % self.sftp_server,
                              "gesftpserver" if self.sftp_server == GESFTPSERVER else "sftp-server")
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="phsync-sshd-")
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)  # so a setpriv'd sftp server can reach its cwd
        self.home = os.path.join(self.dir, "client-home")  # HOME for the client (phsync)
        os.makedirs(self.home, exist_ok=True)
        self._make_keys()
        if self.relay:
            self.relay_set()
        last_err = None
        for _attempt in range(8):
            self.port = self.fixed_port or free_port()
            try:
                self._spawn()
                break
            except _PortTaken as e:
                last_err = e
                continue
        else:
            raise RuntimeError("could not start %s: %s" % (self.kind, last_err))
        _live_servers.add(self)
        self.config = self.write_config("ssh_config")
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        return self

    def stop(self):
        _live_servers.discard(self)
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            kids = _descendants(p.pid)
            _kill([p.pid] + kids, signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            _kill([p.pid] + kids + _descendants(p.pid), signal.SIGKILL)
            p.wait()
        if getattr(self, "_logf", None):
            self._logf.close()
            self._logf = None
        if self._own_dir and self.dir and not os.environ.get("PHSYNC_KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def pause(self):
        """Stops the server and every session below it (a phone leaving the Wi-Fi), keeping its
        keys, config and port for resume()."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            kids = _descendants(p.pid)
            _kill([p.pid] + kids, signal.SIGKILL)
            p.wait()
        if getattr(self, "_logf", None):
            self._logf.close()
            self._logf = None

    def resume(self):
        """Starts the paused server again on the same port (retrying while the port is still
        taken by a closing socket)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                self._spawn()
                return self
            except _PortTaken:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    # -- the misbehaving relay (relay=True) -----------------------------------------------------

    @property
    def relay_control(self):
        return os.path.join(self.dir, "relay.json")

    def relay_set(self, **modes):
        """Writes the relay's control file (see tests/lib/sftp_relay.py for the modes) and
        empties its log of fired faults; the next session (phsync run) follows it.  No
        arguments: a faithful relay."""
        tmp = self.relay_control + ".tmp"
        with open(tmp, "w") as f:
            json.dump(modes, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.relay_control)
        with open(self.relay_control + ".log", "w"):
            pass
        os.chmod(self.relay_control + ".log", 0o666)

    def relay_fired(self):
        """The faults the relay reported since the last relay_set(): ["mode detail", ...]."""
        try:
            with open(self.relay_control + ".log") as f:
                return [l[len("FIRED "):].rstrip("\n") for l in f if l.startswith("FIRED ")]
        except OSError:
            return []

    def session_processes(self):
        """Live processes below the listening server (per-connection sshd children, the sftp
        subsystem and what it started)."""
        if self.proc is None:
            return []
        return _descendants(self.proc.pid)

    def log_text(self):
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- keys and configs ------------------------------------------------------------------

    def _keygen(self, path):
        if not os.path.exists(path):
            _run_quiet([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "phsync-test", "-f", path])
        with open(path + ".pub") as f:
            return f.read().strip()

    def _make_keys(self):
        d = self.dir
        self.user_key = os.path.join(d, "user_ed25519")
        self.user_pub = self._keygen(self.user_key)
        self.wrong_user_key = os.path.join(d, "other_user_ed25519")
        self._keygen(self.wrong_user_key)
        self.wrong_host_pub = self._keygen(os.path.join(d, "other_host_ed25519"))
        if self.kind == "openssh":
            self.host_key = os.path.join(d, "host_ed25519")
            self.host_pub = self._keygen(self.host_key)
        elif self.kind == "proftpd":
            # mod_sftp reads PEM host keys and RFC 4716 user keys.
            self.host_key = os.path.join(d, "proftpd_rsa_host_key")
            if not os.path.exists(self.host_key):
                _run_quiet([SSH_KEYGEN, "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "",
                            "-f", self.host_key])
            with open(self.host_key + ".pub") as f:
                self.host_pub = f.read().strip()
        else:
            self.host_key = os.path.join(d, "dropbear_ed25519_host_key")
            if not os.path.exists(self.host_key):
                _run_quiet([DROPBEARKEY, "-t", "ed25519", "-f", self.host_key])
            out = _run_quiet([DROPBEARKEY, "-y", "-f", self.host_key]).stdout.decode()
            self.host_pub = next(l for l in out.splitlines() if l.startswith("ssh-ed25519 "))
        self.host_pub = " ".join(self.host_pub.split()[:2])
        self.host_fingerprint = fingerprint(self.host_pub)
        self.authorized_keys = os.path.join(d, "authorized_keys")
        with open(self.authorized_keys, "w") as f:
            f.write(self.user_pub + "\n")
        os.chmod(self.authorized_keys, 0o600)
        if self.kind == "proftpd":
            self.authorized_keys_rfc = os.path.join(d, "authorized_keys.rfc4716")
            with open(self.authorized_keys_rfc, "wb") as f:
                f.write(_run_quiet([SSH_KEYGEN, "-e", "-f", self.user_key + ".pub"]).stdout)

    def _sftp_command(self):
        if self.relay:
            # The system python when there is one: sshd may run the relay as another user
            # (sftp_user), who cannot reach a python under root's home.
            py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
            cmd = "%s %s --control %s --server %s" % (py, SFTP_RELAY, self.relay_control, self.sftp_server)
        elif self.subsystem:
            cmd = self.subsystem
        else:
            cmd = self.sftp_server
        if self.sftp_user:
            pw = pwd.getpwnam(self.sftp_user)
            cmd = "/usr/bin/setpriv --reuid=%d --regid=%d --clear-groups %s" % (pw.pw_uid, pw.pw_gid, cmd)
        return cmd

    def write_config(self, name=None, known_hosts="good", strict="yes", identity="good",
                     port=None, hostname="127.0.0.1", host="phone", extra=()):
        """Writes an ssh_config for `Host <host>` and returns its path.

        known_hosts: "good" (the real host key), "none" (an empty file), "missing" (no file),
                     "wrong" (another ed25519 key under the same [127.0.0.1]:PORT name)
        strict:      StrictHostKeyChecking value, or None to leave it out (ssh's default: ask)
        identity:    "good", "wrong" (a key not in authorized_keys), "none" (no such file),
                     "agent" (no IdentityFile/IdentitiesOnly lines: the agent's keys are used)
        port:        a different port (e.g. a closed one); hostname: a different HostName
        """
        self._variant_n += 1
        if name is None:
            name = "ssh_config.%d" % self._variant_n
        base = os.path.join(self.dir, name)
        kh = base + ".known_hosts" if name != "ssh_config" else os.path.join(self.dir, "known_hosts")
        port = self.port if port is None else port
        hostpat = "[%s]:%d" % (hostname, port) if port != 22 else hostname
        if known_hosts == "good":
            lines = "%s %s\n" % (hostpat, self.host_pub)
        elif known_hosts == "wrong":
            lines = "%s %s\n" % (hostpat, self.wrong_host_pub)
        elif known_hosts == "none":
            lines = ""
        elif known_hosts == "missing":
            lines = None
        else:
            raise ValueError(known_hosts)
        if lines is not None:
            with open(kh, "w") as f:
                f.write(lines)
        elif os.path.exists(kh):
            os.unlink(kh)
        cfg = ["Host %s" % host,
               "  HostName %s" % hostname,
               "  Port %d" % port,
               "  User %s" % self.user]
        if identity != "agent":
            idf = {"good": self.user_key, "wrong": self.wrong_user_key,
                   "none": os.path.join(self.dir, "no_such_key")}[identity]
            cfg += ["  IdentityFile %s" % idf, "  IdentitiesOnly yes"]
        cfg += ["  UserKnownHostsFile %s" % kh,
               "  GlobalKnownHostsFile /dev/null"]
        if strict is not None:
            cfg.append("  StrictHostKeyChecking %s" % strict)
        cfg += ["  " + e for e in extra]
        with open(base, "w") as f:
            f.write("\n".join(cfg) + "\n")
        return base

    def known_hosts_of(self, config):
        """The UserKnownHostsFile named by a config written by write_config()."""
        with open(config) as f:
            for line in f:
                if line.strip().startswith("UserKnownHostsFile "):
                    return line.split(None, 1)[1].strip()
        return None

    # -- starting the daemon ---------------------------------------------------------------

    def _spawn(self):
        logpath = os.path.join(self.dir, "server.log")
        self._logf = open(logpath, "ab")
        if self.kind == "openssh":
            argv = self._openssh_argv()
            if self.clean_home:
                argv = self._in_namespace(argv)
        elif self.kind == "proftpd":
            argv = self._proftpd_argv()
        else:
            argv = self._dropbear_argv()
        start = os.path.getsize(logpath)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._logf,
                                     stderr=self._logf, start_new_session=True,
                                     preexec_fn=_die_with_parent, close_fds=True)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                self._logf.close()
                self._logf = None
                with open(logpath, "rb") as f:
                    f.seek(start)
                    log = f.read().decode("utf-8", "replace")
                self.proc = None
                if ("Address already in use" in log or "Bind to port" in log or "Failed listening" in log
                        or "Unable to bind" in log):
                    raise _PortTaken(log)
                if argv[0] == "unshare" and ("unshare:" in log or "mount:" in log):
                    raise Unavailable("no private mount namespace here (needed for %s): %s"
                                      % ("Dropbear" if self.kind == "dropbear" else "clean_home", log.strip()[-300:]),
                                      "dropbear" if self.kind == "dropbear" else "namespace")
                raise RuntimeError("%s exited at start:\n%s" % (argv[0], log))
            if self._banner_ok():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("%s did not accept connections on port %d" % (self.kind, self.port))
            time.sleep(0.02)

    def _banner_ok(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.settimeout(2)
                data = s.recv(256)
                return data.startswith(b"SSH-2.0-")
        except OSError:
            return False

    def _openssh_argv(self):
        if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        cfg = os.path.join(self.dir, "sshd_config")
        lines = [
            "Port %d" % self.port,
            "ListenAddress 127.0.0.1",
            "HostKey %s" % self.host_key,
            "PidFile %s" % os.path.join(self.dir, "sshd.pid"),
            "AuthorizedKeysFile %s" % (".ssh/authorized_keys" if self.password is not None
                                       else self.authorized_keys),
            "StrictModes no",
            "UsePAM no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication %s" % ("yes" if self.password is not None else "no"),
            "KbdInteractiveAuthentication no",
            "PermitRootLogin %s" % ("yes" if self.password is not None else "prohibit-password"),
            "UseDNS no",
            "PrintMotd no",
            "X11Forwarding no",
            "MaxStartups 64:30:128",
            "LogLevel %s" % self.log_level,
            "Subsystem sftp %s" % self._sftp_command(),
        ] + self.extra_sshd_config
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        return [SSHD, "-D", "-e", "-f", cfg]

    def _fake_home(self):
        fakehome = os.path.join(self.dir, "login-home")
        self.login_home = fakehome
        if self.password is not None:
            os.makedirs(fakehome, exist_ok=True)
            os.chmod(fakehome, 0o755)
            return fakehome
        os.makedirs(os.path.join(fakehome, ".ssh"), exist_ok=True)
        os.chmod(fakehome, 0o755)
        os.chmod(os.path.join(fakehome, ".ssh"), 0o700)
        ak = os.path.join(fakehome, ".ssh", "authorized_keys")
        shutil.copyfile(self.authorized_keys, ak)
        os.chmod(ak, 0o600)
        return fakehome

    def _in_namespace(self, argv, sftp_wrapper=None):
        """argv run in a private mount namespace with a temp home over the user's home (and,
        for Dropbear, our sftp command over its compiled-in sftp-server path)."""
        home = pwd.getpwuid(os.geteuid()).pw_dir
        script = 'set -e; mount --bind "$1" "$2"; '
        if self.password is not None:
            script += 'mount --bind "%s" /etc/shadow; ' % self._shadow()
        args = [self._fake_home(), home]
        if sftp_wrapper:
            script += 'mount --bind "$3" "%s"; ' % os.path.realpath(DROPBEAR_SFTP_PATH)
            args.append(sftp_wrapper)
        else:
            args.append("")
        script += 'shift 3; exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                "sh"] + args + argv

    def _shadow(self):
        """A copy of /etc/shadow in which the login user's password is self.password."""
        try:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                import crypt
            hashed = crypt.crypt(self.password, crypt.mksalt(crypt.METHOD_SHA512))
        except ImportError:  # Python 3.13 has no crypt module
            hashed = subprocess.run(["openssl", "passwd", "-6", "-stdin"], check=True,
                                    input=self.password.encode(),
                                    stdout=subprocess.PIPE).stdout.decode().strip()
        out = []
        with open("/etc/shadow") as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if fields[0] == self.user and len(fields) >= 5:
                    fields[1] = hashed
                    fields[2:5] = ["19000", "0", "99999"]  # no expiry, no forced change
                    line = ":".join(fields) + "\n"
                out.append(line)
        path = os.path.join(self.dir, "shadow")
        with open(path, "w") as f:
            f.write("".join(out))
        os.chmod(path, 0o600)
        return path

    def _proftpd_argv(self):
        """ProFTPD as an SSH server only (mod_sftp on the main server's port), logging the test
        user in with the test key; the daemon itself runs as nobody."""
        d = self.dir
        lines = [
            "ModulePath %s" % os.path.join(PROFTPD_ROOT, "usr/lib/proftpd"),
            "LoadModule mod_sftp.c",
            "ServerType standalone",
            "ServerName phsync-test",
            "DefaultAddress 127.0.0.1",
            "Port %d" % self.port,
            "UseIPv6 off",
            "User nobody",
            "Group nogroup",
            "PidFile %s" % os.path.join(d, "proftpd.pid"),
            "ScoreboardFile %s" % os.path.join(d, "proftpd.scoreboard"),
            "DelayTable none",
            "WtmpLog off",
            "UseReverseDNS off",
            "RequireValidShell off",
            "RootLogin on",
            "AllowOverwrite on",
            "Umask 022",
            "MaxInstances 64",
            "SFTPEngine on",
            "SFTPLog %s" % os.path.join(d, "proftpd-sftp.log"),
            "SFTPHostKey %s" % self.host_key,
            "SFTPAuthorizedUserKeys file:%s" % self.authorized_keys_rfc,
            "SFTPAuthMethods publickey",
            "<Limit ALL SITE_CHMOD>",
            "  AllowAll",
            "</Limit>",
        ]
        cfg = os.path.join(d, "proftpd.conf")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        return [PROFTPD, "-n", "-c", cfg]

    def _dropbear_argv(self):
        wrapper = None
        sftp = self.subsystem or self.sftp_server
        if self.sftp_user or self.subsystem or os.path.realpath(sftp) != os.path.realpath(DROPBEAR_SFTP_PATH):
            # Dropbear runs its compiled-in sftp-server path: put a wrapper there.
            wrapper = os.path.join(self.dir, "dropbear-sftp-wrapper")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec %s\n" % self._sftp_command())
            os.chmod(wrapper, 0o755)
        db = [DROPBEAR, "-F", "-E", "-s", "-j", "-k", "-m", "-p", "127.0.0.1:%d" % self.port,
              "-r", self.host_key, "-P", os.path.join(self.dir, "dropbear.pid")]
        return self._in_namespace(db, wrapper)

    # -- running phsync --------------------------------------------------------------------

    def env(self, extra=None):
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": self.home,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "USER": self.user,
            "LOGNAME": self.user,
            # No helper bootstrap unless a test asks for it (test_helper.py): a run would
            # otherwise bring the static helper to the test server and go around the SFTP
            # server a test is about.
            "PHSYNC_HELPER_DIR": "",
        }
        env.update(sanitizer_env(extra))
        return env

    def argv(self, args):
        return [phsync_bin()] + [str(a) for a in args]

    def run(self, args, timeout=180, env=None, cwd=None, check_sanitizers_=True):
        """Runs phsync ARGS; returns Result(code, out, err).  No tty, stdin /dev/null."""
        argv = self.argv(args)
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=self.env(env), cwd=cwd or self.home,
                           timeout=timeout, start_new_session=True, umask=0o022)
        r = Result(p.returncode, p.stdout, p.stderr, argv)
        if check_sanitizers_:
            check_sanitizers(r.code, r.err, argv)
        return r

    def popen(self, args, env=None, **kw):
        """Starts phsync ARGS in the background (own session, no tty); stdout/stderr to pipes
        unless given."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(self.argv(args), stdin=subprocess.DEVNULL, env=self.env(env),
                                cwd=self.home, start_new_session=True, umask=0o022, **kw)

    def _helper_opts(self, opts):
        """The --helper options of a pull or push whose test names none: plain SFTP, or with
        PHSYNC_TEST_HELPER=1 `phsync serve` (the binary under test, as the remote helper): the
        whole suite then checks the helper as an SFTP server (docs/TESTING.md), except where
        the test's own SFTP server (subsystem, relay) is the point."""
        if any(str(o).startswith("--helper") for o in opts):
            return []
        if (os.environ.get("PHSYNC_TEST_HELPER") and self.subsystem is None and not self.relay
                and self.sftp_user is None and self.kind != "proftpd"):
            # Not with a hostile or relaying SFTP server: that server is what such a test tests
            # (nor with ProFTPD, which runs no commands).
            return ["--helper", "always", "--helper-path", phsync_bin()]
        # Otherwise plain SFTP, said outright: the test server has no phsync, and trying one
        # (--helper auto) costs each run a failed exec, which this sshd reports 0.5 s late
        # (test_helper.py covers auto's fallback).
        return ["--helper", "never"]

    def pull(self, remote, local, *opts, config=None, **kw):
        return self.run(["pull", "-F", config or self.config] + self._helper_opts(opts) + list(opts)
                        + ["phone:" + remote, local], **kw)

    def push(self, local, remote, *opts, config=None, **kw):
        return self.run(["push", "-F", config or self.config] + self._helper_opts(opts) + list(opts)
                        + [local, "phone:" + remote], **kw)

    def ssh_argv(self, config=None):
        """OpenSSH client argv reaching this server (for rsync -e, sftp, ...)."""
        return ["ssh", "-F", config or self.config]


def start_bench_server(statedir, clean_home=True, log=print, **kw):
    """A started SshServer for the benchmarks: with clean_home (root only) the login user's
    shell start-up files are hidden, so a .bashrc that starts pyenv is not timed in every
    session; without root, a plain server and a note through log.  Returns (server,
    whether start-up files are hidden)."""
    clean = clean_home and os.geteuid() == 0
    srv = SshServer(statedir=statedir, clean_home=clean, **kw)
    try:
        srv.start()
    except Unavailable as e:
        if not clean:
            raise
        log("note: %s; sessions run the login user's shell start-up files" % e)
        clean = False
        srv = SshServer(statedir=statedir, **kw)
        srv.start()
    return srv, clean


class _PortTaken(Exception):
    pass


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 in front of a server port that forwards both ways and cuts
    the connection (both sockets closed, RST on the client side) once `cut_after` bytes have
    passed (both directions together); None never cuts.  Counts bytes each way (.down, .up).
    Serves connections one after another, each with a fresh count."""

    def __init__(self, target_port, cut_after=None):
        import threading
        self.target_port, self.cut_after = target_port, cut_after
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        self.down = self.up = 0
        self.cuts = 0
        self._stop = False
        self._t = threading.Thread(target=self._serve, daemon=True)
        self._t.start()

    def _serve(self):
        import select
        while not self._stop:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                c.close()
                continue
            self.down = self.up = 0
            socks = [c, s]
            try:
                while not self._stop:
                    r, _, _ = select.select(socks, [], [], 0.2)
                    done = False
                    for x in r:
                        data = x.recv(65536)
                        if not data:
                            done = True
                            break
                        peer = c if x is s else s
                        total = self.down + self.up
                        if self.cut_after is not None and total + len(data) >= self.cut_after:
                            peer.sendall(data[:max(0, self.cut_after - total)])
                            self.cuts += 1
                            done = True
                            break
                        peer.sendall(data)
                        if x is s:
                            self.down += len(data)
                        else:
                            self.up += len(data)
                    if done:
                        break
            except OSError:
                pass
            finally:
                try:  # RST rather than FIN towards the client: a real cut
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
                c.close()
                s.close()

    def close(self):
        self._stop = True
        try:
            self.lsock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Tree helpers


class Entry:
    __slots__ = ("type", "size", "mtime", "mtime_ns", "mode", "ino", "ctime_ns", "digest", "target")

    def __repr__(self):
        return "Entry(%s size=%s mtime=%s mode=%o ino=%s)" % (self.type, self.size, self.mtime, self.mode, self.ino)


def _digest(path, size):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def start_ssh_agent(test, prefix="phsync-agent-"):
    """A real ssh-agent of the test's own, on a socket in a folder of its own, stopped and
    removed when the test ends. Returns (its socket, that folder). Waits until the socket takes
    a connection (never for a time: the file appears at the agent's bind, before its listen,
    and a client in between is refused); the agent exiting first or 30 s without it fail the
    test."""
    if not shutil.which("ssh-agent"):
        skip_or_fail("ssh-agent", "ssh-agent not installed")
    d = tempfile.mkdtemp(prefix=prefix)
    test.addCleanup(shutil.rmtree, d, True)
    sock = os.path.join(d, "agent.sock")
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    test.addCleanup(lambda: (agent.send_signal(signal.SIGTERM), agent.wait()))
    deadline = time.monotonic() + 30
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            try:
                c.connect(sock)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                pass
        test.assertIsNone(agent.poll(), "ssh-agent exited at start")
        test.assertLess(time.monotonic(), deadline, "ssh-agent's socket took no connection within 30 s")
        time.sleep(0.01)
    return sock, d


def tree(root, hashes=True, max_hash=64 << 20):
    """Snapshot of the tree under root, never following symlinks: {relpath: Entry}.
    relpath uses '/', the root itself is not included.  Files larger than max_hash are not
    hashed (digest None)."""
    out = {}

    def walk(dirpath, rel):
        with os.scandir(dirpath) as it:
            ents = sorted(it, key=lambda e: e.name)
        for de in ents:
            r = rel + de.name if not rel else rel + "/" + de.name
            st = os.lstat(de.path)
            e = Entry()
            e.size, e.mtime, e.mtime_ns = st.st_size, int(st.st_mtime), st.st_mtime_ns
            e.mode, e.ino, e.ctime_ns = stat.S_IMODE(st.st_mode), st.st_ino, st.st_ctime_ns
            e.digest = e.target = None
            if stat.S_ISLNK(st.st_mode):
                e.type, e.target = "l", os.readlink(de.path)
            elif stat.S_ISDIR(st.st_mode):
                e.type = "d"
            elif stat.S_ISREG(st.st_mode):
                e.type = "f"
                if hashes and st.st_size <= max_hash:
                    e.digest = _digest(de.path, st.st_size)
            else:
                e.type = "o"
            out[r] = e
            if e.type == "d":
                walk(de.path, r)

    walk(root, "")
    return out


def leftovers(root):
    """Relative paths under root whose name looks like a phsync temp file."""
    return sorted(r for r in tree(root, hashes=False) if TEMP_RE.match(r.rsplit("/", 1)[-1]))


def write_file(path, data=b"", mtime=None, mode=None):
    """Creates path (and its parents) with data; sets mode and mtime (seconds) if given."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def set_dir_mtimes(root, when):
    """Gives every directory under root (and root) mtime `when`, deepest first."""
    dirs = [root]
    for dp, dn, _ in os.walk(root):
        dirs += [os.path.join(dp, d) for d in dn]
    for d in sorted(dirs, key=len, reverse=True):
        if not os.path.islink(d):
            os.utime(d, (when, when))


def random_bytes(n, seed):
    """n deterministic pseudo-random bytes (fast: expands a seed with SHA-256 in counter mode
    for small n, random.randbytes for large)."""
    import random
    return random.Random(seed).randbytes(n)


def make_sparse(path, size, markers=()):
    """A sparse file of `size` bytes with (offset, bytes) markers written into it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
        for off, data in markers:
            f.seek(off)
            f.write(data)


def read_at(path, offset, n):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


# ---------------------------------------------------------------------------------------------
# unittest base class


class RelayFired:
    """For a SyncTestCase whose server runs the relay (SshServer(relay=True)): what the relay
    did, from its log."""

    def fired(self, mode, kind=None):
        """The relay's log lines of `mode` (and kind: the word after it), details only."""
        out = []
        for f in self.srv.relay_fired():
            w = f.split(" ", 2)
            if w[0] == mode and (kind is None or (len(w) > 1 and w[1] == kind)):
                out.append(f)
        return out

    def assertFired(self, mode, kind=None):
        self.assertTrue(self.fired(mode, kind), "the relay's %s%s never acted (fired: %r)"
                        % (mode, " " + kind if kind else "", self.srv.relay_fired()))


class SyncTestCase(unittest.TestCase):
    """One server per test class (setUpClass), fresh directories per test.

    self.remote   the "phone" folder (served over SFTP; tests write it directly)
    self.local    the laptop folder (not created: phsync pull must create it)
    self.outside  a sentinel folder next to both that nothing may ever touch
    """

    server_kwargs = {}
    srv = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.srv = SshServer(**cls.server_kwargs)
            cls.addClassCleanup(cls.srv.stop)
            cls.srv.start()
        except Unavailable as e:
            skip_or_fail(e.need, str(e))

    def setUp(self):
        if self.srv is not None and self.srv.relay:
            self.srv.relay_set()  # every test starts with a faithful relay
        self.tmp = tempfile.mkdtemp(prefix="phsync-test-", dir=os.environ.get("PHSYNC_TEST_TMPDIR"))
        os.chmod(self.tmp, 0o755)
        self.addCleanup(self._cleanup_tmp)
        self.remote = os.path.join(self.tmp, "phone")
        self.local = os.path.join(self.tmp, "laptop")
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(self.remote)
        os.chmod(self.remote, 0o755)
        os.makedirs(self.outside)
        write_file(os.path.join(self.outside, "sentinel.txt"), b"do not touch\n", mtime=1600000000)
        self._outside_before = tree(self.outside)

    def _cleanup_tmp(self):
        if os.environ.get("PHSYNC_KEEP_TEST_DIRS"):
            sys.stderr.write("\nkept %s\n" % self.tmp)
            return
        # chmod back anything a test made unreadable, then remove.
        for dp, dn, fn in os.walk(self.tmp):
            for d in dn:
                p = os.path.join(dp, d)
                if not os.path.islink(p):
                    try:
                        os.chmod(p, 0o755)
                    except OSError:
                        pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- running -------------------------------------------------------------------------------

    def pull(self, *opts, src=None, dst=None, config=None, expect=None, **kw):
        dst = dst or self.local
        r = self.srv.pull(src or self.remote, dst, *opts, config=config, **kw)
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        self._no_temps_after_success(r, dst)
        return r

    def push(self, *opts, src=None, dst=None, config=None, expect=None, **kw):
        dst = dst or self.remote
        r = self.srv.push(src or self.local, dst, *opts, config=config, **kw)
        if expect is not None:
            self.assertEqual(r.code, expect, r)
        self._no_temps_after_success(r, dst)
        return r

    def _no_temps_after_success(self, r, dst):
        # "No stray .phsync- temp file after any successful run", checked after every one.
        if r.code == 0 and os.path.isdir(dst):
            self.assertEqual(leftovers(dst), [], "temp files left by a successful run: %r" % (r,))

    # -- assertions -------------------------------------------------------------------------------

    def assertOutsideUntouched(self):
        """Nothing was created in, or changed under, the sentinel folder and the test's temp
        dir holds nothing but phone/, laptop/ and outside/ (and what the test made there)."""
        after = tree(self.outside)
        self.assertEqual(sorted(after), sorted(self._outside_before), "outside/ gained or lost entries")
        for k, e in after.items():
            b = self._outside_before[k]
            self.assertEqual((e.type, e.size, e.digest, e.mtime_ns, e.mode, e.ino),
                             (b.type, b.size, b.digest, b.mtime_ns, b.mode, b.ino), "outside/%s changed" % k)

    def assertNoLeftovers(self, *roots):
        for root in roots or (self.local, self.remote):
            if os.path.isdir(root):
                self.assertEqual(leftovers(root), [], "phsync temp files left under %s" % root)

    def assertTreesEqual(self, src, dst, modes=True, mtimes=True, dir_mtimes=True, ignore=()):
        """dst holds exactly what src holds (regular files and dirs; symlinks and specials in
        src are expected absent from dst), same bytes, mtimes (whole seconds), mode & 0777."""
        a = {k: v for k, v in tree(src).items() if v.type in "fd" and not any(k == i or k.startswith(i + "/") for i in ignore)}
        b = {k: v for k, v in tree(dst).items() if not any(k == i or k.startswith(i + "/") for i in ignore)}
        self.assertEqual(sorted(b), sorted(a), "different entries in %s vs %s" % (dst, src))
        for k, e in a.items():
            f = b[k]
            self.assertEqual(f.type, e.type, k)
            if e.type == "f":
                self.assertEqual(f.size, e.size, "size of %s" % k)
                if e.digest is not None:
                    self.assertEqual(f.digest, e.digest, "content of %s" % k)
                if mtimes:
                    self.assertEqual(f.mtime, e.mtime, "mtime of %s" % k)
                if modes:
                    self.assertEqual(oct(f.mode), oct(e.mode & 0o777), "mode of %s" % k)
            elif dir_mtimes:
                self.assertEqual(f.mtime, e.mtime, "mtime of directory %s" % k)


def folders_tree(root, folders=90, per_folder=1, when=1700000000):
    """FOLDERS folders d000, d001, ... of PER_FOLDER small files f0.jpg, f1.jpg, ... each (a
    listing long enough to ask for a second channel or helper: remote.c's MORE_AFTER is 64),
    folder i's files dated when + i. Returns root."""
    for i in range(folders):
        for k in range(per_folder):
            write_file(os.path.join(root, "d%03d" % i, "f%d.jpg" % k),
                       random_bytes(100 + 7 * k + i, 3 * i + k), mtime=when + i)
    return root


def sample_tree(root, seed=1, when=1700000000):
    """A small phone-like tree: nested folders, a few sizes, an empty file and an empty
    folder, fixed mtimes (files one minute apart, folders set last).  Returns root."""
    files = {
        "DCIM/Camera/IMG_20231114_100000.jpg": 300_000,
        "DCIM/Camera/IMG_20231114_100100.jpg": 1_234_567,
        "DCIM/Camera/VID_20231114_100200.mp4": 2_500_000,
        "DCIM/Screenshots/Screenshot_1.png": 45_000,
        "DCIM/.cache/1001.jpg": 5_000,
        "DCIM/.cache/1002.jpg": 4_096,
        "Download/notes.txt": 17,
        "Download/empty.dat": 0,
        "top.txt": 1,
    }
    for i, (rel, size) in enumerate(sorted(files.items())):
        write_file(os.path.join(root, rel), random_bytes(size, seed * 1000 + i), mtime=when + 60 * i, mode=0o644)
    os.makedirs(os.path.join(root, "Music/empty-folder"), exist_ok=True)
    set_dir_mtimes(root, when - 3600)
    return root


# ---------------------------------------------------------------------------------------------
# command line


def _main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="harness.py", description="throwaway loopback SSH server")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="start a server; print its ssh_config path; run until killed")
    s.add_argument("statedir", help="folder for the keys, ssh_config, known_hosts and server log")
    s.add_argument("--dropbear", action="store_true", help="Dropbear instead of OpenSSH sshd")
    s.add_argument("--sftp-server", help="sftp-server binary (default %s)" % OPENSSH_SFTP_SERVER)
    s.add_argument("--gesftpserver", action="store_true", help="use %s" % GESFTPSERVER)
    s.add_argument("--clean-home", action="store_true",
                   help="(root) hide the login user's home and its shell start-up files from sessions")
    s.add_argument("--password", action="store_true",
                   help="(OpenSSH, root) a fresh phone to pair with: also take a password login "
                        "($HARNESS_PASSWORD, else a throwaway one; printed on stderr)")
    a = ap.parse_args(argv)
    sftp = GESFTPSERVER if a.gesftpserver else a.sftp_server
    password = None
    if a.password:
        import secrets
        password = os.environ.get("HARNESS_PASSWORD") or secrets.token_urlsafe(9)
    srv = SshServer(kind="dropbear" if a.dropbear else "openssh", sftp_server=sftp,
                    statedir=os.path.abspath(a.statedir), clean_home=a.clean_home,
                    password=password)
    try:
        srv.start()
    except Unavailable as e:
        sys.stderr.write("harness: %s\n" % e)
        return 1
    if password is not None:
        # A phone with photos on it, and where to find it.
        sample_tree(srv.login_home)
        address = "%s@127.0.0.1:%d" % (srv.user, srv.port)
        with open(os.path.join(srv.dir, "address"), "w") as f:
            f.write(address + "\n")
        sys.stderr.write("harness: a fresh phone at %s, password: %s\n" % (address, password))
    stop = []
    signal.signal(signal.SIGTERM, lambda *x: stop.append(1))
    signal.signal(signal.SIGINT, lambda *x: stop.append(1))
    sys.stdout.write(srv.config + "\n")
    sys.stdout.flush()
    sys.stderr.write("harness: %s on 127.0.0.1:%d (Host phone in %s); stop with kill %d\n"
                     % (srv.kind, srv.port, srv.config, os.getpid()))
    try:
        while not stop and srv.proc is not None and srv.proc.poll() is None:
            time.sleep(0.2)
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
