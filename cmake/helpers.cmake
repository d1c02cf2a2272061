# SPDX-License-Identifier: ISC
# The static remote helpers (phsync-helper-ARCH: src/helper/standalone/), one
# external project per architecture, written to ${CMAKE_BINARY_DIR}/helpers.
# Included by CMakeLists.txt (the POSIX build) and cmake/windows.cmake (the
# Windows zip carries them too: phsync.exe brings one to a phone without
# phsync, as the Linux program does). PHSYNC_HELPERS is native, all or off;
# sets PH_HELPER_TARGETS (empty for off). The helpers are Linux programs, so a
# Windows cross build compiles the host's with the build machine's own C
# compiler, never the toolchain's.
string(TOLOWER "${PHSYNC_HELPERS}" PH_HELPERS)
if(PH_HELPERS STREQUAL "on")      # the old boolean option
  set(PH_HELPERS native)
elseif(PH_HELPERS MATCHES "^(off|no|false|0)$")
  set(PH_HELPERS off)
endif()
if(NOT PH_HELPERS MATCHES "^(native|all|off)$")
  message(FATAL_ERROR "PHSYNC_HELPERS is native, all or off (not '${PHSYNC_HELPERS}')")
endif()
set(PH_HELPER_TARGETS)
if(NOT PH_HELPERS STREQUAL "off")
  include(ExternalProject)
  set(PH_HOST_CC_ARGS)
  if(WIN32)
    set(ph_arch ${CMAKE_HOST_SYSTEM_PROCESSOR})
    find_program(PH_HOST_CC NAMES gcc cc)
    if(NOT PH_HOST_CC)
      message(FATAL_ERROR "the phone helpers need the build machine's C compiler (apt-get install gcc)")
    endif()
    set(PH_HOST_CC_ARGS -DCMAKE_C_COMPILER=${PH_HOST_CC})
  else()
    set(ph_arch ${CMAKE_SYSTEM_PROCESSOR})
  endif()
  find_file(PH_XXHASH_H xxhash.h PATHS ${XXHASH_INCLUDE_DIRS} /usr/include NO_DEFAULT_PATH
            NO_CMAKE_FIND_ROOT_PATH)
  if(NOT PH_XXHASH_H)
    message(FATAL_ERROR "the phone helpers need xxhash.h (apt-get install libxxhash-dev)")
  endif()
  if(ph_arch MATCHES "^(x86_64|amd64|AMD64)$")
    set(PH_HOST_ARCH x86_64)
  elseif(ph_arch MATCHES "^(aarch64|arm64)$")
    set(PH_HOST_ARCH aarch64)
  elseif(ph_arch MATCHES "^armv[78]")
    set(PH_HOST_ARCH armv7)
  else()
    set(PH_HOST_ARCH ${ph_arch})
  endif()
  if(NOT DEFINED PHSYNC_PORTABLE)
    set(PHSYNC_PORTABLE OFF)
  endif()
  set(PH_HELPER_ARGS -DPH_ROOT=${CMAKE_SOURCE_DIR}
      -DPH_XXHASH_H=${PH_XXHASH_H} -DPH_OUT_DIR=${CMAKE_BINARY_DIR}/helpers
      -DCMAKE_BUILD_TYPE=Release -DPHSYNC_PORTABLE=${PHSYNC_PORTABLE})
  macro(ph_helper arch)
    ExternalProject_Add(helper-${arch}
      SOURCE_DIR ${CMAKE_SOURCE_DIR}/src/helper/standalone
      BINARY_DIR ${CMAKE_BINARY_DIR}/helper-${arch}
      CMAKE_ARGS ${PH_HELPER_ARGS} -DPH_ARCH=${arch} ${ARGN}
      INSTALL_COMMAND "" BUILD_ALWAYS 1)
    list(APPEND PH_HELPER_TARGETS helper-${arch})
  endmacro()
  ph_helper(${PH_HOST_ARCH} ${PH_HOST_CC_ARGS})
  if(PH_HELPERS STREQUAL "all")
    find_program(PH_CC_AARCH64 aarch64-linux-gnu-gcc)
    find_program(PH_CC_ARMHF arm-linux-gnueabihf-gcc)
    if(NOT PH_HOST_ARCH STREQUAL "aarch64")
      if(NOT PH_CC_AARCH64)
        message(FATAL_ERROR "PHSYNC_HELPERS=all needs aarch64-linux-gnu-gcc "
                "(apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)")
      endif()
      ph_helper(aarch64 -DCMAKE_TOOLCHAIN_FILE=${CMAKE_SOURCE_DIR}/cmake/toolchain-aarch64-linux-gnu.cmake)
    endif()
    if(NOT PH_HOST_ARCH STREQUAL "armv7")
      if(NOT PH_CC_ARMHF)
        message(FATAL_ERROR "PHSYNC_HELPERS=all needs arm-linux-gnueabihf-gcc "
                "(apt-get install gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)")
      endif()
      ph_helper(armv7 -DCMAKE_TOOLCHAIN_FILE=${CMAKE_SOURCE_DIR}/cmake/toolchain-arm-linux-gnueabihf.cmake)
    endif()
  endif()
endif()
