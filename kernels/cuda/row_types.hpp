// The GGML types the CUDA kernels read, in one table: the launchers' RowType for each, whether it
// is a matrix type (matvec and the prefill GEMM multiply it) or only a table (embed_rows gathers
// it), and the alignment its loads need. matvec.cpp, gemm.cpp and elementwise.cpp check their
// arguments through it, and the CUDA decoder's refusals name its types. Host C++20.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/cuda/row_type.hpp"
#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels::cuda {

struct CudaRowType {
  GgmlType type;
  RowType row;
  bool matrix;            // matvec and Gemm::multiply take it as weights (else embed_rows only)
  uint32_t row_align;     // bytes: dequantize_rows' loads (4-byte F32 values, 16-bit fp16/bf16 fields)
  uint32_t matvec_align;  // bytes: matvec's loads (Q2_K reads 32-bit words); 0 where not a matrix
};

// Every block of these types is a whole number of its alignment, so rows keep it too. The types
// from Q5_0 on are decoded through kernels/block_decode.hpp, which reads bytes: any address will do.
inline constexpr CudaRowType kCudaRowTypes[] = {
    {GgmlType::F32, RowType::f32, false, 4, 0},      {GgmlType::F16, RowType::f16, false, 2, 0},
    {GgmlType::BF16, RowType::bf16, true, 2, 2},     {GgmlType::Q8_0, RowType::q8_0, true, 2, 2},
    {GgmlType::Q4_0, RowType::q4_0, true, 2, 2},     {GgmlType::Q2_K, RowType::q2_k, true, 2, 4},
    {GgmlType::Q5_0, RowType::q5_0, true, 1, 1},     {GgmlType::Q3_K, RowType::q3_k, true, 1, 1},
    {GgmlType::Q4_K, RowType::q4_k, true, 1, 1},     {GgmlType::Q5_K, RowType::q5_k, true, 1, 1},
    {GgmlType::Q6_K, RowType::q6_k, true, 1, 1},     {GgmlType::IQ4_NL, RowType::iq4_nl, true, 1, 1},
    {GgmlType::IQ4_XS, RowType::iq4_xs, true, 1, 1}, {GgmlType::MXFP4, RowType::mxfp4, true, 1, 1},
    {GgmlType::Q4_1, RowType::q4_1, true, 1, 1},     {GgmlType::Q5_1, RowType::q5_1, true, 1, 1},
};

// The table's entry for `type`, or nullptr where the CUDA kernels cannot read it.
const CudaRowType* find_cuda_row_type(GgmlType type);
// "BF16, Q8_0, ..." for messages: the matrix types, or every type a table may have.
std::string cuda_row_type_names(bool matrices_only);

}  // namespace infer_plan::kernels::cuda
