# Finds every dependency and says, for each optional feature, whether it is on
# and why. Nothing is dropped silently: an optional feature that is off is
# named in the summary with its reason.

set(REDLINE_FEATURE_LINES "")
macro(redline_feature name state reason)
  set(REDLINE_HAVE_${name} ${state})
  if(${state})
    list(APPEND REDLINE_FEATURE_LINES "  ${name}: ON  (${reason})")
  else()
    list(APPEND REDLINE_FEATURE_LINES "  ${name}: OFF (${reason})")
  endif()
endmacro()

# --- required for every tool -------------------------------------------------
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# --- xxHash: the checkpoint room's checksums (required) --------------------------
# xxHash's own CMake package where it was installed from source; Debian's
# libxxhash-dev ships only the header and the library, found here: the
# static one first, so a build carried to a GPU machine without libxxhash
# (DESIGN.md, scripts/gpu-check) needs none there.
find_package(xxHash CONFIG QUIET)
if(NOT TARGET xxHash::xxhash)
  find_path(XXHASH_INCLUDE_DIR xxhash.h)
  find_library(XXHASH_LIBRARY NAMES libxxhash.a xxhash)
  if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
    message(FATAL_ERROR "xxhash.h and libxxhash not found: install libxxhash-dev (scripts/setup does), "
                        "or set XXHASH_INCLUDE_DIR and XXHASH_LIBRARY")
  endif()
  add_library(xxHash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxHash::xxhash PROPERTIES IMPORTED_LOCATION "${XXHASH_LIBRARY}"
                                                  INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
endif()

# --- CUDA: enabled when nvcc is found ------------------------------------------
set(REDLINE_HAVE_CUDA OFF)
if(REDLINE_ENABLE_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)  # CMake 3.25 lacks nvcc's C++20 flag
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    # One shared CUDA runtime per process: NCCL and cuBLASLt use libcudart.so.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    redline_feature(CUDA ON "nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    redline_feature(CUDA OFF "nvcc not found; GPU benchmarks are not built")
  endif()
else()
  redline_feature(CUDA OFF "REDLINE_ENABLE_CUDA=OFF")
endif()

if(REDLINE_HAVE_CUDA)
  if(TARGET CUDA::cublasLt)
    redline_feature(CUBLASLT ON "${CUDAToolkit_LIBRARY_DIR}")
  else()
    redline_feature(CUBLASLT OFF "libcublasLt not found in the CUDA toolkit")
  endif()
  if(TARGET CUDA::cupti)
    redline_feature(CUPTI ON "kernel names and tile shapes")
  else()
    redline_feature(CUPTI OFF "libcupti not found in the CUDA toolkit")
  endif()
  if(TARGET CUDA::nvtx3)
    redline_feature(NVTX ON "nvtx3 headers")
  else()
    redline_feature(NVTX OFF "nvtx3 headers not found; ranges compile to nothing")
  endif()
  find_package(NCCL)
  if(NCCL_FOUND)
    redline_feature(NCCL ON "NCCL ${NCCL_VERSION} at ${NCCL_LIBRARY}")
  else()
    redline_feature(NCCL OFF "nccl.h/libnccl not found; set NCCL_ROOT")
  endif()
else()
  redline_feature(CUBLASLT OFF "needs CUDA")
  redline_feature(CUPTI OFF "needs CUDA")
  redline_feature(NVTX OFF "needs CUDA")
  redline_feature(NCCL OFF "needs CUDA")
endif()

# --- cuDNN and its frontend: attention_bench's fused attention --------------------
# cudnn.h and libcudnn come with the toolkit here, or from CUDNN_ROOT, or from
# PyTorch's wheel (site-packages/nvidia/cudnn). The header-only cudnn-frontend
# C++ API comes from PyPI's nvidia-cudnn-frontend wheel, whose headers land in
# site-packages/include (scripts/setup installs it); CUDNN_FRONTEND_INCLUDE_DIR
# names another copy. Without either, attention runs unfused only: never an error.
function(redline_python_include_dirs out)
  set(dirs "")
  find_program(redline_python3 python3)
  if(redline_python3)
    foreach(key purelib platlib data)
      execute_process(COMMAND ${redline_python3} -c "import sysconfig; print(sysconfig.get_paths()['${key}'])"
                      OUTPUT_VARIABLE dir RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND dir)
        list(APPEND dirs "${dir}/include" "${dir}/nvidia/cudnn/include")
      endif()
    endforeach()
  endif()
  list(REMOVE_DUPLICATES dirs)
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()

function(redline_find_cudnn)
  if(NOT REDLINE_HAVE_CUDA)
    redline_feature(CUDNN OFF "needs CUDA")
    set(REDLINE_HAVE_CUDNN OFF PARENT_SCOPE)
    set(REDLINE_FEATURE_LINES "${REDLINE_FEATURE_LINES}" PARENT_SCOPE)
    return()
  endif()
  redline_python_include_dirs(python_includes)
  set(python_libs "")
  foreach(dir IN LISTS python_includes)
    get_filename_component(parent "${dir}" DIRECTORY)
    list(APPEND python_libs "${parent}/lib")
  endforeach()
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include PATHS ${python_includes})
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib64 lib PATHS ${python_libs})
  find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${CUDNN_FRONTEND_ROOT} $ENV{CUDNN_FRONTEND_ROOT}
            PATH_SUFFIXES include PATHS ${python_includes})
  if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
    redline_feature(CUDNN OFF "cudnn.h/libcudnn not found; set CUDNN_ROOT (attention runs unfused only)")
    set(REDLINE_HAVE_CUDNN OFF PARENT_SCOPE)
  elseif(NOT CUDNN_FRONTEND_INCLUDE_DIR OR NOT EXISTS "${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
    redline_feature(CUDNN OFF "cudnn_frontend.h not found: pip install nvidia-cudnn-frontend (scripts/setup does) or set CUDNN_FRONTEND_INCLUDE_DIR")
    set(REDLINE_HAVE_CUDNN OFF PARENT_SCOPE)
  elseif(NOT TARGET CUDA::nvrtc)
    # The frontend compiles some of its engines at run time.
    redline_feature(CUDNN OFF "libnvrtc not found in the CUDA toolkit (the cudnn frontend needs it)")
    set(REDLINE_HAVE_CUDNN OFF PARENT_SCOPE)
  else()
    if(NOT TARGET redline::cudnn)
      add_library(redline::cudnn UNKNOWN IMPORTED GLOBAL)
      set_target_properties(redline::cudnn PROPERTIES IMPORTED_LOCATION "${CUDNN_LIBRARY}"
                            INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR};${CUDNN_FRONTEND_INCLUDE_DIR}"
                            INTERFACE_LINK_LIBRARIES "CUDA::nvrtc;CUDA::cudart")
    endif()
    redline_feature(CUDNN ON "${CUDNN_LIBRARY}, frontend ${CUDNN_FRONTEND_INCLUDE_DIR}")
    set(REDLINE_HAVE_CUDNN ON PARENT_SCOPE)
  endif()
  set(REDLINE_FEATURE_LINES "${REDLINE_FEATURE_LINES}" PARENT_SCOPE)
