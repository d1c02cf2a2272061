# SPDX-License-Identifier: ISC
"""What each command's --help, man page, README and shell completions say about its options,
read from the built program and the files themselves (nothing listed by hand here), for
test_cli.py's comparisons.

The only hand-kept list is PENDING: options and commands documented for a branch not merged
yet (the remote helper).  An entry excuses a man page or a completion naming the option only
while the built phsync refuses it as unknown; once phsync accepts it, its --help must list it
like any other."""

import os
import re
import subprocess

from harness import REPO, check_sanitizers, phsync_bin, sanitizer_env

DOCS = os.path.join(REPO, "docs")
COMPLETIONS = os.path.join(REPO, "scripts", "completions")

# command -> {option: a value it would take}.  A command mapped to None is itself pending.
PENDING = {
    "pull": {"--helper": "auto", "--helper-path": "phsync"},
    "push": {"--helper": "auto", "--helper-path": "phsync"},
    "": {"--helper": "auto", "--helper-path": "phsync"},  # phsync(1), the overview
    "serve": None,
}

LONG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])(?![\w])")
SHORT = re.compile(r"(?<![\w\-])(-[a-zA-Z])(?![\w-])")


def run(args, timeout=60):
    argv = [phsync_bin()] + list(args)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=sanitizer_env({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}),
                       timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    check_sanitizers(p.returncode, err, argv)
    return p.returncode, out, err


def options(text, short=True):
    found = set(LONG.findall(text))
    if short:
        found |= set(SHORT.findall(text))
    return found


def overview_help():
    code, out, err = run(["--help"])
    assert code == 0, err
    return out


def commands():
    """Every command: those `phsync --help` shows a usage line for, and those with a page."""
    cmds = set()
    for m in re.finditer(r"^(?:usage:)?\s+phsync ([a-z|]+)", overview_help(), re.M):
        cmds.update(c for c in m.group(1).split("|") if c)
    for f in os.listdir(DOCS):
        m = re.match(r"phsync-([a-z]+)\.1$", f)
        if m:
            cmds.add(m.group(1))
    return sorted(cmds)


def command_help(cmd):
    """(known, text): known is False when this phsync does not have the command (yet)."""
    code, out, err = run([cmd, "--help"])
    if code == 2 and "unknown command" in err:
        return False, err
    assert code == 0, "phsync %s --help exited %d: %s" % (cmd, code, err)
    return True, out


def help_options(cmd):
    return options(command_help(cmd)[1])


def man_text(page):
    with open(os.path.join(DOCS, page)) as f:
        return f.read()


def roff_plain(text):
    """Roff with its font changes dropped and its escaped '-' undone."""
    return re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", text).replace("\\-", "-")


def man_sections(page, names=("SYNOPSIS", "OPTIONS")):
    """The text of some sections of a roff page, with roff's escapes for '-' undone."""
    parts = re.split(r"^\.SH ", man_text(page), flags=re.M)
    return roff_plain("".join(p for p in parts if p.startswith(names)))


def man_options(cmd):
    return options(man_sections("phsync-%s.1" % cmd))


def accepts(cmd, opt):
    """Does the built phsync take opt for cmd (as opposed to 'unknown option')?"""
    value = (PENDING.get(cmd) or {}).get(opt)
    arg = opt if value is None else "%s=%s" % (opt, value)
    code, out, err = run(([cmd] if cmd else ["pull"]) + [arg, "--help"])
    return not (code == 2 and "unknown option" in err)


def unexcused(cmd, extra):
    """The options of extra (documented, not in --help) that PENDING does not excuse: those
    not pending, and pending ones the built phsync already accepts."""
    pending = PENDING.get(cmd) or {}
    return sorted(o for o in extra if o not in pending or accepts(cmd, o))


def help_entries(text):
    """{option: its description} from a --help options block (an entry starts with '-' after
    at most 6 spaces; deeper lines continue it)."""
    entries, cur = {}, None
    for line in text.splitlines():
        m = re.match(r" {1,6}(-\S.*)$", line)
        if m:
            head = m.group(1)
            cur = []
            for w in head.split():  # "-v, --verbose", "--timeout SEC": up to the first prose word
                w = w.rstrip(",")
                if w.startswith("-"):
                    cur.append(w.split("=")[0])
                elif not re.fullmatch(r"[A-Z][A-Z|_-]*|[a-z]+(\|[a-z]+)+", w):
                    break
            for o in cur:
                entries[o] = head
        elif cur and re.match(r" {7,}\S", line):
            for o in cur:
                entries[o] += " " + line.strip()
        else:
            cur = None
    return entries


def man_entries(page):
    """{option: its paragraph} from the OPTIONS section of a roff page (.TP items)."""
    text = man_sections(page, ("OPTIONS",))
    entries = {}
    for item in re.split(r"^\.TP\n", text, flags=re.M)[1:]:
        head, _, body = item.partition("\n")
        for o in LONG.findall(head) or SHORT.findall(head):
            entries[o] = " ".join((head + " " + body).split())
    return entries
