# Third-party dependencies: Debian 12 packages plus the CUDA toolkit.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(LIBPNG REQUIRED IMPORTED_TARGET libpng)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# libbsd's <bsd/sys/tree.h> (red-black trees, header only: report/state.h).
pkg_check_modules(LIBBSD REQUIRED libbsd)

# The CUDA toolkit: headers are always required (every prototype is the
# toolkit's own); nvcc, cuDNN and CUPTI enable the optional GPU parts.
set(CUDAToolkit_ROOT /usr/local/cuda CACHE PATH "CUDA toolkit root")
find_package(CUDAToolkit REQUIRED)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
set(VRAMTRACE_NVTX_INCLUDE_DIR ${CUDAToolkit_INCLUDE_DIRS})

# nvcc is optional (the cuda backend and nvcc-built tests); enabled here, at
# the top-level scope, because a language enabled in a subdirectory is not
# usable from its siblings. Architectures: T4 (sm_75), A100 (sm_80), H100 (sm_90).
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS ${CUDAToolkit_BIN_DIR}/nvcc)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_BIN_DIR}/nvcc CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75;80;90")
  endif()
  enable_language(CUDA)
else()
  message(STATUS "vramtrace: no CUDA compiler: the cuda backend and nvcc-built tests are skipped")
endif()
