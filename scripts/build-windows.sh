#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# Cross-builds phsync for 64-bit Windows with Debian's mingw-w64 and tests it under
# Wine (docs/WINDOWS.md). One command, from a clean clone:
#   scripts/build-windows.sh              packages, libraries (once), phsync's Windows
#                                         targets in build-win/, their tests under Wine
#   scripts/build-windows.sh --deps-only  only the packages and the libraries
#   scripts/build-windows.sh --rebuild-deps   build the libraries again from scratch
#   scripts/build-windows.sh --no-apt     install nothing (the packages are there)
#   scripts/build-windows.sh --no-test    build, but run nothing under Wine
# Environment: PHSYNC_WIN_BUILD (build-win), PHSYNC_WIN_DEPS (build-win/deps), JOBS (2).
#
# The libraries come from Debian only: libgcrypt, libgpg-error and zlib from Debian's
# mingw packages, the others built here, static, from Debian's source packages (with
# Debian's patches). They are built once into build-win/deps/prefix (about 7 minutes
# on 2 cores) and reused while the stamp there matches DEPS_RECIPE below: change it
# when a library's build changes.
set -euo pipefail

DEPS_RECIPE=1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${PHSYNC_WIN_BUILD:-$ROOT/build-win}
DEPS=${PHSYNC_WIN_DEPS:-$OUT/deps}
PREFIX=$DEPS/prefix
SRC=$DEPS/src
BLD=$DEPS/build
TC=$ROOT/cmake/mingw-w64-x86_64.cmake
JOBS=${JOBS:-2}
MINGW=x86_64-w64-mingw32
MINGW_ROOT=/usr/$MINGW
# Debian's source packages of the libraries (cmocka: the unit tests).
SRC_PKGS=(libzstd libuv1 libssh libarchive sqlite3 utf8proc libinih xxhash cmocka)
# Built when the archive serves them, else left out with a warning: libinih
# (only the watcher's phsync.conf reader needs it, and Debian's mirror has
# answered 404 for its files; docs/WINDOWS.md).
OPTIONAL_PKGS=" libinih "

deps_only=0 rebuild=0 apt=1 run_tests=1
for a in "$@"; do
  case $a in
    --deps-only) deps_only=1 ;;
    --rebuild-deps) rebuild=1 ;;
    --no-apt) apt=0 ;;
    --no-test) run_tests=0 ;;
    -h|--help) sed -n '3,17p' "$0"; exit 0 ;;
    *) echo "build-windows.sh: unknown option $a (--help)" >&2; exit 2 ;;
  esac
