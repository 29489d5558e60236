// INFER_PLAN_HOST_DEVICE marks a function both compilers take: the host's (kernels/cpu, the tests)
// and nvcc's device side (kernels/cuda), so that one piece of arithmetic serves both backends.
#pragma once

#if defined(__CUDACC__)
#define INFER_PLAN_HOST_DEVICE __host__ __device__
#else
#define INFER_PLAN_HOST_DEVICE
#endif
