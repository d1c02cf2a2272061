#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""phsync.exe under Wine against a real OpenSSH sshd on 127.0.0.1: pull, push
and a run that changes nothing, checked on disk.

    python3 pull_loop.py [EMULATOR...] PHSYNC_EXE

Starts a throwaway sshd (tests/lib/harness.py), fills a phone folder, and runs
the exe (under the emulator: Wine) with the server's ssh_config (-F) and a
state folder of its own, as a Windows user would run it:
- a pull copies every file with its bytes and mtime (a UTF-8 name, a 300 kB
  file, a subfolder, an empty file), and reports and skips the names a
  Windows folder cannot hold (CON.txt, a:b.jpg: ph_probe_winnames asks the
  folder, and Wine refuses them as Windows does), writing nothing else;
- a second pull moves nothing; a file changed on the phone comes again;
- a push of a new laptop file puts it on the phone with its bytes and mtime;
- a pull with -F a config in a folder named `clés 日本` works (libssh opens it
  by the name ph_ansi_path gives: ANSI, or the 8.3 short name).
Exits 0 when every check holds, 1 with what differed. The server and the
files go when it ends.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from watcher import read_or_none  # noqa: E402,F401  (the loops take it from here)

T0 = 1700000000
FILES = {"photo.jpg": b"jpeg " * 1000, "été 日本.txt": "été\n".encode(), "empty": b"",
         "sub/big.bin": bytes((i * 131 >> 3) & 0xFF for i in range(300001))}
UNHOLDABLE = ["CON.txt", "a:b.jpg"]


class Failed(Exception):
    pass


def check(cond, what, r=None):
    if not cond:
        raise Failed(what + ("" if r is None else "\n--- stdout ---\n%s--- stderr ---\n%s"
                             % (r.stdout.decode(errors="replace"),
                                r.stderr.decode(errors="replace"))))


def files(root):
    """{relative path: (bytes, mtime)} of every file under root (bytes None for a file that
    went while it was read: a watcher may be writing)."""
    out = {}
    for dp, _dn, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            out[os.path.relpath(p, root)] = (read_or_none(p), int(os.stat(p).st_mtime))
    return out


def events(r):
    return [json.loads(l) for l in r.stdout.decode().splitlines() if l.startswith("{")]


def file_paths(r, status):
    """The paths of r's `file` events with that status ("ok", "failed"), sorted."""
    return sorted(e.get("path") for e in events(r)
                  if e.get("event") == "file" and e.get("status") == status)


def run(argv, env):
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=600)


def loop(exe, srv, tmp, env):
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    state = os.path.join(tmp, "state")
    for rel, data in FILES.items():
        harness.write_file(os.path.join(phone, rel), data, mtime=T0)
    for rel in UNHOLDABLE:
        harness.write_file(os.path.join(phone, rel), b"not for windows", mtime=T0)
    pull = exe + ["pull", "-F", srv.config, "--state-dir", state, "--json",
                  "phone:" + phone, local]
    r = run(pull, env)
    check(r.returncode == 0, "the first pull exited %d" % r.returncode, r)
    want = {rel: (data, T0) for rel, data in FILES.items()}
    check(files(local) == want, "the laptop folder after the first pull: %r"
          % sorted(files(local)), r)
    skips = sorted(e["path"] for e in events(r) if e.get("event") == "skip")
    check(skips == sorted(UNHOLDABLE), "skipped %r, not the names Windows cannot hold" % skips, r)
    check(events(r)[-1].get("files_done") == len(FILES), "files_done of the first pull", r)

    r = run(pull, env)
    check(r.returncode == 0 and events(r)[-1].get("files_done") == 0,
          "a second pull moved something", r)
    harness.write_file(os.path.join(phone, "photo.jpg"), b"edited on the phone", mtime=T0 + 60)
    r = run(pull, env)
    check(r.returncode == 0 and events(r)[-1].get("files_done") == 1,
          "the edited photo did not come alone", r)
    check(files(local)["photo.jpg"] == (b"edited on the phone", T0 + 60), "the edited photo", r)

    harness.write_file(os.path.join(local, "from laptop.txt"), b"made on Windows\r\n",
                       mtime=T0 + 120)
    push = exe + ["push", "-F", srv.config, "--state-dir", state, "--json", local,
                  "phone:" + phone]
    r = run(push, env)
    check(r.returncode == 0, "the push exited %d" % r.returncode, r)
    got = files(phone).get("from laptop.txt")
    check(got == (b"made on Windows\r\n", T0 + 120), "the pushed file on the phone: %r" % (got,), r)
    for rel in UNHOLDABLE:
        check(os.path.exists(os.path.join(phone, rel)), "the phone lost " + rel, r)


def config_in_unicode_folder(exe, srv, tmp, env):
    """-F a config in a folder the ANSI code page cannot spell: libssh and
    phsync's own Host lookups open it with the C runtime's narrow fopen, so
    ph_ansi_path hands them its short name (before, the run said "ssh config
    ...: No such file or directory")."""
    d = os.path.join(tmp, "cl\u00e9s \u65e5\u672c")
    os.makedirs(d)
    with open(srv.config) as f:
        text = f.read()
    cfg = os.path.join(d, "config")
    with open(cfg, "w") as f:
        f.write(text)
    phone = os.path.join(tmp, "phone-u")
    harness.write_file(os.path.join(phone, "a.jpg"), b"through a unicode config", mtime=T0)
    local = os.path.join(tmp, "laptop-u")
    r = run(exe + ["pull", "-F", cfg, "--state-dir", os.path.join(tmp, "state-u"), "--json",
                   "phone:" + phone, local], env)
    check(r.returncode == 0, "the pull with the config in %r exited %d" % (d, r.returncode), r)
    check(files(local) == {"a.jpg": (b"through a unicode config", T0)}, "the pull's copy", r)


def run_steps(name, doc, steps, argv, **server):
    """The loops' main: argv is [EMULATOR...] PHSYNC_EXE; one throwaway sshd (harness.SshServer
    with the keywords in server) and folder for all the steps, each called as
    step(exe, srv, tmp, env); 0, 1 naming the step that failed (with the server's log), 2
    without an exe."""
    if len(argv) < 1:
        sys.stderr.write(doc)
        return 2
    env = dict(os.environ)
    env.setdefault("WINEDEBUG", "-all")
    with harness.SshServer(**server) as srv, \
            tempfile.TemporaryDirectory(prefix="phsync-win-") as tmp:
        for step in steps:
            try:
                step(list(argv), srv, tmp, env)
            except Failed as e:
                sys.stderr.write("%s %s: %s\nthe server's log:\n%s\n"
                                 % (name, step.__name__, e, srv.log_text()[-3000:]))
                return 1
    return 0


def main(argv):
    return run_steps("pull_loop", __doc__, [loop, config_in_unicode_folder], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
