#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A relay in front of OpenSSH's real sftp-server that misbehaves on purpose (stdlib only).

sshd runs it as its sftp subsystem:

    Subsystem sftp /usr/bin/python3 /path/to/sftp_relay.py --control FILE [--server PATH]

It starts the real server (/usr/lib/openssh/sftp-server unless --server says otherwise) as a
child, parses the SFTP framing both ways (u32 length, type, request id) and forwards every
packet, except where the control file says to misbehave.  The control file is JSON, read once
when a session starts, so a test rewrites it between runs and one sshd serves many tests
(harness: SshServer(relay=True), server.relay_set(**modes), server.relay_fired()).  A missing
or empty file means a faithful relay.

Every mode matches files by basename; a list of names may hold "*" (any name).  Keys:

    "die_mid_data": {"name": N, "at": OFFSET, "fraction": 0.5}
        The DATA reply to a READ of file N whose range holds byte OFFSET (default: the file's
        last byte, from its size when it was opened, i.e. the last DATA reply of the file) is
        sent only in part (the first `fraction` of the packet's bytes, header included), then
        the relay kills sftp-server and exits: a phone app killed in the middle of a reply.
    "no_size": {"names": [N...], "attrs": false}
        NAME replies (READDIR) carry no SIZE attribute for these entries; with "attrs": true
        also the ATTRS replies to STAT, LSTAT and FSTAT of these files.
    "size_lie": {N: DELTA, ...}
        The size reported for N (READDIR entries and STAT/LSTAT/FSTAT replies) is the real one
        plus DELTA: negative = the file grew after it was listed, positive = it ends (EOF)
        before the listed size.  Never below 0.
    "hide_extensions": [EXT...]
        These extensions (e.g. "posix-rename@openssh.com") are removed from the VERSION reply:
        a plain v3 server.  The real sftp-server then refuses a plain RENAME onto an existing
        target, as it does for any client that does not use posix-rename.
    "refuse_rename_to": [N...]  or  {"names": [N...], "unless_from": PREFIX}
        RENAME (and posix-rename@openssh.com) whose TARGET basename is N gets SSH_FX_FAILURE;
        the request never reaches the server.  With "unless_from", a rename whose SOURCE
        basename starts with PREFIX goes through (e.g. ".N.phsync-o.": putting the aside copy
        of the old file back stays possible; every attempt to move the new file in fails).
    "die_after_rename_from": [N...]
        Right after forwarding the reply to the first successful RENAME whose SOURCE basename
        is N, the relay kills sftp-server and exits: the link dies between two steps of a
        replace.
    "die_after_write": {"name": N, "bytes": K}
        Right after forwarding the reply to a WRITE into file N (a push temp ".N.phsync-t..."
        counts as N) that reaches offset K, the relay kills sftp-server and exits: a push cut
        by a dead link once K bytes are on the server.
    "fail_read": {"name": N, "at": OFFSET}
        A READ of file N whose range holds byte OFFSET gets SSH_FX_FAILURE without reaching
        the server: a file that cannot be read to its end (a card pulled, an I/O error) after
        its first bytes came.
    "endless": [N...]
        Every READ of these files is answered by the relay with data (0x5a bytes, at most
        256 KiB a reply) whatever its offset, never EOF: a file that never ends. With
        "no_size" a hostile phone streaming bytes forever.
    "die_on": {"type": "OPENDIR", "name": N, "session": K}
        Once a request of this type about basename N arrives (names as for "hang") in the
        K-th session started since the control file was written (default: any), the relay
        kills sftp-server and exits without answering it: a server process that dies in the
        middle of a listing. With K = 2, the second SFTP channel of a run that opens more than
        one (a long listing spreads over several), the run's first channel untouched. Every
        session then logs "session <pid>" when it starts.
    "hang": {"type": "READ", "name": N, "session": K}
        Once a request of this type (READ, WRITE, OPEN, OPENDIR, READDIR, STAT, LSTAT, FSTAT,
        CLOSE, RENAME, ...) about basename N arrives (for READ/WRITE/FSTAT/CLOSE/READDIR, the
        name the handle was opened with), nothing more is forwarded either way: requests and
        replies are read and dropped, the connection stays open.  The relay never exits on its
        own; it ends when its stdin closes (client gone, sshd closing the session), killing
        sftp-server, so nothing is left behind.  With "session" only in the K-th session, as
        for "die_on".
    "truncate_on_open": {"name": N, "path": LOCAL[, "append": K]}
        When the reply to an OPEN for writing of a file whose basename starts with
        ".N.phsync-" (a push temp file) comes back, LOCAL (a path on this machine: the
        client's file on the loopback test rig) is truncated to 0 bytes before the reply is
        forwarded: a local file that shrank during a push, deterministically. With
        "append": K, K bytes are appended instead (a file still growing during a push).
    "deny_setstat": [N...]
        SETSTAT (of a path with basename N) and FSETSTAT (of a handle opened as N) get
        SSH_FX_PERMISSION_DENIED without reaching the server: a phone that cannot set times.
        A temp name ".N.phsync-..." counts as N.

    "count": true
        Every WRITE request appends "count WRITE <bytes>" to the log and every copy-data
        request "count copy-data <bytes>" (the length it asks the server to copy): what a
        push really sent over the link, for the delta tests.

    "trace": true
        Every OPENDIR, STAT and LSTAT request appends "trace OPENDIR <path>" (or STAT, LSTAT)
        to the log: which folders a watcher's poll stats and which it lists. With
        "trace_pid": true each line ends " pid=<relay's pid>": which channel asked.

Phone-like modes (a storage or a server that behaves as phones do, rather than faults):

    "mtime_step": N
        A FAT/exFAT card: every time the server reports (the mtime and atime of READDIR
        entries and of ATTRS replies to STAT, LSTAT and FSTAT) is rounded down to a multiple of
        N seconds, and every SETSTAT, FSETSTAT or lsetstat@openssh.com that sets times is
        forwarded with mtime and atime rounded down the same way, so the real file holds the
        stepped time.  Applies to every name.
    "shift_mtime": SECONDS
        The phone changed time zone (or its clock): every time reported (as for mtime_step)
        is the real one + SECONDS, and times set through SETSTAT, FSETSTAT or
        lsetstat@openssh.com are stored as (value - SECONDS), so a read back shows what was
        set.  Times are kept within 0 .. 2^32-1.  With mtime_step too, the step applies to
        the stored (real) time.
    "nocase": true
        A case-insensitive, case-preserving server (Android's /sdcard, FAT): in every request
        carrying a path (OPEN, OPENDIR, STAT, LSTAT, SETSTAT, MKDIR, RMDIR, REMOVE, REALPATH,
        READLINK, both paths of RENAME, posix-rename@openssh.com and hardlink@openssh.com, the
        link path of SYMLINK and its target when absolute, and the path of statvfs@openssh.com,
        lsetstat@openssh.com and expand-path@openssh.com), each component that does not exist
        with its exact name but exists in its parent folder under a name that differs only by
        case (str.casefold() of the UTF-8 name; bytes.lower() for a name that is not UTF-8) is
        replaced by the existing name before the request is forwarded.  The relay runs beside
        the server and looks at the real folders (os.listdir); relative paths are taken from
        the relay's working directory, which is sftp-server's (the login user's home).  So:
        writing "a.jpg" when "A.JPG" exists opens A.JPG; renaming onto "img.jpg" when
        "IMG.jpg" exists replaces IMG.jpg (posix-rename) or fails (a plain RENAME onto an
        existing target); MKDIR of "album" when "Album" exists fails (SSH_FX_FAILURE, as
        sftp-server answers EEXIST).  A rename whose target names the source itself in
        another case keeps the target's new case (a case-only rename, as on a real
        case-insensitive disk).  Listings are not changed (the case is preserved).
    "fail_opendir": [N...]
        OPENDIR of a folder whose basename is N gets SSH_FX_PERMISSION_DENIED without reaching
        the server: a folder the phone will not list.
    "fail_readdir": [N...]
        The second READDIR on a handle of a folder whose basename is N gets SSH_FX_FAILURE
        without reaching the server (the first one passes): a listing cut midway.
        OpenSSH's sftp-server returns at most 100 entries per READDIR, so a folder of more
        than 100 entries really loses the rest; a smaller one only loses its EOF.

Each fault that fires appends one line "FIRED <mode> <details>" to FILE.log (next to the
control file), so a test can check that the fault it arranged really happened.  The
phone-like modes write one line per kind and name in a session (the first occurrence): e.g.
"mtime_step report IMG_1.jpg 1700000001->1700000000", "mtime_step set .IMG_1.jpg.phsync-t...
1700000001->1700000000", "shift_mtime report NAME A->B", "shift_mtime set NAME A->B",
"nocase OPEN a.jpg -> A.JPG", "fail_opendir NAME", "fail_readdir NAME"; a value the mode
leaves as it is (an even time under mtime_step 2) fires nothing.
"""

import errno
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys

from sftpcodec import (INIT, VERSION, OPEN, CLOSE, READ, WRITE, LSTAT, FSTAT, SETSTAT, FSETSTAT,  # noqa: F401
                      OPENDIR, READDIR, REMOVE, MKDIR, RMDIR, REALPATH, STAT, RENAME, READLINK,
                      SYMLINK, STATUS, HANDLE, DATA, NAME, ATTRS, EXTENDED, EXTENDED_REPLY, FX_OK,
                      FX_EOF, FX_NO_SUCH_FILE, FX_PERMISSION_DENIED, FX_FAILURE, A_SIZE, A_UIDGID,
                      A_PERMISSIONS, A_ACMODTIME, A_EXTENDED, Reader, s, u32, pack_attrs, packet)
O_WRITE = 2

TYPES = {"OPEN": OPEN, "CLOSE": CLOSE, "READ": READ, "WRITE": WRITE, "LSTAT": LSTAT,
         "FSTAT": FSTAT, "SETSTAT": SETSTAT, "FSETSTAT": FSETSTAT, "OPENDIR": OPENDIR,
         "READDIR": READDIR, "REMOVE": REMOVE, "MKDIR": MKDIR, "RMDIR": RMDIR,
         "REALPATH": REALPATH, "STAT": STAT, "RENAME": RENAME, "READLINK": READLINK,
         "SYMLINK": SYMLINK, "EXTENDED": EXTENDED}
TYPE_NAMES = {v: k for k, v in TYPES.items()}
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
MAX_PACKET = 1 << 24
POSIX_RENAME = b"posix-rename@openssh.com"
LSETSTAT = b"lsetstat@openssh.com"
COPY_DATA = b"copy-data"
# Requests whose first string is a path, and extended requests with the paths they carry (nocase).
PATH_REQUESTS = (OPEN, OPENDIR, STAT, LSTAT, SETSTAT, REMOVE, MKDIR, RMDIR, REALPATH, READLINK)
EXT_PATHS = {POSIX_RENAME: 2, b"hardlink@openssh.com": 2, b"statvfs@openssh.com": 1,
             LSETSTAT: 1, b"expand-path@openssh.com": 1}
U32_MAX = 0xFFFFFFFF



def base(path):
    return os.path.basename(path.rstrip(b"/")).decode("utf-8", "surrogateescape")


def matches(names, name):
    if isinstance(names, str):
        names = [names]
    return "*" in names or name in names


def temp_of(name):
    """NAME for a push temp name `.NAME.phsync-...`, else None."""
    if name.startswith(".") and ".phsync-" in name:
        return name[1:name.rindex(".phsync-")]
    return None


def fold(name):
    """The key two names that differ only by case share (nocase): the casefolded UTF-8 name,
    or for a name that is not UTF-8 its bytes with ASCII letters lowered."""
    try:
        return name.decode("utf-8").casefold()
    except UnicodeDecodeError:
        return name.lower()


def clamp32(v):
    return max(0, min(U32_MAX, v))


def set_nonblock(fd):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class Relay:
    def __init__(self, control_path, server):
        self.control_path = control_path
        self.cfg = {}
        if control_path:
            try:
                with open(control_path) as f:
                    self.cfg = json.load(f) or {}
            except (OSError, ValueError):
                self.cfg = {}
        self.child = subprocess.Popen([server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      preexec_fn=_die_with_parent, close_fds=True)
        self.cin, self.cout = self.child.stdin.fileno(), self.child.stdout.fileno()
        self.up_in = b""      # from the client (our stdin), not yet parsed
        self.down_in = b""    # from the server, not yet parsed
        self.to_server = bytearray()
        self.to_client = bytearray()
        self.requests = {}    # id -> (type, info dict)
        self.handles = {}     # handle bytes -> (path bytes, size at open or None)
        self.hanging = False
        self.stdin_open = True
        self.renamed_from_fired = False
        self.write_died = False
        self.readdirs = {}    # handle bytes -> READDIRs seen (fail_readdir)
        self.fired_keys = set()
        self.session = 0
        if self.cfg.get("die_on") or "session" in (self.cfg.get("hang") or {}):
            # Which session this is: the ones logged before it, plus one.
            try:
                with open(control_path + ".log") as f:
                    self.session = sum(1 for l in f if l.startswith("FIRED session "))
            except OSError:
                pass
            self.session += 1
            self.fired("session", str(os.getpid()))
        for fd in (0, 1, self.cin, self.cout):
            set_nonblock(fd)

    # -- bookkeeping -----------------------------------------------------------------------

    def fired(self, mode, detail=""):
        if not self.control_path:
            return
        with open(self.control_path + ".log", "a") as f:
            f.write("FIRED %s %s\n" % (mode, detail))

    def fired_once(self, mode, kind, name, detail):
        """fired(), once per (mode, kind, name) in this session: the phone-like modes touch
        every file, the log says which ones at least once."""
        key = (mode, kind, name)
        if key in self.fired_keys:
            return
        self.fired_keys.add(key)
        self.fired(mode, ("%s %s" % (kind, detail)) if kind else detail)

    def finish(self, code=0):
        """Sends what is queued for the client (blocking), kills sftp-server, exits."""
        fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        try:
            while self.to_client:
                n = os.write(1, self.to_client)
                del self.to_client[:n]
        except OSError:
            pass
        self.kill_child()
        os._exit(code)

    def kill_child(self):
        if self.child.poll() is None:
            try:
                self.child.kill()
            except OSError:
                pass
            self.child.wait()

    def status(self, rid, code, msg):
        self.to_client += packet(STATUS, u32(rid) + u32(code) + s(msg.encode()) + s(b""))

    # -- requests (client -> server) ---------------------------------------------------------

    def on_request(self, pkt):
        t = pkt[4]
        if t == INIT:
            self.to_server += pkt
            return
        rid = struct.unpack_from(">I", pkt, 5)[0]
        if self.cfg.get("nocase"):
            pkt = self.nocase_request(t, pkt)
        r = Reader(pkt, 9)
        info = {}
        try:
            if t in PATH_REQUESTS:
                info["path"] = r.string()
                if t == OPEN:
                    info["pflags"] = r.u32()
                elif t == SETSTAT:
                    info["attrs_at"] = r.p
            elif t in (READ, WRITE, FSTAT, FSETSTAT, CLOSE, READDIR):
                info["handle"] = r.string()
                if t in (READ, WRITE):
                    info["off"] = r.u64()
                    if t == READ:
                        info["len"] = r.u32()
                    else:
                        info["len"] = len(r.string())
                elif t == FSETSTAT:
                    info["attrs_at"] = r.p
            elif t == RENAME:
                info["from"], info["to"] = r.string(), r.string()
            elif t == SYMLINK:
                info["target"], info["path"] = r.string(), r.string()
            elif t == EXTENDED:
                info["ext"] = r.string()
                if info["ext"] == POSIX_RENAME:
                    info["from"], info["to"] = r.string(), r.string()
                elif info["ext"] == LSETSTAT:
                    info["path"] = r.string()
                    info["attrs_at"] = r.p
                elif info["ext"] == COPY_DATA:
                    info["handle"] = r.string()
                    info["off"], info["len"] = r.u64(), r.u64()
        except (ValueError, struct.error):
            pass
        self.requests[rid] = (t, info)
        name = self.name_of(info)
        if self.cfg.get("count"):
            if t == WRITE:
                self.fired("count", "WRITE %d" % info.get("len", 0))
            elif t == EXTENDED and info.get("ext") == COPY_DATA:
                self.fired("count", "copy-data %d" % info.get("len", 0))

        if self.cfg.get("trace") and t in (OPENDIR, STAT, LSTAT):
            self.fired("trace", "%s %s%s" % ({OPENDIR: "OPENDIR", STAT: "STAT", LSTAT: "LSTAT"}[t],
                                             info.get("path", b"").decode("utf-8", "replace"),
                                             " pid=%d" % os.getpid() if self.cfg.get("trace_pid")
                                             else ""))

        die = self.cfg.get("die_on")
        if die and TYPES.get(die.get("type", "").upper()) == t and name is not None \
                and matches(die.get("name", "*"), name) \
                and die.get("session", self.session) == self.session:
            self.fired("die_on", "%s %s session %d" % (die.get("type"), name, self.session))
            self.finish()

        hang = self.cfg.get("hang")
        if hang and TYPES.get(hang.get("type", "").upper()) == t and name is not None \
                and matches(hang.get("name", "*"), name) \
                and hang.get("session", self.session) == self.session:
            self.fired("hang", "%s %s" % (hang.get("type"), name))
            self.hanging = True
            self.to_server.clear()
            return

        refuse = self.cfg.get("refuse_rename_to", [])
        if isinstance(refuse, dict):
            unless = refuse.get("unless_from")
            refuse = refuse.get("names", [])
            if unless and "from" in info and base(info["from"]).startswith(unless):
                refuse = []
        if "to" in info and matches(refuse, base(info["to"])):
            self.fired("refuse_rename_to", "%s -> %s" % (base(info["from"]), base(info["to"])))
            del self.requests[rid]
            self.status(rid, FX_FAILURE, "refused by the relay")
            return

        if t in (SETSTAT, FSETSTAT) and name is not None:
            deny = self.cfg.get("deny_setstat", [])
            if matches(deny, name) or (temp_of(name) is not None and matches(deny, temp_of(name))):
                self.fired("deny_setstat", name)
                del self.requests[rid]
                self.status(rid, FX_PERMISSION_DENIED, "setstat refused by the relay")
                return

        if t == OPENDIR and name is not None and matches(self.cfg.get("fail_opendir", []), name):
            self.fired_once("fail_opendir", "", name, name)
            del self.requests[rid]
            self.status(rid, FX_PERMISSION_DENIED, "listing refused by the relay")
            return

        if t == READDIR and info.get("handle") in self.handles \
                and matches(self.cfg.get("fail_readdir", []), name):
            n = self.readdirs.get(info["handle"], 0) + 1
            self.readdirs[info["handle"]] = n
            if n == 2:
                self.fired_once("fail_readdir", "", name, name)
                del self.requests[rid]
                self.status(rid, FX_FAILURE, "listing cut by the relay")
                return

        fail = self.cfg.get("fail_read")
        if t == READ and fail and name is not None and matches(fail.get("name", "*"), name) \
                and info["off"] <= int(fail["at"]) < info["off"] + info["len"]:
            self.fired("fail_read", "%s off=%d" % (name, info["off"]))
            del self.requests[rid]
            self.status(rid, FX_FAILURE, "read refused by the relay")
            return

        if t == READ and name is not None and matches(self.cfg.get("endless", []), name):
            self.fired_once("endless", "", name, name)
            del self.requests[rid]
            n = min(info["len"], 1 << 18)
            self.to_client += packet(DATA, u32(rid) + s(b"\x5a" * n))
            return

        if "attrs_at" in info:
            pkt = self.set_times(pkt, info["attrs_at"], name)

        self.to_server += pkt

    # -- phone-like modes (requests) ---------------------------------------------------------

    def set_times(self, pkt, at, name):
        """A SETSTAT/FSETSTAT/lsetstat with times: what the phone stores (shift_mtime, then
        mtime_step)."""
        step = int(self.cfg.get("mtime_step") or 0)
        shift = int(self.cfg.get("shift_mtime") or 0)
        if step <= 1 and shift == 0:
            return pkt
        try:
            r = Reader(pkt, at)
            fl, a, ext = r.attrs()
        except (ValueError, struct.error):
            return pkt
        if not fl & A_ACMODTIME:
            return pkt
        given = a["mtime"]
        for k in ("atime", "mtime"):
            v = clamp32(a[k] - shift)
            if step > 1:
                v -= v % step
            a[k] = v
        if shift:
            self.fired_once("shift_mtime", "set", name, "%s %d->%d" % (name, given, a["mtime"]))
        elif a["mtime"] != given:
            self.fired_once("mtime_step", "set", name, "%s %d->%d" % (name, given, a["mtime"]))
        return packet(pkt[4], pkt[5:at] + pack_attrs(fl, a, ext) + pkt[r.p:])

    def nocase_request(self, t, pkt):
        """pkt with its paths resolved as a case-insensitive server would (nocase)."""
        try:
            start, n, ext = 9, 0, None
            if t in PATH_REQUESTS:
                n = 1
            elif t in (RENAME, SYMLINK):
                n = 2
            elif t == EXTENDED:
                r = Reader(pkt, 9)
                ext = r.string()
                n, start = EXT_PATHS.get(ext, 0), r.p
            if n == 0:
                return pkt
            r = Reader(pkt, start)
            given = [r.string() for _ in range(n)]
        except (ValueError, struct.error):
            return pkt
        if t == SYMLINK:
            # OpenSSH's order: target, then the link's path.  A relative target is resolved
            # from the link's folder when followed: left alone.
            new = [self.ci_path(given[0]) if given[0].startswith(b"/") else given[0],
                   self.ci_path(given[1])]
        elif t == RENAME or ext == POSIX_RENAME:
            new = [self.ci_path(given[0])]
            new.append(self.ci_path(given[1], rename_from=new[0]))
        else:
            new = [self.ci_path(p) for p in given]
        if new == given:
            return pkt
        what = TYPE_NAMES.get(t, str(t)) if ext is None else ext.decode("utf-8", "replace")
        for g, w in zip(given, new):
            if g != w:
                self.fired_once("nocase", what, base(g), "%s -> %s" % (base(g), base(w)))
        return packet(t, pkt[5:start] + b"".join(s(p) for p in new) + pkt[r.p:])

    def ci_path(self, path, rename_from=None):
        """path with each component that is missing under its exact name, but present in its
        folder under a name that differs only by case, replaced by that name.  rename_from:
        the (resolved) source of a rename; a target naming that same file keeps its own case
        in its last component (a case-only rename)."""
        if not path:
            return path
        comps = path.split(b"/")
        cur = b"/" if path.startswith(b"/") else b"."
        out = []
        for c in comps:
            if c not in (b"", b".", b".."):
                if not os.path.lexists(os.path.join(cur, c)):
                    alt = self.ci_find(cur, c)
                    if alt is not None:
                        c = alt
            out.append(c)
            if c:
                cur = os.path.join(cur, c)
        res = b"/".join(out)
        if rename_from is not None and res != path:
            last = path.rstrip(b"/").rsplit(b"/", 1)[-1]
            try:
                a, b = os.lstat(rename_from), os.lstat(res)
                if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
                    head = res.rstrip(b"/").rsplit(b"/", 1)
                    res = head[0] + b"/" + last if len(head) == 2 else last
            except OSError:
                pass
        return res

    @staticmethod
    def ci_find(folder, name):
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        key = fold(name)
        found = sorted(n for n in names if fold(n) == key)
        return found[0] if found else None

    def name_of(self, info):
        if "path" in info:
            return base(info["path"])
        if "handle" in info and info["handle"] in self.handles:
            return base(self.handles[info["handle"]][0])
        if "from" in info:
            return base(info["from"])
        return None

    # -- replies (server -> client) ----------------------------------------------------------

    def on_reply(self, pkt):
        t = pkt[4]
        if t == VERSION:
            self.to_client += self.version(pkt)
            return
        rid = struct.unpack_from(">I", pkt, 5)[0]
        req = self.requests.pop(rid, None)
        if req is None:
            self.to_client += pkt
            return
        rt, info = req

        if t == HANDLE and rt in (OPEN, OPENDIR):
            h = Reader(pkt, 9).string()
            size = None
            if rt == OPEN:
                try:
                    size = os.stat(info["path"]).st_size
                except OSError:
                    pass
            self.handles[h] = (info["path"], size)
            tr = self.cfg.get("truncate_on_open")
            if tr and rt == OPEN and info.get("pflags", 0) & O_WRITE \
                    and base(info["path"]).startswith(".%s.phsync-" % tr["name"]):
                if tr.get("append"):
                    with open(tr["path"], "ab") as f:
                        f.write(b"+" * int(tr["append"]))
                else:
                    with open(tr["path"], "r+b") as f:
                        f.truncate(0)
                self.fired("truncate_on_open", "%s %s" % (base(info["path"]), tr["path"]))
        elif t == STATUS and rt == CLOSE:
            self.handles.pop(info.get("handle"), None)
            self.readdirs.pop(info.get("handle"), None)

        if t == DATA and rt == READ:
            die = self.cfg.get("die_mid_data")
            h = self.handles.get(info.get("handle"))
            if die and h and matches(die.get("name", "*"), base(h[0])):
                at = die.get("at")
                if at is None and h[1]:
                    at = h[1] - 1
                n = len(pkt) - 13
                if at is not None and info["off"] <= at < info["off"] + n:
                    cut = max(1, min(len(pkt) - 1, int(len(pkt) * float(die.get("fraction", 0.5)))))
                    self.fired("die_mid_data", "%s off=%d len=%d sent=%d of %d" %
                               (base(h[0]), info["off"], n, cut, len(pkt)))
                    self.to_client += pkt[:cut]
                    self.finish()

        if t == NAME and rt == READDIR:
            pkt = self.rewrite_name(pkt)
        elif t == ATTRS and rt in (STAT, LSTAT, FSTAT):
            name = self.name_of(info)
            r = Reader(pkt, 9)
            fl, a, ext = r.attrs()
            if name is not None:
                fl, a = self.lie(name, fl, a, attrs=True)
            a = self.report_times(name if name is not None else "?", fl, a)
            pkt = packet(ATTRS, pkt[5:9] + pack_attrs(fl, a, ext))

        self.to_client += pkt

        dw = self.cfg.get("die_after_write")
        if dw and t == STATUS and rt == WRITE and not self.write_died:
            h = self.handles.get(info.get("handle"))
            nm = base(h[0]) if h else None
            want = dw.get("name", "*")
            if nm is not None and (matches(want, nm) or
                                   (temp_of(nm) is not None and matches(want, temp_of(nm)))) \
                    and info.get("off", 0) + info.get("len", 0) >= int(dw.get("bytes", 0)):
                self.write_died = True
                self.fired("die_after_write", "%s off=%d" % (nm, info["off"]))
                self.finish()

        if t == STATUS and "to" in info and not self.renamed_from_fired:
            code = struct.unpack_from(">I", pkt, 9)[0]
            if code == FX_OK and matches(self.cfg.get("die_after_rename_from", []), base(info["from"])):
                self.renamed_from_fired = True
                self.fired("die_after_rename_from", "%s -> %s" % (base(info["from"]), base(info["to"])))
                self.finish()

    def lie(self, name, fl, a, attrs):
        ns = self.cfg.get("no_size")
        if ns and matches(ns.get("names", []), name) and (not attrs or ns.get("attrs")) and fl & A_SIZE:
            self.fired("no_size", "%s%s" % (name, " (attrs)" if attrs else ""))
            return fl & ~A_SIZE, a
        lies = self.cfg.get("size_lie", {})
        if name in lies and fl & A_SIZE:
            a = dict(a)
            a["size"] = max(0, a["size"] + int(lies[name]))
            self.fired("size_lie", "%s %+d%s" % (name, int(lies[name]), " (attrs)" if attrs else ""))
        return fl, a

    def report_times(self, name, fl, a):
        """The times the phone shows (mtime_step, shift_mtime) for a listed or stat'ed file."""
        step = int(self.cfg.get("mtime_step") or 0)
        shift = int(self.cfg.get("shift_mtime") or 0)
        if not fl & A_ACMODTIME or (step <= 1 and shift == 0):
            return a
        a = dict(a)
        real = a["mtime"]
        for k in ("atime", "mtime"):
            v = a[k]
            if step > 1:
                v -= v % step
            a[k] = clamp32(v + shift)
        if step > 1 and real % step:
            self.fired_once("mtime_step", "report", name, "%s %d->%d" % (name, real, real - real % step))
        if shift:
            self.fired_once("shift_mtime", "report", name, "%s %d->%d" % (name, real, a["mtime"]))
        return a

    def rewrite_name(self, pkt):
        r = Reader(pkt, 9)
        count = r.u32()
        body = b""
        for _ in range(count):
            fn, ln = r.string(), r.string()
            fl, a, ext = r.attrs()
            fl, a = self.lie(fn.decode("utf-8", "surrogateescape"), fl, a, attrs=False)
            a = self.report_times(fn.decode("utf-8", "surrogateescape"), fl, a)
            body += s(fn) + s(ln) + pack_attrs(fl, a, ext)
        return packet(NAME, pkt[5:9] + u32(count) + body)

    def version(self, pkt):
        hide = [e.encode() for e in self.cfg.get("hide_extensions", [])]
        if not hide:
            return pkt
        r = Reader(pkt, 5)
        out = u32(r.u32())
        while r.p < len(pkt):
            k, v = r.string(), r.string()
            if k in hide:
                self.fired("hide_extensions", k.decode())
                continue
            out += s(k) + s(v)
        return packet(VERSION, out)

    # -- the loop ----------------------------------------------------------------------------

    @staticmethod
    def split(buf):
        """Complete packets at the front of buf, and the rest."""
        pkts = []
        while len(buf) >= 4:
            n = struct.unpack_from(">I", buf)[0]
            if n == 0 or n > MAX_PACKET:
                raise ValueError("bad packet length %d" % n)
            if len(buf) < 4 + n:
                break
            pkts.append(buf[:4 + n])
            buf = buf[4 + n:]
        return pkts, buf

    def run(self):
        server_open = True
        while True:
            rl, wl = [], []
            if self.stdin_open:
                rl.append(0)
            if server_open:
                rl.append(self.cout)
            if self.to_client and not self.hanging:
                wl.append(1)
            if self.to_server and not self.hanging and self.cin is not None:
                wl.append(self.cin)
            if not rl and not wl:
                break
            r, w, _ = select.select(rl, wl, [])
            if 1 in w:
                try:
                    n = os.write(1, self.to_client)
                    del self.to_client[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    self.finish()
            if self.cin is not None and self.cin in w:
                try:
                    n = os.write(self.cin, self.to_server)
                    del self.to_server[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    self.to_server.clear()
            if 0 in r:
                data = self._read(0)
                if data == b"":
                    self.stdin_open = False
                    if self.hanging:
                        self.finish()
                elif data and not self.hanging:
                    self.up_in += data
                    pkts, self.up_in = self.split(self.up_in)
                    for p in pkts:
                        if self.hanging:
                            break
                        self.on_request(p)
            if self.cout in r:
                data = self._read(self.cout)
                if data == b"":
                    server_open = False
                elif data and not self.hanging:
                    self.down_in += data
                    pkts, self.down_in = self.split(self.down_in)
                    for p in pkts:
                        self.on_reply(p)
            if not self.stdin_open and not self.to_server and self.cin is not None:
                self.child.stdin.close()
                self.cin = None
            if not server_open and not self.to_client:
                break
            if not server_open and self.hanging:
                continue
        self.finish()

    @staticmethod
    def _read(fd):
        try:
            return os.read(fd, 1 << 18)
        except BlockingIOError:
            return None
        except OSError as e:
            if e.errno in (errno.EIO, errno.EPIPE, errno.ECONNRESET):
                return b""
            raise


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="sftp_relay.py")
    ap.add_argument("--control", default=os.environ.get("PHSYNC_RELAY_CONTROL"),
                    help="JSON control file (default $PHSYNC_RELAY_CONTROL)")
    ap.add_argument("--server", default=SFTP_SERVER, help="the real sftp server (default %s)" % SFTP_SERVER)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    Relay(a.control, a.server).run()


if __name__ == "__main__":
    main(sys.argv[1:])
