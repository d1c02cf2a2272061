#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""`phsync pair` and `phsync doctor` through phsync.exe under Wine, against a
real OpenSSH sshd on 127.0.0.1 that takes a password, as a fresh phone does.

    python3 pair_loop.py [EMULATOR...] PHSYNC_EXE

Starts a throwaway sshd (tests/lib/harness.py, password=...: OpenSSH as root,
the login user's home an empty folder) and runs the exe (under the emulator:
Wine) on a pseudo-terminal, as a Windows user types into a console (Wine makes
a console of the terminal; the password is read from CONIN$ with echo off):
- pair with a wrong password (three times): exit 3, "Password refused", and
  nothing written on either side (the laptop's config, known_hosts, key, the
  phone's .ssh);
- pair, answering yes to the host key (its fingerprint shown first) and the
  password: exit 0, the password never echoed; an ed25519 key made, only for
  its owner (an owner-only DACL, PH_O_PRIVATE: Wine's mode for it has no bits
  for others, where the public key's has),
  that OpenSSH's ssh-keygen reads back to the same public key; the phone's
  authorized_keys holds it once (0600, in a .ssh that only its owner may
  write); known_hosts holds the server's key; the config keeps the user's lines
  byte for byte and gains one `Host phone2` block (HostName, Port, User,
  IdentityFile); OpenSSH's ssh logs in by that name with the key alone;
- a pull by the pair's name (`phone2:DIR`, no terminal) copies a photo with its
  bytes and mtime; pairing again asks nothing, says "already paired" and changes
  no byte, mode or mtime of those files;
- doctor --json of the pair: every check in order, OpenSSH reachable, the host
  key's fingerprint, the login user, exact times, a case-sensitive folder, the
  free space as statvfs says, the helper brought from helpers/ beside phsync.exe
  (the build's, as in the zip: deltas both ways through it), exit 0 and "A sync can run." in
  the human form; nothing left in the folder checked; doctor of a closed port
  (exit 3, the rest skipped), of a host whose key is unknown (exit 4, known_hosts
  untouched) and of a missing folder (exit 1, not made).
Exits 0 when every check holds, 1 with what differed.
"""

import json
import os
import re
import stat
import subprocess
import sys
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from ptyrun import run_on_pty  # noqa: E402
from pull_loop import Failed, check, files, run, run_steps  # noqa: E402

PASSWORD = "correct horse 42"
T0 = 1700000000
CHECKS = ["reachable", "host_key", "key_login", "sftp", "window", "exec", "helper", "extensions",
          "folder", "times", "case", "free_space", "pull_deltas", "push_deltas"]
CFG_BEFORE = ("# my settings\r\n"
              "GlobalKnownHostsFile %s\r\n"
              "\r\n"
              "Host laptop-nas\r\n"
              "  HostName nas.example\r\n"
              "  Port 2200")  # Windows line ends, no newline at the end: kept as they are


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class Laptop:
    """The laptop's side: its ssh config, known_hosts and key, in a folder of the test's."""

    def __init__(self, srv, tmp):
        self.dir = os.path.join(tmp, "laptop-ssh")
        os.makedirs(self.dir)
        self.cfg = os.path.join(self.dir, "config")
        self.kh = os.path.join(self.dir, "known_hosts")
        self.key = os.path.join(self.dir, "keys", "phsync_ed25519")
        self.before = ("UserKnownHostsFile %s\r\n" % self.kh
                       + CFG_BEFORE % os.path.join(self.dir, "global_known_hosts"))
        harness.write_file(self.cfg, self.before.encode())
        self.phone_ssh = os.path.join(srv.login_home, ".ssh")

    def snapshot(self):
        """Every file pairing may touch, laptop and phone: bytes, mode, mtime."""
        snap = {}
        for p in (self.cfg, self.kh, self.key, self.key + ".pub",
                  os.path.join(self.phone_ssh, "authorized_keys")):
            try:
                st = os.lstat(p)
                snap[p] = (read(p), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            except FileNotFoundError:
                snap[p] = None
        snap["phone .ssh"] = (sorted(os.listdir(self.phone_ssh))
                              if os.path.isdir(self.phone_ssh) else None)
        snap["keys"] = os.path.isdir(os.path.dirname(self.key))
        return snap


LAPTOP = {}


def pair(exe, srv, lap, env, answers):
    """phsync.exe pair on a terminal; answers: (text seen, what to type), in order."""
    cmd = exe + ["pair", "-F", lap.cfg, "--key", lap.key, "--timeout", "60", "phone2",
                 "%s@127.0.0.1:%d" % (srv.user, srv.port)]
    # A terminal wide enough that Wine's console wraps no line (a fingerprint stays whole).
    argv = ["/bin/sh", "-c", 'stty cols 400 rows 50 && exec "$@"', "sh"] + cmd
    steps = [(re.escape(seen.encode()), keys(typed.encode() + b"\r")) for seen, typed in answers]
    return run_on_pty(argv, env, steps, timeout=300, sanitizers=False)


def screen(r):
    """What the terminal shows: Wine's console draws with escape sequences (the cursor hidden
    and shown around each character, a space as "cursor forward")."""
    text = re.sub(r"\x1b\[(\d*)C", lambda m: " " * int(m.group(1) or 1), r.text)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


def keys(data):
    """Types data as a Windows console gets keys: Wine's console reads the terminal as it
    finds it, and a line discipline in its default (cooked) mode would turn the Enter key's
    CR into LF (ICRNL, which Wine's line editing takes as Ctrl-J, not Enter) and echo what is
    typed (a password too) by itself. Raw, as a terminal emulator's console is."""
    def act(_pid, fd, _m):
        tty.setraw(fd)
        os.write(fd, data)
    return act


def pair_by_password(exe, srv, tmp, env):
    lap = LAPTOP["lap"] = Laptop(srv, tmp)
    before = lap.snapshot()
    r = pair(exe, srv, lap, env, [("(yes/no)", "yes")] + [("password:", "wrong")] * 3)
    if r.code != 3 or "Password refused" not in screen(r):
        raise Failed("pair with a wrong password: %s" % r)
    if lap.snapshot() != before:
        raise Failed("a refused password wrote something: %r then %r" % (before, lap.snapshot()))

    r = pair(exe, srv, lap, env, [("(yes/no)", "yes"), ("password:", PASSWORD)])
    if r.code != 0:
        raise Failed("pair: %s" % r)
    if srv.host_fingerprint not in screen(r) or PASSWORD in screen(r):
        raise Failed("pair showed no fingerprint, or echoed the password: %s" % r)
    pub = (read(lap.key + ".pub") or b"").decode().split()
    if pub[:1] != ["ssh-ed25519"]:
        raise Failed("no ed25519 public key: %r" % pub)
    # The key is made with an owner-only DACL (pfs.h's PH_O_PRIVATE; OpenSSH for Windows
    # refuses a key others may read). Wine keeps a DACL as the Unix mode it maps to: the
    # owner's bits and the group's (Wine's own mapping), none for others, where the public
    # key, made without it, is readable by all. OpenSSH here wants 0600 before reading it.
    modes = tuple(stat.S_IMODE(os.stat(p).st_mode) for p in (lap.key, lap.key + ".pub"))
    if modes[0] & 0o007 or not modes[1] & 0o004:
        raise Failed("the key's and the public key's modes under Wine: %o %o" % modes)
    os.chmod(lap.key, 0o600)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", lap.key], stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=60)
    if derived.returncode != 0 or derived.stdout.decode().split()[:2] != pub[:2]:
        raise Failed("ssh-keygen -y on the key made: %r" % (derived,))
    ak = os.path.join(lap.phone_ssh, "authorized_keys")
    lines = [l.split()[:2] for l in (read(ak) or b"").decode().splitlines()]
    if lines != [pub[:2]]:
        raise Failed("the phone's authorized_keys: %r, not the key once" % lines)
    if stat.S_IMODE(os.stat(ak).st_mode) != 0o600 or os.stat(lap.phone_ssh).st_mode & 0o022:
        raise Failed("the phone's .ssh or authorized_keys can be written by others")
    if srv.host_pub.split()[1] not in (read(lap.kh) or b"").decode():
        raise Failed("known_hosts lacks the server's key: %r" % read(lap.kh))
    cfg = read(lap.cfg).decode()
    block = cfg[len(lap.before):]
    want = ["Host phone2\n", "  HostName 127.0.0.1\n", "  Port %d\n" % srv.port,
            "  User %s\n" % srv.user, "  IdentityFile "]
    if (not cfg.startswith(lap.before) or cfg.count("Host phone2") != 1
            or any(w not in block for w in want)):
        raise Failed("the config after pairing:\n%s" % cfg)
    # OpenSSH's ssh by the new name, the key alone (the IdentityFile pairing wrote).
    p = subprocess.run(["ssh", "-F", lap.cfg, "-o", "BatchMode=yes", "phone2", "echo", "ok"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    if (p.returncode, p.stdout) != (0, b"ok\n"):
        raise Failed("ssh by the pair's name: %d %r %r\nconfig:\n%s"
                     % (p.returncode, p.stdout, p.stderr, cfg))


def pull_by_name(exe, srv, tmp, env):
    lap = LAPTOP["lap"]
    remote = os.path.join(srv.dir, "photos")
    harness.write_file(os.path.join(remote, "DCIM", "Camera", "IMG_1.jpg"), b"photo" * 999,
                       mtime=T0)
    local = os.path.join(tmp, "Pictures")
    r = run(exe + ["pull", "-F", lap.cfg, "--state-dir", os.path.join(tmp, "state"),
                   "phone2:" + remote, local], env)
    check(r.returncode == 0, "the pull by the pair's name exited %d" % r.returncode, r)
    check(files(local) == {os.path.join("DCIM", "Camera", "IMG_1.jpg"): (b"photo" * 999, T0)},
          "the pull by the pair's name brought %r" % sorted(files(local)), r)
    # Pairing again: nothing asked, nothing changed.
    before = lap.snapshot()
    r = pair(exe, srv, lap, env, [])
    if r.code != 0 or "already paired" not in screen(r) or "password" in screen(r).lower():
        raise Failed("pairing again: %s" % r)
    if lap.snapshot() != before:
        raise Failed("pairing again changed files: %r then %r" % (before, lap.snapshot()))


def doctor(exe, srv, env, cfg, target, expect):
    r = run(exe + ["doctor", "-F", cfg, "--json", "--timeout", "60", target], env)
    check(r.returncode == expect, "doctor %s exited %d, not %d" % (target, r.returncode, expect),
          r)
    evs = [json.loads(l) for l in r.stdout.decode().splitlines() if l.startswith("{")]
    check([e.get("check") for e in evs[:-1]] == CHECKS, "doctor's checks", r)
    check(evs[-1].get("event") == "doctor" and evs[-1].get("exit") == expect,
          "doctor's summary", r)
    for e in evs[:-1]:
        check(e["event"] == "check" and e["status"] in ("ok", "warn", "fail", "skip")
              and e["detail"], "doctor's event %r" % e, r)
    return {e["check"]: e for e in evs[:-1]}, r


def doctor_reports(exe, srv, tmp, env):
    remote = os.path.join(srv.dir, "doctor-dir")
    harness.write_file(os.path.join(remote, "IMG_1.jpg"), b"photo", mtime=T0)
    before = files(remote)
    # The pair's name and key (the password phone knows no other key).
    cfg = LAPTOP["lap"].cfg
    c, r = doctor(exe, srv, env, cfg, "phone2:" + remote, 0)
    for name in ("reachable", "host_key", "key_login", "sftp", "window", "exec", "folder",
                 "times", "case", "free_space"):
        check(c[name]["status"] == "ok", "doctor's %s: %r" % (name, c[name]), r)
    check("OpenSSH" in c["reachable"]["detail"], "doctor's reachable names no OpenSSH", r)
    check(c["host_key"]["value"] == srv.host_fingerprint, "doctor's host key", r)
    check(c["key_login"]["value"] == srv.user, "doctor's login user", r)
    check(c["times"]["value"] == "exact" and c["case"]["value"] == "sensitive",
          "doctor's times and case", r)
    st = os.statvfs(remote)
    check(abs(int(c["free_space"]["value"]) - st.f_bavail * st.f_frsize) < 256 << 20,
          "doctor's free space %s" % c["free_space"]["value"], r)
    # The helper for the phone's CPU lies in helpers/ beside phsync.exe (as in the zip):
    # brought and run, and deltas both ways go through it.
    check((c["helper"]["status"], c["helper"]["value"]) == ("ok", "brought"),
          "doctor's helper: %r" % c["helper"], r)
    check(c["pull_deltas"]["value"] == "helper" and c["push_deltas"]["value"] == "helper",
          "doctor's deltas: %r %r" % (c["pull_deltas"], c["push_deltas"]), r)
    check(files(remote) == before, "doctor left something in the folder", r)
    r = run(exe + ["doctor", "-F", cfg, "phone2:" + remote], env)
    lines = r.stdout.decode().replace("\r\n", "\n").splitlines()
    check(r.returncode == 0 and [l.split()[0] for l in lines[:len(CHECKS)]]
          == [c[n]["status"] for n in CHECKS] and lines[len(CHECKS)].startswith("A sync can run"),
          "doctor's human report", r)

    c, r = doctor(exe, srv, env, srv.write_config(port=harness.free_port()),
                  "phone:" + remote, 3)
    check(c["reachable"]["status"] == "fail"
          and {c[n]["status"] for n in CHECKS[1:]} == {"skip"}, "doctor of a closed port", r)
    unknown = srv.write_config(known_hosts="none", strict=None)
    c, r = doctor(exe, srv, env, unknown, "phone:" + remote, 4)
    check(c["host_key"]["status"] == "fail" and c["host_key"]["value"] == srv.host_fingerprint
          and {c[n]["status"] for n in CHECKS[2:]} == {"skip"}, "doctor of an unknown key", r)
    check(read(srv.known_hosts_of(unknown)) == b"", "doctor wrote known_hosts", r)
    missing = os.path.join(remote, "nope")
    c, r = doctor(exe, srv, env, cfg, "phone2:" + missing, 1)
    check(c["folder"]["status"] == "fail" and not os.path.exists(missing),
          "doctor of a missing folder", r)


def main(argv):
    return run_steps("pair_loop", __doc__, (pair_by_password, pull_by_name, doctor_reports),
                     argv, password=PASSWORD)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
