#!/bin/sh
# SPDX-License-Identifier: ISC
# Builds the libFuzzer targets (the delta engine's parsers, the SFTP client's
# reply and NAME parsers, the remote helper's request handling, check-file
# replies against an old copy, the archive manifest) in a separate clang build
# directory and runs each for a bounded time (CI smoke run).
#   fuzz/run-short.sh [SECONDS_PER_TARGET]     (default 20)
# Env: PHSYNC_FUZZ_BUILD (build dir, default <repo>/build-fuzz).
# Seeds: fuzz/corpus/<target>/ when it exists (committed; recorded from real
# SFTP servers by fuzz/make-sftp-seeds.sh); what a run finds goes to
# <build>/corpus/<target>/. A crash leaves its reproducer at
# <build>/<target>-crash-*; replay it with <build>/fuzz/<target> FILE.
# Needs: clang, libclang-rt-14-dev (or the libclang-rt matching clang),
# cmake, pkg-config, libxxhash-dev (and the project's other build deps,
# since the top-level CMakeLists is configured).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${PHSYNC_FUZZ_BUILD:-$root/build-fuzz}
secs=${1:-20}
targets="fuzz_sig fuzz_patch fuzz_roundtrip fuzz_sftp fuzz_sftp_names fuzz_serve fuzz_check_file fuzz_manifest"
targets="$targets fuzz_state" # the names a sync state row holds

CC=${CC:-clang} cmake -S "$root" -B "$build" -DPHSYNC_FUZZ=ON -DPHSYNC_TESTS=OFF \
	-DPHSYNC_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" --target $targets -j"$(nproc)"

status=0
for t in $targets; do
	corpus="$build/corpus/$t"
	mkdir -p "$corpus"
	seeds=
	[ -d "$here/corpus/$t" ] && seeds="$here/corpus/$t"
	case $t in
	fuzz_sftp*) maxlen=32768 ;; # the recorded server streams reach 16 KB
	*) maxlen=8192 ;;
	esac
	echo "== $t: ${secs}s"
	# shellcheck disable=SC2086
	if ! "$build/fuzz/$t" -max_total_time="$secs" -max_len="$maxlen" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/$t-" \
		"$corpus" $seeds 2>"$build/$t.log"; then
		tail -n 60 "$build/$t.log"
		echo "== $t FAILED; reproducer: $build/$t-*"
		status=1
	else
		grep -E "^stat::number_of_executed_units|^Done|INITED" "$build/$t.log" || true
	fi
done
exit $status
