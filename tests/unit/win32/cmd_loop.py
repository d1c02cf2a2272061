#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""phsync.exe under Wine against a real OpenSSH sshd on 127.0.0.1: status,
backup / verify / restore and two-way sync, checked on disk, by exit code and
by --json, as tests/integration/test_state.py, test_backup.py and
test_twoway.py check them on Linux.

    python3 cmd_loop.py [EMULATOR...] PHSYNC_EXE

Starts a throwaway sshd (tests/lib/harness.py) and runs the exe (under the
emulator: Wine) with the server's ssh_config (-F) and a state folder of its
own (Wine ignores USERPROFILE and LOCALAPPDATA from the environment):
- status: after a pull, `status --json` lists the pair (success, exit 0, the
  files done and known, its local folder as Windows names it); `status PHONE
  LAPTOP` of the pair says a new phone file is to be copied (its count and
  bytes) and copies nothing;
- backup: the phone folder to a .tar.zst in a folder with a non-ASCII name;
  verify says it is whole and that a copy with one flipped byte is not;
  restore into an empty folder gives the phone's bytes and mtimes; GNU tar and
  bsdtar on Linux read the archive back to the same files (the Windows build
  writes a normal archive); an --incremental after an edit and a new file
  holds those two, and the chain restores to the phone's files; a new full
  backup with --keep 1 removes the older chain's two archives;
- sync: a first two-way run makes the union of both sides, a new file on each
  side then travels (each its way), and a run with no change moves nothing and
  changes nothing on either side.
Exits 0 when every check holds, 1 with what differed. The server and the
files go when it ends.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import harness  # noqa: E402
from pull_loop import Failed, check, events, files, run, run_steps  # noqa: E402

T0 = 1700000000
PHONE = {"DCIM/IMG_1.jpg": b"\xff\xd8\xff\xe0" + bytes((i * 7 + 3) & 0xFF for i in range(200000)),
         "notes/été.txt": "notes\n".encode() * 1000, "empty": b"", "top.txt": b"top\n"}
MANIFEST = ".phsync-manifest"


def snap(root):
    """Everything a run could change under root, comparable."""
    out = {}
    for dp, dn, fn in os.walk(root):
        for n in fn + dn:
            st = os.lstat(os.path.join(dp, n))
            out[os.path.relpath(os.path.join(dp, n), root)] = (st.st_mode, st.st_size,
                                                              st.st_mtime_ns, st.st_ino)
    return out


def fill(root, tree, mtime):
    for rel, data in tree.items():
        harness.write_file(os.path.join(root, rel), data, mtime=mtime)


def status(exe, srv, tmp, env):
    cfg = srv.config
    phone = os.path.join(tmp, "phone")
    local = os.path.join(tmp, "laptop")
    state = os.path.join(tmp, "state")
    fill(phone, PHONE, T0)
    opts = ["-F", cfg, "--state-dir", state]
    r = run(exe + ["pull"] + opts + ["--json", "phone:" + phone, local], env)
    check(r.returncode == 0, "the pull exited %d" % r.returncode, r)
    done = events(r)[-1].get("files_done")
    check(done == len(PHONE), "the pull copied %r files" % done, r)

    r = run(exe + ["status", "--state-dir", state, "--json"], env)
    pairs = events(r)
    check(r.returncode == 0 and len(pairs) == 1, "status --json of the state folder", r)
    p = pairs[0]
    check(p.get("remote", "").endswith(":" + phone), "the pair's remote %r" % p.get("remote"), r)
    check(unix_path(p.get("local", "")) == os.path.realpath(local), "the pair's local %r"
          % p.get("local"), r)
    check((p.get("last_result"), p.get("last_exit"), p.get("files_done"), p.get("files_known"),
           p.get("running")) == ("success", 0, done, done, False), "the pair's record %r" % p, r)
    r = run(exe + ["status", "--state-dir", state], env)
    check(r.returncode == 0 and ("ok, %d copied, 0 failed" % done) in r.stdout.decode(),
          "status's words of the pair", r)

    harness.write_file(os.path.join(phone, "new.jpg"), b"x" * 1000, mtime=T0 + 10)
    pair = exe + ["status"] + opts + ["phone:" + phone, local]
    r = run(pair + ["--json"], env)
    ev = events(r)
    check(r.returncode == 0 and len(ev) == 2, "status --json of the pair", r)
    st, rec = ev
    check((st.get("event"), st.get("files_to_copy"), st.get("bytes_to_copy"), st.get("conflicts"),
           st.get("files_total")) == ("status", 1, 1000, 0, len(PHONE) + 1),
          "what status says a pull would do: %r" % st, r)
    check((rec.get("event"), rec.get("last_result")) == ("pair", "success"),
          "the pair's line in status: %r" % rec, r)
    check(not os.path.exists(os.path.join(local, "new.jpg")), "status copied new.jpg", r)
    r = run(pair, env)
    check(r.returncode == 0 and ("now: 1 of %d files to copy" % (len(PHONE) + 1))
          in r.stdout.decode() and "last run" in r.stdout.decode(), "status's words of a pull", r)
    os.unlink(os.path.join(phone, "new.jpg"))


