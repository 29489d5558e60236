// The row types the CUDA launchers decode (dequantize_rows.cu, matvec.cu). Which GGML type is which,
// and what each one's loads need, is kernels/cuda/row_types.hpp's table; this header stays free of
// planner types because nvcc compiles C++17 here.
#pragma once

namespace infer_plan::kernels::cuda {

enum class RowType { f32, f16, bf16, q8_0, q4_0, q2_k, q5_0, q4_1, q5_1, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4 };

}  // namespace infer_plan::kernels::cuda
