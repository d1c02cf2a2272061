#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Checks phsync-VERSION-win64.zip (scripts/win-package.py) as a Windows user
would meet it:

    python3 zip_check.py ZIP [EMULATOR...]

- it holds exactly phsync.exe, README.txt, phsync-daemon-task.xml, LICENSE.txt,
  one man/NAME.txt per man page of docs/ and the phone helpers
  helpers/phsync-helper-{x86_64,aarch64,armv7} (static ELF programs for those
  machines), under one top folder;
- the text files have Windows line ends, the man pages are plain text (no
  groff overstrikes nor escapes);
- the task XML is UTF-16 with a byte-order mark, a Task Scheduler task that
  runs `phsync.exe daemon` from %LOCALAPPDATA%\\Programs\\phsync at logon,
  and Wine's schtasks registers it (and refuses the same file with its root
  element renamed, so the acceptance means something);
- the exe, unpacked, runs under the emulator and says its version.
Exits 0, or 1 saying what differed.
"""

import os
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


def fail(msg):
    sys.stderr.write("zip_check: %s\n" % msg)
    sys.exit(1)


def schtasks(emu, args, env):
    return subprocess.run(emu + ["schtasks"] + args, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)


# The phones' architectures and their ELF e_machine (build-windows.sh builds all three).
ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "armv7": 40}


def check_helper(arch, machine, elf):
    """A static Linux program for arch: ELF, the machine, no program interpreter."""
    if elf[:4] != b"\x7fELF" or elf[5] != 1:
        fail("helpers/phsync-helper-%s is not a little-endian ELF file" % arch)
    wide = elf[4] == 2
    if struct.unpack_from("<H", elf, 18)[0] != machine:
        fail("helpers/phsync-helper-%s is for ELF machine %d, not %d"
             % (arch, struct.unpack_from("<H", elf, 18)[0], machine))
    if wide:
        phoff, = struct.unpack_from("<Q", elf, 32)
        phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    else:
        phoff, = struct.unpack_from("<I", elf, 28)
        phentsize, phnum = struct.unpack_from("<HH", elf, 42)
    for i in range(phnum):
        if struct.unpack_from("<I", elf, phoff + i * phentsize)[0] == 3:  # PT_INTERP
            fail("helpers/phsync-helper-%s is not static (it names an interpreter)" % arch)


def winpath(path):
    return "Z:" + path.replace("/", "\\")


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    zpath, emu = argv[0], argv[1:]
    top = os.path.basename(zpath)[:-len(".zip")]
    version = top[len("phsync-"):-len("-win64")]
    pages = sorted(os.path.splitext(p)[0] for p in os.listdir(os.path.join(ROOT, "docs"))
                   if p.endswith((".1", ".5")))
    want = sorted(["phsync.exe", "README.txt", "phsync-daemon-task.xml", "LICENSE.txt"] +
                  ["man/%s.txt" % p for p in pages] +
                  ["helpers/phsync-helper-" + a for a in ELF_MACHINE])
    with zipfile.ZipFile(zpath) as z:
        names = sorted(n[len(top) + 1:] for n in z.namelist())
        if any(not n.startswith(top + "/") for n in z.namelist()) or names != want:
            fail("entries %r, expected %r under %s/" % (z.namelist(), want, top))
        data = {n: z.read(top + "/" + n) for n in names}
    for n in names:
        if n.endswith(".txt"):
            text = data[n]
            if b"\n" in text.replace(b"\r\n", b"") or b"\x08" in text or b"\x1b" in text:
                fail("%s: not plain text with Windows line ends" % n)
    for arch, machine in ELF_MACHINE.items():
        check_helper(arch, machine, data["helpers/phsync-helper-" + arch])
    if b"phsync pull" not in data["man/phsync.txt"] or b"PHSYNC(1)" not in data["man/phsync.txt"]:
        fail("man/phsync.txt is not the phsync(1) page")
    xml = data["phsync-daemon-task.xml"]
    if not xml.startswith(b"\xff\xfe"):
        fail("the task XML has no UTF-16 byte-order mark")
    task = ET.fromstring(xml[2:].decode("utf-16-le").replace('encoding="UTF-16"', "", 1))
    cmd = task.findtext("t:Actions/t:Exec/t:Command", namespaces=NS)
    args = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=NS)
    if cmd != "%LOCALAPPDATA%\\Programs\\phsync\\phsync.exe" or args != "daemon":
        fail("the task runs %r %r" % (cmd, args))
    if task.find("t:Triggers/t:LogonTrigger", NS) is None:
        fail("the task has no logon trigger")
    if task.findtext("t:Settings/t:ExecutionTimeLimit", namespaces=NS) != "PT0S":
        fail("the task would stop the daemon after a time limit")

    env = dict(os.environ)
    env.setdefault("WINEDEBUG", "-all")
    with tempfile.TemporaryDirectory(prefix="phsync-zip-") as tmp:
        name = "phsync-zip-check-%d" % os.getpid()
        good = os.path.join(tmp, "task.xml")
        with open(good, "wb") as f:
            f.write(xml)
        bad = os.path.join(tmp, "bad.xml")
        with open(bad, "wb") as f:
            f.write(xml.replace("<Task ".encode("utf-16-le"), "<Tusk ".encode("utf-16-le"))
                    .replace("</Task>".encode("utf-16-le"), "</Tusk>".encode("utf-16-le")))
        r = schtasks(emu, ["/create", "/xml", winpath(good), "/tn", name], env)
        if r.returncode != 0:
            fail("schtasks refused the task XML: %s" % r.stderr.decode(errors="replace"))
        schtasks(emu, ["/delete", "/tn", name, "/f"], env)
        r = schtasks(emu, ["/create", "/xml", winpath(bad), "/tn", name + "-bad"], env)
        if r.returncode == 0:
            schtasks(emu, ["/delete", "/tn", name + "-bad", "/f"], env)
            fail("schtasks took a task whose root is not <Task>: the check proves nothing")
        with zipfile.ZipFile(zpath) as z:
            z.extract(top + "/phsync.exe", tmp)
        r = subprocess.run(emu + [os.path.join(tmp, top, "phsync.exe"), "--version"], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        if r.returncode != 0 or version.encode() not in r.stdout:
            fail("phsync.exe --version: exit %d, %r %r" % (r.returncode, r.stdout, r.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
