#!/usr/bin/env bash
# Installs every Debian package phsync needs to build, test and benchmark (Debian 12).
# Works as root, or through sudo otherwise.  No prompts.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config          # compiler (gcc brings libasan/libubsan), build
  libssh-dev libxxhash-dev                  # libphsync's dependencies
  libcmocka-dev                             # unit tests
  openssh-server openssh-client openssh-sftp-server   # the integration tests' sshd, ssh-keygen, ssh-agent
  dropbear-bin gesftpserver                 # other server implementations (compatibility tests)
  python3                                   # integration test harness, corpus generator, bench
  rsync rdiff hyperfine time                # benchmark peers and GNU time (peak RSS)
  clang libclang-rt-14-dev                  # libFuzzer targets
)

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${PKGS[@]}"
