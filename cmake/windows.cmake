# SPDX-License-Identifier: ISC
# The Windows build (cross-built with mingw-w64 by scripts/build-windows.sh and
# tested under Wine; docs/WINDOWS.md). Included by CMakeLists.txt on WIN32 once
# the dependencies are found, ph_config.h is written and the parts' sources
# (PHSYNC_LIB_SOURCES, with their layering include dirs) are listed; the rest of
# CMakeLists.txt (the POSIX library, the executable, install, helpers, the Linux
# test suite) is not read on Windows yet.
#
# What builds for Windows today: phsync_core_win = the parts in PH_WIN_PARTS,
# platform/cpu.c, platform/winname.c and platform/win32/*.c (platform.h's and
# pfs.h's Windows side); phsync_transport_win (transport) on it, and
# phsync_session_win (session, pair) on that. docs/WINDOWS.md lists what
# remains, file by file.

# Windows system libraries: libssh (ws2_32 iphlpapi shell32 advapi32), libuv
# (psapi user32 userenv), libarchive (bcrypt). The .pc files of the prefix
# name them too; here for phsync's own targets.
set(PH_WIN_SYSLIBS ws2_32 iphlpapi shell32 advapi32 userenv psapi user32 bcrypt)
# Static: libgcc and winpthread inside the .exe, nothing to ship beside it.
add_link_options(-static)

set(PH_WIN_PARTS core delta wire state scan backup)
# The libraries those parts use beyond xxHash (state: SQLite; scan: utf8proc;
# backup: libarchive and zstd).
set(PH_WIN_LIBS PkgConfig::SQLITE3 PkgConfig::UTF8PROC PkgConfig::LIBARCHIVE PkgConfig::ZSTD)
set(PH_WIN_SOURCES)
foreach(src ${PHSYNC_LIB_SOURCES})
  get_filename_component(dir ${src} DIRECTORY)
  foreach(part ${PH_WIN_PARTS})
    if(dir STREQUAL "${CMAKE_SOURCE_DIR}/src/${part}")
      list(APPEND PH_WIN_SOURCES ${src})
    endif()
  endforeach()
