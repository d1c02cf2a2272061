# SPDX-License-Identifier: ISC
"""The layering (issue 23): which part of src/ may use which is written once, in CMakeLists.txt
(PH_PARTS, in an order where each part comes after every part it uses, and PH_USES_<part>), and
the build compiles each part seeing only those parts' headers.  This test reads the same table
and every #include of the tree, and names any edge the table does not allow (the compiler would
only say "no such file"), any circle, and any include that reaches around the table by a
relative path.  The command (src/cli) and the watcher (src/watch) use libphsync only through
include/phsync/ (and cli uses watch, which is part of the same program).

It also reads the built objects (nm): which file defines each global symbol and which files use
it gives the graph of calls between files, and there must be no circle in it (two files that
call each other, or a longer ring) and no call from one part to another that the table does
not allow (a call through a declaration written by hand would get past the include check).
"""

import os
import re
import subprocess
import unittest

from harness import REPO, phsync_bin

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def table():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        text = f.read()
    parts = re.search(r"^set\(PH_PARTS ([a-z ]+)\)", text, re.M).group(1).split()
    uses = {}
    for p in parts:
        m = re.search(r"^set\(PH_USES_%s( [a-z ]+)?\)" % p, text, re.M)
        uses[p] = (m.group(1) or "").split() if m else None
    return parts, uses


def headers():
    """header file name -> the folder (part) that holds it"""
    owner = {}
    for d in os.listdir(os.path.join(REPO, "src")):
        full = os.path.join(REPO, "src", d)
        if os.path.isdir(full):
            for f in os.listdir(full):
                if f.endswith(".h"):
                    owner.setdefault(f, set()).add(d)
    for f in os.listdir(os.path.join(REPO, "platform")):
        if f.endswith(".h"):
            owner.setdefault(f, set()).add("platform")
    return owner


def sources(part):
    d = os.path.join(REPO, "src", part)
    for f in sorted(os.listdir(d)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                yield f, fh.read()


class LayersTest(unittest.TestCase):

    def test_table_has_every_part_once_and_no_circle(self):
        parts, uses = table()
        self.assertEqual(len(parts), len(set(parts)))
        for i, p in enumerate(parts):
            self.assertIsNotNone(uses[p], "no PH_USES_%s in CMakeLists.txt" % p)
            for u in uses[p]:
                self.assertIn(u, parts[:i], "%s uses %s, which is not before it" % (p, u))
        lib = {d for d in os.listdir(os.path.join(REPO, "src"))
               if os.path.isdir(os.path.join(REPO, "src", d))} - {"cli", "watch"}
        self.assertEqual(sorted(lib), sorted(parts), "a folder of src/ outside the table")

    def test_every_include_is_an_allowed_edge(self):
        parts, uses = table()
        owner = headers()
        bad = []
        for p in parts + ["cli", "watch"]:
            allowed = {p, "platform"} | set(uses.get(p) or [])
            if p == "cli":
                allowed = {"cli", "watch"}
            if p == "watch":
                allowed = {"watch"}
            for f, text in sources(p):
                for inc in INCLUDE.findall(text):
                    if inc.startswith("phsync/") or inc in ("ph_config.h",):
                        continue
                    if "/" in inc:
                        bad.append("src/%s/%s includes \"%s\" by a path" % (p, f, inc))
                        continue
                    where = owner.get(inc)
                    if where is None:
                        continue   # a generated or standalone header (checked by the build)
                    if not where & allowed:
                        bad.append("src/%s/%s includes %s (part %s): not in PH_USES_%s"
                                   % (p, f, inc, "/".join(sorted(where)), p))
        self.assertEqual(bad, [])



# No circle is excused: issue 23's were broken when its branches merged. An entry here (a set of
# files) would excuse a circle made only of them, with the reason and the issue that ends it.
KNOWN_CIRCLES = []


def build_dir():
    return os.path.dirname(phsync_bin())


def objects():
    """(source path relative to REPO, object file) of every current source of libphsync and
    of the phsync program (objects a moved or removed source left in the build are not)."""
    out = []
    for target in ("phsynclib", "phsync"):
        top = os.path.join(build_dir(), "CMakeFiles", target + ".dir")
        for d, _, files in os.walk(top):
            for f in files:
                if not f.endswith(".c.o"):
                    continue
                src = os.path.relpath(os.path.join(d, f), top)[:-2]
                if os.path.isfile(os.path.join(REPO, src)):
                    out.append((src, os.path.join(d, f)))
    return sorted(out)


def call_graph():
    """file -> the files whose global symbols it uses (from nm -P)."""
    defs, uses = {}, {}
    for src, obj in objects():
        text = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                              text=True).stdout
        uses[src] = set()
        for line in text.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            if f[1] == "U":
                uses[src].add(f[0])
            elif f[1] in "TDBRCVWG":   # defined and global (lower case: file-local)
                defs[f[0]] = src
    return {src: {defs[s] for s in syms if s in defs and defs[s] != src}
            for src, syms in uses.items()}


def circles(graph):
    """The strongly connected parts of graph with more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def ring(graph, comp):
    """One circle through comp's files, as "a -> b -> a"."""
    start = min(comp)
    prev, todo = {start: None}, [start]
    while todo:   # breadth first from start, back to start
        v = todo.pop(0)
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return " -> ".join(reversed(path)) + " -> " + start
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return " <-> ".join(sorted(comp))


class CallsTest(unittest.TestCase):
    """The same layering, and no circle, in what the compiler made."""

    maxDiff = None   # name every circle and every bad call

    @classmethod
    def setUpClass(cls):
        cls.graph = call_graph()
        if not any(src.startswith("src/sync/") for src in cls.graph):
            raise AssertionError("no objects of libphsync under %s: build it first "
                                 "(tests/run.sh)" % build_dir())

    def test_the_known_circles_are_only_the_listed_ones(self):
        # The test of the test: a ring is found and named, and an excused one is one.
        g = {"a.c": {"b.c"}, "b.c": {"c.c"}, "c.c": {"a.c", "d.c"}, "d.c": set()}
        self.assertEqual(circles(g), [{"a.c", "b.c", "c.c"}])
        self.assertEqual(ring(g, {"a.c", "b.c", "c.c"}), "a.c -> b.c -> c.c -> a.c")
        for known in KNOWN_CIRCLES:
            for f in known:
                self.assertTrue(os.path.isfile(os.path.join(REPO, f)), f)

    def test_no_circle_between_files(self):
        bad = []
        for comp in circles(self.graph):
            if not any(comp <= known for known in KNOWN_CIRCLES):
                bad.append("%s (the circle holds %s)" % (ring(self.graph, comp),
                                                         ", ".join(sorted(comp))))
        self.assertEqual(bad, [], "files that call each other in a circle")

    def test_every_call_between_parts_is_an_allowed_edge(self):
        parts, uses = table()
        bad = set()
        for src, used in self.graph.items():
            p = src.split("/")[1] if src.startswith("src/") else None
            if p not in parts:
                continue   # platform/ uses nothing; cli and watch: include/phsync/ (above)
            for dst in used:
                q = dst.split("/")[1] if dst.startswith("src/") else "platform"
                if q != p and q != "platform" and q not in uses[p]:
                    bad.add("%s calls %s (part %s): not in PH_USES_%s" % (src, dst, q, p))
        self.assertEqual(sorted(bad), [])


if __name__ == "__main__":
    unittest.main()
