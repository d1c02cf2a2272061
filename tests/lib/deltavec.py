# SPDX-License-Identifier: ISC
"""Fixed inputs for `phsync delta` and the SHA-256 of the signature and delta files the
engine writes for them: one table that the Linux suite (test_delta_cli.py) and the Wine
loop (tests/unit/win32/delta_loop.py, phsync.exe) both hold their output to, so that a
signature or delta made on Windows is byte for byte the one Linux makes (docs/DELTA.md's
formats, which cross the wire between a laptop and a phone).

Each vector: name, block (-b, or None for the default), old and new (functions of nothing
returning bytes, or for the sparse one a writer), the signature's and the delta's digests.
A change of either format changes these digests: that is the point (rewrite them from the
Linux build only when docs/DELTA.md changed on purpose).
"""

import hashlib

# Past 2^31 bytes: a 64-bit offset check (the signature's length, patch's reads of OLD at
# offsets a 32-bit off_t or a DWORD cannot hold). Sparse: its holes cost no disk.
BIG_LEN = (1 << 31) + 200_017
BIG_MARK_AT = (1 << 31) + 100_000   # 96 KiB of pattern there, and 4 KiB at 0
BIG_BLOCK = 8192


def stream(seed, n):
    """n bytes that look random, the same on every machine (SHA-256 in counter mode)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"%s/%d" % (seed.encode(), i)).digest()
        i += 1
    return bytes(out[:n])


def _photo():
    old = stream("photo", 700_000)
    return old, old[:300_000] + b"an edit" + old[300_000:650_000] + b"tail"


def _text():
    old = b"".join(b"line %d of a note\r\n" % i for i in range(2000))
    new = old.replace(b"line 700 ", b"line seven hundred ").replace(b"\r\n", b"\n", 50)
    return old, new


def _empty_old():
    return b"", stream("fresh", 5000)


def _wide_block():
    old = stream("video", 3 << 20)
    return old, old[1 << 20:] + old[:1 << 20] + b"x"


def big_mark():
    return stream("big-mark", 96 << 10)


def big_new():
    m = big_mark()
    return m[8192:90_000] + b"new bytes" + stream("big-head", 4096)[:2000] + m[:8192]


def write_big_old(path):
    """The sparse OLD of the big vector: holes but for 4 KiB at 0 and 96 KiB past 2^31."""
    with open(path, "wb") as f:
        f.write(stream("big-head", 4096))
        f.seek(BIG_MARK_AT)
        f.write(big_mark())
        f.truncate(BIG_LEN)


# name: (block, inputs() -> (old, new), sha256 of the signature, sha256 of the delta)
VECTORS = {
    "photo": (None, _photo,
                   "c4aa71d79a64a99b78dd968745415b4d53ee10feee9a74e46046c02fe1b238fa",
                   "2384bb98da9fa10a447eb8dd4822f06ac867b41703650c20ad3ed2f41bab9408"),
    "text": (16, _text,
                   "85adf2f6146943645ec6e6b2baf7064ded7759cc2c5b54764d2ead22384c9d3f",
                   "2e3883eaafe74877ab6656950672f88e8f953cc16bd8eb4d8e9464a9630d738b"),
    "empty-old": (None, _empty_old,
                   "e5bc9a4e5c2a59634054091082bada99fae73644725bdc45f0837179fc194af1",
                   "4a2293490af38964e0d0d593bd9bceae160c38df03fe5e2502577261f6f9d0d6"),
    "wide-block": (1 << 20, _wide_block,
                   "989c2f39f7fca8c05153b0cbe0f6e387f7a744a48031ed67a1ec1b5070bf9362",
                   "9a2e7594e9e393f18666530a8b202f00b1624d7d1fdd9eaa15526af646ae6461"),
}
# The sparse one: OLD written by write_big_old, NEW = big_new(), -b BIG_BLOCK.
BIG = ("2296e17ff4dece2b81b3cf8a193d14286bc1805ae98fb63c5eb51ac03e6888f8",
       "7c728a756e221567801139f1fee8b55e6e40a0ef511acffc21519ecca1d1d073")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