done

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
step() { printf '== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

COMMON=(-G Ninja "-DCMAKE_TOOLCHAIN_FILE=$TC" "-DPHSYNC_WIN_PREFIX=$PREFIX"
        -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=$PREFIX" -DBUILD_SHARED_LIBS=OFF)

# ---- sources ------------------------------------------------------------------
# A temporary deb-src list beside the system's (which is never edited), removed
# again on every way out of this script.
SRC_LIST=
drop_src_list() {
  if [ -n "$SRC_LIST" ] && [ -e "$SRC_LIST" ]; then
    $SUDO rm -f "$SRC_LIST"
    $SUDO apt-get -o DPkg::Lock::Timeout=120 update -q >/dev/null || true
  fi
}
trap drop_src_list EXIT

add_src_list() {
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    SRC_LIST=/etc/apt/sources.list.d/phsync-win-src.sources
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      $SUDO tee "$SRC_LIST" >/dev/null
  elif [ -f /etc/apt/sources.list ]; then
    SRC_LIST=/etc/apt/sources.list.d/phsync-win-src.list
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list | $SUDO tee "$SRC_LIST" >/dev/null
  else
    echo "build-windows.sh: no Debian sources list to derive deb-src from" >&2
    exit 1
  fi
  $SUDO apt-get -o DPkg::Lock::Timeout=120 update -q
}

# Fetches one source package: the newest version, else (a mirror missing one of
# its files) each older version the archive lists, newest first.
fetch_one() {
  local p=$1 v
  if apt-get source --download-only "$p"; then
    return 0
  fi
  for v in $(apt-cache showsrc "$p" | sed -n 's/^Version: //p' | sort -Vr | uniq); do
    echo "build-windows.sh: $p: trying version $v" >&2
    if apt-get source --download-only "$p=$v"; then
      echo "build-windows.sh: WARNING: $p built from $v, not the newest version" >&2
      return 0
    fi
  done
  echo "build-windows.sh: cannot fetch the source package $p" >&2
  return 1
}

fetch_sources() {
  local p dsc missing=0
  for p in "${SRC_PKGS[@]}"; do
    if [ ! -d "$SRC/$p" ]; then
      missing=1
    fi
  done
  if [ "$missing" = 0 ]; then
    return 0
  fi
  step "fetching Debian source packages"
  mkdir -p "$SRC/dl"
  if [ -z "$SUDO" ]; then
    chown _apt "$SRC/dl" 2>/dev/null || true   # root's apt downloads as _apt where it can
  fi
  add_src_list
  for p in "${SRC_PKGS[@]}"; do
    if [ -d "$SRC/$p" ]; then
      continue
    fi
    rm -f "$SRC/dl/${p}"_*.dsc
    if ! ( cd "$SRC/dl" && fetch_one "$p" ); then
      if [[ $OPTIONAL_PKGS == *" $p "* ]]; then
        echo "build-windows.sh: WARNING: $p left out (docs/WINDOWS.md)" >&2
        continue
      fi
      exit 1
    fi
    dsc=$(ls "$SRC/dl/${p}"_*.dsc | head -n 1)
    # --no-check: the archive's signature on Release already vouches for the files
    # apt fetched (their hashes are in the signed Sources index).
    # Unpacked beside its place and moved there whole: a half-unpacked tree
    # is never taken for a fetched one by the next run.
    rm -rf "$SRC/$p.part"
    dpkg-source --no-check -x "$dsc" "$SRC/$p.part"
    sed -n 's/^Version: //p' "$dsc" | head -n 1 > "$SRC/$p.part/.phsync-version"
    mv "$SRC/$p.part" "$SRC/$p"
  done
  drop_src_list
  SRC_LIST=
}

# The upstream version of a fetched package (no epoch, no Debian revision).
upver() { sed -e 's/^[0-9]*://' -e 's/-[^-]*$//' "$SRC/$1/.phsync-version"; }

# write_pc NAME VERSION CFLAGS LIBS [REQUIRES]
write_pc() {
  mkdir -p "$PREFIX/lib/pkgconfig"
  cat > "$PREFIX/lib/pkgconfig/$1.pc" <<EOF
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $1 for Windows, built by phsync's scripts/build-windows.sh
Version: $2
Requires: ${5:-}
Libs: -L\${libdir} $4
Cflags: -I\${includedir} $3
EOF
}

cm_build() {   # cm_build NAME SRCDIR ARGS...: configure, build and install one CMake project
  local name=$1 srcdir=$2
  shift 2
  step "building $name"
  cmake -S "$srcdir" -B "$BLD/$name" "${COMMON[@]}" "$@" >"$BLD/$name.log"
  cmake --build "$BLD/$name" -j"$JOBS" >>"$BLD/$name.log"
  cmake --install "$BLD/$name" >>"$BLD/$name.log"
}

# ---- the libraries ------------------------------------------------------------
build_zstd() {
  cm_build zstd "$SRC/libzstd/build/cmake" -DZSTD_BUILD_STATIC=ON -DZSTD_BUILD_SHARED=OFF \
    -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_TESTS=OFF -DZSTD_BUILD_CONTRIB=OFF \
    -DZSTD_MULTITHREAD_SUPPORT=ON
}

build_libuv() {
  cm_build libuv "$SRC/libuv1" -DLIBUV_BUILD_TESTS=OFF -DLIBUV_BUILD_BENCH=OFF
  # libuv builds the DLL beside the static library: only the static one stays,
  # described by its own .pc under the usual name.
  rm -f "$PREFIX"/bin/*uv*.dll "$PREFIX/lib/libuv.dll.a"
  mv "$PREFIX/lib/pkgconfig/libuv-static.pc" "$PREFIX/lib/pkgconfig/libuv.pc"
}

build_libssh() {
  # The *PTHREAD*=OFF presets make libssh use its native Windows locks
  # (threads/winlocks.c) rather than winpthreads. The static gcrypt and
  # gpg-error are named so the .exe needs no DLL beside it.
  cm_build libssh "$SRC/libssh" \
    -DWITH_GCRYPT=ON -DWITH_GSSAPI=OFF -DWITH_SERVER=OFF -DWITH_EXAMPLES=OFF -DWITH_PCAP=OFF \
    -DWITH_NACL=OFF -DWITH_ZLIB=ON -DWITH_SFTP=ON -DUNIT_TESTING=OFF -DCLIENT_TESTING=OFF \
    -DWITH_SYMBOL_VERSIONING=OFF \
    -DCMAKE_HAVE_PTHREAD_H=OFF -DCMAKE_HAVE_LIBC_PTHREAD=OFF -DTHREADS_HAVE_PTHREAD_ARG=OFF \
    -DCMAKE_HAVE_PTHREADS_CREATE=OFF -DCMAKE_HAVE_PTHREAD_CREATE=OFF \
    "-DGCRYPT_INCLUDE_DIR=$MINGW_ROOT/include" \
    "-DGCRYPT_LIBRARY=$MINGW_ROOT/lib/libgcrypt.a" \
    "-DGCRYPT_ERROR_LIBRARY=$MINGW_ROOT/lib/libgpg-error.a"
  # CMake's pkg_check_modules looks each -lNAME up in the .pc's -L folders and
  # prefers DLL import libraries: the static ones go into the prefix itself.
  cp "$MINGW_ROOT/lib/libgcrypt.a" "$MINGW_ROOT/lib/libgpg-error.a" "$MINGW_ROOT/lib/libz.a" \
     "$PREFIX/lib/"
  # zlib is listed in libarchive.pc only: CMake keeps one copy of a repeated
  # library, and libarchive (linked after libssh) needs it too.
  write_pc libssh "$(upver libssh)" -DLIBSSH_STATIC \
    "-lssh -lgcrypt -lgpg-error -liphlpapi -lws2_32 -lshell32 -ladvapi32"
}

build_libarchive() {
  # zlib and zstd only. -DPOSIX_REGEX_LIB=NONE: Windows has no regcomp and
  # phsync uses no bsdtar-style pattern option.
  step "building libarchive"
  cmake -S "$SRC/libarchive" -B "$BLD/libarchive" "${COMMON[@]}" -DENABLE_ZLIB=ON -DENABLE_ZSTD=ON \
    "-DZLIB_LIBRARY=$MINGW_ROOT/lib/libz.a" "-DZLIB_INCLUDE_DIR=$MINGW_ROOT/include" \
    "-DZSTD_LIBRARY=$PREFIX/lib/libzstd.a" "-DZSTD_INCLUDE_DIR=$PREFIX/include" \
    -DENABLE_OPENSSL=OFF -DENABLE_MBEDTLS=OFF -DENABLE_NETTLE=OFF -DENABLE_CNG=OFF \
    -DENABLE_LIBXML2=OFF -DENABLE_EXPAT=OFF -DENABLE_LZMA=OFF -DENABLE_BZip2=OFF -DENABLE_LZ4=OFF \
    -DENABLE_LZO=OFF -DENABLE_LIBB2=OFF -DENABLE_PCREPOSIX=OFF -DENABLE_LIBGCC=OFF \
    -DPOSIX_REGEX_LIB=NONE -DENABLE_ICONV=OFF -DENABLE_ACL=OFF -DENABLE_XATTR=OFF \
    -DENABLE_TAR=OFF -DENABLE_CPIO=OFF -DENABLE_CAT=OFF -DENABLE_TEST=OFF -DENABLE_WERROR=OFF \
    >"$BLD/libarchive.log"
  # Only the static library (an install would build the DLL and the tools too).
  cmake --build "$BLD/libarchive" -j"$JOBS" --target archive_static >>"$BLD/libarchive.log"
  cp "$BLD/libarchive/libarchive/libarchive_static.a" "$PREFIX/lib/libarchive.a"
  cp "$SRC/libarchive/libarchive/archive.h" "$SRC/libarchive/libarchive/archive_entry.h" \
     "$PREFIX/include/"
  write_pc libarchive "$(upver libarchive)" -DLIBARCHIVE_STATIC "-larchive -lz -lbcrypt" libzstd
}

build_sqlite() {
  # Debian's source is the full tree (with its patches), not the amalgamation:
  # sqlite3.c is generated natively (needs tclsh), then cross-compiled.
  step "building SQLite"
  mkdir -p "$BLD/sqlite-native"
  ( cd "$BLD/sqlite-native" && "$SRC/sqlite3/configure" --disable-tcl >"$BLD/sqlite.log" &&
    make -j"$JOBS" sqlite3.c >>"$BLD/sqlite.log" )
  $MINGW-gcc -O2 -c "$BLD/sqlite-native/sqlite3.c" -o "$BLD/sqlite-native/sqlite3.o" \
    -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_JSON1 -DSQLITE_ENABLE_COLUMN_METADATA
  rm -f "$PREFIX/lib/libsqlite3.a"
  $MINGW-ar rcs "$PREFIX/lib/libsqlite3.a" "$BLD/sqlite-native/sqlite3.o"
  mkdir -p "$PREFIX/include"
  cp "$BLD/sqlite-native/sqlite3.h" "$SRC/sqlite3/src/sqlite3ext.h" "$PREFIX/include/"
  write_pc sqlite3 "$(upver sqlite3)" "" -lsqlite3
}

build_small() {   # utf8proc, inih, xxHash: one C file each (utf8proc through its CMake)
  cm_build utf8proc "$SRC/utf8proc" -DUTF8PROC_ENABLE_TESTING=OFF
  rm -f "$PREFIX/lib/pkgconfig/libutf8proc.pc"
  write_pc libutf8proc "$(upver utf8proc)" -DUTF8PROC_STATIC -lutf8proc
  step "building inih and xxHash"
  mkdir -p "$BLD/small"
  rm -f "$PREFIX/lib/libinih.a" "$PREFIX/lib/libxxhash.a"
  if [ -d "$SRC/libinih" ]; then
    $MINGW-gcc -O2 -c "$SRC/libinih/ini.c" -o "$BLD/small/ini.o"
    $MINGW-ar rcs "$PREFIX/lib/libinih.a" "$BLD/small/ini.o"
    cp "$SRC/libinih/ini.h" "$PREFIX/include/"
    write_pc inih "$(upver libinih)" "" -linih
  fi
  $MINGW-gcc -O2 -c "$SRC/xxhash/xxhash.c" -o "$BLD/small/xxhash.o"
  $MINGW-ar rcs "$PREFIX/lib/libxxhash.a" "$BLD/small/xxhash.o"
  cp "$SRC/xxhash/xxhash.h" "$SRC/xxhash/xxh3.h" "$PREFIX/include/"
  write_pc libxxhash "$(upver xxhash)" "" -lxxhash
}

build_cmocka() {
  cm_build cmocka "$SRC/cmocka" -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF \
    -DPICKY_DEVELOPER=OFF
  rm -f "$PREFIX/lib/pkgconfig/cmocka.pc" "$PREFIX"/lib/libcmocka*.dll.a "$PREFIX"/bin/libcmocka*.dll
  local lib
  lib=$(cd "$PREFIX/lib" && ls libcmocka*.a | head -n 1)
  lib=${lib#lib}
  write_pc cmocka "$(upver cmocka)" "" "-l${lib%.a}"
}

# Builds one library unless an earlier run did (its stamp in $BLD), so a run
# that failed or was stopped goes on from where it was.
run_lib() {
  if [ ! -e "$BLD/$1.done" ]; then
    "build_$1"
    touch "$BLD/$1.done"
  fi
}
lane() {
  local n
  for n in "$@"; do
    run_lib "$n"
  done
}

build_deps() {
  local t0=$SECONDS a b fail=0 p
  if [ "$rebuild" = 1 ] || ! grep -qx "recipe $DEPS_RECIPE" "$BLD/recipe" 2>/dev/null; then
    rm -rf "$PREFIX" "$BLD"
  fi
  mkdir -p "$PREFIX/include" "$PREFIX/lib/pkgconfig" "$BLD"
  echo "recipe $DEPS_RECIPE" > "$BLD/recipe"
  fetch_sources
  run_lib zstd   # libarchive links it
  # Two lanes at once: the configure steps (most of the time) run one
  # compiler at a time, so two of them keep two cores busy.
  ( set -e; lane libarchive small ) &
  a=$!
  ( set -e; lane libuv libssh sqlite cmocka ) &
  b=$!
  wait "$a" || fail=1
  wait "$b" || fail=1
  if [ "$fail" = 1 ]; then
    echo "build-windows.sh: a library failed to build: its log is in $BLD" >&2
    exit 1
  fi
  {
    echo "recipe $DEPS_RECIPE"
    for p in "${SRC_PKGS[@]}"; do
      echo "$p $(cat "$SRC/$p/.phsync-version" 2>/dev/null || echo missing)"
    done
  } > "$PREFIX/.phsync-deps"
  step "libraries built in $((SECONDS - t0)) s: $PREFIX"
}

# ---- main ---------------------------------------------------------------------
if [ "$apt" = 1 ]; then
  step "installing packages"
  "$ROOT/scripts/install-deps.sh" --windows >/dev/null
fi
if [ "$rebuild" = 1 ] || ! grep -qx "recipe $DEPS_RECIPE" "$PREFIX/.phsync-deps" 2>/dev/null; then
  rm -f "$PREFIX/.phsync-deps"
  build_deps
else
  step "reusing the libraries in $PREFIX"
fi
if [ "$deps_only" = 1 ]; then
  exit 0
fi

step "configuring phsync for Windows in $OUT"
cmake -S "$ROOT" -B "$OUT" -G Ninja "-DCMAKE_TOOLCHAIN_FILE=$TC" "-DPHSYNC_WIN_PREFIX=$PREFIX" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHSYNC_WERROR=ON -DPHSYNC_HELPERS=all -DPHSYNC_TESTS_REQUIRED=ON
step "building the Windows targets"
cmake --build "$OUT" -j"$JOBS" --target phsync_win_all
if [ -f "$OUT/phsync.exe" ]; then
  step "packaging"
  version=$(sed -n 's/^project(phsync VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  python3 "$ROOT/scripts/win-package.py" "$OUT" "$version"
fi
if [ "$run_tests" = 1 ]; then
  step "running the Windows unit tests under Wine"
  export WINEDEBUG=${WINEDEBUG:--all}
  # A Wine prefix of the build's own (the first run creates it: a few seconds).
  export WINEPREFIX=${WINEPREFIX:-$OUT/wine}
  ctest --test-dir "$OUT" --output-on-failure --no-tests=error -L windows
fi
step "done in $SECONDS s"
