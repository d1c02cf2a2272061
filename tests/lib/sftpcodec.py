# SPDX-License-Identifier: ISC
"""SFTP version 3 on the wire, for the test servers (evil_sftp.py, sftp_relay.py): the packet
types, status codes and attribute flags, a reader of a packet's fields and the writers of
strings, numbers, attributes and packets. Shared so that both read a packet the same way."""

import struct

INIT, VERSION, OPEN, CLOSE, READ, WRITE, LSTAT, FSTAT, SETSTAT, FSETSTAT, OPENDIR, READDIR = range(1, 13)
REMOVE, MKDIR, RMDIR, REALPATH, STAT, RENAME, READLINK, SYMLINK = range(13, 21)
STATUS, HANDLE, DATA, NAME, ATTRS = 101, 102, 103, 104, 105
EXTENDED, EXTENDED_REPLY = 200, 201
FX_OK, FX_EOF, FX_NO_SUCH_FILE, FX_PERMISSION_DENIED, FX_FAILURE = 0, 1, 2, 3, 4
A_SIZE, A_UIDGID, A_PERMISSIONS, A_ACMODTIME, A_EXTENDED = 1, 2, 4, 8, 0x80000000


class Reader:
    """The fields of one packet's body, in order; a string running past the end raises
    ValueError (struct.error for a number)."""

    def __init__(self, data, pos=0):
        self.d, self.p = data, pos

    def u8(self):
        v = self.d[self.p]
        self.p += 1
        return v

    def u32(self):
        v = struct.unpack_from(">I", self.d, self.p)[0]
        self.p += 4
        return v

    def u64(self):
        v = struct.unpack_from(">Q", self.d, self.p)[0]
        self.p += 8
        return v

    def string(self):
        n = self.u32()
        if self.p + n > len(self.d):
            raise ValueError("string past the end of the packet")
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def attrs(self):
        """Returns (flags, dict of fields, raw extended pairs)."""
        fl = self.u32()
        a = {}
        if fl & A_SIZE:
            a["size"] = self.u64()
        if fl & A_UIDGID:
            a["uid"], a["gid"] = self.u32(), self.u32()
        if fl & A_PERMISSIONS:
            a["perm"] = self.u32()
        if fl & A_ACMODTIME:
            a["atime"], a["mtime"] = self.u32(), self.u32()
        ext = []
        if fl & A_EXTENDED:
            for _ in range(self.u32()):
                ext.append((self.string(), self.string()))
        return fl, a, ext


def s(b):
    """An SFTP string (a str is taken as UTF-8, undecodable bytes kept as they were)."""
    if isinstance(b, str):
        b = b.encode("utf-8", "surrogateescape")
    return struct.pack(">I", len(b)) + b


def u32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def pack_attrs(fl, a, ext):
    out = u32(fl)
    if fl & A_SIZE:
        out += struct.pack(">Q", a["size"])
    if fl & A_UIDGID:
        out += u32(a["uid"]) + u32(a["gid"])
    if fl & A_PERMISSIONS:
        out += u32(a["perm"])
    if fl & A_ACMODTIME:
        out += u32(a["atime"]) + u32(a["mtime"])
    if fl & A_EXTENDED:
        out += u32(len(ext)) + b"".join(s(k) + s(v) for k, v in ext)
    return out


def packet(ptype, body):
    return struct.pack(">IB", len(body) + 1, ptype) + body
