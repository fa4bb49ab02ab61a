# libtessera.so: the C ABI (tessera_capi) with every layer under it, for other languages
# (bindings/go links it through pkg-config). Only the tessera_* functions are exported
# (src/capi/exports.map).
#
# pkg-config finds it two ways: `cmake --install build` writes lib/pkgconfig/tessera.pc beside the
# library and the header; the build tree holds tessera-uninstalled.pc, which pkg-config prefers
# when PKG_CONFIG_PATH names the build directory, pointing at include/ and build/ in place (what
# scripts/test.sh's Go tests use). Both carry an rpath, so that programs run without
# LD_LIBRARY_PATH.
include(GNUInstallDirs)
# The C ABI's sources compiled again (four small files) rather than tessera_capi's archive linked
# whole, which CMake 3.25 cannot do for a target without sources of its own.
add_library(tessera_shared SHARED ${TESSERA_CAPI_SOURCES})
set_target_properties(tessera_shared PROPERTIES
  OUTPUT_NAME tessera
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})  # 0.x: a minor may change the ABI
target_link_libraries(tessera_shared PRIVATE tessera_engine)
target_link_options(tessera_shared PRIVATE
  "LINKER:--version-script=${CMAKE_SOURCE_DIR}/src/capi/exports.map")
# Every symbol resolved at link time, except in a sanitizer build (cmake/sanitize.cmake): there
# the sanitizer runtime comes with the program that loads the library, as clang intends.
if(NOT TESSERA_SANITIZE)
  target_link_options(tessera_shared PRIVATE "LINKER:--no-undefined")
endif()
set_property(TARGET tessera_shared APPEND PROPERTY LINK_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/capi/exports.map)

set(PC_PREFIX ${CMAKE_INSTALL_PREFIX})
set(PC_LIBDIR ${CMAKE_INSTALL_FULL_LIBDIR})
set(PC_INCLUDEDIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
configure_file(${CMAKE_SOURCE_DIR}/cmake/tessera.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/tessera.pc @ONLY)
set(PC_PREFIX ${CMAKE_BINARY_DIR})
set(PC_LIBDIR ${CMAKE_BINARY_DIR})
set(PC_INCLUDEDIR ${CMAKE_SOURCE_DIR}/include)
configure_file(${CMAKE_SOURCE_DIR}/cmake/tessera.pc.in ${CMAKE_BINARY_DIR}/tessera-uninstalled.pc
               @ONLY)

install(TARGETS tessera_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/tessera/tessera.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera)
install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/tessera.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# tessera.h's TESSERA_VERSION must be the project's (tessera_c.cpp checks it when compiling).
foreach(t tessera_capi tessera_shared)
  target_compile_definitions(${t} PRIVATE TESSERA_PROJECT_VERSION="${PROJECT_VERSION}")
endforeach()
