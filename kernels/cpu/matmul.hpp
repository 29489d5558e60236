// Matrix products of a weight matrix stored as GGML rows with a small batch of activations, the
// work of every projection in a decode step: y[b][r] = dot(W row r, x[b]). As ggml does, the
// activations are first converted once to the weight type's "vec_dot type" (Q8_0 for Q8_0 and Q4_0
// weights, Q8_K for the K-quants, F16 for F16, BF16 for BF16, F32 for F32) and each dot product then runs
// on blocks. Vectorised (AVX2) where the CPU has it, with a scalar fallback chosen at run time.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/aligned_bytes.hpp"
#include "kernels/cpu/interleave.hpp"
#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// True for the weight types these products run on: F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_NL, IQ4_XS, MXFP4.
bool has_matmul(GgmlType weight_type);
std::string_view matmul_type_names();  // "F32, F16, BF16, Q8_0, ..." for messages
// The type the activations are converted to for `weight_type` (ggml's vec_dot_type).
GgmlType activation_type(GgmlType weight_type);

// A batch of activation rows converted for one weight type: `batch` rows of `cols` values, each
// `row_bytes` long, back to back.
struct Activations {
  GgmlType type = GgmlType::F32;
  uint64_t cols = 0;
  uint64_t batch = 0;
  uint64_t row_bytes = 0;
  AlignedBytes data;  // rows start on a cache line where row_bytes is a multiple of 64
  // For Q4_0 weights (Q8_0 activations), per row and block of 32 codes c: 8 * the sum of c_j over
  // j % 4 in {0, 1} (low 16 bits) and over j % 4 in {2, 3} (high 16 bits), each within +-16256:
  // what the interleaved product subtracts for the weight codes' offset of 8. For IQ4_NL, MXFP4,
  // Q5_0, Q4_1 and Q5_1 weights, per row and block, the sum of the 32 codes (an int32's bits), which
  // the interleaved product multiplies by its table's shift, Q5_0's zero of 16 or the rows' minimums.
  // Empty otherwise.
  std::vector<uint32_t> offsets;
  const uint8_t* row(uint64_t b) const { return data.data() + b * row_bytes; }
};

// x is batch x cols floats, row-major. cols must be a whole number of the weight type's blocks.
void convert_activations(GgmlType weight_type, const float* x, uint64_t batch, uint64_t cols,
                         Activations& out);

// Rows [row_begin, row_end) of y = W x for a weight matrix of `rows` rows of `cols` values stored
// as GGML rows of `weight_type` starting at `weights`, one after another or in `order`
// (kernels/cpu/interleave.hpp; then row_begin and row_end are whole groups, or row_end = rows).
// y is batch x rows, row-major: y[b * rows + r]. Callers split the rows across threads; the
// function itself is single-threaded.
void matmul_rows(GgmlType weight_type, const uint8_t* weights, uint64_t rows, const Activations& x,
                 uint64_t row_begin, uint64_t row_end, float* y, RowOrder order = RowOrder::ggml);

// The plain-loop reference: dequantize each weight row and each converted activation row to
// float and sum in double. The tests compare matmul_rows against it.
void matmul_rows_reference(GgmlType weight_type, const uint8_t* weights, uint64_t rows,
                           const Activations& x, uint64_t row_begin, uint64_t row_end, float* y,
                           RowOrder order = RowOrder::ggml);

// Which implementation matmul_rows uses on this CPU ("avx2"; "+avx512vnni" where interleaved Q4_0
// and Q2_K run on AVX-512 VNNI, "+avx512bf16" where BF16 runs on AVX512_BF16; or "scalar");
// benches print it.
std::string_view matmul_implementation();
// Forces the scalar path (tests run both paths on a CPU that has AVX2).
void matmul_force_scalar(bool force);

}  // namespace infer_plan::kernels
