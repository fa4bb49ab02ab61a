# The engine library. Sources are globbed per area so that a new file needs no edit here.
# Files ending in _avx2.cpp / _avx512.cpp hold ISA-specific kernels: they get those flags and are
# only called after a run-time CPU check (src/backend/cpu/cpu_features.h).
file(GLOB_RECURSE TESSERA_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/src/core/*.cpp
  ${CMAKE_SOURCE_DIR}/src/io/*.cpp
  ${CMAKE_SOURCE_DIR}/src/tokenizer/*.cpp
  ${CMAKE_SOURCE_DIR}/src/chat/*.cpp
  ${CMAKE_SOURCE_DIR}/src/models/*.cpp
  ${CMAKE_SOURCE_DIR}/src/backend/*.cpp
  ${CMAKE_SOURCE_DIR}/src/backend/cpu/*.cpp
  ${CMAKE_SOURCE_DIR}/src/engine/*.cpp
  ${CMAKE_SOURCE_DIR}/src/server/*.cpp
  ${CMAKE_SOURCE_DIR}/src/capi/*.cpp)

# simdjson: tokenizer.json (Gemma 3's is 33 MB) loads several times faster than with nlohmann.
find_package(simdjson REQUIRED)
# cpp-httplib (src/server/): Debian ships it compiled; its .pc carries the feature defines the
# library was built with, which the header must see too.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

add_library(tessera STATIC ${TESSERA_SOURCES})
target_include_directories(tessera PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                                          ${HTTPLIB_INCLUDE_DIR})
target_link_libraries(tessera PUBLIC Threads::Threads nlohmann_json::nlohmann_json
                                     PkgConfig::PCRE2 PkgConfig::UTF8PROC DNNL::dnnl
                                     simdjson::simdjson PkgConfig::HTTPLIB)

foreach(src IN LISTS TESSERA_SOURCES)
  if(src MATCHES "_avx512\\.cpp$")
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c;-mavx2")
  elseif(src MATCHES "_avx2\\.cpp$")
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  endif()
endforeach()
# oneDNN (Debian: OpenMP runtime) is called from tessera's own pool threads with one OpenMP thread
# each (src/backend/cpu/gemm_dnnl.cpp), which needs omp_set_num_threads.
find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(tessera PUBLIC ${OpenMP_CXX_LIBRARIES})
