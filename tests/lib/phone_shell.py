#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The phone's shell, for the test sshd: `ForceCommand python3 phone_shell.py CONTROL`.

sshd runs every exec and subsystem request through this (the client's command is in
SSH_ORIGINAL_COMMAND). CONTROL is a JSON file read at each start; with {} or no file the
command runs as sshd would run it (`/bin/sh -c COMMAND`). Keys:

  shell   argv of the login shell that runs the command (e.g. ["/usr/bin/mksh"]): -c COMMAND
          is added
  path    folders put first on PATH: a phone's own tools (toybox or busybox links named sh,
          ls, cat, id, uname)
  env     variables set for the command (e.g. {"QUOTING_STYLE": "shell-always"}: a user's
          setting that changes what GNU ls prints)
  noproc  run the command in a mount namespace of its own with an empty tmpfs over /proc (a
          phone where /proc cannot be read; needs root)
  swap    {"file": F, "planted": P}: another user who can write F's folder replaces F (a
          rename over it, as from a temp file beside it) by the bytes of P, at the last moment
          before the cached helper is executed, after phsync checked it:
          - a command that executes F by name (`.cache/phsync/phsync-helper-... serve ROOT`,
            phsync up to 797e3f4, which checked the file over SFTP before): F is replaced
            before the command starts;
          - any other command naming F (the start-up script, docs/PROTOCOL.md "Bootstrap"):
            the command's input is relayed, and F is replaced just before the client's "run"
            line (sent once phsync has compared the bytes) reaches it.
          Each replacement appends "FIRED swap" to CONTROL.log.
"""

import json
import os
import subprocess
import sys
import threading

CACHE_PREFIX = ".cache/phsync/phsync-helper-"


def log(control, line):
    with open(control + ".log", "a") as f:
        f.write(line + "\n")


def swap(control, spec):
    f = spec["file"]
    with open(spec["planted"], "rb") as src:
        data = src.read()
    tmp = os.path.join(os.path.dirname(f), ".planted-%d" % os.getpid())
    with open(tmp, "wb") as out:
        out.write(data)
    os.chmod(tmp, 0o700)
    os.replace(tmp, f)
    log(control, "FIRED swap %s" % f)


def relay_swapping(control, spec, argv, env):
    """Runs argv with our input relayed to it; the first "run" line from the client is passed
    on only after the swap."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)

    def pump():
        first = True
        try:
            while True:
                b = os.read(0, 65536)
                if not b:
                    break
                if first and b.startswith(b"run\n"):
                    swap(control, spec)
                first = False
                p.stdin.write(b)
                p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            p.stdin.close()
        except OSError:
            pass

    threading.Thread(target=pump, daemon=True).start()
    os._exit(p.wait() & 0xFF)


def main():
    control = sys.argv[1]
    try:
        with open(control) as f:
            ctl = json.load(f)
    except (OSError, ValueError):
        ctl = {}
    cmd = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    # Every command the phone was asked to run, its first line (CONTROL.log "RAN ...").
    log(control, "RAN " + cmd.split("\n", 1)[0][:200])
    env = dict(os.environ)
    if ctl.get("path"):
        env["PATH"] = ":".join(ctl["path"] + [env.get("PATH", "/usr/bin:/bin")])
    env.update(ctl.get("env") or {})
    argv = list(ctl.get("shell") or ["/bin/sh"]) + ["-c", cmd]
    if ctl.get("noproc"):
        argv = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                'mount -t tmpfs none /proc && exec "$@"', "sh"] + argv
    spec = ctl.get("swap")
    if spec and CACHE_PREFIX in cmd:
        if cmd.startswith(CACHE_PREFIX):
            swap(control, spec)
        else:
            relay_swapping(control, spec, argv, env)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
