#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# README's first command: on a fresh Debian 12 machine, install what phsync needs, build it
# (Release, into build/), and show the main job with no phone at hand: a throwaway OpenSSH
# server on 127.0.0.1 (tests/lib/harness.py) serves a generated sample phone folder
# (bench/mkcorpus.py at a small scale), phsync pulls it with a progress line, then pulls again
# (nothing moves the second time), and the result is listed and compared.  Everything it makes
# lives in one temp folder that is removed at the end (DEMO_KEEP=1 keeps it).
#
#   scripts/demo.sh                 install, build, demo
#   DEMO_SKIP_DEPS=1 scripts/demo.sh   skip the apt-get step
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${DEMO_SKIP_DEPS:-}" ]; then
  scripts/install-deps.sh --build
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPHSYNC_SANITIZE=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build build -j"$(nproc)" --target phsync

work=$(mktemp -d /tmp/phsync-demo-XXXXXX)
state="$work/server"
phone="$work/phone"
dest="$work/Pictures"
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -z "${DEMO_KEEP:-}" ]; then
    rm -rf "$work"
  else
    echo "kept $work"
  fi
}
trap cleanup EXIT

echo "== making a sample phone folder in $phone"
# About 92 MB: 20 photos, a video, 6 screenshots, 300 thumbnails (same recipe as the benchmark).
python3 bench/mkcorpus.py "$phone" --scale 0.05 --small 300
python3 bench/mkcorpus.py "$phone" --stat | awk '{printf "   %d files, %.1f MB\n", $1, $2/1e6}'

echo "== starting a throwaway sshd on 127.0.0.1 (keys and ssh_config in $state)"
mkdir -p "$state"
python3 tests/lib/harness.py serve "$state" > "$work/config-path" &
server_pid=$!
for _ in $(seq 150); do
  [ -s "$work/config-path" ] && break
  kill -0 "$server_pid" 2>/dev/null || { echo "the test sshd did not start" >&2; exit 1; }
  sleep 0.1
done
cfg=$(head -n1 "$work/config-path")
[ -n "$cfg" ] || { echo "the test sshd did not start" >&2; exit 1; }
echo "   ssh config: $cfg (Host phone)"

# The "phone" is this machine under your own account: phsync would bring its
# static helper into your ~/.cache/phsync. The demo shows plain SFTP instead.
export PHSYNC_HELPER_DIR=
echo
echo "== phsync pull --progress -F $cfg phone:$phone/DCIM $dest"
build/phsync pull --progress -F "$cfg" "phone:$phone/DCIM" "$dest"
echo
echo "== again: nothing has changed on the phone, so nothing moves"
build/phsync pull -v --progress -F "$cfg" "phone:$phone/DCIM" "$dest"
echo
echo "== a new photo on the phone: only it moves"
cp -p "$phone/DCIM/Camera/IMG_20231114_100000.jpg" "$phone/DCIM/Camera/IMG_20231115_090000.jpg"
build/phsync pull -v -F "$cfg" "phone:$phone/DCIM" "$dest"
echo
echo "== result"
for d in "$dest"/* "$dest"/.[!.]*; do
  [ -e "$d" ] && printf '   %-14s %4d files\n' "${d#"$dest"/}/" "$(find "$d" -type f | wc -l)"
done
ls -l --time-style=+%Y-%m-%d\ %H:%M "$dest/Camera" | sed -n '2,6p'
echo "   ..."
if diff -r -x .thumbnails "$phone/DCIM" "$dest" >/dev/null && [ ! -e "$dest/.thumbnails" ]; then
  echo "identical to the phone's DCIM: $(find "$dest" -type f | wc -l) files, without the"
  echo "gallery's thumbnail cache (DCIM/.thumbnails: skipped by default, --no-default-excludes takes it)"
else
  echo "DIFFERENT from the phone's DCIM" >&2
  exit 1
fi

here=$PWD
cat <<EOT

== try it yourself
phsync is at $here/build/phsync (not installed). To put it on your PATH with its man page:
   cmake --install $here/build --prefix ~/.local     # then: phsync --help, man phsync
A sample phone to pull from, in one terminal (stops with Ctrl-C):
   mkdir -p /tmp/phone && python3 $here/bench/mkcorpus.py /tmp/phone --scale 0.05 --small 300
   python3 $here/tests/lib/harness.py serve /tmp/phone-server    # prints its ssh_config path
and in another:
   $here/build/phsync pull -F /tmp/phone-server/ssh_config phone:/tmp/phone/DCIM ~/Pictures/phone
EOT
