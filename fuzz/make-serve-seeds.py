#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Writes seed inputs for fuzz_serve into fuzz/corpus/fuzz_serve/: request sequences a real
client sends (open, read, stat, listing, signature, a delta of the scratch file "a" against a
signature of other bytes, writes and copy-data into a new file, renames). The format is the
fuzzer's: packets as [u16 length][type][id][body], after the INIT the fuzzer sends itself.
    fuzz/make-serve-seeds.py [PHSYNC]    (PHSYNC signs bytes for the delta seed; default
                                          build/phsync)"""
import os
import struct
import subprocess
import sys
import tempfile

ROOT = "/tmp/phsync-fuzz-serve"
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "corpus", "fuzz_serve")
os.makedirs(out, exist_ok=True)


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">I", len(b)) + b


def pkt(t, rid, body):
    b = bytes([t]) + struct.pack(">I", rid) + body
    return struct.pack(">H", len(b)) + b


H0 = s(struct.pack(">II", 0, 1))  # the first handle the server hands out (slot 0, generation 1)
H1 = s(struct.pack(">II", 1, 2))

seeds = {
    "read": pkt(3, 1, s(ROOT + "/a") + struct.pack(">II", 1, 0)) + pkt(5, 2, H0 + struct.pack(">QI", 0, 4096))
    + pkt(8, 3, H0) + pkt(4, 4, H0),
    "list": pkt(11, 1, s(ROOT)) + pkt(12, 2, H0) + pkt(12, 3, H0) + pkt(4, 4, H0) + pkt(7, 5, s(ROOT + "/out"))
    + pkt(17, 6, s(ROOT + "/d")),
    "write": pkt(3, 1, s(ROOT + "/a") + struct.pack(">II", 1, 0))
    + pkt(3, 2, s(ROOT + "/d/new") + struct.pack(">II", 2 | 8 | 16, 4) + struct.pack(">I", 0o644))
    + pkt(6, 3, H1 + struct.pack(">Q", 0) + s(b"hello"))
    + pkt(200, 4, s("copy-data") + H0 + struct.pack(">QQ", 0, 100) + H1 + struct.pack(">Q", 5))
    + pkt(200, 5, s("fsync@openssh.com") + H1)
    + pkt(10, 6, H1 + struct.pack(">III", 8, 1700000000, 1700000000))
    + pkt(4, 7, H1) + pkt(200, 8, s("posix-rename@openssh.com") + s(ROOT + "/d/new") + s(ROOT + "/d/b"))
    + pkt(18, 9, s(ROOT + "/d/b") + s(ROOT + "/d/c")) + pkt(13, 10, s(ROOT + "/d/c")),
    "sig": pkt(3, 1, s(ROOT + "/a") + struct.pack(">II", 1, 0)) + pkt(200, 2, s("phsync-sig@phsync.org") + H0 + struct.pack(">I", 64)),
    "misc": pkt(14, 1, s(ROOT + "/d/x") + struct.pack(">I", 0)) + pkt(15, 2, s(ROOT + "/d/x"))
    + pkt(9, 3, s(ROOT + "/a") + struct.pack(">II", 1, 10)) + pkt(200, 4, s("statvfs@openssh.com") + s(ROOT))
    + pkt(200, 5, s("limits@openssh.com")) + pkt(16, 6, s(".")),
    # What a hostile client tries (issue 22): copy-data onto its own source, SETSTAT of
    # setid bits, of the symlink leading out (to "/": 0755, harmless were it followed), and of
    # a size and mode at once.
    "self": pkt(3, 1, s(ROOT + "/a") + struct.pack(">II", 1 | 2, 0)) + pkt(3, 2, s(ROOT + "/a") + struct.pack(">II", 1, 0))
    + pkt(200, 3, s("copy-data") + H0 + struct.pack(">QQ", 0, 0) + H0 + struct.pack(">Q", 100))
    + pkt(200, 4, s("copy-data") + H1 + struct.pack(">QQ", 0, 0) + H0 + struct.pack(">Q", 100))
    + pkt(9, 5, s(ROOT + "/a") + struct.pack(">II", 4, 0o4755)) + pkt(9, 6, s(ROOT + "/out") + struct.pack(">II", 4, 0o755))
    + pkt(9, 7, s(ROOT + "/a") + struct.pack(">IQI", 1 | 4, 10, 0o600)) + pkt(10, 8, H0 + struct.pack(">II", 4, 0o2755)),
}

phsync = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "phsync")
with tempfile.TemporaryDirectory() as t:
    other = os.path.join(t, "old")
    with open(other, "wb") as f:
        f.write(b"0123456789abcdef" * 100 + b"x" * 500)
    sig = os.path.join(t, "sig")
    subprocess.run([phsync, "delta", "signature", "-b", "64", other, sig], check=True)
    with open(sig, "rb") as f:
        sigb = f.read()
seeds["delta"] = (pkt(3, 1, s(ROOT + "/a") + struct.pack(">II", 1, 0))
                  + pkt(200, 2, s("phsync-delta-start@phsync.org") + H0 + s(sigb))
                  + pkt(200, 3, s("phsync-delta-read@phsync.org") + H0 + struct.pack(">QI", 0, 65536))
                  + pkt(200, 4, s("phsync-delta-read@phsync.org") + H0 + struct.pack(">QI", 0, 65536)))
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), out))
