# SPDX-License-Identifier: ISC
# Cross build for 64-bit Windows with Debian's mingw-w64 (docs/WINDOWS.md).
# The libraries phsync links come from the prefix scripts/build-windows.sh
# builds (build-win/deps/prefix, or PHSYNC_WIN_PREFIX given as a -D or in the
# environment) and from Debian's mingw packages under /usr/x86_64-w64-mingw32.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(PH_MINGW x86_64-w64-mingw32)
set(CMAKE_C_COMPILER   ${PH_MINGW}-gcc)
set(CMAKE_CXX_COMPILER ${PH_MINGW}-g++)
set(CMAKE_RC_COMPILER  ${PH_MINGW}-windres)

# try_compile() reads this file again in a project of its own, where a -D of
# the outer one is unknown: the environment carries the prefix there.
if(PHSYNC_WIN_PREFIX)
  set(ENV{PHSYNC_WIN_PREFIX} "${PHSYNC_WIN_PREFIX}")
elseif(DEFINED ENV{PHSYNC_WIN_PREFIX} AND NOT "$ENV{PHSYNC_WIN_PREFIX}" STREQUAL "")
  set(PHSYNC_WIN_PREFIX "$ENV{PHSYNC_WIN_PREFIX}")
else()
  get_filename_component(PHSYNC_WIN_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../build-win/deps/prefix" ABSOLUTE)
  set(ENV{PHSYNC_WIN_PREFIX} "${PHSYNC_WIN_PREFIX}")
endif()

set(CMAKE_FIND_ROOT_PATH /usr/${PH_MINGW} ${PHSYNC_WIN_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Tests and try_run() run the .exe under Wine.
set(CMAKE_CROSSCOMPILING_EMULATOR wine)
# pkg-config sees the Windows libraries only, never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "${PHSYNC_WIN_PREFIX}/lib/pkgconfig:/usr/${PH_MINGW}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