endforeach()
file(GLOB PH_WIN_PLATFORM CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/platform/win32/*.c)
# cpu.c (the compiler's CPU probe) and winname.c (names Windows cannot hold, a
# pure function) are portable C, the same files on every OS; the other
# platform/*.c are the POSIX side of what platform/win32/ does here.
list(APPEND PH_WIN_SOURCES ${CMAKE_SOURCE_DIR}/platform/cpu.c
     ${CMAKE_SOURCE_DIR}/platform/winname.c ${PH_WIN_PLATFORM})

add_library(phsync_core_win STATIC ${PH_WIN_SOURCES})
target_include_directories(phsync_core_win
  PUBLIC ${CMAKE_SOURCE_DIR}/include
  PRIVATE ${CMAKE_SOURCE_DIR}/platform ${CMAKE_SOURCE_DIR}/platform/win32 ${CMAKE_BINARY_DIR})
target_compile_definitions(phsync_core_win PRIVATE PHSYNC_VERSION_STRING="${PROJECT_VERSION}")
# Threads: winpthreads (core/reap.c's thread), linked in by -static.
target_link_libraries(phsync_core_win PUBLIC PkgConfig::XXHASH ${PH_WIN_LIBS} Threads::Threads
                      ${PH_WIN_SYSLIBS})

# Everything that builds for Windows today (scripts/build-windows.sh builds this).
add_custom_target(phsync_win_all)
add_dependencies(phsync_win_all phsync_core_win)

# The part transport (phsync's SSH session and SFTP client over libssh), with
# platform/psys.h's Windows side (win32/psys.c, win32/sock.c: WSAPoll, the
# known folders, the console) from phsync_core_win; sshconf.c's Host patterns
# go through core's ph_pattern_match, as the filters do.
# ole32: CoTaskMemFree after SHGetKnownFolderPath (win32/psys.c); uuid:
# the FOLDERID_* values.
target_link_libraries(phsync_core_win PUBLIC ole32 uuid)
set(PH_WIN_TRANSPORT)
foreach(src ${PHSYNC_LIB_SOURCES})
  get_filename_component(dir ${src} DIRECTORY)
  if(dir STREQUAL "${CMAKE_SOURCE_DIR}/src/transport")
    list(APPEND PH_WIN_TRANSPORT ${src})
  endif()
endforeach()
set(PH_WIN_HAVE_TRANSPORT ON)
add_library(phsync_transport_win STATIC ${PH_WIN_TRANSPORT})
target_include_directories(phsync_transport_win
  PRIVATE ${CMAKE_SOURCE_DIR}/platform ${CMAKE_BINARY_DIR})
# zlib: libssh's compression. scripts/build-windows.sh lists zlib once, in
# libarchive.pc, which transport does not link.
target_link_libraries(phsync_transport_win PUBLIC phsync_core_win PkgConfig::LIBSSH z)
add_dependencies(phsync_win_all phsync_transport_win)

# The parts rdelta (deltas with the remote), session (login, the helper's
# bootstrap, kept connections), sync (pull, push, two-way) and pair (pair,
# doctor, the agent client) on top of transport. Each source keeps the
# include folders CMakeLists.txt gave it (PH_USES_<part>), so the layering
# is the POSIX build's.
set(PH_WIN_SESSION_PARTS rdelta session sync pair)
set(PH_WIN_SESSION)
foreach(src ${PHSYNC_LIB_SOURCES})
  get_filename_component(dir ${src} DIRECTORY)
  foreach(part ${PH_WIN_SESSION_PARTS})
    if(dir STREQUAL "${CMAKE_SOURCE_DIR}/src/${part}")
      list(APPEND PH_WIN_SESSION ${src})
    endif()
  endforeach()
endforeach()
add_library(phsync_session_win STATIC ${PH_WIN_SESSION})
target_include_directories(phsync_session_win
  PRIVATE ${CMAKE_SOURCE_DIR}/platform ${CMAKE_BINARY_DIR})
target_link_libraries(phsync_session_win PUBLIC phsync_transport_win)
set(PH_WIN_HAVE_SESSION ON)
add_dependencies(phsync_win_all phsync_session_win)

# The command (src/cli) and the watcher (src/watch), which use libphsync only
# through include/phsync/ (cli also sees src/watch, as on POSIX). Built as an
# OBJECT library by phsync_win_all, so every file is compiled here; the
# executable phsync.exe links them with every part of libphsync.
# The watcher: libuv (ReadDirectoryChangesW through its recursive
# uv_fs_event, as on macOS: fswatch.c's PH_UV_FS_EVENT_RECURSIVE). phsync.conf:
# libinih where the prefix has it, else inird.c, which keeps libinih's rules
# (docs/WINDOWS.md "libinih"; tests/unit/test_inird.c holds the two to the
# same answers on Linux).
pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv>=1.30)
pkg_check_modules(INIH IMPORTED_TARGET inih)
file(GLOB PH_WIN_CLI CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cli/*.c
     ${CMAKE_SOURCE_DIR}/src/watch/*.c)
add_library(phsync_cli_win OBJECT ${PH_WIN_CLI})
target_include_directories(phsync_cli_win PRIVATE ${CMAKE_SOURCE_DIR}/src/cli
  ${CMAKE_SOURCE_DIR}/src/watch ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR})
target_compile_definitions(phsync_cli_win PRIVATE PHSYNC_VERSION_STRING="${PROJECT_VERSION}"
                           PH_UV_FS_EVENT_RECURSIVE=1)
target_link_libraries(phsync_cli_win PUBLIC PkgConfig::LIBUV)
if(INIH_FOUND)
  list(FILTER PH_WIN_CLI EXCLUDE REGEX "/inird\\.c$")
  set_property(TARGET phsync_cli_win PROPERTY SOURCES ${PH_WIN_CLI})
  target_compile_definitions(phsync_cli_win PRIVATE HAVE_INIH=1)
  target_link_libraries(phsync_cli_win PUBLIC PkgConfig::INIH)
else()
  message(STATUS "libinih for Windows not found: phsync.conf is read by src/watch/inird.c")
endif()
add_dependencies(phsync_win_all phsync_cli_win)

# phsync.exe: the command and the watcher with every part of libphsync. The
# helper part runs on the phone (Linux, Android): on Windows `phsync serve`
# says so (src/helper/noserve.c).
add_executable(phsync $<TARGET_OBJECTS:phsync_cli_win> ${CMAKE_SOURCE_DIR}/src/helper/noserve.c)
target_include_directories(phsync PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(phsync PRIVATE phsync_session_win PkgConfig::LIBUV ${PH_WIN_SYSLIBS})
if(INIH_FOUND)
  target_link_libraries(phsync PRIVATE PkgConfig::INIH)
endif()
add_dependencies(phsync_win_all phsync)

# The phone's static helpers (Linux programs, cmake/helpers.cmake) in helpers/
# beside phsync.exe, where it looks for them, and so in the zip: a Windows
# laptop brings the helper to a phone without phsync as a Linux one does.
# all by default: the phones are aarch64 and armv7 (build-windows.sh installs
# their cross compilers).
set(PHSYNC_HELPERS all CACHE STRING "Static remote helpers to build: native, all or off")
include(${CMAKE_SOURCE_DIR}/cmake/helpers.cmake)
if(PH_HELPER_TARGETS)
  add_dependencies(phsync ${PH_HELPER_TARGETS})
endif()

if(BUILD_TESTING)
  # scripts/build-windows.sh builds cmocka into the prefix with the libraries.
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
  if(CMOCKA_FOUND)
    enable_testing()
    add_subdirectory(tests/unit/win32)
  elseif(PHSYNC_TESTS_REQUIRED)
    message(FATAL_ERROR "cmocka for Windows not found: scripts/build-windows.sh builds it")
  else()
    message(STATUS "cmocka for Windows not found: the Windows tests are not built")
  endif()
endif()
