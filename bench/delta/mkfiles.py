#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Makes the delta benchmark's files in DIR: old (SIZE random bytes), new
(old with 25 scattered edits: inserts, deletes, 64-byte overwrites) and
other (unrelated random bytes of the same size)."""
import os
import random
import sys

d, size = sys.argv[1], int(sys.argv[2])
rng = random.Random(2024)
old = bytearray(os.urandom(size))
with open(os.path.join(d, "old"), "wb") as f:
    f.write(old)
new = old
for i in range(25):
    p = rng.randrange(len(new))
    kind = i % 3
    if kind == 0:
        new[p:p] = rng.randbytes(rng.randrange(1, 4096))
    elif kind == 1:
        del new[p:p + rng.randrange(1, 4096)]
    else:
        new[p:p + 64] = rng.randbytes(64)
with open(os.path.join(d, "new"), "wb") as f:
    f.write(new)
with open(os.path.join(d, "other"), "wb") as f:
    f.write(os.urandom(size))
