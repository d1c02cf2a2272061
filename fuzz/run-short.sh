#!/bin/sh
# Builds the delta engine's libFuzzer targets in a separate clang build
# directory and runs each for a bounded time (CI smoke run).
#   fuzz/run-short.sh [SECONDS_PER_TARGET]     (default 20)
# Env: PHSYNC_FUZZ_BUILD (build dir, default <repo>/build-fuzz).
# Needs: clang, libclang-rt-14-dev (or the libclang-rt matching clang),
# cmake, pkg-config, libxxhash-dev (and the project's other build deps,
# since the top-level CMakeLists is configured).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${PHSYNC_FUZZ_BUILD:-$root/build-fuzz}
secs=${1:-20}

CC=${CC:-clang} cmake -S "$root" -B "$build" -DPHSYNC_FUZZ=ON -DPHSYNC_TESTS=OFF \
	-DPHSYNC_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_sig fuzz_patch fuzz_roundtrip -j"$(nproc)"

status=0
for t in fuzz_sig fuzz_patch fuzz_roundtrip; do
	corpus="$build/corpus/$t"
	mkdir -p "$corpus"
	echo "== $t: ${secs}s"
	if ! "$build/fuzz/$t" -max_total_time="$secs" -max_len=8192 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/$t-" \
		"$corpus" 2>"$build/$t.log"; then
		tail -n 60 "$build/$t.log"
		echo "== $t FAILED; reproducer: $build/$t-*"
		status=1
	else
		grep -E "^stat::number_of_executed_units|^Done" "$build/$t.log" || true
	fi
done
exit $status
