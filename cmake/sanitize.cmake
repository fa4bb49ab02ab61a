# Sanitizer and fuzzing builds (scripts/sanitize.sh, scripts/fuzz.sh; README "Set up"): each in a
# build directory of its own, CUDA and benchmarks off.
#
#   -DTESSERA_SANITIZE=address,undefined   ASan + UBSan (clang or gcc), every error fatal
#   -DTESSERA_SANITIZE=thread              TSan
#   -DTESSERA_FUZZ=ON                      the libFuzzer targets in fuzz/ (clang only); the
#                                          libraries get libFuzzer's coverage hooks, so one
#                                          ASan + UBSan build serves both the tests and the fuzzers
set(TESSERA_SANITIZE "" CACHE STRING "Sanitizers to build with (-fsanitize=...): address,undefined or thread; empty for none")
option(TESSERA_FUZZ "Build the libFuzzer targets in fuzz/ (clang)" OFF)

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Debian's oneDNN runs on GCC's OpenMP runtime (libgomp). clang's default, libomp, would be a
  # second runtime in the process, and its omp_set_num_threads (src/backend/cpu/gemm_dnnl.cpp)
  # would not reach the one oneDNN uses.
  find_library(TESSERA_LIBGOMP NAMES gomp libgomp.so.1 REQUIRED)
  set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "")
  set(OpenMP_CXX_LIB_NAMES "gomp" CACHE STRING "")
  set(OpenMP_gomp_LIBRARY "${TESSERA_LIBGOMP}" CACHE FILEPATH "")
endif()

if(TESSERA_SANITIZE)
  # -O1 (after the build type's -O3, so it wins): the sanitizers' usual level, and a third less
  # compile time on CI's two cores. Line tables only: reports name file:line, at a fraction of
  # full debug info's build time.
  add_compile_options(-O1 -fsanitize=${TESSERA_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -gline-tables-only)
  add_link_options(-fsanitize=${TESSERA_SANITIZE})
endif()

if(TESSERA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TESSERA_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT TESSERA_SANITIZE)
    message(FATAL_ERROR "TESSERA_FUZZ needs -DTESSERA_SANITIZE=address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
