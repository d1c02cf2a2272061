#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Makes phsync-VERSION-win64.zip from a Windows build (scripts/build-windows.sh
calls it once phsync.exe is built; docs/WINDOWS.md, "Packaging").

    python3 scripts/win-package.py BUILD_DIR VERSION [STRIP]

BUILD_DIR holds phsync.exe; the zip is written there. In it: phsync.exe
(stripped with STRIP, x86_64-w64-mingw32-strip by default: the debug
information stays in the build), README.txt (docs/README-windows.txt),
phsync-daemon-task.xml (examples/, in UTF-16 with a byte-order mark, as Task
Scheduler exports its tasks), the man pages rendered as text by groff
(man/NAME.txt), LICENSE.txt, and the phone helpers the build made
(helpers/phsync-helper-ARCH, static Linux programs phsync.exe brings to a
phone without phsync). Text files get Windows line ends. The entries'
times are the source's last commit (SOURCE_DATE_EPOCH when set), so the zip
is the same for the same sources. Prints the zip's path.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def crlf(text):
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")


def man_text(page):
    """A man page as plain text: groff's UTF-8 output without overstrikes."""
    out = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-P", "-cbou", page],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True,
                         env=dict(os.environ, LC_ALL="C.UTF-8")).stdout.decode("utf-8")
    if not out.strip():
        raise SystemExit("win-package.py: groff rendered %s empty" % page)
    return out


def source_time():
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    try:
        return int(subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 315532800  # 1980-01-01, the first time a zip can hold


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out, version = argv[0], argv[1]
    strip = argv[2] if len(argv) > 2 else "x86_64-w64-mingw32-strip"
    exe = os.path.join(out, "phsync.exe")
    if not os.path.isfile(exe):
        sys.stderr.write("win-package.py: no %s\n" % exe)
        return 1
    stamp = time.gmtime(max(source_time(), 315532800))[:6]
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "phsync.exe")
        shutil.copyfile(exe, stripped)
        subprocess.run([strip, stripped], check=True)
        with open(stripped, "rb") as f:
            entries.append(("phsync.exe", f.read()))
    with open(os.path.join(ROOT, "docs", "README-windows.txt"), encoding="utf-8") as f:
        entries.append(("README.txt", crlf(f.read())))
    with open(os.path.join(ROOT, "examples", "phsync-daemon-task.xml"), encoding="utf-8") as f:
        xml = f.read().replace('encoding="UTF-8"', 'encoding="UTF-16"', 1)
    entries.append(("phsync-daemon-task.xml",
                    b"\xff\xfe" + xml.replace("\r\n", "\n").replace("\n", "\r\n")
                    .encode("utf-16-le")))
    pages = sorted(p for p in os.listdir(os.path.join(ROOT, "docs"))
                   if p.endswith((".1", ".5")))
    for p in pages:
        entries.append(("man/%s.txt" % os.path.splitext(p)[0],
                        crlf(man_text(os.path.join(ROOT, "docs", p)))))
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        entries.append(("LICENSE.txt", crlf(f.read())))
    # The phone helpers (Linux programs the build made with PHSYNC_HELPERS, in helpers/
    # beside the exe, where phsync.exe looks for them: src/session/bootstrap.c).
    hdir = os.path.join(out, "helpers")
    helpers = sorted(n for n in os.listdir(hdir) if n.startswith("phsync-helper-")) \
        if os.path.isdir(hdir) else []
    if not helpers:
        sys.stderr.write("win-package.py: no phone helpers in %s (PHSYNC_HELPERS=off?): "
                         "phsync.exe will use a helper only where the phone has phsync\n" % hdir)
    for n in helpers:
        with open(os.path.join(hdir, n), "rb") as f:
            entries.append(("helpers/" + n, f.read()))

    name = "phsync-%s-win64" % version
    path = os.path.join(out, name + ".zip")
    part = path + ".part"
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for rel, data in entries:
            info = zipfile.ZipInfo("%s/%s" % (name, rel), date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if rel.startswith("helpers/") else 0o644) << 16
            z.writestr(info, data)
    os.replace(part, path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
