#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# A/B of two phsync builds on bench_wire.py's 60 gallery edits, through the helper, on
# loopback: the two alternate, each run from a freshly synced copy, and the wall times of
# the timed runs are printed per build (with their medians). For changes too small for
# bench_wire's run-to-run noise: same data, same server, interleaved.
#
#   bench/ab_wire.sh OLD_PHSYNC NEW_PHSYNC [pull|push] [RUNS] [-- extra phsync args]
#
# Needs the corpus bench_wire.py made ($PHSYNC_BENCH_DATA, default /var/tmp/phsync-bench:
# wire/corpus-0.2 and wire/edited-0.2-60; run bench_wire.py once first). Starts its own sshd
# (tests/lib/harness.py serve, with the login shell's start-up files hidden when root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=$(realpath "$1"); new=$(realpath "$2"); dir=${3:-pull}; runs=${4:-6}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
data=${PHSYNC_BENCH_DATA:-/var/tmp/phsync-bench}/wire
src=$data/corpus-0.2 edited=$data/edited-0.2-60
[ -d "$src" ] && [ -d "$edited" ] || { echo "ab_wire: run bench/bench_wire.py first ($src)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/phsync-ab.XXXXXX)
clean=; [ "$(id -u)" -eq 0 ] && clean=--clean-home
python3 "$here/../tests/lib/harness.py" serve $clean "$work/srv" > "$work/cfgpath" 2>"$work/srv.err" &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$work"' EXIT
while [ ! -s "$work/cfgpath" ]; do
  kill -0 $srv 2>/dev/null || { cat "$work/srv.err" >&2; exit 1; }
  sleep 0.1
done
cfg=$(cat "$work/cfgpath")
export XDG_STATE_HOME=$work/xdg PHSYNC_HELPER_DIR=
run() { # BIN QUIET -> moves local<->phone:remote in direction $dir
  local bin=$1; shift
  local h=(--helper always --helper-path "$bin" --no-default-excludes)
  if [ "$dir" = pull ]; then
    "$bin" pull -F "$cfg" -q "${h[@]}" "$@" "phone:$work/remote" "$work/local"
  else
    "$bin" push -F "$cfg" -q "${h[@]}" "$@" "$work/local" "phone:$work/remote"
  fi
}
for i in $(seq "$runs"); do
  for bin in "$old" "$new"; do
    rm -rf "$work/remote" "$work/local" "$work/xdg"
    if [ "$dir" = pull ]; then from=$work/remote; else from=$work/local; fi
    cp -a "$src" "$from"
    run "$new"                       # the synced starting point (untimed)
    cp -a "$edited/." "$from/"
    sync
    s=$(date +%s%N)
    run "$bin" "$@"
    e=$(date +%s%N)
    diff -r "$work/remote" "$work/local" >/dev/null || { echo "ab_wire: WRONG RESULT from $bin" >&2; exit 1; }
    echo "$bin $(( (e - s) / 1000000 ))"
  done
done > "$work/times"
for bin in "$old" "$new"; do
  ts=$(awk -v b="$bin" '$1 == b {print $2}' "$work/times")
  med=$(printf '%s\n' $ts | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')
  echo "$bin ms:" $ts " median $med"
done
