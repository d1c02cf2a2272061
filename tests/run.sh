#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# The test command (README.md names it): a sanitizer build (ASan + UBSan) of phsync and all its
# tests, then every unit and integration test through ctest.
#
#   tests/run.sh                      build into build-test/ and run everything
#   tests/run.sh -R integration.test_pull     extra arguments go to ctest
#   tests/run.sh -L unit              only the unit tests
#   BUILD_DIR=mybuild JOBS=4 tests/run.sh
#
# One integration test file = one ctest, each with its own throwaway sshd on 127.0.0.1
# (tests/lib/harness.py); see docs/TESTING.md.  To run a single test method by hand:
#   cd tests/integration && PHSYNC_BIN=../../build-test/phsync PYTHONPATH=../lib \
#       python3 -m unittest -v test_pull.PullTest.test_rerun_rewrites_nothing
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-test}
JOBS=${JOBS:-2}
# The timeout of a ctest without its own TIMEOUT property (tests/CMakeLists.txt sets one for
# every test; the TIMEOUT property wins over this default).
TEST_TIMEOUT=${TEST_TIMEOUT:-600}

# -Werror, every static helper (the phone tests run the aarch64 one under qemu) and a
# configure that fails rather than building fewer tests.
cmake -S . -B "$BUILD_DIR" -DPHSYNC_SANITIZE=ON -DBUILD_TESTING=ON -DPHSYNC_TESTS_REQUIRED=ON \
      -DPHSYNC_WERROR=ON -DPHSYNC_HELPERS=all
cmake --build "$BUILD_DIR" -j"$JOBS"
cd "$BUILD_DIR"
exec ctest --output-on-failure --timeout "$TEST_TIMEOUT" -j"$JOBS" "$@"
