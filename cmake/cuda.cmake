# Optional CUDA backend: found when a toolkit is present, CPU-only otherwise.
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
    add_library(tessera_backend_cuda STATIC ${TESSERA_CUDA_SOURCES})
    set_target_properties(tessera_backend_cuda PROPERTIES CUDA_ARCHITECTURES OFF
                                                          CUDA_SEPARABLE_COMPILATION OFF)
    target_compile_options(tessera_backend_cuda PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:${TESSERA_CUDA_GENCODE} --expt-relaxed-constexpr -lineinfo>)
    # cudart static: the binaries then need only the driver and libcublasLt on the GPU machine.
    # The kernels use the interface and core (memory tracker, thread pool), nothing above.
    target_link_libraries(tessera_backend_cuda PUBLIC tessera_backend CUDA::cudart_static
                                                      CUDA::cublasLt)
    # PUBLIC on the interface: backend.cpp then leaves out its make_cuda_backend() stub, and the
    # tests that compare the backends see it.
    target_compile_definitions(tessera_backend PUBLIC TESSERA_HAVE_CUDA=1)
    target_link_libraries(tessera_engine PUBLIC tessera_backend_cuda)
  endif()
endif()
