#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# Installs every Debian package phsync needs to build, test and benchmark (Debian 12).
# Works as root, or through sudo otherwise.  No prompts.
#   scripts/install-deps.sh           everything (tests, fuzzers, benchmarks, cross compilers): .ci/run
#   scripts/install-deps.sh --build   only what building phsync and scripts/demo.sh need
#   scripts/install-deps.sh --windows only the Windows cross build's tools (scripts/build-windows.sh)
set -euo pipefail

# What building phsync and the README's demo need (--build installs only these) ...
BUILD_PKGS=(
  build-essential cmake pkg-config          # compiler, build
  libssh-dev libxxhash-dev libsqlite3-dev libutf8proc-dev   # libphsync's dependencies (utf8proc: Unicode forms of names)
  libssl-dev                                # libcrypto: MD5/SHA-1 of check-file deltas (pulls from ProFTPD/MINA servers)
  libuv1-dev libinih-dev                    # the watcher daemon (event loop, config file)
  libarchive-dev libzstd-dev                # backups: tar (pax) writer/reader; zstd frames written by phsync
  openssh-server openssh-client openssh-sftp-server   # the demo's throwaway sshd (and the tests')
  python3                                   # the demo's sample phone (bench/mkcorpus.py) and server (tests/lib/harness.py)
)
# ... and what the tests, the fuzzers, the benchmarks and the phone helpers' cross builds add.
TEST_PKGS=(
  libcmocka-dev                             # unit tests
  libarchive-tools zstd                     # bsdtar and zstd read backups back in the tests (GNU tar: tar)
  dropbear-bin gesftpserver                 # other server implementations (compatibility tests)
  sqlite3 xxhash                            # integration test harness (sqlite3, xxhsum: the state's rows), bench
  zsh fish man-db groff-base                # test_cli: the zsh and fish completions run in their shells; man pages rendered
  openssl dpkg-dev                          # test_pair (a password hash where Python has no crypt), test_install (cpack -G DEB: dpkg-shlibdeps)
  systemd lintian                           # test_install: systemd-analyze verify of the installed user unit; lintian on the .deb
  rsync rdiff hyperfine time                # benchmark peers and GNU time (peak RSS)
  clang libclang-rt-14-dev                  # libFuzzer targets
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
                                            # the static remote helpers for phones (aarch64, armv7: -DPHSYNC_HELPERS=all)
  qemu-user-static                          # ... run under qemu in the tests
  mksh toybox busybox                       # a phone's shell and tools (Android: mksh + toybox) for the bootstrap's start-up script
  ntfs-3g                                   # test_winnames: an NTFS folder (FUSE, windows_names) holding only names Windows can
)
# The Windows cross build (scripts/build-windows.sh, docs/WINDOWS.md): mingw-w64, the
# Debian-built mingw libgcrypt, libgpg-error and zlib, what building the other libraries
# from Debian's source packages needs (dpkg-dev: dpkg-source; tcl: SQLite's amalgamation),
# and Wine to run the tests. Not part of the default set: only --windows installs it.
WINDOWS_PKGS=(
  gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 binutils-mingw-w64-x86-64
  libgcrypt-mingw-w64-dev libgpg-error-mingw-w64-dev libz-mingw-w64-dev
  cmake ninja-build make pkg-config dpkg-dev tcl xz-utils
  wine wine64
  groff-base                                # the man pages as text in the zip (scripts/win-package.py)
  gcc libc6-dev libxxhash-dev               # the phone helpers in the zip (Linux programs, cmake/helpers.cmake) ...
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf libc6-dev-armhf-cross   # ... for phones
)

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Another apt (unattended-upgrades, a parallel job) may hold the lock for a
# while: wait for it, and retry a failed step a few times.
apt_get() {
  local try
  for try in 1 2 3 4 5; do
    $SUDO apt-get -o DPkg::Lock::Timeout=120 "$@" && return 0
    echo "apt-get $1 failed (try $try); retrying in 10 s" >&2
    sleep 10
  done
  return 1
}
apt_get update -q
if [ "${1:-}" = "--build" ]; then
  apt_get install -y -q --no-install-recommends "${BUILD_PKGS[@]}"
  exit 0
fi
if [ "${1:-}" = "--windows" ]; then
  apt_get install -y -q --no-install-recommends "${WINDOWS_PKGS[@]}"
  exit 0
fi
apt_get install -y -q --no-install-recommends "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"

# ProFTPD with mod_sftp, the compatibility tests' server that hashes blocks (check-file
# deltas without the helper). Its packages would install and start an FTP daemon, which a
# developer's machine should not get from a test dependency: they are unpacked instead into
# /opt/phsync-test/proftpd (tests/lib/harness.py runs the binary from there, with its own
# config), and only the shared libraries they link are installed.
PROFTPD_LIBS=(libhiredis0.14 libmemcached11 libmemcachedutil2 libsodium23 libpcre2-posix3
              libidn2-0 libcap2 libacl1 libpam0g libssl3 zlib1g)
apt_get install -y -q --no-install-recommends "${PROFTPD_LIBS[@]}"
PROFTPD_DIR=${PHSYNC_PROFTPD_ROOT:-/opt/phsync-test/proftpd}
dl=$(mktemp -d)
chmod 755 "$dl"
if [ -z "$SUDO" ]; then
  chown _apt "$dl" 2>/dev/null || true   # root's apt downloads as _apt where it can
fi
( cd "$dl" && apt_get download proftpd-core proftpd-mod-crypto )
$SUDO rm -rf "$PROFTPD_DIR"
$SUDO mkdir -p "$PROFTPD_DIR"
for deb in "$dl"/proftpd-core_*.deb "$dl"/proftpd-mod-crypto_*.deb; do
  $SUDO dpkg-deb -x "$deb" "$PROFTPD_DIR"
done
rm -rf "$dl"
"$PROFTPD_DIR/usr/sbin/proftpd" -v
