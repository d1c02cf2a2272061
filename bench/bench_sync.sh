#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# Benchmark: phsync pull vs rsync -a over ssh vs OpenSSH sftp -r, on one throwaway loopback
# sshd, in one run with alternating repetitions; prints medians and ratios.
#
#   bench/bench_sync.sh                     5 reps, both data sets, all tools
#   bench/bench_sync.sh --reps 3 --sets small --tools phsync,rsync
#   bench/bench_sync.sh --help              every option
#
# The corpora are generated once (bench/mkcorpus.py) under /var/tmp/phsync-bench (about
# 1.6 GB; --data DIR or PHSYNC_BENCH_DATA to move it) and reused.  phsync is the Release build
# in build-bench/ (built here; PHSYNC_BIN or --phsync to use another).  Raw numbers go to
# bench/out/.  Needs: rsync, openssh-client/server, GNU time (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# The benchmark's own Release build: never a sanitizer or debug build that a
# developer's build/ might hold (an ASan phsync uses 400 MB and runs slower).
if [ -z "${PHSYNC_BIN:-}" ] && ! printf '%s\n' "$@" | grep -q -- '^--phsync'; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHSYNC_SANITIZE=OFF -DPHSYNC_TESTS=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" --target phsync >/dev/null
  export PHSYNC_BIN=$PWD/build-bench/phsync
fi
exec python3 bench/bench_sync.py "$@"
