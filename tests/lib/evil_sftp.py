#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A small, scriptable, sometimes hostile SFTP version 3 server (Python 3 stdlib only).

It speaks SFTP on stdin/stdout, so sshd runs it as its sftp subsystem:

    Subsystem sftp /usr/bin/python3 /path/to/evil_sftp.py [--log FILE]

Over an ordinary folder it is a faithful (if simple) server over the real file system: open,
read, write, stat, lstat, fstat, setstat, fsetstat, opendir, readdir, mkdir, rmdir, remove,
rename, realpath, readlink.  It offers no extensions, so a client meets a plain v3 server.

Misbehaviour is switched on per folder by a file `.evil-sftp.json` in it (the file itself is
hidden from listings), so one running server can serve many tests:

    {"inject_names": true}   the folder's listing gains hostile entries (see HOSTILE below):
                             "..", ".", "../escape.jpg", "a/b.jpg", "/tmp/abs.jpg", "",
                             "back\\slash.jpg", "x\\x1b[31m.jpg", "nul\\x00.jpg", "../escape-dir"
                             as regular files (one as a directory); opening any of them gives
                             b"EVIL\\n" and never touches the real file system
    {"deny_open": [NAME...]}  OPEN of these names fails with SSH_FX_PERMISSION_DENIED
    {"fail_read": [NAME...]}  READ of these files fails (SSH_FX_FAILURE) after the first 64 KiB
    {"long_data": [NAME...]}  READ replies carry more data than was asked for
    {"huge_size": [NAME...]}  attributes claim a size of 2**62 bytes; the data ends early
    {"forge": MODE}           the reply to READDIR of this folder is malformed, then the
                              server exits:
        "huge_packet"   a packet length of 0x7ffffff0 followed by a few bytes
        "bad_string"    a NAME packet whose file name length runs past the packet's end
        "huge_count"    a NAME packet claiming 0x7fffffff entries but holding one
        "short_attrs"   a NAME packet whose attributes claim fields the packet lacks
        "wrong_id"      a NAME reply carrying a request id that was never sent
        "zero_packet"   a packet of length 0 (no type byte)
    {"check_file": MODE}      check-file-handle (block digests, as ProFTPD and Apache MINA SSHD
                              answer it; without this rule it is refused as unsupported) on the
                              folder's files:
        "mina"          MINA's shape: "check-file", the algorithm, each digest as a string
        "proftpd"       ProFTPD's shape: the algorithm, then the digests back to back
        "short"         ProFTPD's shape with the last digest missing
        "wrong_alg"     digests named "sha256", an algorithm the client did not ask for
        "lie"           every digest is of the block's bytes with the first one flipped
