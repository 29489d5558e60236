// How far a product of quantized rows may be from matmul_rows_reference: the size of the terms the
// kernels add, and the relative tolerance on it (shared by test_matmul and test_interleave).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"

namespace infer_plan::kernels::test {

// The size of the terms the kernel adds, per output: sum_i |w_i| |x_i| of the dequantized rows.
// For Q2_K, Q4_K and Q5_K the kernel sums the scale part d*scale*code and the min part dmin*min
// separately before subtracting them, so its rounding scales with (|d*scale*code| + |dmin*min|)
// |x_i|: we dequantize two copies of the row, one with dmin zeroed (the scale part) and one with d
// zeroed (the min).
inline std::vector<double> term_magnitudes(GgmlType type, const std::vector<uint8_t>& w, uint64_t rows,
                                           const Activations& x) {
  const uint64_t row_bytes = ggml_row_bytes(type, x.cols, "test");
  std::vector<float> xs(x.cols), parts(x.cols), mins(x.cols);
  std::vector<double> out(x.batch * rows);
  for (uint64_t r = 0; r < rows; ++r) {
    std::vector<uint8_t> row(w.begin() + static_cast<std::ptrdiff_t>(r * row_bytes),
                             w.begin() + static_cast<std::ptrdiff_t>((r + 1) * row_bytes));
    std::fill(mins.begin(), mins.end(), 0.0f);
    // block bytes, and the offsets of d and dmin (kernels/block_layout.hpp)
    const struct {
      GgmlType type;
      uint64_t bytes, d, dmin;
    } with_mins[] = {{GgmlType::Q2_K, 84, 80, 82}, {GgmlType::Q4_K, 144, 0, 2}, {GgmlType::Q5_K, 176, 0, 2}};
    const auto* m = std::find_if(std::begin(with_mins), std::end(with_mins), [&](const auto& e) { return e.type == type; });
    if (m != std::end(with_mins)) {
      std::vector<uint8_t> scale_part = row, min_part = row;
      for (uint64_t b = 0; b < row_bytes; b += m->bytes) {
        scale_part[b + m->dmin] = scale_part[b + m->dmin + 1] = 0;  // dmin = 0
        min_part[b + m->d] = min_part[b + m->d + 1] = 0;            // d = 0
      }
      dequantize_row(type, scale_part, parts, "test");
      dequantize_row(type, min_part, mins, "test");
    } else {
      dequantize_row(type, row, parts, "test");
    }
    for (uint64_t b = 0; b < x.batch; ++b) {
      dequantize_row(x.type, std::span<const uint8_t>(x.row(b), x.row_bytes), xs, "test");
      double sum = 0;
      for (uint64_t i = 0; i < x.cols; ++i)
        sum += (std::fabs(static_cast<double>(parts[i])) + std::fabs(static_cast<double>(mins[i]))) *
               std::fabs(static_cast<double>(xs[i]));
      out[b * rows + r] = sum;
    }
  }
  return out;
}

// Tolerance |got - ref| <= rtol * sum of |terms|. The activations are converted once and both
// sides read the same bytes, so only the order and precision of the sum differ: the reference
// adds exact double products; the kernels add float products (exact for F16/BF16 and for the
// integer block sums) with one float rounding per addition along a chain of at most `cols`
// additions for the float types (the scalar loop; AVX2 chains are cols/16 long) and cols/block
// for the quantized ones (one multiply-add per block). Recursive summation is off by at most
// (chain) * 2^-24 * sum|terms| (Higham, ch. 4); the + 8 covers the per-block products of scales
// (d_w * d_x, then times the int sum, Q2_K's subtraction), the 8-lane horizontal sum, the
// reference's own dequantization of Q8_K (float d times code) and its final rounding to float.
inline double relative_tolerance(GgmlType type, uint64_t cols) {
  const uint64_t chain = cols / ggml_type_info(type).block_values;
  return static_cast<double>(chain + 8) * 0x1p-24;
}

}  // namespace infer_plan::kernels::test
