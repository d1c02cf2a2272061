#!/usr/bin/env bash
# README's first command: on a fresh Debian 12 machine, install what phsync
# needs, build it, and show the main job with no phone at hand: a throwaway
# OpenSSH server on 127.0.0.1 serves a generated sample phone folder, and
# phsync pulls it, then pulls again (nothing moves the second time).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPHSYNC_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target phsync

work=$(mktemp -d /tmp/phsync-demo-XXXXXX)
state="$work/server"
phone="$work/phone"
dest="$work/Pictures"
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

echo "== making a sample phone folder in $phone"
python3 - "$phone" <<'PY'
import os, random, sys
root, rng, t = sys.argv[1], random.Random(7), 1700000000
for sub, n, lo, hi in (("DCIM/Camera", 40, 1_000_000, 4_000_000),
                       ("Pictures/Screenshots", 20, 100_000, 600_000),
                       ("DCIM/.thumbnails", 200, 9_000, 30_000)):
    os.makedirs(os.path.join(root, sub), exist_ok=True)
    for i in range(n):
        t += 60
        p = os.path.join(root, sub, "IMG_%06d.jpg" % i)
        with open(p, "wb") as f:
            f.write(b"\xff\xd8" + rng.randbytes(rng.randint(lo, hi)) + b"\xff\xd9")
        os.utime(p, (t, t))
PY

echo "== starting a throwaway sshd on 127.0.0.1"
python3 tests/lib/harness.py serve "$state" > "$work/config-path" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/config-path" ] && break; sleep 0.1; done
cfg=$(cat "$work/config-path")
echo "   ssh config: $cfg (Host phone)"

echo "== phsync pull -F $cfg phone:$phone $dest"
build/phsync pull --progress -F "$cfg" "phone:$phone" "$dest"
echo "== again: nothing has changed, so nothing moves"
build/phsync pull -v --progress -F "$cfg" "phone:$phone" "$dest"
echo "== result"
find "$dest" -maxdepth 2 | sort | head -12
diff -r "$phone" "$dest" && echo "identical: $(find "$dest" -type f | wc -l) files"
