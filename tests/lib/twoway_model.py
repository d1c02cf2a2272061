# SPDX-License-Identifier: ISC
"""A model of two-way sync (docs/TWOWAY.md) for tests/integration/test_twoway.py and
bench/twoway_model.py: two replicas (the laptop's folder and the phone's), the state of their
last sync, and seeded random rounds of edits, creates, deletes, moves and conflicting edits on
both sides.  After each real `phsync sync` the model says what both folders must hold: every
change on one side on the other, a delete beaten by a change, a conflict's loser kept beside as
NAME.phsync-conflict-*, both sides equal; then it takes what is there as the new last sync.

Files only (folders follow their files); mtimes are whole seconds and distinct between the two
sides' edits, so "the newer wins" is always decided (equal times: the laptop's)."""

import os
import random

CONFLICT = ".phsync-conflict-"


def read_side(root):
    """{relative path: (bytes, mtime seconds)} of the regular files under root."""
    out = {}
    for dp, dn, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = (f.read(), int(os.stat(p).st_mtime))
    return out


def write(root, rel, data, mtime):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    os.utime(p, (mtime, mtime))


def is_copy_of(copy, path):
    """Is copy (a relative path) a conflict copy phsync made of path?"""
    d, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    cd, cbase = os.path.split(copy)
    return cd == d and cbase.startswith(stem + CONFLICT) and cbase.endswith(ext)


class Model:
    """Two replicas under local and remote, driven by a seeded generator."""

    def __init__(self, seed, local, remote, t0=1700000000):
        self.rng = random.Random(seed)
        self.local, self.remote = local, remote
        self.t = t0
        self.n = 0
        self.known = {}          # the last sync: path -> (bytes, mtime), the same both sides

    def _data(self):
        return os.urandom(self.rng.choice((0, 1, 7, 100, 3000, 70000)))

    def _time(self):
        self.t += self.rng.randint(2, 50)
        return self.t

    def _name(self):
        self.n += 1
        return "%s/f%d%s" % (self.rng.choice(("a", "b", "b/c", "d")), self.n,
                             self.rng.choice((".txt", ".jpg", "")))

    def first_contact(self):
        """Both folders before their first sync: their own files, a few names on both with
        the same bytes and time, a few with other bytes (conflicts)."""
        for root in (self.local, self.remote):
            write(root, "anchor.txt", b"never touched", 1600000000)   # no side lists empty
        for root in (self.local, self.remote):
            for _ in range(self.rng.randint(2, 6)):
                write(root, self._name(), self._data(), self._time())
        for _ in range(2):
            name, data, t = self._name(), self._data(), self._time()
            write(self.local, name, data, t)
            write(self.remote, name, data, t)
        for _ in range(self.rng.randint(0, 2)):
            name = self._name()
            write(self.local, name, b"laptop " + self._data(), self._time())
            write(self.remote, name, b"phone " + self._data(), self._time())

    def _ops(self, root, touched):
        files = sorted(p for p in read_side(root) if p != "anchor.txt")
        for _ in range(self.rng.randint(0, 4)):
            op = self.rng.choice(("create", "edit", "delete", "move"))
            free = [p for p in files if p not in touched]
            if op == "create" or not free:
                name = self._name()
                write(root, name, self._data(), self._time())
                touched.add(name)
                continue
            p = self.rng.choice(free)
            touched.add(p)
            files.remove(p)
            if op == "edit":
                write(root, p, self._data() + b"edit", self._time())
            elif op == "delete":
                os.unlink(os.path.join(root, p))
            else:
                q = self._name()
                os.makedirs(os.path.dirname(os.path.join(root, q)), exist_ok=True)
                os.rename(os.path.join(root, p), os.path.join(root, q))
                touched.add(q)

    def round(self):
        """One round of changes on both sides, with at most one conflicting edit of a file
        both sides hold as last synced."""
        tl, tr = set(), set()
        both = sorted(p for p in self.known if p != "anchor.txt")
        if both and self.rng.random() < 0.5:
            p = self.rng.choice(both)
            write(self.local, p, b"laptop's " + self._data(), self._time())
            write(self.remote, p, b"phone's " + self._data(), self._time())
            tl.add(p)
            tr.add(p)
        self._ops(self.local, tl)
        self._ops(self.remote, tr)

    def expect(self):
        """What a sync must make of the two sides now: ({path: (bytes, mtime)} without the new
        conflict copies, [(path, the loser's (bytes, mtime))])."""
        L, R, K = read_side(self.local), read_side(self.remote), self.known
        result, conflicts = {}, []
        for p in set(L) | set(R) | set(K):
            k, l, r = K.get(p), L.get(p), R.get(p)
            if l == k:
                res = r
            elif r == k:
                res = l
            elif l is None or r is None:
                res = l or r                       # a change beats a delete
            elif l[0] == r[0]:
                res = l if l[1] <= r[1] else r     # equal bytes: adopted, the older time
            else:
                win, lose = (r, l) if r[1] > l[1] else (l, r)
                res = win
                conflicts.append((p, lose))
            if res is not None:
                result[p] = res
        return result, conflicts

    def check(self, expected, conflicts):
        """Compares both sides with the model; returns a list of what is wrong (empty: all
        well) and takes what is there as the last sync."""
        wrong = []
        L, R = read_side(self.local), read_side(self.remote)
        if L != R:
            only = sorted(set(L) ^ set(R))
            diff = sorted(p for p in set(L) & set(R) if L[p] != R[p])
            wrong.append("the sides differ: only on one %r, other content or time %r" % (only, diff))
        new = {p: v for p, v in L.items() if p not in expected}
        for p, v in expected.items():
            if L.get(p) != v:
                wrong.append("%s: %r, the model says %r" % (p, L.get(p, (None,))[0][:20] if L.get(p) else None,
                                                           v[0][:20]))
        for p, lose in conflicts:
            copies = [c for c, v in new.items() if is_copy_of(c, p) and v == lose]
            if len(copies) != 1:
                wrong.append("%s: a conflict, %d copies with the loser's version: %r" % (p, len(copies), sorted(new)))
            else:
                del new[copies[0]]
        if new:
            wrong.append("files the model does not have: %r" % sorted(new))
        self.known = L if not wrong else self.known
        return wrong