def unix_path(p):
    """A path phsync.exe reported (Wine's Z: drive is /; the folder is
    resolved with backslashes, the archive's name joined with '/') as the
    Linux path of the same file."""
    if p[:2] in ("Z:", "z:"):
        p = p[2:].replace("\\", "/")
    return p


def extract(tool, archive, out):
    os.makedirs(out)
    argv = (["tar", "--zstd", "-xpf", archive, "-C", out] if tool == "gnutar"
            else ["bsdtar", "-xpf", archive, "-C", out])
    p = subprocess.run(argv, capture_output=True)
    if p.returncode != 0:
        raise Failed("%s could not read the archive: %s" % (tool, p.stderr.decode(errors="replace")))
    os.unlink(os.path.join(out, MANIFEST))
    return files(out)


def backup(exe, srv, tmp, env):
    cfg = srv.config
    phone = os.path.join(tmp, "phone")
    arch = os.path.join(tmp, "sauvegardes été")
    os.makedirs(arch)
    cmd = exe + ["backup", "-F", cfg, "--state-dir", os.path.join(tmp, "state"), "--json"]
    r = run(cmd + ["phone:" + phone, os.path.join(arch, "phone.tar.zst")], env)
    check(r.returncode == 0, "the backup exited %d" % r.returncode, r)
    got = sorted(os.listdir(arch))
    check(got == ["phone.tar.zst"], "the archive folder holds %r" % got, r)
    a = os.path.join(arch, "phone.tar.zst")
    check(unix_path(events(r)[-1].get("archive") or "") == a, "the backup's summary names %r"
          % events(r)[-1].get("archive"), r)
    want = files(phone)
    for tool in ("gnutar", "bsdtar"):
        out = extract(tool, a, os.path.join(tmp, "x-" + tool))
        check(out == want, "%s read back %r" % (tool, sorted(out)))

    r = run(exe + ["verify", a], env)
    check(r.returncode == 0, "verify of the archive exited %d" % r.returncode, r)
    with open(a, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x40
    bad = os.path.join(tmp, "bad.tar.zst")
    with open(bad, "wb") as f:
        f.write(data)
    r = run(exe + ["verify", bad], env)
    check(r.returncode != 0, "verify of a flipped byte exited 0", r)

    dst = os.path.join(tmp, "restored")
    r = run(exe + ["restore", "--json", a, dst], env)
    check(r.returncode == 0, "the restore exited %d" % r.returncode, r)
    got = files(dst)
    check(got == want, "the restored folder: %r" % sorted(got), r)

    # An incremental after an edit and a new file: it finds the series'
    # last archive (in the non-ASCII folder) and holds only the changes; the
    # chain restores to the phone's files.
    harness.write_file(os.path.join(phone, "top.txt"), b"top, edited\n", mtime=T0 + 30)
    harness.write_file(os.path.join(phone, "DCIM/IMG_2.jpg"), b"\xff\xd8 second", mtime=T0 + 40)
    r = run(cmd + ["--incremental", "phone:" + phone, os.path.join(arch, "phone.tar.zst")], env)
    check(r.returncode == 0, "the incremental backup exited %d" % r.returncode, r)
    a2 = unix_path(events(r)[-1].get("archive") or "")
    done = sorted(e["path"] for e in events(r) if e.get("event") == "file")
    check(a2.startswith(arch) and a2 != a and done == ["DCIM/IMG_2.jpg", "top.txt"],
          "the incremental %r holds %r" % (a2, done), r)
    man = subprocess.run(["tar", "--zstd", "-xOf", a2, MANIFEST], capture_output=True).stdout
    check(b"kind incremental" in man, "the second archive's manifest: %r" % man[:200])
    dst = os.path.join(tmp, "restored2")
    r = run(exe + ["restore", "--json", a, a2, dst], env)
    check(r.returncode == 0, "the restore of the chain exited %d" % r.returncode, r)
    got = files(dst)
    check(got == files(phone), "the chain restored: %r" % sorted(got), r)

    # A new full backup with --keep 1: the older chain (both archives) goes.
    r = run(cmd + ["--full", "--keep", "1", "phone:" + phone,
                   os.path.join(arch, "phone.tar.zst")], env)
    check(r.returncode == 0, "the backup with --keep 1 exited %d" % r.returncode, r)
    a3 = unix_path(events(r)[-1].get("archive") or "")
    pruned = sorted(unix_path(e.get("path", "")) for e in events(r) if e.get("event") == "delete")
    left = sorted(os.path.join(arch, n) for n in os.listdir(arch))
    check(pruned == sorted([a, a2]) and left == [a3], "--keep 1 pruned %r and left %r"
          % (pruned, left), r)


def twoway(exe, srv, tmp, env):
    cfg = srv.config
    phone = os.path.join(tmp, "phone2")
    local = os.path.join(tmp, "laptop2")
    os.makedirs(local)
    fill(phone, {"p.txt": b"from the phone", "dir/c.txt": b"c\n"}, T0)
    fill(local, {"l/q.txt": b"from the laptop\r\n"}, T0 + 5)
    sync = exe + ["sync", "-F", cfg, "--state-dir", os.path.join(tmp, "state2"), "--helper",
                  "never", "--json", "phone:" + phone, local]
    r = run(sync, env)
    check(r.returncode == 0, "the first sync exited %d" % r.returncode, r)
    ways = sorted((e.get("dir"), e.get("path")) for e in events(r) if e.get("event") == "file")
    check(ways == [("pull", "dir/c.txt"), ("pull", "p.txt"), ("push", "l/q.txt")],
          "the first sync moved %r" % ways, r)
    check(files(local) == files(phone) and len(files(local)) == 3, "the union on both sides", r)

    harness.write_file(os.path.join(phone, "DCIM/new on phone.jpg"), b"phone new", mtime=T0 + 80)
    harness.write_file(os.path.join(local, "new on laptop.txt"), b"laptop new", mtime=T0 + 70)
    r = run(sync, env)
    check(r.returncode == 0, "the second sync exited %d" % r.returncode, r)
    ways = sorted((e.get("dir"), e.get("path")) for e in events(r) if e.get("event") == "file")
    check(ways == [("pull", "DCIM/new on phone.jpg"), ("push", "new on laptop.txt")],
          "the second sync moved %r" % ways, r)
    got = files(local)
    check(got == files(phone) and got["DCIM/new on phone.jpg"] == (b"phone new", T0 + 80)
          and got["new on laptop.txt"] == (b"laptop new", T0 + 70), "the new files on both sides", r)

    before = (snap(local), snap(phone))
    r = run(sync, env)
    s = events(r)[-1] if events(r) else {}
    check(r.returncode == 0 and (s.get("files_done"), s.get("bytes_done")) == (0, 0),
          "a sync with no change moved something", r)
    check((snap(local), snap(phone)) == before, "a sync with no change changed a side", r)


def main(argv):
    return run_steps("cmd_loop", __doc__, (status, backup, twoway), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
