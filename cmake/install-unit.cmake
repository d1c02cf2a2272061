# SPDX-License-Identifier: ISC
# Run by `cmake --install` (and cpack): writes the daemon's unit for the prefix of
# this install and puts it where that prefix's service manager looks. Set by the
# install(CODE) rule in CMakeLists.txt: PH_UNIT_IN, PH_UNIT_OUT, PH_UNIT_DEST.
configure_file("${PH_UNIT_IN}" "${PH_UNIT_OUT}" @ONLY)
set(dest "${PH_UNIT_DEST}")
# systemd reads packaged user units from /usr/lib/systemd/user; under any
# other prefix (/usr/local, ~/.local) it reads PREFIX/share/systemd/user.
if(dest STREQUAL "share/systemd/user" AND CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(dest "lib/systemd/user")
endif()
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${dest}" TYPE FILE FILES "${PH_UNIT_OUT}")
