#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A misbehaving remote helper for tests/integration/test_helper.py.

phsync starts the helper as `HELPER_PATH serve ROOT` through the remote shell, so a test passes
`--helper-path "python3 .../fake_helper.py MODE PHSYNC"` and this script runs as
`fake_helper.py MODE PHSYNC serve ROOT`. It starts the real helper (`PHSYNC serve ROOT`) and
relays SFTP packets both ways, spoiling the replies as MODE says:

  plain         no helper at all: OpenSSH's sftp-server answers (plain SFTP, no phsync ext)
  version=N     the VERSION reply announces helper protocol N instead of the agreed one
  banner        a line of text before the first packet (a chatty shell start-up file)
  long_delta    the first delta reply carries 16 bytes more than were asked for
  flip_literal  byte 1000 of the first delta reply is flipped (inside a LITERAL's bytes when
                the file's start changed: the result's hash cannot match END's)
  forge_delta   the first delta reply is replaced by a delta whose COPY lies far outside the
                old copy
  bad_sig       the reply to a signature request is garbage of the same length
  endless_delta every delta reply is replaced by the next slice of a delta that never ends:
                the header, then one-byte COPY ops (`C 0 1`, 17 bytes each) forever; each
                reply is exactly as long as asked (EOF and FAILURE replies too), so the
                client keeps its window open and the bytes keep coming
  endless_literal
                as endless_delta, with LITERAL ops of 256 KiB (`L 262144` and its bytes) forever:
                the delta's output passes the listed size
  tiny_literals as endless_delta, with one-byte LITERAL ops (`L 1 x`, 6 bytes each) forever:
                more delta bytes than any delta of the file's size, long before its output
                passes the listed size
  long_sig      the reply to a signature request is a valid signature of the old file with
                the smallest block length (16 bytes; `phsync delta signature -b 16`): longer
                than the helper sends for that size
  read_log=FILE every READ asked is logged to FILE, a line "PATH OFFSET LENGTH", and every
                extended request, "EXTENDED NAME"; replies are untouched
  short_read    the DATA reply to each READ that asks less than 256 KiB (a file's last) comes
                cut to half its bytes: the file seems to end there (shrank while read)
  grow_read     the reply to each READ that asks less than 256 KiB (a file's last) is padded
                to exactly the length asked (a DATA reply, also in place of an EOF): the file
                seems to have grown past its listed size
  long_read     the DATA reply to each READ carries 16 bytes more than were asked for
  list_log=FILE every OPENDIR asked is logged to FILE, a line "PID OPENDIR PATH" (which of a
                listing's helpers listed which folder); replies are untouched
  die_list=N    the helper (and its relay) ends at once when asked its Nth OPENDIR, no reply
  hold_list=FILE
                the first READDIR is passed on only once FILE exists (a listing held while
                the test looks at what the client says meanwhile); the rest untouched
  starts=FILE,MODE
                each start appends a line to FILE; the first start relays untouched, every
                later one (a listing's second helper) behaves as MODE, which may be any of
                the above (list_log combined as starts=FILE,list_log=LOG,MODE)
"""

import os
import struct
import subprocess
import sys
import threading
import time

SFTP_SERVER = "/usr/lib/openssh/sftp-server"


def read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_packet(f):
    head = read_exact(f, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    body = read_exact(f, n)
    return body


def sstr(b, off):
    (n,) = struct.unpack(">I", b[off:off + 4])
    return b[off + 4:off + 4 + n], off + 4 + n


ENDLESS_HEAD = b"PHSD\x01\0\0\0"
ENDLESS_OPS = {
    "endless_delta": b"C" + struct.pack(">QQ", 0, 1),
    "endless_literal": b"L" + struct.pack(">I", 1 << 18) + b"L" * (1 << 18),
    "tiny_literals": b"L" + struct.pack(">I", 1) + b"x",
}


def endless_slice(op, off, n):
    """Bytes [off, off+n) of an endless delta: the header, then op forever."""
    head = ENDLESS_HEAD[off:off + n] if off < len(ENDLESS_HEAD) else b""
    off += len(head)
    n -= len(head)
    k = (off - len(ENDLESS_HEAD)) % len(op)
    body = (op * ((n + k) // len(op) + 2))[k:k + n]
    return head + body


def small_block_sig(phsync, path):
    """A valid signature of the file at path with the smallest block length (16 bytes), made
    by `phsync delta signature`: far longer than the helper's own for that size."""
    return subprocess.run([phsync, "delta", "signature", "-b", "16", path, "-"],
                          stdout=subprocess.PIPE, check=True).stdout


def spoil_read(mode, p, kinds, lock):
    """A READ's reply (STATUS or DATA) spoiled as short_read, grow_read or long_read say."""
    (rid,) = struct.unpack(">I", p[1:5])
    with lock:
        kind = kinds.get(rid, (None, 0))
    if kind[0] != "read":
        return p
    asked = kind[1]
    data = sstr(p, 5)[0] if p[0] == 103 else b""
    if mode == "long_read" and p[0] == 103:
        data += b"\0" * 16
    elif mode == "short_read" and p[0] == 103 and asked < 256 * 1024 and len(data) > 1:
        data = data[:len(data) // 2]
    elif mode == "grow_read" and asked < 256 * 1024 and len(data) < asked:
        data += b"G" * (asked - len(data))
    else:
        return p
    return bytes([103]) + p[1:5] + struct.pack(">I", len(data)) + data


def main():
    mode, phsync = sys.argv[1], sys.argv[2]
    root = sys.argv[4]
    list_log = None
    if mode.startswith("starts="):
        starts, mode = mode[len("starts="):].split(",", 1)
        with open(starts, "a+") as f:
            f.write("%d\n" % os.getpid())
            f.flush()
            f.seek(0)
            first = len(f.read().split()) == 1
        if mode.startswith("list_log="):
            list_log, mode = mode[len("list_log="):].split(",", 1)
        if first:
            mode = "relay"
    if mode.startswith("list_log="):
        list_log, mode = mode.split("=", 1)[1], "relay"
    opendirs = [0]
    held = [False]
    if mode == "plain":
        os.execv(SFTP_SERVER, [SFTP_SERVER])
    child = subprocess.Popen([phsync, "serve", root], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    kinds = {}  # request id -> ("dread", length asked, offset), ("sig", path), ("open", path)
    handles = {}  # handle -> the path it was opened with
    lock = threading.Lock()
    if mode == "banner":
        out.write(b"Welcome to Termux!\n")
        out.flush()

    def upstream():
        while True:
            p = read_packet(inp)
            if p is None:
                break
            if p[0] == 11:  # OPENDIR
                opendirs[0] += 1
                if list_log is not None:
                    with lock, open(list_log, "a") as log:
                        log.write("%d OPENDIR %s\n" % (os.getpid(), sstr(p, 5)[0].decode()))
                if mode.startswith("die_list=") and opendirs[0] >= int(mode.split("=", 1)[1]):
                    child.kill()
                    os._exit(1)
            if p[0] == 12 and mode.startswith("hold_list=") and not held[0]:  # READDIR
                held[0] = True
                hold = mode.split("=", 1)[1]
                deadline = time.monotonic() + 300
                while not os.path.exists(hold) and time.monotonic() < deadline:
                    time.sleep(0.05)
            if p[0] == 3:  # OPEN: remember the path, for long_sig
                (rid,) = struct.unpack(">I", p[1:5])
                name, _ = sstr(p, 5)
                with lock:
                    kinds[rid] = ("open", name)
            if p[0] == 5:  # READ: string handle, uint64 offset, uint32 length
                (rid,) = struct.unpack(">I", p[1:5])
                h, off = sstr(p, 5)
                (roff, rlen) = struct.unpack(">QI", p[off:off + 12])
                with lock:
                    kinds[rid] = ("read", rlen, roff)
                    if mode.startswith("read_log="):
                        with open(mode.split("=", 1)[1], "a") as log:
                            log.write("%s %d %d\n" % ((handles.get(h) or b"?").decode(), roff, rlen))
            if p[0] == 200:
                (rid,) = struct.unpack(">I", p[1:5])
                name, off = sstr(p, 5)
                with lock:
                    if mode.startswith("read_log="):
                        with open(mode.split("=", 1)[1], "a") as log:
                            log.write("EXTENDED %s\n" % name.decode(errors="replace"))
                    if name == b"phsync-delta-read@phsync.org":
                        _, off2 = sstr(p, off)
                        (doff, asked) = struct.unpack(">QI", p[off2:off2 + 12])
                        kinds[rid] = ("dread", asked, doff)
                    elif name == b"phsync-sig@phsync.org":
                        h, _ = sstr(p, off)
                        kinds[rid] = ("sig", handles.get(h))
            child.stdin.write(struct.pack(">I", len(p)) + p)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=upstream, daemon=True).start()
    spoiled = False
    while True:
        p = read_packet(child.stdout)
        if p is None:
            break
        if p[0] == 2 and mode.startswith("version="):
            want = mode.split("=", 1)[1].encode()
            p = p.replace(struct.pack(">I", 17) + b"phsync@phsync.org" + struct.pack(">I", 1) + b"1",
                          struct.pack(">I", 17) + b"phsync@phsync.org" + struct.pack(">I", len(want)) + want)
        elif p[0] == 102:  # HANDLE: which path it names
            (rid,) = struct.unpack(">I", p[1:5])
            with lock:
                kind = kinds.get(rid, (None, 0))
                if kind[0] == "open":
                    h, _ = sstr(p, 5)
                    handles[h] = kind[1]
        if mode in ("short_read", "grow_read", "long_read") and p[0] in (101, 103):
            p = spoil_read(mode, p, kinds, lock)
        if mode in ENDLESS_OPS and p[0] in (101, 103):
            (rid,) = struct.unpack(">I", p[1:5])
            with lock:
                kind = kinds.get(rid, (None, 0))
            if kind[0] == "dread":
                data = endless_slice(ENDLESS_OPS[mode], kind[2], kind[1])
                p = bytes([103]) + p[1:5] + struct.pack(">I", len(data)) + data
        elif mode == "long_sig" and p[0] == 201:
            (rid,) = struct.unpack(">I", p[1:5])
            with lock:
                kind = kinds.get(rid, (None, 0))
            if kind[0] == "sig" and kind[1] is not None:
                path = kind[1].decode()
                if not path.startswith("/"):
                    path = os.path.join(root, path)
                p = p[:5] + small_block_sig(phsync, path)
        elif p[0] in (103, 201) and not spoiled:
            (rid,) = struct.unpack(">I", p[1:5])
            with lock:
                kind = kinds.get(rid, (None, 0))
            if kind[0] == "dread" and p[0] == 103:
                data, _ = sstr(p, 5)
                if mode == "long_delta":
                    data = data + b"\0" * 16
                    spoiled = True
                elif mode == "flip_literal" and len(data) > 1000:
                    data = data[:1000] + bytes([data[1000] ^ 0xFF]) + data[1001:]
                    spoiled = True
                elif mode == "forge_delta":
                    data = b"PHSD\x01\0\0\0" + b"C" + struct.pack(">QQ", 1 << 40, 100)
                    spoiled = True
                p = p[:5] + struct.pack(">I", len(data)) + data
            elif kind[0] == "sig" and p[0] == 201 and mode == "bad_sig":
                p = p[:5] + bytes((i * 7 + 3) & 0xFF for i in range(len(p) - 5))
                spoiled = True
        out.write(struct.pack(">I", len(p)) + p)
        out.flush()
    child.wait()


if __name__ == "__main__":
    main()
