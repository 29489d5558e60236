// The CUDA side of kernels/cuda/matvec.hpp: matvec.cpp validates the arguments (it may use the
// planner's C++20 headers), matvec.cu launches. Kept free of planner types because nvcc compiles
// C++17 here. Not for other callers: use matvec.hpp.
#pragma once
#include <cstdint>

#include "kernels/cuda/row_type.hpp"

namespace infer_plan::kernels::cuda {

// Arguments already validated by matvec() (a matrix type of row_types.hpp); rows < 2^31, cols a whole number of blocks.
void matvec_launch(RowType weights_type, const void* weights, uint32_t rows, uint32_t cols,
                   const float* x, uint32_t tokens, float* y, void* stream);

}  // namespace infer_plan::kernels::cuda
