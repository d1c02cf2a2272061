#!/bin/bash
# SPDX-License-Identifier: ISC
# A/B timing of two phsync binaries on one delta command, alternating A and
# B in each repetition (the machine is shared, so wall times drift); prints
# the median and minimum wall, user and sys seconds of each.
#   bench/delta/ab.sh A_BIN B_BIN REPS -- delta diff SIG NEW OUT
# OUT (the last argument) is removed before each run unless it is a device,
# so no run waits for the write-back of the previous one's output.
# Example (files from bench/delta/mkfiles.py):
#   bench/delta/ab.sh /tmp/phsync.old build-delta-rel/phsync 9 -- \
#       delta diff $D/sig $D/other $D/out
set -euo pipefail
a=$1 b=$2 reps=$3
shift 3
[[ $1 == -- ]] && shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/phsync-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for ((r = 1; r <= reps; r++)); do
	for which in A B; do
		bin=$a
		[[ $which == B ]] && bin=$b
		[[ -c ${*: -1} ]] || rm -f "${*: -1}"
		s=$(date +%s%N)
		/usr/bin/time -f '%U %S' -o "$tmp/t" "$bin" "$@" >/dev/null
		e=$(date +%s%N)
		echo "$(( e - s )) $(cat "$tmp/t")" >>"$tmp/$which"
	done
done
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
low() { sort -n | head -1; }
for which in A B; do
	f=$tmp/$which
	printf '%s: wall median %s min %s  user median %s  sys median %s (n=%d)\n' "$which" \
		"$(awk '{ print $1 / 1e9 }' "$f" | med)" "$(awk '{ print $1 / 1e9 }' "$f" | low)" \
		"$(awk '{ print $2 }' "$f" | med)" "$(awk '{ print $3 }' "$f" | med)" "$reps"
done
