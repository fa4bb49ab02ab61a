# The engine's libraries, one per layer (docs/ARCHITECTURE.md, "Layers"). Each links only the
# layers below it, so there is no cycle; scripts/check-layers.py holds #includes to the same order.
#
#   tessera_base          src/core, src/io, src/quant, src/tokenizer, src/chat, src/grammar
#   tessera_backend       src/backend/*.cpp: the compute interface        -> base
#   tessera_backend_cpu   src/backend/cpu                                 -> backend
#   tessera_backend_cuda  src/backend/cuda (cmake/cuda.cmake, optional)   -> backend
#   tessera_engine        src/models, src/engine                          -> backend_cpu, _cuda
#   tessera_server        src/server                                      -> engine
#   tessera_capi          src/capi                                        -> engine
#   tessera               an interface target over all of them, for the tests and benches
#
# Sources are globbed per area so that a new file needs no edit here.
function(tessera_glob out)
  set(files)
  foreach(dir IN LISTS ARGN)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${dir}/*.cpp)
    list(APPEND files ${found})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# simdjson: tokenizer.json (Gemma 3's is 33 MB) loads several times faster than with nlohmann.
find_package(simdjson REQUIRED)
# cpp-httplib (src/server/): Debian ships it compiled; its .pc carries the feature defines the
# library was built with, which the header must see too.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# oneDNN (Debian: OpenMP runtime) is called from tessera's own pool threads with one OpenMP thread
# each (src/backend/cpu/gemm_dnnl.cpp), which needs omp_set_num_threads.
find_package(OpenMP REQUIRED COMPONENTS CXX)

# Every layer includes through the same two roots ("core/check.h", "tessera/engine.h"), so the
# include directories cannot tell layers apart; scripts/check-layers.py does.
tessera_glob(TESSERA_BASE_SOURCES core io quant tokenizer chat grammar)
add_library(tessera_base STATIC ${TESSERA_BASE_SOURCES})
target_include_directories(tessera_base PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
# utf8proc and simdjson are PUBLIC: tokenizer headers (json_util.h) and tests use them directly.
target_link_libraries(tessera_base PUBLIC Threads::Threads nlohmann_json::nlohmann_json
                                          PkgConfig::UTF8PROC simdjson::simdjson
                                   PRIVATE PkgConfig::PCRE2)

# The compute interface alone: src/backend/*.cpp, not its cpu/ and cuda/ subdirectories.
file(GLOB TESSERA_BACKEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/*.cpp)
add_library(tessera_backend STATIC ${TESSERA_BACKEND_SOURCES})
target_link_libraries(tessera_backend PUBLIC tessera_base)

# Files ending in _avx2.cpp / _avx512.cpp hold ISA-specific kernels: they get those flags and are
# only called after a run-time CPU check (src/backend/cpu/cpu_features.h).
tessera_glob(TESSERA_CPU_SOURCES backend/cpu)
add_library(tessera_backend_cpu STATIC ${TESSERA_CPU_SOURCES})
target_link_libraries(tessera_backend_cpu PUBLIC tessera_backend
                                          PRIVATE DNNL::dnnl ${OpenMP_CXX_LIBRARIES})
foreach(src IN LISTS TESSERA_CPU_SOURCES)
  if(src MATCHES "_avx512\\.cpp$")
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c;-mavx2")
  elseif(src MATCHES "_avx2\\.cpp$")
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  endif()
endforeach()

# Models and engine: the public C++ API (include/tessera/engine.h). Device selection
# (src/engine/select_backend.h) is the one place that chooses a backend, so the engine links
# both and neither backend links anything above the interface; cmake/cuda.cmake adds
# tessera_backend_cuda here when it is built.
tessera_glob(TESSERA_ENGINE_SOURCES models engine)
add_library(tessera_engine STATIC ${TESSERA_ENGINE_SOURCES})
target_link_libraries(tessera_engine PUBLIC tessera_backend_cpu)

# The OpenAI-compatible server: on the public API (and core's helpers) only.
tessera_glob(TESSERA_SERVER_SOURCES server)
add_library(tessera_server STATIC ${TESSERA_SERVER_SOURCES})
target_include_directories(tessera_server PUBLIC ${HTTPLIB_INCLUDE_DIR})
target_link_libraries(tessera_server PUBLIC tessera_engine PkgConfig::HTTPLIB)

# The C ABI (include/tessera/tessera.h) over the public C++ API.
tessera_glob(TESSERA_CAPI_SOURCES capi)
add_library(tessera_capi STATIC ${TESSERA_CAPI_SOURCES})
target_link_libraries(tessera_capi PUBLIC tessera_engine)

# Everything, for consumers that test or measure the internals of several layers.
add_library(tessera INTERFACE)
target_link_libraries(tessera INTERFACE tessera_server tessera_capi)