endfunction()
redline_find_cudnn()

# --- MPI: multi-node bootstrap and the host backend ---------------------------
if(REDLINE_ENABLE_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    redline_feature(MPI ON "MPI ${MPI_CXX_VERSION}, mpiexec ${MPIEXEC_EXECUTABLE}")
  else()
    redline_feature(MPI OFF "no MPI found; install libopenmpi-dev for multi-node runs")
  endif()
else()
  redline_feature(MPI OFF "REDLINE_ENABLE_MPI=OFF")
endif()

# --- Google Benchmark: the kernel microbenchmark runner ------------------------
find_package(benchmark QUIET)
if(benchmark_FOUND)
  redline_feature(GOOGLE_BENCHMARK ON "benchmark ${benchmark_VERSION}")
else()
  redline_feature(GOOGLE_BENCHMARK OFF "libbenchmark-dev not found; kernel microbenchmarks are not built")
endif()

# --- gemm_bench's measuring subcommands (peak, sweep, model) ------------------
if(REDLINE_HAVE_CUDA AND REDLINE_HAVE_CUBLASLT AND REDLINE_HAVE_GOOGLE_BENCHMARK)
  redline_feature(GEMM_MEASURE ON "gemm_bench peak/sweep/model through cuBLASLt and Google Benchmark")
else()
  redline_feature(GEMM_MEASURE OFF "needs CUDA, cuBLASLt and Google Benchmark: gemm_bench has predict only")
endif()

# --- GoogleTest ------------------------------------------------------------------
if(REDLINE_BUILD_TESTS)
  find_package(GTest QUIET)
  if(GTest_FOUND)
    redline_feature(TESTS ON "GoogleTest ${GTest_VERSION}")
  else()
    message(FATAL_ERROR "REDLINE_BUILD_TESTS=ON but GoogleTest was not found: install libgtest-dev "
                        "(scripts/setup does) or configure with -DREDLINE_BUILD_TESTS=OFF")
  endif()
else()
  redline_feature(TESTS OFF "REDLINE_BUILD_TESTS=OFF")
endif()

function(redline_print_feature_summary)
  message(STATUS "redline features:")
  foreach(line IN LISTS REDLINE_FEATURE_LINES)
    message(STATUS "${line}")
  endforeach()
endfunction()
