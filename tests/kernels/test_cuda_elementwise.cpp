// kernels/cuda/elementwise (embed_rows, add, add_bias, argmax_rows) against kernels/cpu: the
// dequantizers of quantize.cpp, float adds, and sampling's argmax. The argument checks run
// everywhere (they throw before any CUDA call); the kernels need a device, and without one the
// test prints why and exits 77, which CTest reports as skipped.
//
// Tolerance: none; every comparison is of bits.
// - embed_rows: each value is computed as the CPU computes it (kernels/cuda/dequantize_rows.cu
//   says why each product is exact: fp16 scales convert exactly, code * scale needs at most 19
//   significant bits, and Q2_K's one rounding, dl * q - ml, is the same subtraction on both sides).
// - add, add_bias: one F32 addition per value, correctly rounded on both sides.
// - argmax: an index; the first of equal maxima on both sides.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/sampling.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/elementwise.hpp"
#include "kernels/cuda/row_types.hpp"
#include "runtime/model_weights.hpp"
#include "tests/kernels/cuda_test_support.hpp"

using namespace infer_plan;
namespace cuda = infer_plan::kernels::cuda;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::DeviceArray;
using infer_plan::cuda_test::expect_throw;

namespace {

// --- argument checks (no device needed) ---------------------------------------------------------

void check_arguments() {
  // Fake, aligned, never dereferenced: every call below must throw before reaching CUDA.
  alignas(16) static float storage[64];
  const void* table = storage;
  const auto* ids = reinterpret_cast<const uint32_t*>(storage);
  auto* idx_out = reinterpret_cast<uint32_t*>(storage);
  float* out = storage;
  const auto q8 = GgmlType::Q8_0;
  expect_throw("embed IQ2_XS table", [&] { cuda::embed_rows(GgmlType::IQ2_XS, table, 66, 256, ids, 1, out, nullptr); });
  expect_throw("embed Q8_K table", [&] { cuda::embed_rows(GgmlType::Q8_K, table, 292, 256, ids, 1, out, nullptr); });
  expect_throw("embed null table", [&] { cuda::embed_rows(q8, nullptr, 34, 32, ids, 1, out, nullptr); });
  expect_throw("embed null ids", [&] { cuda::embed_rows(q8, table, 34, 32, nullptr, 1, out, nullptr); });
  expect_throw("embed null out", [&] { cuda::embed_rows(q8, table, 34, 32, ids, 1, nullptr, nullptr); });
  expect_throw("embed tokens = 0", [&] { cuda::embed_rows(q8, table, 34, 32, ids, 0, out, nullptr); });
  expect_throw("embed cols = 48 for Q8_0", [&] { cuda::embed_rows(q8, table, 68, 48, ids, 1, out, nullptr); });
  expect_throw("embed cols = 128 for Q2_K",
               [&] { cuda::embed_rows(GgmlType::Q2_K, table, 84, 128, ids, 1, out, nullptr); });
  expect_throw("embed cols = 0", [&] { cuda::embed_rows(GgmlType::F32, table, 4, 0, ids, 1, out, nullptr); });
  expect_throw("embed row_bytes 33 < 34", [&] { cuda::embed_rows(q8, table, 33, 32, ids, 1, out, nullptr); });
  expect_throw("embed F32 row_bytes 18 (not 4-aligned)",
               [&] { cuda::embed_rows(GgmlType::F32, table, 18, 4, ids, 1, out, nullptr); });
  expect_throw("embed F32 table 2-byte aligned", [&] {
    cuda::embed_rows(GgmlType::F32, static_cast<const uint8_t*>(table) + 2, 16, 4, ids, 1, out, nullptr);
  });
  expect_throw("embed Q8_0 table 1-byte aligned",
               [&] { cuda::embed_rows(q8, static_cast<const uint8_t*>(table) + 1, 34, 32, ids, 1, out, nullptr); });
  expect_throw("add null y", [&] { cuda::add(out, nullptr, 4, nullptr); });
  expect_throw("add n = 0", [&] { cuda::add(out, out, 0, nullptr); });
  expect_throw("scale s = NaN", [&] { cuda::scale(out, 4, NAN, nullptr); });
  expect_throw("softcap cap = 0", [&] { cuda::softcap(out, 4, 0.0f, nullptr); });
  expect_throw("softcap null x", [&] { cuda::softcap(nullptr, 4, 30.0f, nullptr); });
  expect_throw("add_bias null bias", [&] { cuda::add_bias(out, nullptr, 1, 4, nullptr); });
  expect_throw("add_bias rows = 0", [&] { cuda::add_bias(out, out, 0, 4, nullptr); });
  expect_throw("add_bias n = 0", [&] { cuda::add_bias(out, out, 1, 0, nullptr); });
  expect_throw("argmax null out", [&] { cuda::argmax_rows(out, 1, 4, nullptr, nullptr); });
  expect_throw("argmax rows = 0", [&] { cuda::argmax_rows(out, 0, 4, idx_out, nullptr); });
  expect_throw("argmax n = 0", [&] { cuda::argmax_rows(out, 1, 0, idx_out, nullptr); });
  expect_throw("argmax n = 2^32", [&] { cuda::argmax_rows(out, 1, uint64_t{1} << 32, idx_out, nullptr); });
}

// --- device helpers ------------------------------------------------------------------------------

uint32_t bits_of(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// got[0..ref.size()) must equal ref bit for bit; got's remaining floats (a guard written as 0xFF
// bytes before the call) must be untouched.
void compare_bits(const std::string& what, const std::vector<float>& got, const std::vector<float>& ref) {
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (bits_of(got[i]) != bits_of(ref[i]) && bad++ < 5)
      std::printf("  mismatch %s [%zu]: got %.9g (0x%08x), ref %.9g (0x%08x)\n", what.c_str(), i,
                  static_cast<double>(got[i]), bits_of(got[i]), static_cast<double>(ref[i]), bits_of(ref[i]));
  }
  size_t guard_changed = 0;
  for (size_t i = ref.size(); i < got.size(); ++i) guard_changed += bits_of(got[i]) != 0xFFFFFFFFu;
  if (guard_changed != 0) std::printf("  %s: %zu floats past the output were written\n", what.c_str(), guard_changed);
  if (bad != 0 || guard_changed != 0) {
    std::printf("FAILED: %s: %d mismatches\n", what.c_str(), bad);
    ++failures;
  } else {
    std::printf("checked %s\n", what.c_str());
  }
}

constexpr size_t kGuard = 64;  // floats after each output that must stay untouched

// --- embed_rows ----------------------------------------------------------------------------------

struct EmbedCase {
  GgmlType type;
  uint64_t vocab;
  uint64_t cols;
  uint64_t row_padding;   // bytes after each row (row_bytes = the row's size + this)
  uint64_t table_offset;  // bytes past a 256-byte-aligned allocation
  uint32_t tokens;
};

// The table's rows: even seeds runtime's synthetic blocks (random codes and scales), odd seeds the
// real quantizer on random floats (Q2_K then has zero mins, other code statistics).
std::vector<uint8_t> make_table(const EmbedCase& k, uint64_t row_bytes, uint32_t seed) {
  const uint64_t data_bytes = ggml_row_bytes(k.type, k.cols, "test row");
  std::vector<uint8_t> table(k.vocab * row_bytes, 0xA5);  // padding bytes are not zero: must not be read
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (uint64_t r = 0; r < k.vocab; ++r) {
    uint8_t* row = table.data() + r * row_bytes;
    if (seed % 2 == 0) {
      runtime::fill_synthetic_row(k.type, k.cols, 1.0f, uint64_t{seed} * 1000 + r, row);
    } else {
      std::vector<float> values(k.cols);
      for (float& v : values) v = uniform(rng);
      kernels::quantize_row(k.type, values, {row, data_bytes}, "test row");
    }
  }
  return table;
}

// Gathers `ids` from `table` on the device and compares with kernels::dequantize_row per token.
void check_embed(GgmlType type, const std::vector<uint8_t>& table, uint64_t row_bytes, uint64_t cols,
                 uint64_t table_offset, const std::vector<uint32_t>& ids, const std::string& what) {
  const uint64_t data_bytes = ggml_row_bytes(type, cols, "test row");
  std::vector<float> ref(ids.size() * cols);
  for (size_t t = 0; t < ids.size(); ++t)
    kernels::dequantize_row(type, {table.data() + ids[t] * row_bytes, data_bytes}, {ref.data() + t * cols, cols},
                            "test row");

  DeviceArray<uint8_t> d_table(table.size() + table_offset);
  CHECK_CUDA(cudaMemcpy(d_table.data + table_offset, table.data(), table.size(), cudaMemcpyHostToDevice));
  DeviceArray<uint32_t> d_ids(ids);
  DeviceArray<float> d_out(ref.size() + kGuard);
  // 0xFF bytes are NaNs: an unwritten value shows as a mismatch, a stray write as a changed guard.
  CHECK_CUDA(cudaMemset(d_out.data, 0xFF, d_out.size * sizeof(float)));
  cuda::embed_rows(type, d_table.data + table_offset, row_bytes, cols, d_ids.data, static_cast<uint32_t>(ids.size()),
                   d_out.data, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare_bits(what, d_out.to_host(), ref);
}

void run_embed_case(const EmbedCase& k, uint32_t seed) {
  const uint64_t row_bytes = ggml_row_bytes(k.type, k.cols, "test row") + k.row_padding;
  const std::vector<uint8_t> table = make_table(k, row_bytes, seed);
  // Random ids with repeats, and the first and last rows.
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<uint32_t> id(0, static_cast<uint32_t>(k.vocab - 1));
  std::vector<uint32_t> ids(k.tokens);
  for (uint32_t& v : ids) v = id(rng);
  ids[0] = static_cast<uint32_t>(k.vocab - 1);
  if (k.tokens > 1) ids[1] = 0;
  const std::string what = "embed_rows " + std::string(ggml_type_info(k.type).name) + " " + std::to_string(k.vocab) +
                           "x" + std::to_string(k.cols) + " (row padding " + std::to_string(k.row_padding) +
                           ", offset " + std::to_string(k.table_offset) + "), " + std::to_string(k.tokens) +
                           " tokens, seed " + std::to_string(seed);
  check_embed(k.type, table, row_bytes, k.cols, k.table_offset, ids, what);
}

// Every non-NaN F16 or BF16 bit pattern (NaNs replaced by +0: their payloads are not the point),
// 64 rows of 1024, gathered in reverse order: subnormals, infinities and both zeros included.
void run_embed_all_halves(GgmlType type) {
  constexpr uint64_t kRows = 64, kCols = 1024;
  std::vector<uint8_t> table(kRows * kCols * 2);
  for (uint32_t i = 0; i < kRows * kCols; ++i) {
    const uint32_t exp_mask = type == GgmlType::F16 ? 0x7C00u : 0x7F80u;
    const uint32_t mant_mask = type == GgmlType::F16 ? 0x03FFu : 0x007Fu;
    const bool nan = (i & exp_mask) == exp_mask && (i & mant_mask) != 0;
    const uint32_t h = nan ? 0u : i;
    table[2 * i] = static_cast<uint8_t>(h & 0xFF);
    table[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  std::vector<uint32_t> ids(kRows);
  for (uint32_t t = 0; t < kRows; ++t) ids[t] = static_cast<uint32_t>(kRows - 1 - t);
  check_embed(type, table, kCols * 2, kCols, 0, ids,
              "embed_rows " + std::string(ggml_type_info(type).name) + " every non-NaN bit pattern");
}

// --- add, add_bias -----------------------------------------------------------------------------

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& f : v) f = uniform(rng);
  return v;
}

void check_add(uint64_t n, bool aliased, uint32_t seed) {
  std::vector<float> x = random_floats(n, seed), y = random_floats(n, seed + 1);
  if (aliased) y = x;
  std::vector<float> ref(n);
  for (uint64_t i = 0; i < n; ++i) ref[i] = x[i] + y[i];
  x.resize(n + kGuard);
  std::memset(x.data() + n, 0xFF, kGuard * sizeof(float));
  DeviceArray<float> d_x(x), d_y(y);
  cuda::add(d_x.data, aliased ? d_x.data : d_y.data, n, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare_bits("add n=" + std::to_string(n) + (aliased ? " (x += x)" : ""), d_x.to_host(), ref);
}

void check_add_bias(uint32_t rows, uint64_t n, uint32_t seed) {
  std::vector<float> x = random_floats(rows * n, seed);
  const std::vector<float> bias = random_floats(n, seed + 1);
  std::vector<float> ref(x.size());
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t i = 0; i < n; ++i) ref[r * n + i] = x[r * n + i] + bias[i];
  x.resize(x.size() + kGuard);
  std::memset(x.data() + ref.size(), 0xFF, kGuard * sizeof(float));
  DeviceArray<float> d_x(x), d_bias(bias);
  cuda::add_bias(d_x.data, d_bias.data, rows, n, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare_bits("add_bias " + std::to_string(rows) + "x" + std::to_string(n), d_x.to_host(), ref);
}

// Gemma's embedding scale (one float product: bit-exact) and Gemma 2's logit soft-cap against
// kernels/activation.hpp on the host: the device's tanhf and the host's std::tanh are each within
// 2 ulp, and the two products add one rounding each: |got - ref| <= 8 u |ref|.
void check_scale_softcap(uint64_t n, uint32_t seed) {
  std::vector<float> x = random_floats(n, seed);
  for (float& v : x) v *= 60.0f;  // logits past the cap of 30 too
  std::vector<float> scaled(n), capped(n);
  const float s = 45.254833995939045f, cap = 30.0f;  // sqrt(2048), Gemma 2's final cap
  for (uint64_t i = 0; i < n; ++i) {
    scaled[i] = x[i] * s;
    capped[i] = kernels::act::softcap(x[i], 1.0f / cap, cap);
  }
  DeviceArray<float> d_scaled(x), d_capped(x);
  cuda::scale(d_scaled.data, n, s, nullptr);
  cuda::softcap(d_capped.data, n, cap, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare_bits("scale n=" + std::to_string(n), d_scaled.to_host(), scaled);
  const std::vector<float> got = d_capped.to_host();
  int bad = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (!(std::fabs(static_cast<double>(got[i]) - capped[i]) <= 8.0 * 0x1p-24 * std::fabs(capped[i])) && bad++ < 5)
      std::printf("  mismatch softcap [%llu]: x %.9g: got %.9g, ref %.9g\n", static_cast<unsigned long long>(i), x[i],
                  got[i], capped[i]);
  if (bad != 0) {
    std::printf("FAILED: softcap n=%llu: %d mismatches\n", static_cast<unsigned long long>(n), bad);
    ++failures;
  } else {
    std::printf("checked softcap n=%llu\n", static_cast<unsigned long long>(n));
  }
}

// --- argmax --------------------------------------------------------------------------------------

// rows x n values, one row at a time from `make_row`; the device's index per row against the CPU's.
void check_argmax(const std::string& what, uint32_t rows, uint64_t n,
                  const std::function<void(uint32_t row, std::vector<float>&)>& make_row,
                  const std::vector<uint32_t>& expected = {}) {
  std::vector<float> x(rows * n);
  std::vector<uint32_t> ref(rows);
  std::vector<float> row(n);
  for (uint32_t r = 0; r < rows; ++r) {
    make_row(r, row);
    std::copy(row.begin(), row.end(), x.begin() + static_cast<std::ptrdiff_t>(r * n));
    ref[r] = kernels::argmax(row);
    // Hand-stated answers guard the CPU reference as well.
    if (!expected.empty() && ref[r] != expected[r]) {
      std::printf("FAILED: %s row %u: the CPU argmax gives %u, the case states %u\n", what.c_str(), r, ref[r],
                  expected[r]);
      ++failures;
    }
  }
  DeviceArray<float> d_x(x);
  DeviceArray<uint32_t> d_out(rows + 16);
  CHECK_CUDA(cudaMemset(d_out.data, 0xFF, d_out.size * sizeof(uint32_t)));
  cuda::argmax_rows(d_x.data, rows, n, d_out.data, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<uint32_t> got = d_out.to_host();
  int bad = 0;
  for (uint32_t r = 0; r < rows; ++r)
    if (got[r] != ref[r] && bad++ < 5)
      std::printf("  mismatch %s row %u: got %u (%.9g), ref %u (%.9g)\n", what.c_str(), r, got[r],
                  got[r] < n ? static_cast<double>(x[r * n + got[r]]) : NAN, ref[r],
                  static_cast<double>(x[r * n + ref[r]]));
  size_t guard_changed = 0;
  for (size_t i = rows; i < got.size(); ++i) guard_changed += got[i] != 0xFFFFFFFFu;
  if (bad != 0 || guard_changed != 0) {
    std::printf("FAILED: %s: %d mismatches, %zu indices written past the rows\n", what.c_str(), bad, guard_changed);
    ++failures;
  } else {
    std::printf("checked %s\n", what.c_str());
  }
}

void run_argmax_cases() {
  const float inf = std::numeric_limits<float>::infinity();
  // Random NaN-free rows: shorter than a warp, one block's 256 threads, and Qwen3's vocabulary
  // (151936: 594 values per thread).
  for (const uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{256}, uint64_t{1000}, uint64_t{151936}}) {
    check_argmax("argmax random n=" + std::to_string(n), 9, n, [&](uint32_t r, std::vector<float>& row) {
      std::mt19937 rng(static_cast<uint32_t>(n * 31 + r));
      std::normal_distribution<float> normal(0.0f, 3.0f);
      for (float& v : row) v = normal(rng);
    });
  }
  // Ties: the lowest index wins, whichever thread, warp or stride step holds each copy.
  // Row 0: all equal -> 0. Row 1: the max at 3 (thread 3), 700 (thread 188, 3rd step) and 4999 -> 3.
  // Row 2: the max at 4999 and 300 (thread 44, 2nd step) but not 3 -> 300. Row 3: all -inf -> 0.
  // Row 4: +0 at 17 then -0 at 9 as the max of negatives: equal, so 9. Row 5: the max only in the
  // last value, 4999 -> 4999. Row 6: the max at 255 (thread 255's first value, warp 7) and 256
  // (thread 0's second, warp 0) -> 255.
  const std::vector<uint32_t> tie_answers = {0, 3, 300, 0, 9, 4999, 255};
  check_argmax(
      "argmax ties", 7, 5000,
      [&](uint32_t r, std::vector<float>& row) {
        std::mt19937 rng(77 + r);
        std::uniform_real_distribution<float> uniform(-10.0f, 1.0f);
        for (float& v : row) v = uniform(rng);
        switch (r) {
          case 0: std::fill(row.begin(), row.end(), 0.25f); break;
          case 1: row[3] = row[700] = row[4999] = 2.0f; break;
          case 2: row[300] = row[4999] = 2.0f; break;
          case 3: std::fill(row.begin(), row.end(), -inf); break;
          case 4:
            for (float& v : row) v = -1.0f - std::fabs(v);
            row[17] = 0.0f;
            row[9] = -0.0f;
            break;
          case 5: row[4999] = 1.5f; break;
          case 6: row[255] = row[256] = 3.0f; break;
          default: break;
        }
      },
      tie_answers);
  // One row per block across many blocks, with +inf in some rows.
  check_argmax("argmax 300 rows of 4096 with infinities", 300, 4096, [&](uint32_t r, std::vector<float>& row) {
    std::mt19937 rng(1000 + r);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : row) v = uniform(rng);
    if (r % 7 == 0) row[(r * 97) % 4096] = inf;
  });
}

}  // namespace

int main() {
  try {
    check_arguments();
    if (failures != 0) return 1;
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    // Cols: one block, Qwen3-8B's hidden size 4096, and 2560 (10 Q2_K blocks, 80 of 32). Tokens: 1,
    // 9, and a prefill's 130. Padding and offsets: rows that start 2 bytes past 4-byte alignment for
    // the 2-byte types (4 for F32, its smallest step; 1 for the types read as bytes).
    std::vector<EmbedCase> cases;
    for (const cuda::CudaRowType& t : cuda::kCudaRowTypes) {  // every type the kernels read
      const GgmlType type = t.type;
      const uint64_t block = ggml_type_info(type).block_values;
      const uint64_t one = block == 1 ? 32 : block;
      const uint64_t align = t.row_align;  // the decoded types' rows start at an odd byte
      cases.push_back({type, 3, one, 0, 0, 1});
      cases.push_back({type, 50, 4096, 0, 0, 130});
      cases.push_back({type, 17, 2560, align, align, 9});
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      run_embed_case(cases[i], static_cast<uint32_t>(2 * i));      // synthetic blocks
      run_embed_case(cases[i], static_cast<uint32_t>(2 * i + 1));  // quantized floats
    }
    run_embed_all_halves(GgmlType::F16);
    run_embed_all_halves(GgmlType::BF16);

    check_add(1, false, 1);
    check_add(4096, false, 2);
    check_add(4096, true, 3);
    check_add(3u << 20, false, 4);  // more values than the grid has threads: the stride loop
    check_add_bias(1, 4096, 5);
    check_add_bias(130, 4096, 6);
    check_add_bias(70000, 3, 7);  // more rows than gridDim.y's 65535: the row stride loop
    check_add_bias(2, 3u << 20, 8);
    check_scale_softcap(1, 9);
    check_scale_softcap(3u << 20, 10);  // the stride loop

    run_argmax_cases();
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("FAILED: %d checks\n", failures);
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}
