#!/bin/bash
# SPDX-License-Identifier: ISC
# phsync delta vs librsync's rdiff on the same files, in one run, with
# alternating repetitions; prints wall times (best and median of REPS), user
# CPU, ratios, delta sizes, and throughput against XXH3's own speed on this
# machine. Each command writes a new output file (the previous one is
# removed before the clock starts), so no run waits for the kernel to
# finish writing back the output of the run before it.
#   bench/delta/bench_delta.sh            (REPS=5 SIZE_MB=300 by default)
#   PH=/path/to/phsync bench/delta/bench_delta.sh   (time another binary)
# Needs: cmake, a C compiler, libxxhash-dev, python3, rdiff.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=${REPS:-5}
size_mb=${SIZE_MB:-300}
build=${BUILD:-$root/build-delta-rel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/phsync-bench-delta.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPHSYNC_SANITIZE=OFF \
	-DPHSYNC_TESTS=OFF >/dev/null
cmake --build "$build" --target phsync -j"$(nproc)" >/dev/null
ph=${PH:-$build/phsync}
cc -O2 -o "$tmp/xxh3_speed" "$here/xxh3_speed.c" $(pkg-config --cflags --libs libxxhash)

echo "files: ${size_mb} MB random old, new = old + 25 edits, other = unrelated (in $tmp)"
python3 "$here/mkfiles.py" "$tmp" $((size_mb * 1000000))
cat "$tmp"/old "$tmp"/new "$tmp"/other >/dev/null   # page cache warm

declare -A best all user
# t NAME CMD... OUT: runs CMD (its last argument is the output file, removed
# first), keeps NAME's wall times in ns and user CPU in s.
t() {
	local name=$1 s e d
	shift
	rm -f "${@: -1}"
	s=$(date +%s%N)
	/usr/bin/time -f '%U' -o "$tmp/time" "$@" >/dev/null
	e=$(date +%s%N)
	d=$(( e - s ))
	if [[ -z ${best[$name]:-} || $d -lt ${best[$name]} ]]; then best[$name]=$d; fi
	all[$name]="${all[$name]:-} $d"
	user[$name]="${user[$name]:-} $(cat "$tmp/time")"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
sec() { awk -v n="${best[$1]}" 'BEGIN { printf "%.3f", n / 1e9 }'; }
msec() { awk -v n="$(echo "${all[$1]}" | median)" 'BEGIN { printf "%.3f", n / 1e9 }'; }
usr() { echo "${user[$1]}" | median; }
gbs() { awk -v n="${best[$1]}" -v b="$2" 'BEGIN { printf "%.2f", b / n }'; }
mgbs() { awk -v n="$(echo "${all[$1]}" | median)" -v b="$2" 'BEGIN { printf "%.2f", b / n }'; }

for ((r = 1; r <= reps; r++)); do
	t ph_sig "$ph" delta signature "$tmp/old" "$tmp/sig"
	t ph_diff "$ph" delta diff "$tmp/sig" "$tmp/new" "$tmp/delta"
	t rd_sig rdiff -f signature "$tmp/old" "$tmp/rsig"
	t rd_diff rdiff -f delta "$tmp/rsig" "$tmp/new" "$tmp/rdelta"
	t ph_same "$ph" delta diff "$tmp/sig" "$tmp/old" "$tmp/delta_same"
	t ph_other "$ph" delta diff "$tmp/sig" "$tmp/other" "$tmp/delta_other"
	t rd_other rdiff -f delta "$tmp/rsig" "$tmp/other" "$tmp/rdelta_other"
	t ph_patch "$ph" delta patch "$tmp/old" "$tmp/delta" "$tmp/out"
	t rd_patch rdiff -f patch "$tmp/old" "$tmp/rdelta" "$tmp/rout"
done
cmp "$tmp/out" "$tmp/new"
cmp "$tmp/rout" "$tmp/new"

bytes=$(stat -c %s "$tmp/old")
ph_sum=$(( best[ph_sig] + best[ph_diff] ))
rd_sum=$(( best[rd_sig] + best[rd_diff] ))
dsz=$(stat -c %s "$tmp/delta")
rdsz=$(stat -c %s "$tmp/rdelta")
printf '\nedited file (best of %d, wall seconds; median in brackets)\n' "$reps"
printf '  %-10s %16s %16s %8s %16s\n' "" signature diff "sig+diff" patch
printf '  %-10s %8s [%5s] %8s [%5s] %8s %8s [%5s]\n' phsync "$(sec ph_sig)" "$(msec ph_sig)" \
	"$(sec ph_diff)" "$(msec ph_diff)" \
	"$(awk -v n=$ph_sum 'BEGIN{printf "%.3f", n/1e9}')" "$(sec ph_patch)" "$(msec ph_patch)"
printf '  %-10s %8s [%5s] %8s [%5s] %8s %8s [%5s]\n' rdiff "$(sec rd_sig)" "$(msec rd_sig)" \
	"$(sec rd_diff)" "$(msec rd_diff)" \
	"$(awk -v n=$rd_sum 'BEGIN{printf "%.3f", n/1e9}')" "$(sec rd_patch)" "$(msec rd_patch)"
printf '  sig+diff ratio phsync/rdiff: %s (target <= 0.33)\n' \
	"$(awk -v a=$ph_sum -v b=$rd_sum 'BEGIN{printf "%.3f", a/b}')"
printf '  delta size: phsync %d, rdiff %d, ratio %s (target <= 1.5)\n' "$dsz" "$rdsz" \
	"$(awk -v a=$dsz -v b=$rdsz 'BEGIN{printf "%.3f", a/b}')"
printf '  signature size: phsync %d, rdiff %d\n' "$(stat -c %s "$tmp/sig")" "$(stat -c %s "$tmp/rsig")"
printf '\nthroughput (GB/s, wall, file in page cache; best [median], median user CPU s)\n'
printf '  signature:                 %s [%s] user %s (target >= 2)\n' "$(gbs ph_sig "$bytes")" \
	"$(mgbs ph_sig "$bytes")" "$(usr ph_sig)"
printf '  diff, identical file:      %s [%s] user %s (target >= 1.5)\n' "$(gbs ph_same "$bytes")" \
	"$(mgbs ph_same "$bytes")" "$(usr ph_same)"
printf '  diff, unrelated file:      %s [%s] user %s (target >= 0.5); rdiff %s\n' \
	"$(gbs ph_other "$bytes")" "$(mgbs ph_other "$bytes")" "$(usr ph_other)" \
	"$(gbs rd_other "$bytes")"
printf '  delta of unrelated file:   phsync %d, rdiff %d bytes\n' \
	"$(stat -c %s "$tmp/delta_other")" "$(stat -c %s "$tmp/rdelta_other")"
"$tmp/xxh3_speed" "$size_mb" | sed 's/^/  /'