"""

import hashlib
import json
import os
import stat
import struct
import sys
import time

from sftpcodec import (INIT, VERSION, OPEN, CLOSE, READ, WRITE, LSTAT, FSTAT, SETSTAT, FSETSTAT,  # noqa: F401
                      OPENDIR, READDIR, REMOVE, MKDIR, RMDIR, REALPATH, STAT, RENAME, READLINK,
                      SYMLINK, STATUS, HANDLE, DATA, NAME, ATTRS, EXTENDED, EXTENDED_REPLY, FX_OK,
                      FX_EOF, FX_NO_SUCH_FILE, FX_PERMISSION_DENIED, FX_FAILURE, A_SIZE, A_UIDGID,
                      A_PERMISSIONS, A_ACMODTIME, A_EXTENDED, Reader, s, u32)

FX_BAD_MESSAGE, FX_OP_UNSUPPORTED = 5, 8
O_READ, O_WRITE, O_APPEND, O_CREAT, O_TRUNC, O_EXCL = 1, 2, 4, 8, 0x10, 0x20

CONTROL = ".evil-sftp.json"
EVIL = b"EVIL\n"
# (name, is_dir) entries a hostile listing adds.
HOSTILE = [
    (b".", True), (b"..", True),          # what every server sends: must be skipped quietly
    (b"..", False), (b".", False),        # the same names claiming to be files
    (b"../escape.jpg", False), (b"a/b.jpg", False), (b"/tmp/abs.jpg", False), (b"", False),
    (b"back\\slash.jpg", False), (b"x\x1b[31m.jpg", False), (b"nul\x00.jpg", False),
    (b"../escape-dir", True),
]

LOG = None


def log(*a):
    if LOG:
        LOG.write(" ".join(str(x) for x in a) + "\n")
        LOG.flush()


def attrs_of(st, size=None):
    return (u32(A_SIZE | A_UIDGID | A_PERMISSIONS | A_ACMODTIME) +
            struct.pack(">Q", st.st_size if size is None else size) +
            u32(st.st_uid) + u32(st.st_gid) + u32(st.st_mode) +
            u32(int(st.st_atime)) + u32(int(st.st_mtime)))


def virtual_attrs(is_dir):
    mode = (stat.S_IFDIR | 0o755) if is_dir else (stat.S_IFREG | 0o644)
    return (u32(A_SIZE | A_PERMISSIONS | A_ACMODTIME) + struct.pack(">Q", 0 if is_dir else len(EVIL)) +
            u32(mode) + u32(1600000000) + u32(1600000000))


def longname(name, st_mode, size):
    kind = "d" if stat.S_ISDIR(st_mode) else "-"
    return b"%srw-r--r--    1 0        0        %8d Jan  1 00:00 " % (kind.encode(), size) + name


class Server:
    def __init__(self, inp, out):
        self.inp, self.out = inp, out
        self.handles = {}
        self.next_handle = 1
        self.cwd = os.path.expanduser("~")

    # -- wire --------------------------------------------------------------------------------

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.inp.read(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def send(self, ptype, payload):
        self.out.write(struct.pack(">IB", len(payload) + 1, ptype) + payload)
        self.out.flush()

    def send_raw(self, data):
        self.out.write(data)
        self.out.flush()

    def status(self, rid, code, msg=""):
        self.send(STATUS, u32(rid) + u32(code) + s(msg) + s(""))

    def errno_status(self, rid, e):
        code = {2: FX_NO_SUCH_FILE, 13: FX_PERMISSION_DENIED, 1: FX_PERMISSION_DENIED}.get(e.errno, FX_FAILURE)
        self.status(rid, code, os.strerror(e.errno) if e.errno else str(e))

    # -- per-folder control -----------------------------------------------------------------

    @staticmethod
    def control(dirpath):
        try:
            with open(os.path.join(dirpath, CONTROL)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def rules_for(self, path):
        d, base = os.path.split(path)
        return self.control(d or "/"), base

    def path(self, b):
        p = b.decode("utf-8", "surrogateescape")
        if not p.startswith("/"):
            p = os.path.join(self.cwd, p)
        return p

    def virtual(self, p):
        """Is p one of the hostile names we listed?  Returns (is_dir,) or None."""
        for name, is_dir in HOSTILE:
            n = name.decode("utf-8", "surrogateescape")
            if n in (".", "..") and is_dir:
                continue
            for d in self.injected_dirs:
                if p == d + "/" + n:
                    return is_dir
        return None

    injected_dirs = set()

    # -- main loop ------------------------------------------------------------------------------

    def serve(self):
        while True:
            hdr = self.read_exact(4)
            if hdr is None:
                return
            n = struct.unpack(">I", hdr)[0]
            if n == 0 or n > 1 << 20:
                log("bad client packet length", n)
                return
            body = self.read_exact(n)
            if body is None:
                return
            ptype, r = body[0], Reader(body[1:])
            if ptype == INIT:
                r.u32()
                self.send(VERSION, u32(3))
                continue
            rid = r.u32()
            try:
                self.dispatch(ptype, rid, r)
            except SystemExit:
                raise
            except OSError as e:
                self.errno_status(rid, e)
            except (ValueError, struct.error, IndexError) as e:
                log("bad message", ptype, e)
                self.status(rid, FX_BAD_MESSAGE, "bad message")

    def new_handle(self, obj):
        h = b"h%d" % self.next_handle
        self.next_handle += 1
        self.handles[h] = obj
        return h

    def dispatch(self, t, rid, r):
        log("req", t, rid)
        if t == OPEN:
            path = self.path(r.string())
            pflags = r.u32()
            a = r.attrs()[1]
            log("open", repr(path), pflags)
            vd = self.virtual(path)
            if vd is not None:
                if vd or pflags & O_WRITE:
                    return self.status(rid, FX_PERMISSION_DENIED, "no")
                return self.send(HANDLE, u32(rid) + s(self.new_handle({"virtual": True, "path": path})))
            rules, base = self.rules_for(path)
            if base in rules.get("deny_open", []):
                return self.status(rid, FX_PERMISSION_DENIED, "Permission denied")
            fl = 0
            if pflags & O_READ and pflags & O_WRITE:
                fl = os.O_RDWR
            elif pflags & O_WRITE:
                fl = os.O_WRONLY
            else:
                fl = os.O_RDONLY
            if pflags & O_APPEND:
                fl |= os.O_APPEND
            if pflags & O_CREAT:
                fl |= os.O_CREAT
            if pflags & O_TRUNC:
                fl |= os.O_TRUNC
            if pflags & O_EXCL:
                fl |= os.O_EXCL
            fd = os.open(path, fl | os.O_NOCTTY, a.get("perm", 0o666) & 0o7777)
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                os.close(fd)
                return self.status(rid, FX_FAILURE, "is a directory")
            return self.send(HANDLE, u32(rid) + s(self.new_handle({"fd": fd, "path": path, "rules": rules, "base": base})))
        if t == CLOSE:
            h = self.handles.pop(r.string(), None)
            if h is None:
                return self.status(rid, FX_FAILURE, "bad handle")
            if "fd" in h:
                os.close(h["fd"])
            return self.status(rid, FX_OK)
        if t == READ:
            h = self.handles.get(r.string())
            off, n = r.u64(), r.u32()
            if h is None or "entries" in h:
                return self.status(rid, FX_FAILURE, "bad handle")
            if h.get("virtual"):
                data = EVIL[off:off + n]
                return self.send(DATA, u32(rid) + s(data)) if data else self.status(rid, FX_EOF)
            rules, base = h["rules"], h["base"]
            if base in rules.get("fail_read", []) and off + n > 65536:
                return self.status(rid, FX_FAILURE, "I/O error (simulated)")
            data = os.pread(h["fd"], min(n, 1 << 18), off)
            if not data:
                return self.status(rid, FX_EOF)
            if base in rules.get("long_data", []):
                data += b"X" * (n + 70000)
            return self.send(DATA, u32(rid) + s(data))
        if t == WRITE:
            h = self.handles.get(r.string())
            off, data = r.u64(), r.string()
            if h is None or "fd" not in h:
                return self.status(rid, FX_FAILURE, "bad handle")
            os.pwrite(h["fd"], data, off)
            return self.status(rid, FX_OK)
        if t in (LSTAT, STAT):
            path = self.path(r.string())
            vd = self.virtual(path)
            if vd is not None:
                return self.send(ATTRS, u32(rid) + virtual_attrs(vd))
            st = os.lstat(path) if t == LSTAT else os.stat(path)
            return self.send(ATTRS, u32(rid) + self.attrs_for(path, st))
        if t == FSTAT:
            h = self.handles.get(r.string())
            if h is None:
                return self.status(rid, FX_FAILURE, "bad handle")
            if h.get("virtual"):
                return self.send(ATTRS, u32(rid) + virtual_attrs(False))
            if "fd" in h:
                return self.send(ATTRS, u32(rid) + self.attrs_for(h["path"], os.fstat(h["fd"])))
            return self.send(ATTRS, u32(rid) + attrs_of(os.stat(h["path"])))
        if t in (SETSTAT, FSETSTAT):
            if t == SETSTAT:
                path = self.path(r.string())
                target = path
            else:
                h = self.handles.get(r.string())
                if h is None:
                    return self.status(rid, FX_FAILURE, "bad handle")
                target = h.get("fd", h.get("path"))
            a = r.attrs()[1]
            if "size" in a:
                os.truncate(target, a["size"])
            if "perm" in a:
                os.chmod(target, a["perm"] & 0o7777)
            if "mtime" in a:
                os.utime(target, (a["atime"], a["mtime"]))
            return self.status(rid, FX_OK)
        if t == OPENDIR:
            path = self.path(r.string())
            log("opendir", repr(path))
            names = sorted(os.listdir(path))
            entries = [(b".", os.path.join(path, ".")), (b"..", os.path.join(path, ".."))]
            entries += [(n.encode("utf-8", "surrogateescape"), os.path.join(path, n)) for n in names if n != CONTROL]
            rules = self.control(path)
            if rules.get("inject_names"):
                Server.injected_dirs.add(path.rstrip("/") or "/")
                entries += [(n, None, d) for n, d in HOSTILE]
            return self.send(HANDLE, u32(rid) + s(self.new_handle({"entries": entries, "path": path, "rules": rules})))
        if t == READDIR:
            h = self.handles.get(r.string())
            if h is None or "entries" not in h:
                return self.status(rid, FX_FAILURE, "bad handle")
            forge = h["rules"].get("forge")
            if forge:
                return self.forge(forge, rid, h)
            batch, h["entries"] = h["entries"][:50], h["entries"][50:]
            if not batch:
                return self.status(rid, FX_EOF)
            payload = b""
            for e in batch:
                if len(e) == 3:  # hostile, virtual
                    name, _, is_dir = e
                    mode = stat.S_IFDIR | 0o755 if is_dir else stat.S_IFREG | 0o644
                    payload += s(name) + s(longname(name, mode, 5)) + virtual_attrs(is_dir)
                    continue
                name, full = e
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                payload += s(name) + s(longname(name, st.st_mode, st.st_size)) + self.attrs_for(full, st)
            return self.send(NAME, u32(rid) + u32(len(batch)) + payload)
        if t == REMOVE:
            os.unlink(self.path(r.string()))
            return self.status(rid, FX_OK)
        if t == MKDIR:
            path = self.path(r.string())
            a = r.attrs()[1]
            os.mkdir(path, a.get("perm", 0o777) & 0o7777)
            return self.status(rid, FX_OK)
        if t == RMDIR:
            os.rmdir(self.path(r.string()))
            return self.status(rid, FX_OK)
        if t == REALPATH:
            p = os.path.normpath(self.path(r.string()))
            return self.send(NAME, u32(rid) + u32(1) + s(p) + s(p) + u32(0))
        if t == RENAME:
            a, b = self.path(r.string()), self.path(r.string())
            if os.path.lexists(b):
                return self.status(rid, FX_FAILURE, "target exists")
            os.rename(a, b)
            return self.status(rid, FX_OK)
        if t == READLINK:
            p = self.path(r.string())
            tgt = os.readlink(p)
            return self.send(NAME, u32(rid) + u32(1) + s(tgt) + s(tgt) + u32(0))
        if t == EXTENDED:
            return self.extended(rid, r)
        return self.status(rid, FX_OP_UNSUPPORTED, "unsupported")

    def extended(self, rid, r):
        name = r.string()
        if name != b"check-file-handle":
            return self.status(rid, FX_OP_UNSUPPORTED, "unsupported")
        h = self.handles.get(r.string())
        algs, off, length, block = r.string().split(b","), r.u64(), r.u64(), r.u32()
        if h is None or "fd" not in h:
            return self.status(rid, FX_FAILURE, "bad handle")
        mode = h["rules"].get("check_file")
        log("check-file", mode, algs, off, length, block)
        if mode is None:
            return self.status(rid, FX_OP_UNSUPPORTED, "unsupported")
        alg = next((a for a in algs if a in (b"md5", b"sha1")), None)
        if alg is None or block < 256 or off % block:
            return self.status(rid, FX_FAILURE, "bad check-file request")
        size = os.fstat(h["fd"]).st_size
        end = size if length == 0 else min(size, off + length)
        digests = []
        for o in range(off, end, block):
            data = os.pread(h["fd"], min(block, end - o), o)
            if mode == "lie":
                data = bytes([data[0] ^ 1]) + data[1:]
            digests.append(hashlib.new(alg.decode(), data).digest())
        if mode == "short":
            digests = digests[:-1]
        if mode == "mina":
            body = s(b"check-file") + s(alg) + b"".join(s(d) for d in digests)
        else:
            body = s(b"sha256" if mode == "wrong_alg" else alg) + b"".join(digests)
        return self.send(EXTENDED_REPLY, u32(rid) + body)

    def attrs_for(self, path, st):
        rules, base = self.rules_for(path)
        if base in rules.get("huge_size", []) and stat.S_ISREG(st.st_mode):
            return attrs_of(st, size=1 << 62)
        return attrs_of(st)

    def forge(self, mode, rid, h):
        log("forging", mode)
        if mode == "huge_packet":
            self.send_raw(struct.pack(">IB", 0x7FFFFFF0, NAME) + u32(rid) + b"\0" * 1000)
        elif mode == "bad_string":
            body = u32(rid) + u32(1) + u32(0x7FFFFF00) + b"name"
            self.send_raw(struct.pack(">IB", len(body) + 1, NAME) + body)
        elif mode == "huge_count":
            one = s(b"only.jpg") + s(b"only.jpg") + attrs_of(os.stat(h["path"]))
            self.send(NAME, u32(rid) + u32(0x7FFFFFFF) + one)
        elif mode == "short_attrs":
            body = u32(rid) + u32(1) + s(b"f.jpg") + s(b"f.jpg") + u32(A_SIZE | A_UIDGID | A_PERMISSIONS | A_ACMODTIME) + b"\0\0"
            self.send(NAME, body)
        elif mode == "wrong_id":
            one = s(b"f.jpg") + s(b"f.jpg") + virtual_attrs(False)
            self.send(NAME, u32(rid + 0x10000) + u32(1) + one)
        elif mode == "zero_packet":
            self.send_raw(u32(0))
        else:
            self.status(rid, FX_FAILURE, "unknown forge mode")
            return
        # Give the client time to choke on it, then hang up.
        time.sleep(0.5)
        sys.exit(0)


def main(argv):
    global LOG
    if "--log" in argv:
        LOG = open(argv[argv.index("--log") + 1], "a")
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    try:
        Server(inp, out).serve()
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
