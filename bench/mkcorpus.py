#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Deterministic phone-like folders for phsync's benchmark, demo and tests (stdlib only).

    mkcorpus.py DIR [--scale S] [--seed N] [--small N]
        the standard camera corpus; the default (scale 1.0, 2,000 thumbnails) is about 1.5 GB
        in about 2,500 files:
          DIR/DCIM/Camera            400*S photos IMG_YYYYMMDD_NNNNNN.jpg, 1-4.5 MB, JPEG-shaped
                                     (SOI, an APP1 "Exif" block of 8-40 kB, DQT, an
                                     incompressible body, EOI); one minute apart
          DIR/DCIM/Camera            max(1, 6*S) videos VID_NNNNNN.mp4, 20-90 MB, MP4-shaped
          DIR/Pictures/Screenshots   120*S PNG-shaped screenshots, 100-900 kB
          DIR/DCIM/.thumbnails       N (default 2,000) small JPEG-shaped files, 9-30 kB

    mkcorpus.py DIR --edit K
        applies a gallery app's typical edits to K photos in place: an EXIF rewrite that grows
        the header by 0-700 bytes (shifting the body), an orientation flag flip (same size), an
        appended tail of 1-50 kB; each edited photo's mtime moves one hour later

    mkcorpus.py DIR --small-tree [N_DIRS N_FILES]
        the many-small-files tree: N_DIRS folders (default 500) of N_FILES files (default
        100) of 0.5-4 KB each, DIR/small/dir_NNN/file_NNNNN.dat

    mkcorpus.py DIR --stat
        prints "FILES BYTES" for the regular files under DIR (used to verify copies)

Same seed, same bytes and names on every machine: the camera corpus uses the recipe of the
project's reference generator, call for call, so its default output is byte-identical to it.
File times are fixed past dates (BASE_TIME onwards, one minute apart, as a camera leaves
them); folder times are set to BASE_TIME - 1 day once everything is written.
"""

import argparse
import os
import random
import struct
import sys

BASE_TIME = 1700000000  # 2023-11-14 22:13:20 UTC


def jpeg(rng, size):
    exif = b"Exif\0\0" + rng.randbytes(rng.randint(8_000, 40_000))
    app1 = b"\xff\xe1" + struct.pack(">H", min(len(exif) + 2, 0xFFFF)) + exif
    head = b"\xff\xd8" + app1 + b"\xff\xdb\x00\x43" + rng.randbytes(65)
    return head + rng.randbytes(max(0, size - len(head) - 2)) + b"\xff\xd9"


def mp4(rng, size):
    ftyp = struct.pack(">I", 24) + b"ftypisom" + b"\0\0\2\0isomiso2"
    return ftyp + rng.randbytes(max(0, size - len(ftyp)))


def png(rng, size):
    return b"\x89PNG\r\n\x1a\n" + rng.randbytes(max(0, size - 8))


def put(path, data, mtime):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, (mtime, mtime))


def settle_dirs(root, when=BASE_TIME - 86400):
    """Fixed folder mtimes (deepest first), so two generated trees compare equal."""
    dirs = []
    for dp, dn, _ in os.walk(root):
        dirs += [os.path.join(dp, d) for d in dn]
    for d in sorted(dirs, key=lambda p: p.count(os.sep), reverse=True):
        os.utime(d, (when, when))


def make_camera(root, scale=1.0, seed=18, small=2000):
    rng = random.Random(seed)
    t = BASE_TIME
    n_photos, n_videos, n_shots = int(400 * scale), max(1, int(6 * scale)), int(120 * scale)
    for i in range(n_photos):
        t += 60
        name = "IMG_%s_%06d.jpg" % (20231114 + i // 500, 100000 + i)
        put(os.path.join(root, "DCIM/Camera", name), jpeg(rng, rng.randint(1_000_000, 4_500_000)), t)
    for i in range(n_videos):
        t += 60
        put(os.path.join(root, "DCIM/Camera", "VID_%06d.mp4" % (200000 + i)),
            mp4(rng, rng.randint(20_000_000, 90_000_000)), t)
    for i in range(n_shots):
        t += 60
        put(os.path.join(root, "Pictures/Screenshots", "Screenshot_%06d.png" % i),
            png(rng, rng.randint(100_000, 900_000)), t)
    for i in range(small):
        put(os.path.join(root, "DCIM/.thumbnails", "%d.jpg" % (1000000 + i)),
            jpeg(rng, rng.randint(9_000, 30_000)), t)


def edit(root, k, seed=18):
    rng = random.Random(seed + 1)
    cam = os.path.join(root, "DCIM/Camera")
    photos = sorted(f for f in os.listdir(cam) if f.endswith(".jpg"))
    for i, name in enumerate(rng.sample(photos, min(k, len(photos)))):
        p = os.path.join(cam, name)
        st = os.stat(p)
        with open(p, "rb") as f:
            data = bytearray(f.read())
        kind = i % 3
        if kind == 0:      # EXIF rewrite: the APP1 block grows, everything after it shifts
            at = 20 + rng.randint(0, 4000)
            data[at:at] = rng.randbytes(rng.randint(0, 700))
        elif kind == 1:    # orientation flag flip: same size
            data[30] ^= 0x01
        else:              # appended data (an embedded edit history)
            data += rng.randbytes(rng.randint(1000, 50_000))
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, (st.st_mtime + 3600, st.st_mtime + 3600))


def make_small_tree(root, n_dirs=500, n_files=100, seed=18):
    rng = random.Random(seed * 7919 + 1)
    pool = rng.randbytes(1 << 20)  # file bodies are slices of one random megabyte
    t = BASE_TIME
    for d in range(n_dirs):
        dp = os.path.join(root, "small", "dir_%03d" % d)
        os.makedirs(dp, exist_ok=True)
        for i in range(n_files):
            t += 1
            n = rng.randint(512, 4096)
            off = rng.randrange(0, len(pool) - n)
            # the first 8 bytes make every file unique
            data = struct.pack(">II", d, i) + pool[off + 8:off + n]
            put(os.path.join(dp, "file_%05d.dat" % (d * n_files + i)), data, t)


def stat_tree(root):
    files = total = 0
    for dp, _, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files += 1
                total += os.path.getsize(p)
    return files, total


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--scale", type=float, default=1.0, help="camera corpus scale (default 1.0, about 1.5 GB)")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--small", type=int, default=2000, help="number of thumbnails (default 2000)")
    ap.add_argument("--edit", type=int, default=0, metavar="K", help="edit K photos in place")
    ap.add_argument("--small-tree", nargs="*", type=int, metavar="N",
                    help="make N_DIRS x N_FILES small files instead (default 500 100)")
    ap.add_argument("--stat", action="store_true", help='print "FILES BYTES" of DIR')
    a = ap.parse_args(argv)
    if a.stat:
        print("%d %d" % stat_tree(a.dir))
        return 0
    if a.edit:
        edit(a.dir, a.edit, a.seed)
        return 0
    if a.small_tree is not None:
        if len(a.small_tree) not in (0, 2):
            ap.error("--small-tree takes N_DIRS N_FILES, or nothing for 500 100")
        nd, nf = a.small_tree if a.small_tree else (500, 100)
        make_small_tree(a.dir, nd, nf, a.seed)
    else:
        make_camera(a.dir, a.scale, a.seed, a.small)
    settle_dirs(a.dir)
    os.utime(a.dir, (BASE_TIME - 86400, BASE_TIME - 86400))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
