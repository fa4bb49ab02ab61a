# Optional CUDA backend: found when a toolkit is present, CPU-only otherwise.

# sources.cmake's recursive glob of src/backend/ also picks up src/backend/cuda/*.cpp: those
# belong to tessera_cuda (below) alone, and need the CUDA headers.
get_target_property(_tessera_sources tessera SOURCES)
list(FILTER _tessera_sources EXCLUDE REGEX "/src/backend/cuda/")
set_target_properties(tessera PROPERTIES SOURCES "${_tessera_sources}")
set(TESSERA_HAVE_CUDA OFF)
if(NOT TESSERA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TESSERA_HAVE_CUDA ON)
  elseif(TESSERA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "tessera: CUDA backend ${TESSERA_HAVE_CUDA}")

if(TESSERA_HAVE_CUDA)
  # CMake 3.25 does not know nvcc's C++20 flag (nvcc 12+ has it; backend.h uses std::span).
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  file(GLOB TESSERA_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/cuda/*.cu
                                                   ${CMAKE_SOURCE_DIR}/src/backend/cuda/*.cpp)
  if(TESSERA_CUDA_SOURCES)
    add_library(tessera_cuda STATIC ${TESSERA_CUDA_SOURCES})
    set_target_properties(tessera_cuda PROPERTIES CUDA_ARCHITECTURES OFF
                                                  CUDA_SEPARABLE_COMPILATION OFF)
    target_compile_options(tessera_cuda PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:${TESSERA_CUDA_GENCODE} --expt-relaxed-constexpr -lineinfo>)
    target_include_directories(tessera_cuda PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
    # cudart static: the binaries then need only the driver and libcublasLt on the GPU machine.
    target_link_libraries(tessera_cuda PUBLIC CUDA::cudart_static CUDA::cublasLt
                                              nlohmann_json::nlohmann_json)
    # The kernels use the engine's core (memory tracker, thread pool): a cycle of static libraries,
    # which CMake repeats on the link line.
    target_link_libraries(tessera_cuda PRIVATE tessera)
    target_compile_definitions(tessera PUBLIC TESSERA_HAVE_CUDA=1)
    # The CUDA backend registers itself with the engine library; link both ways.
    target_link_libraries(tessera PUBLIC tessera_cuda)
  endif()
endif()
