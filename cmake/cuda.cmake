# CUDA is optional: INFER_PLAN_CUDA=AUTO builds it when nvcc works, ON requires it, OFF skips it.
# CMAKE_CUDA_ARCHITECTURES defaults to 90 (Hopper) and can be overridden on the command line.
set(INFER_PLAN_HAVE_CUDA OFF)
if(NOT INFER_PLAN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 cannot ask nvcc for C++20
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # One CUDA runtime per process: the .cu targets and the C++ targets (which link
    # ${INFER_PLAN_CUDART}) take the same one; two copies of the runtime keep two error states.
    # Static for the prebuilt device bundle (tools/device-bundle.sh), so that its binaries need only
    # the driver on the machine that runs them; shared otherwise.
    option(INFER_PLAN_CUDART_STATIC "Link the CUDA runtime statically (the prebuilt device bundle)" OFF)
    if(INFER_PLAN_CUDART_STATIC)
      set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
      set(INFER_PLAN_CUDART CUDA::cudart_static)
    else()
      set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
      set(INFER_PLAN_CUDART CUDA::cudart)
    endif()
    set(INFER_PLAN_HAVE_CUDA ON)
  elseif(INFER_PLAN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "INFER_PLAN_CUDA=ON but no working nvcc was found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "infer-plan: CUDA backend ${INFER_PLAN_HAVE_CUDA}")
